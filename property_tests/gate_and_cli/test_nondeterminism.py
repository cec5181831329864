"""A model that is not deterministic is named as the user's mistake, never as raceproof's bug.

Why this module exists: a model drawing from the global ``random`` module (or the
wall clock, ``id()``, set order) made a replay misalign, and the user read
"internal error: this is a bug in raceproof" after a 20-line traceback (exit 70).
A search now re-runs what it found once, strictly, before shrinking it; a run that
goes otherwise is the verdict ``error`` (exit 4) in one line naming the draw, the
actor and the likely causes. Each hostile model below has a steady twin, the same
model with the cause taken out, which must be found violated (exit 1): the check
fails in both directions.

The in-process causes (``random``, the clock, ``id()``) are caught by the re-run;
hash order differs only between processes (``PYTHONHASHSEED``), so it is caught by
``repro --check-determinism``, whose two children run under seeds 0 and 1 while
the parent here runs under 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BIN = Path(sys.executable).parent

HOSTILE = """
import random
import time
from dataclasses import dataclass

import raceproof
from raceproof import Scenario

CAUSE = {cause!r}
KEPT = []  # what id() is taken of stays alive, so each run's object has its own address
NAMES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")


def options() -> int:
    \"\"\"How many options the actor's draw has: from the cause, or always 2 (steady).\"\"\"
    if CAUSE == "random":
        return random.randint(2, 10**9)
    if CAUSE == "clock":
        return 2 + time.monotonic_ns() % 10**9
    if CAUSE == "id":
        KEPT.append(object())
        return 2 + id(KEPT[-1]) % 1_000_003
    return 2


def build(world, variant, config):
    def worker():
        n = options()
        yield world.sleep(world.source.choose("worker.delay", range(n)) % 2)
        world.log("worker", "done", options=n)  # what the cause changed shows in the history

    def named(name):
        yield world.sleep(1)
        world.log(name, "hello")

    world.spawn("worker", worker())
    order = {{*NAMES}} if CAUSE == "hash" else NAMES  # a set of strings: hash order
    for name in order:
        world.spawn(name, named(name))


@raceproof.checker
def never_done(history):
    done = history.of_kind("done")
    return raceproof.violated("the worker finished", done[0].index) if done else None


raceproof.register(Scenario(
    name="hostile", summary="a model whose draws depend on " + CAUSE,
    variants={{"buggy": "as written"}}, expect_violation=frozenset({{"buggy"}}),
    checkers=(never_done,), build=build,
))
"""


def run(cwd: Path, *argv: str, hash_seed: str = "2") -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), *argv]
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def model(folder: Path, cause: str) -> str:
    (folder / f"{cause}.py").write_text(HOSTILE.format(cause=cause))
    return f"{cause}.py"


def assert_named_nondeterministic(done: subprocess.CompletedProcess[str]) -> str:
    """Exit 4, one line on stderr naming the nondeterminism, the draw, the actor, the causes."""
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert "Traceback" not in done.stderr and "bug in raceproof" not in line
    assert "the model is not deterministic" in line
    assert "global random" in line and "wall clock" in line and "id()" in line
    return line


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cause=st.sampled_from(["random", "clock", "id"]),
    strategy=st.sampled_from(["random", "pct"]),
    seed=st.integers(0, 2**16),
)
def test_a_search_names_a_nondeterministic_model(
    tmp_path: Path, cause: str, strategy: str, seed: int
) -> None:
    file = model(tmp_path, cause)
    argv = ["explore", "hostile", "--scenarios", file, "--strategy", strategy, "--seed", str(seed)]
    line = assert_named_nondeterministic(run(tmp_path, *argv))
    assert "at draw #0 (actor worker)" in line  # the worker's draw, the only one
    steady = model(tmp_path, "steady")
    found = run(tmp_path, *argv[:3], steady, *argv[4:])
    assert found.returncode == 1, found.stderr  # the same model, deterministic: found


def test_a_nondeterministic_model_in_json_is_the_verdict_error(tmp_path: Path) -> None:
    file = model(tmp_path, "clock")
    done = run(tmp_path, "explore", "hostile", "--scenarios", file, "--json")
    assert done.returncode == 4, done.stderr
    assert '"verdict": "error"' in done.stdout and "not deterministic" in done.stdout


def test_check_names_a_nondeterministic_model(tmp_path: Path) -> None:
    """The one line says which check stopped the whole check and that the rest did not run
    (it said only that some model was not deterministic), on one process and on two."""
    file = model(tmp_path, "random")
    stopped = "check stopped at hostile / buggy random, the checks after it not run: the model"
    for jobs in ("1", "2"):
        done = run(tmp_path, "check", "--scenarios", file, "hostile", "-j", jobs)
        assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
        said = [line for line in done.stderr.splitlines() if not line.startswith("[")]  # done
        assert len(said) == 1 and stopped in said[0], done.stderr
    steady = run(tmp_path, "check", "--scenarios", model(tmp_path, "steady"))
    assert steady.returncode == 0, steady.stderr + steady.stdout  # buggy is expected violated


def test_hash_order_is_caught_between_processes(tmp_path: Path) -> None:
    argv = ["repro", "hostile", "--check-determinism", "--json"]
    done = run(tmp_path, *argv, "--scenarios", model(tmp_path, "hash"))
    assert done.returncode == 4, done.stderr
    assert "not deterministic" in done.stdout and "PYTHONHASHSEED" in done.stdout
    steady = run(tmp_path, *argv, "--scenarios", model(tmp_path, "steady"))
    assert steady.returncode == 1, steady.stderr  # the same runs agree: only the race
    assert '"same": true' in steady.stdout


def test_the_fixture_names_a_nondeterministic_model_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_gate.py").write_text(
        "def test_gate(raceproof):\n"
        "    raceproof.explore('hostile', expect='violated', strategy='random', examples=5)\n"
    )
    for cause, code in (("clock", 1), ("steady", 0)):
        argv = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gate.py"]
        argv += ["--raceproof-scenarios", model(tmp_path, cause)]
        done = subprocess.run(
            [sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == code, done.stdout[-3000:]
        assert ("the model is not deterministic" in done.stdout) == (cause == "clock")
        assert "Traceback" not in done.stdout and "bug in raceproof" not in done.stdout
