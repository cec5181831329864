"""The suite's ``xdist_group`` marks keep their tests on one worker under ``--dist loadgroup``.

Why it exists: ``make test`` runs ``pytest -n 3 --dist loadgroup`` and the suite relies on
its groups: the newcomer's module fixture (``make demo`` as another user, minutes) must run on
one worker only, and the Spark tests share one worker's session. With pytest 9.2 and
pytest-xdist 3.8.0 the groups were silently ignored (xdist rewrites ``item._nodeid``, pytest 9.2
reads ``item._id``: pytest-dev/pytest-xdist#1386), so both workers paid for the newcomer and
the Spark tests were spread; nothing failed. pyproject's ``dev`` extra pins ``pytest<9.2``.
The grouped tests use a module fixture, as the newcomer's do: it must be set up once.

The Spark tests are two groups (``spark`` and ``spark-2``, about half of the wall time each),
so that two workers each hold a JVM and wait on it side by side: that needs xdist to give the
two largest groups to two workers at the start (``--dist loadgroup`` deals its units largest
first, one to each worker: ``xdist/scheduler/loadscope.py``, ``--loadscope-reorder``).

The test runs a small suite of its own in a subprocess, with the installed pytest and xdist,
on two workers: eight tests in one group, collected first, eight in a second group, and eight
without. Each test writes the worker it ran on; each group's tests must share one worker, and
the two groups must be on two workers. xdist deals its first tests out to both workers before
any runs, so an ignored group lands on both: with pytest 9.2.0 first on the path the test fails
so. Where the ungrouped ones run is left to the load (one worker may take them all while the
others run the groups), so it is not asserted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GROUPED = 8
APART = 8  # the second group, as spark-2 beside spark
FREE = 8

SUITE = f"""
import os
from pathlib import Path

import pytest

def _record(kind: str, index: int) -> None:
    worker = os.environ["PYTEST_XDIST_WORKER"]
    Path(f"ran-{{kind}}-{{index}}").write_text(worker)

@pytest.fixture(scope="module")
def expensive() -> None:  # as the newcomer's make demo: once per worker that uses it
    Path(f"set-up-on-{{os.environ['PYTEST_XDIST_WORKER']}}").write_text("")

@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("index", range({GROUPED}))
def test_grouped(index: int, expensive: None) -> None:
    _record("grouped", index)

@pytest.mark.xdist_group("apart")
@pytest.mark.parametrize("index", range({APART}))
def test_apart(index: int) -> None:
    _record("apart", index)

@pytest.mark.parametrize("index", range({FREE}))
def test_free(index: int) -> None:
    _record("free", index)
"""


def workers_of(folder: Path, kind: str) -> dict[int, str]:
    """Test index -> the worker (``gw0``, ``gw1``) that ran it, for tests of ``kind``."""
    return {
        int(path.name.rsplit("-", 1)[1]): path.read_text() for path in folder.glob(f"ran-{kind}-*")
    }


def test_a_group_runs_on_one_worker_and_the_rest_on_both(tmp_path: Path) -> None:
    (tmp_path / "test_grouped_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own rootdir: not the suite's settings
    argv = ["-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *argv, "test_grouped_suite.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    grouped = workers_of(tmp_path, "grouped")
    apart = workers_of(tmp_path, "apart")
    free = workers_of(tmp_path, "free")
    assert sorted(grouped) == list(range(GROUPED)) and sorted(free) == list(range(FREE))
    assert sorted(apart) == list(range(APART))
    assert len(set(grouped.values())) == 1, f"the group was spread over workers: {grouped}"
    assert len(set(apart.values())) == 1, f"the second group was spread over workers: {apart}"
    assert grouped[0] != apart[0], f"both groups ran on {grouped[0]}, one after the other"
    # The group's module fixture was set up once, on the group's worker.
    assert [p.name for p in tmp_path.glob("set-up-on-*")] == [f"set-up-on-{grouped[0]}"]
