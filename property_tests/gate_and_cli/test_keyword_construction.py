"""A dataclass or NamedTuple with more than three fields is built with keywords (issue 32 item 2).

``Profile("ci", STRATEGIES, 1.0, False, True, 1_000_000, None)`` told a reader
nothing about what ``False, True`` mean, and kept a hand-aligned layout that
ruff format could not own. The rule: a call to such a class passes at most three
arguments by position. This test reads every ``.py`` file of the tree with
``ast`` (no import, so a module that fails to import is still read), finds the
classes that are dataclasses or NamedTuples with more than three ``__init__``
fields (a base dataclass's fields counted), or plain classes whose own
``__init__`` names more than three parameters that can be passed by position
(``Walk(run, 2, None, None)`` read no better), and resolves each call's name the
way Python would: a class of the same file, else the module it was imported
from (following re-exports such as ``raceproof.sim``), else the one class of
that name in the tree. A plain class that takes ``*args`` (a rich ``Table`` of
columns) or has no ``__init__`` of its own is left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("sim", "models", "scenarios", "reports", "spark_integration", "raceproof")
TESTS = ("property_tests", "tools")
MOST_POSITIONAL = 3


@dataclass
class Module:
    """One file: its classes (name -> node) and what it imports (local name -> module, name)."""

    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    tree: ast.Module | None = None


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[0] in (*TESTS, "raceproof"):
        return ".".join(parts)
    return ".".join(["raceproof", *parts])


def read_tree(root: Path) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for folder in (*FOLDERS, *TESTS):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            module = Module(tree=tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    module.classes.setdefault(node.name, node)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        module.imports[alias.asname or alias.name] = (node.module, alias.name)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        module.imports[alias.asname or alias.name] = (alias.name, None)
            modules[module_name(root, path)] = module
    return modules


class Classes:
    """Resolves a name used in a module to the class it means, and counts its init fields."""

    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules
        self.by_name: dict[str, list[tuple[str, ast.ClassDef]]] = {}
        for name, module in modules.items():
            for class_name, node in module.classes.items():
                self.by_name.setdefault(class_name, []).append((name, node))

    def lookup(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef] | None:
        """The class ``name`` means in ``module``: defined there, or imported (re-exports followed)."""
        found = self.modules.get(module)
        if found is None or depth > 8:
            return None
        if name in found.classes:
            return module, found.classes[name]
        if name in found.imports:
            source, original = found.imports[name]
            if original is not None:
                return self.lookup(source, original, depth + 1)
        return None

    def resolve(self, module: str, func: ast.expr) -> tuple[str, ast.ClassDef] | None:
        if isinstance(func, ast.Name):
            hit = self.lookup(module, func.id)
            if hit is None and func.id in self.modules[module].imports:
                return None  # imported from outside the tree
            candidates = self.by_name.get(func.id, [])
            return hit or (candidates[0] if len(candidates) == 1 else None)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            source = self.modules[module].imports.get(func.value.id)
            if source is not None and source[1] is None:
                return self.lookup(source[0], func.attr)
            if source is not None:
                return self.lookup(f"{source[0]}.{source[1]}", func.attr)
        return None

    def init_fields(self, module: str, node: ast.ClassDef, depth: int = 0) -> int | None:
        """How many ``__init__`` fields the dataclass or NamedTuple has, or how many a plain
        class's own ``__init__`` takes by position; None for any other class."""
        bases = [ast.unparse(base) for base in node.bases]
        named_tuple = any(base.rsplit(".", 1)[-1] == "NamedTuple" for base in bases)
        decorated = any(
            ast.unparse(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1] == "dataclass"
            for d in node.decorator_list
        )
        if not (named_tuple or decorated):
            return _own_positional_parameters(node)
        count = sum(1 for statement in node.body if _is_init_field(statement))
        for base in node.bases if decorated and depth < 8 else []:
            inherited = self.resolve(module, base)
            if inherited is not None:
                count += self.init_fields(*inherited, depth=depth + 1) or 0
        return count


def _own_positional_parameters(node: ast.ClassDef) -> int | None:
    """The parameters after ``self`` a plain class's own ``__init__`` takes by position."""
    inits = [s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"]
    if not inits or inits[0].args.vararg is not None:
        return None
    return len(inits[0].args.posonlyargs) + len(inits[0].args.args) - 1


def _is_init_field(statement: ast.stmt) -> bool:
    if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
        return False
    if "ClassVar" in ast.unparse(statement.annotation):
        return False
    value = statement.value
    if isinstance(value, ast.Call) and ast.unparse(value.func).rsplit(".", 1)[-1] == "field":
        return not any(
            keyword.arg == "init"
            and isinstance(keyword.value, ast.Constant)
            and keyword.value.value is False
            for keyword in value.keywords
        )
    return True


def positional_constructions(root: Path) -> list[str]:
    """Every call that passes more than three positional arguments to a >3-field dataclass."""
    modules = read_tree(root)
    classes = Classes(modules)
    found: list[str] = []
    for name, module in modules.items():
        assert module.tree is not None
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call) or len(node.args) <= MOST_POSITIONAL:
                continue
            target = classes.resolve(name, node.func)
            if target is None:
                continue
            fields = classes.init_fields(*target)
            if fields is not None and fields > MOST_POSITIONAL:
                where = f"{name}:{node.lineno}"
                found.append(f"{where}: {target[1].name} built with {len(node.args)} positional")
    return sorted(found)


def test_every_dataclass_with_more_than_three_fields_is_built_with_keywords() -> None:
    assert positional_constructions(ROOT) == []


def _plant(root: Path, call: str) -> list[str]:
    (root / "sim").mkdir(parents=True)
    for folder in (*FOLDERS[1:], *TESTS):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "sim" / "__init__.py").write_text("from raceproof.sim.shapes import Box\n")
    (root / "sim" / "shapes.py").write_text(
        "from dataclasses import dataclass, field\n"
        "from typing import ClassVar, NamedTuple\n\n"
        "@dataclass\nclass Small:\n    a: int\n    b: int\n    c: int\n"
        "    kind: ClassVar[str] = 'small'\n    cache: list = field(init=False)\n\n"
        "@dataclass\nclass Box(Small):\n    d: int\n\n"
        "class Pair(NamedTuple):\n    a: int\n    b: int\n    c: int\n    d: int\n\n"
        "class Plain:\n    def __init__(self, *args): pass\n\n"
        "class Wide:\n    def __init__(self, a, b, c, d=0, *, e=0): pass\n"
    )
    (root / "models" / "user.py").write_text(
        "import raceproof.sim.shapes as shapes\nfrom raceproof.sim import Box\n"
        "from raceproof.sim.shapes import Pair, Plain, Small, Wide\n\n"
        f"VALUE = {call}\n"
    )
    return positional_constructions(root)


def test_a_planted_positional_construction_is_found(tmp_path: Path) -> None:
    for planted in (
        "Box(1, 2, 3, 4)",
        "shapes.Pair(1, 2, 3, 4)",
        "Pair(1, 2, 3, 4)",
        "Wide(1, 2, 3, 4)",
    ):
        where = tmp_path / str(len(list(tmp_path.iterdir())))
        assert len(_plant(where, planted)) == 1, planted
    # Three by position, the rest by keyword, a plain class, a 3-field dataclass: all allowed.
    for allowed in (
        "Box(1, 2, 3, d=4)",
        "Plain(1, 2, 3, 4)",
        "Small(1, 2, 3)",
        "Wide(1, 2, 3, d=4)",
    ):
        where = tmp_path / str(len(list(tmp_path.iterdir())))
        assert _plant(where, allowed) == [], allowed
