"""Stage the repository in the installed layout for mutmut 3 (`make mutation`).

mutmut 3 copies the code it mutates into ``mutants/`` and puts that folder
first on ``sys.path``; the tests then import ``raceproof.sim...`` from there.
The repository's folders are not laid out that way (``sim/`` is mapped to
``raceproof.sim`` by pyproject's package-dir, through the editable install's
meta-path finder, which the path finder comes before), so this builds
``<dest>/raceproof/{sim,models,...}`` plus the tests, docs and pyproject.

mutmut 3 leaves every decorated function unmutated (it cannot put its
trampoline under an arbitrary decorator), which would leave out exactly the
checkers: they are ``@checker(NAME)`` functions. In the staged copy only,
``@checker(X)`` above a ``def f`` becomes ``f = checker(X)(f)`` after it, the
same object built the same way, so their bodies are mutated too.

``MUTATE`` (globs separated by spaces, as in ``raceproof/sim/fs.py``) narrows
the staged ``only_mutate`` for a quicker run over some modules.

Usage: [MUTATE="raceproof/sim/fs.py ..."] python tools/mutation_stage.py DEST
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("sim", "models", "scenarios", "reports", "spark_integration")
ALSO = ("property_tests", "docs", "pyproject.toml")


def undecorate_checkers(source: str) -> str:
    """``@checker(X) def f`` -> ``def f`` and, after its body, ``f = checker(X)(f)``."""
    tree = ast.parse(source)
    edits: list[tuple[int, int, int, str]] = []  # (decorator line, def end line, indent, call)
    for node in ast.walk(tree):
        if (
            not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            or len(node.decorator_list) != 1
        ):
            continue
        decorator = node.decorator_list[0]
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not (isinstance(target, ast.Name) and target.id == "checker"):
            continue
        assert decorator.end_lineno == decorator.lineno, "a one-line @checker"
        call = ast.get_source_segment(source, decorator)
        assert call is not None and node.end_lineno is not None
        edits.append(
            (
                decorator.lineno,
                node.end_lineno,
                node.col_offset,
                f"{node.name} = {call}({node.name})",
            )
        )
    lines = source.splitlines(keepends=True)
    for decorator_line, end_line, indent, assignment in sorted(edits, reverse=True):
        lines.insert(end_line, " " * indent + assignment + "\n")
        del lines[decorator_line - 1]
    return "".join(lines)


def stage(dest: Path) -> int:
    if dest.exists():
        shutil.rmtree(dest)
    package = dest / "raceproof"
    package.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "raceproof", package, ignore=ignore, dirs_exist_ok=True)
    for sub in SUBPACKAGES:
        shutil.copytree(ROOT / sub, package / sub, ignore=ignore)
    for name in ALSO:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        else:
            shutil.copy2(source, dest / name)
    only = os.environ.get("MUTATE", "").split()
    if only:
        config = dest / "pyproject.toml"
        text, count = re.subn(
            r"^only_mutate = .*$",
            f"only_mutate = {json.dumps(only)}",
            config.read_text(),
            flags=re.M,
        )
        assert count == 1, "pyproject.toml needs one only_mutate line"
        config.write_text(text)
    rewritten = 0
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        if "@checker" in text:
            new = undecorate_checkers(text)
            if new != text:
                path.write_text(new)
                rewritten += 1
    return rewritten


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: mutation_stage.py DEST", file=sys.stderr)
        sys.exit(2)
    count = stage(Path(sys.argv[1]))
    print(f"staged {sys.argv[1]}/raceproof ({count} files with @checker functions undecorated)")
