"""Print the mutation score of the last `make mutation` run, per module and in total.

mutmut 3 keeps one ``<file>.meta`` JSON per mutated file under ``mutants/``
(mutant name -> exit code of its test run). This reads them (run it in the
staging folder `make mutation` builds) and prints a table, the survivors and
one line ``mutation score: K/N killed = P%``. Killed counts the mutants a test
failed on and those that timed out (an infinite loop the kernel never leaves is
a detected change). A mutant no test reaches counts as not killed: it is a gap. A mutant an interrupted
run never got to is left out and counted on its own line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

KILLED = {1, 3, 36, 24, -24, 152, 255, 37}
SURVIVED = {0}
NO_TESTS = {5, 33}
SKIPPED = {34}


def main() -> int:
    metas = sorted(Path("mutants").rglob("*.py.meta"))
    if not metas:
        print("no mutation results under mutants/: run `make mutation` first", file=sys.stderr)
        return 2
    rows: list[tuple[str, int, int, list[str]]] = []
    not_checked = 0
    for meta in metas:
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        module = str(meta.relative_to("mutants"))[: -len(".py.meta")].replace("/", ".")
        counted = {k: v for k, v in codes.items() if v not in SKIPPED and v is not None}
        unchecked = sum(1 for v in codes.values() if v is None)
        killed = sum(1 for v in counted.values() if v in KILLED)
        alive = sorted(
            (
                f"{k} ({'no test reaches it' if v in NO_TESTS else 'survived' if v in SURVIVED else f'exit {v}'})"
            )
            for k, v in counted.items()
            if v not in KILLED
        )
        not_checked += unchecked
        if counted:
            rows.append((module, killed, len(counted), alive))
    if not rows:
        print(
            f"no mutant checked yet ({not_checked} waiting): is `make mutation` still running?",
            file=sys.stderr,
        )
        return 2
    table = Table(box=box.SIMPLE_HEAD, title="mutation score per module")
    table.add_column("module")
    for column in ("killed", "total", "score"):
        table.add_column(column, justify="right")
    for module, killed, total, _ in rows:
        table.add_row(module, str(killed), str(total), f"{100 * killed / total:.1f}%")
    Console(width=max(100, Console().width)).print(table)
    survivors = [s for r in rows for s in r[3]]
    print(f"\nsurvivors ({len(survivors)}; `cd .mutation && mutmut show NAME` prints one):")
    for s in survivors:
        print(f"  {s}")
    killed = sum(r[1] for r in rows)
    total = sum(r[2] for r in rows)
    print(f"\nmutation score: {killed}/{total} killed = {100 * killed / total:.1f}%")
    if not_checked:
        print(
            f"({not_checked} mutants not checked yet: an interrupted run; the score is over the rest)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
