"""CPU seconds per test file, everything it started included (JVMs, pools, other users' commands).

Why it exists: the suite's budget is CPU on a shared 2-core machine, and wall time there
says more about the neighbours than about a test. ``/usr/bin/time`` undercounts the Spark
tests: the JVM a session starts is never waited for by pytest (it is reaped by init after
pytest exits), so its CPU, about 14 s a start, is lost. Here each file runs in a pytest of
its own under this process made a child subreaper (``PR_SET_CHILD_SUBREAPER``): every
orphan comes back to it and is reaped, so ``RUSAGE_CHILDREN`` holds the whole tree.

    python3 tools/suite_cpu.py property_tests/spark/test_spark_signals.py property_tests/...

Files run one after the other (never in parallel: the machine is shared), with ``CI=1``;
extra pytest options go after ``--``. A table of CPU seconds, wall seconds and pytest's
last line per file is printed at the end. Linux only.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Measured:
    """One file's run: CPU seconds of its whole process tree, wall seconds, pytest's summary."""

    path: str
    cpu_s: float
    wall_s: float
    summary: str


def _reap_all(pid: int) -> int | None:
    """Wait for every child and orphan until none is left; ``pid``'s exit code."""
    code = None
    while True:
        try:
            done, status = os.wait()
        except ChildProcessError:
            return code
        if done == pid:
            code = os.waitstatus_to_exitcode(status)


def measure(path: str, options: list[str]) -> Measured:
    """Run pytest on ``path`` and reap its whole tree; what it cost."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    process = subprocess.Popen(
        [str(ROOT / ".venv/bin/pytest"), "-q", "-p", "no:cacheprovider", *options, path],
        cwd=ROOT,
        env={**os.environ, "CI": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out, _ = process.communicate()
    _reap_all(process.pid)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in out.splitlines() if line.strip()]
    summary = lines[-1].strip("= ") if lines else f"exit {process.returncode}"
    return Measured(path=path, cpu_s=cpu_s, wall_s=time.monotonic() - started, summary=summary)


def main(argv: list[str]) -> int:
    if not argv or "-h" in argv or "--help" in argv:
        print("usage: python3 tools/suite_cpu.py FILE... [-- PYTEST-OPTION...]", file=sys.stderr)
        return 2
    files, options = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("suite_cpu: cannot become a child subreaper (Linux only)", file=sys.stderr)
        return 2
    table = Table("CPU s", "wall s", "pytest")
    table.add_column("file", overflow="fold")
    for path in files:
        row = measure(path, options)
        print(f"{row.path}: {row.cpu_s:.1f} CPU s, {row.wall_s:.1f} s, {row.summary}", flush=True)
        table.add_row(f"{row.cpu_s:.1f}", f"{row.wall_s:.1f}", row.summary, row.path)
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
