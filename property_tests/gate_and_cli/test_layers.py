"""The layers of docs/reference/layout.md, enforced: imports point down only.

Each folder of the repository is a subpackage of ``raceproof`` and may import
only the layers below it (the table is ``MAY_IMPORT``). The test reads every
``.py`` file with ``ast`` and checks every ``import`` and ``from ... import``
of a ``raceproof.*`` module, function-local and ``TYPE_CHECKING`` imports
included (a local import is still a dependency; it only hides it). The few
upward imports the tree still has are listed in ``KNOWN``, each with why, so
that a new one fails and a removed one must be struck from the list.

``upward_imports`` is the checker; the tests below plant an upward import in
a synthetic source and in a copy of a package folder and see it caught.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# layer -> the layers it may import (itself included). The package's own folder
# (``raceproof/``) is split into its subpackages: ``runs`` at the bottom, the gate and the
# ZooKeeper backend above it, the measurements above the gate (``bench`` measures the
# gate's plan), the command line on top.
BELOW_RACEPROOF = {"sim", "models", "scenarios", "reports", "spark_integration"}
MAY_IMPORT: dict[str, frozenset[str]] = {
    "sim": frozenset({"sim"}),
    "models": frozenset({"sim", "models"}),
    "scenarios": frozenset({"sim", "models", "scenarios"}),
    "reports": frozenset({"sim", "reports"}),
    "spark_integration": frozenset(BELOW_RACEPROOF),
    "runs": frozenset({*BELOW_RACEPROOF, "runs"}),
    "gate": frozenset({*BELOW_RACEPROOF, "runs", "gate"}),
    "measure": frozenset({*BELOW_RACEPROOF, "runs", "gate", "measure"}),  # bench measures the gate
    "zookeeper": frozenset({*BELOW_RACEPROOF, "runs", "zookeeper"}),
    "cli": frozenset(
        {*BELOW_RACEPROOF, "runs", "gate", "measure", "zookeeper", "cli", "raceproof"}
    ),
    "raceproof": frozenset(
        {*BELOW_RACEPROOF, "runs", "gate", "measure", "zookeeper", "cli", "raceproof"}
    ),
}
RACEPROOF_SUBPACKAGES = {"runs", "gate", "measure", "zookeeper", "cli"}

# (file, imported module prefix): upward imports the tree still has, each with why.
KNOWN: dict[tuple[str, str], str] = {
    (
        "scenarios/library.py",
        "raceproof.zookeeper",
    ): "the built-in Brooklin scenario registers its real ZooKeeper backend",
    (
        "scenarios/library.py",
        "raceproof.spark_integration",
    ): "the built-in stories' real Spark backend, imported when a run asks for Spark",
    (
        "spark_integration/campaign.py",
        "raceproof.runs",
    ): "a campaign's manifest stamps raceproof's version and commit (runs.runner)",
    (
        "spark_integration/killed.py",
        "raceproof.runs",
    ): "the kill experiment's second driver is a child spawned and killed as every child is "
    "(runs.processes: its own session, dies with the command)",
    (
        "spark_integration/campaign_cells.py",
        "raceproof.runs",
    ): "a cell writes its counterexample file through runs.runner",
    (
        "spark_integration/session.py",
        "raceproof.runs",
    ): "the Spark JVM dies with its parent through runs.processes",
}


def layer_of(relative: Path) -> str | None:
    """The layer of a file, from its path in the repository (None: not a package file)."""
    top = relative.parts[0]
    if top in BELOW_RACEPROOF:
        return top
    if top == "raceproof":
        inner = relative.parts[1] if len(relative.parts) > 2 else ""
        return inner if inner in RACEPROOF_SUBPACKAGES else "raceproof"
    return None


def target_layer(module: str) -> str | None:
    """The layer a ``raceproof.*`` module belongs to (None: not one of ours)."""
    parts = module.split(".")
    if parts[0] != "raceproof":
        return None
    if len(parts) == 1:
        return "raceproof"
    if parts[1] in BELOW_RACEPROOF or parts[1] in RACEPROOF_SUBPACKAGES:
        return parts[1]
    return "raceproof"


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "raceproof" and not node.level:
            # ``from raceproof import cli`` names the module in its alias
            found += [(node.lineno, f"raceproof.{a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def upward_imports(layer: str, source: str) -> list[tuple[int, str]]:
    """(line, module) of each import in ``source`` that ``layer`` may not make."""
    allowed = MAY_IMPORT[layer]
    return [
        (line, module)
        for line, module in imported_modules(source)
        if (target := target_layer(module)) is not None and target not in allowed
    ]


def tree_violations(root: Path) -> list[str]:
    """``file:line: module`` for every upward import under ``root`` not in ``KNOWN``."""
    out = []
    for top in sorted([*BELOW_RACEPROOF, "raceproof"]):
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root)
            layer = layer_of(relative)
            if layer is None:
                continue
            for line, module in upward_imports(layer, path.read_text(encoding="utf-8")):
                known = any(
                    str(relative) == f and (module == p or module.startswith(p + "."))
                    for f, p in KNOWN
                )
                if not known:
                    out.append(f"{relative}:{line}: {layer} imports {module}")
    return out


def test_the_tree_imports_down_only() -> None:
    assert tree_violations(ROOT) == []


def test_every_known_exception_still_exists() -> None:
    """A removed upward import must be struck from ``KNOWN`` (the list only shrinks)."""
    for (file, prefix), why in KNOWN.items():
        modules = [m for _, m in imported_modules((ROOT / file).read_text(encoding="utf-8"))]
        assert any(m == prefix or m.startswith(prefix + ".") for m in modules), (file, why)


def test_a_synthetic_upward_import_is_caught() -> None:
    source = (
        "from raceproof.sim import World\n"
        "def f():\n"
        "    from raceproof.cli import main\n"  # a local import still counts
        "    import raceproof.models.counter\n"
    )
    assert upward_imports("sim", source) == [(3, "raceproof.cli"), (4, "raceproof.models.counter")]
    assert upward_imports("models", source) == [(3, "raceproof.cli")]
    assert upward_imports("cli", source) == []
    assert upward_imports("reports", "from raceproof import spark_integration\n") == [
        (1, "raceproof.spark_integration")
    ]
    assert upward_imports("runs", "from raceproof.cli import validation\n") == [
        (1, "raceproof.cli")
    ]
    assert upward_imports("spark_integration", "import raceproof\n") == [(1, "raceproof")]
    assert upward_imports("gate", "from raceproof import explore\n") == [(1, "raceproof.explore")]
    assert upward_imports("models", "import simpy\nfrom os import path\n") == []


def test_a_planted_upward_import_in_a_copy_of_the_tree_fails(tmp_path: Path) -> None:
    for top in [*BELOW_RACEPROOF, "raceproof"]:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__"))
    assert tree_violations(tmp_path) == []
    kernel = tmp_path / "sim" / "verdicts.py"
    kernel.write_text(
        kernel.read_text(encoding="utf-8") + "\nfrom raceproof.reports import story\n",
        encoding="utf-8",
    )
    found = tree_violations(tmp_path)
    assert len(found) == 1 and found[0].endswith("sim imports raceproof.reports")
