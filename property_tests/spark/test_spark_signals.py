"""SIGTERM into real Spark at seeded moments: exit 143, no traceback, no JVM left behind.

Why it exists: one SIGTERM during a trial's ``query.stop()`` exited 70 with a
traceback; half the SIGINT/SIGTERM runs of ``spark-check`` printed a py4j
"ERROR ... Traceback"; SIGTERM to ``campaign --pipeline`` ended in
``ConnectionRefusedError``, exit 70. Here each of ``spark-check`` and
``campaign --pipeline`` is started ``RACEPROOF_SPARK_SIGNALS`` times (2 in ``make test``,
10 in ``make signals``), the scenario ``campaign`` and ``bench --campaign``
``RACEPROOF_SPARK_SIGNALS_OTHERS`` times (1; 3 in ``make signals``), and each is stopped by
one SIGTERM at a moment drawn from its seed, anywhere from the imports through the JVM's
start-up, the baseline trial and the experiments. The runs of a command split that range
into equal strata, a run's moment drawn inside its own (seed 0 the earliest), so two runs
still stop a command once in the first half (0.5-20 s: its imports, the JVM's start-up)
and once in the second, the trials: a moment drawn in 20-40 s is counted from the command's
first trial (its sandbox appearing in the run's TMPDIR), scaled into the first ``TRIALS_S``
seconds of its trials (a wall-clock moment in 20-40 s came after the whole command's end in
both such runs measured on Nov 29, each then paying a second run). Each run costs a JVM,
hence the small count in ``make test``.
Each run must exit 143, print what finished (spark-check's JSON result says
``interrupted``; the campaign's line says what it ran), write no traceback to
stderr, and leave no process of its own behind (the JVM included), nor its JVM
log.

The moments are drawn from ``random.Random(seed)``, so a failing seed (with the same
count of runs) is a reproduction; how long each stop took is printed (``-s``), never asserted: a
stop that hangs fails by the bound ``STOP_BOUND_S``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from property_tests.processes import alive, descendants

RACEPROOF = str(Path(sys.executable).parent / "raceproof")
RUNS = int(os.environ.get("RACEPROOF_SPARK_SIGNALS", "2"))
OTHER_RUNS = int(os.environ.get("RACEPROOF_SPARK_SIGNALS_OTHERS", "1"))
EARLIEST_S = 0.5
LATEST_S = 40.0  # the latest moment drawn: past the JVM's start-up and into the trials
HALF_S = (EARLIEST_S + LATEST_S) / 2  # a moment past it is counted from the first trial's start
TRIALS_S = 8.0  # ... scaled into this many seconds from it (the baseline's trial, then drain's)
STOP_BOUND_S = 90.0  # a stop that takes longer than this hangs (not a speed figure)
COMMANDS = {
    "spark-check": ["spark-check", "--experiment", "drain", "--json"],
    "campaign --pipeline": [
        "campaign",
        "--pipeline",
        "windowed-count",
        "--experiment",
        "drain",
        "--seeds",
        "1",
        "--out",
        "c",
    ],
}
# The other commands that start Spark, a few seeds each: the scenario campaign and its bench.
OTHERS = {
    "campaign": ["campaign", "--scenario", "lost-update", "--seeds", "2", "--out", "c"],
    "bench --campaign": ["bench", "--campaign"],
}
CASES = [(command, seed) for command in sorted(COMMANDS) for seed in range(RUNS)] + [
    (command, seed) for command in sorted(OTHERS) for seed in range(OTHER_RUNS)
]


@dataclass
class Stopped:
    """What one SIGTERM did: the exit code, the output, how long the stop took, the family."""

    returncode: int
    out: str
    err: str
    stopped_s: float
    seen: set[int]


def _run_until(
    command: str, moment_s: float, tmp_path: Path, *, in_trials: bool = False
) -> Stopped | float:
    """Start ``command`` and SIGTERM it at ``moment_s`` (``in_trials``: that long after its
    first trial's sandbox appeared in its TMPDIR); the run's length if it ended first."""
    for leftover in tmp_path.iterdir():  # a run that ended first leaves its folder
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    env = dict(os.environ, TMPDIR=str(tmp_path))
    started = time.monotonic()
    process = subprocess.Popen(
        [RACEPROOF, *{**COMMANDS, **OTHERS}[command]],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[int] = set()
    try:
        deadline = None if in_trials else started + moment_s
        while (deadline is None or time.monotonic() < deadline) and process.poll() is None:
            seen |= descendants(process.pid)
            if deadline is None and any(tmp_path.glob("raceproof-spark-*/")):
                deadline = time.monotonic() + moment_s
            time.sleep(0.2)
        if process.poll() is not None:
            process.communicate()
            return time.monotonic() - started
        seen |= descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        out, err = process.communicate(timeout=STOP_BOUND_S)
        stopped_s = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    if process.returncode in (0, -signal.SIGTERM) and _finished(out):
        # The signal came as the command left: its whole report was out, and its handlers were
        # gone (the default action ended it, -15) or it was already exiting (0). It ended
        # before the signal, as above.
        return sent - started
    return Stopped(returncode=process.returncode, out=out, err=err, stopped_s=stopped_s, seen=seen)


def _finished(out: str) -> bool:
    """Whether ``out`` is a command's complete report, not one a signal cut short: a
    ``--json`` result, or a campaign's text, whose last line names its report."""
    if out.rstrip().splitlines()[-1:] == ["report: raceproof report c"]:
        return True
    try:
        report = json.loads(out)
    except ValueError:
        return False
    return isinstance(report, dict) and "verdict" in report and "interrupted" not in report


def stratum(seed: int, runs: int) -> tuple[float, float]:
    """The ``seed``-th of ``runs`` equal slices of the moments drawn, earliest first."""
    width = (LATEST_S - EARLIEST_S) / runs
    return EARLIEST_S + seed * width, EARLIEST_S + (seed + 1) * width


def test_the_strata_cover_the_range_in_order() -> None:
    for runs in (1, 3, 10):
        slices = [stratum(seed, runs) for seed in range(runs)]
        assert slices[0][0] == EARLIEST_S and abs(slices[-1][1] - LATEST_S) < 1e-9
        assert all(a[1] == b[0] for a, b in itertools.pairwise(slices))


@pytest.mark.parametrize(("command", "seed"), CASES)
def test_a_sigterm_at_a_seeded_moment_exits_143_quietly_and_leaves_no_jvm(
    command: str, seed: int, tmp_path: Path
) -> None:
    draw = random.Random(f"{command}/{seed}")
    moment_s = draw.uniform(*stratum(seed, RUNS if command in COMMANDS else OTHER_RUNS))
    in_trials = command in COMMANDS and moment_s > HALF_S  # the second half: the trials
    if in_trials:
        moment_s = (moment_s - HALF_S) / (LATEST_S - HALF_S) * TRIALS_S
    run = _run_until(command, moment_s, tmp_path, in_trials=in_trials)
    if isinstance(run, float):
        # It finished before the moment (a quiet machine is faster than the range drawn
        # for a loaded one): the same seed draws a moment inside the run it just saw.
        moment_s = draw.uniform(0.05, 0.8) * run
        in_trials = False
        run = _run_until(command, moment_s, tmp_path)
    assert isinstance(run, Stopped), ("it ended before the signal twice", moment_s)
    out, err, stopped_s, seen = run.out, run.err, run.stopped_s, run.seen
    when = f"{moment_s:.1f}s" + (" into the trials" if in_trials else "")
    print(f"{command} seed {seed}: SIGTERM at {when}, stopped in {stopped_s:.1f}s")
    assert run.returncode == 143, (moment_s, err[-3000:])
    assert "Traceback" not in err and "ERROR" not in err, (moment_s, err[-3000:])
    if command == "spark-check":
        assert json.loads(out)["interrupted"] == "SIGTERM", out
    elif command == "bench --campaign":  # stopped in a step: its note follows the rows kept
        assert "interrupted by SIGTERM" in out + err, (out, err[-2000:])
    else:
        assert "SIGTERM" in err, err[-2000:]
    left = time.monotonic() + 30.0
    while any(alive(pid) for pid in seen) and time.monotonic() < left:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in seen), ("processes left behind", moment_s)
    assert list(tmp_path.glob("raceproof-spark-jvm-*")) == []
