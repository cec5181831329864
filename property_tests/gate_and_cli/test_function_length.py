"""No function over 70 lines without a comment saying why it must be one function.

Issue 32 item 3's rule, enforced: the test reads every ``.py`` file of the
repository (not ``.venv``, ``.cache``, ``build``) with ``ast`` and measures each function
(``end_lineno - lineno + 1``, decorators excluded). A longer one passes only
with a comment in its body that starts ``# one function:`` and says why; no
function is exempt by name (there is no allow-list: split a long function into
named steps instead).
The planted tests feed the checker synthetic sources both ways.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 70
MARKER = "# one function:"
# Not the project's source: environments, caches and build output (``build/lib`` copies it).
SKIPPED = {".venv", ".cache", "node_modules", ".git", "build", "dist"}


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    """Every function in ``tree`` with its qualified name (``Class.method``, ``outer.inner``)."""
    found: list[tuple[str, ast.AST]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((prefix + node.name, node))
            found.extend(_functions(node, f"{prefix}{node.name}."))
        elif isinstance(node, ast.ClassDef):
            found.extend(_functions(node, f"{prefix}{node.name}."))
        else:
            found.extend(_functions(node, prefix))
    return found


def too_long(source: str, path: str) -> dict[str, int]:
    """``path::name`` -> lines, for each function over ``LIMIT`` with no ``# one function:``."""
    lines = source.splitlines()
    long: dict[str, int] = {}
    for name, node in _functions(ast.parse(source)):
        length = node.end_lineno - node.lineno + 1  # type: ignore[attr-defined]
        body = lines[node.lineno - 1 : node.end_lineno]  # type: ignore[attr-defined]
        if length > LIMIT and not any(line.strip().startswith(MARKER) for line in body):
            long[f"{path}::{name}"] = length
    return long


def _tree() -> dict[str, int]:
    long: dict[str, int] = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)  # never walk into the venv
        for name in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder, name)
            relative = path.relative_to(ROOT).as_posix()
            long.update(too_long(path.read_text(encoding="utf-8"), relative))
    return long


def test_no_function_over_70_lines_without_a_reason() -> None:
    long = _tree()
    assert not long, (
        f"functions over {LIMIT} lines (split them, or say why in a '{MARKER}' comment): {long}"
    )


def _function(lines: int, comment: str = "") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 2))
    return f"class C:\n    def long(self):\n{comment}{body}        return None\n".replace(
        "\n    x", "\n        x"
    )


def test_the_checker_catches_a_planted_long_function_and_takes_a_reason() -> None:
    assert too_long(_function(LIMIT), "p.py") == {}
    assert too_long(_function(LIMIT + 1), "p.py") == {"p.py::C.long": LIMIT + 1}
    reasoned = _function(LIMIT + 1, comment=f"        {MARKER} a state machine read top down\n")
    assert too_long(reasoned, "p.py") == {}
    assert too_long(_function(LIMIT + 1, comment="        # a remark\n"), "p.py") != {}
