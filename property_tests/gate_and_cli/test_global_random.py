"""A model that uses Python's global ``random`` module never gets a verdict but ``error``.

Why this module exists: ``prove`` said PROVEN (exit 0) on a model whose two actors
each slept ``random.choice(...)`` from the global generator whenever its first run
happened to draw no tie: the proof made that one run, and nothing replayed it (a
search re-runs what it finds, ``test_nondeterminism``; a proof that finds nothing
re-ran nothing). Every simulated run is now watched (``raceproof.sim.global_random``):
a run that changed the global generator's state is the verdict ``error``, exit 4, in
one line naming the module and where the run first used it.

The model here makes the hole certain rather than likely: its delays never tie (one
actor's are even, the other's odd), so every proof of it is one run, and it seeds the
global generator once at import (outside every run), so that run's delays are the
same in every process: ``a0`` first, the checker holds, and ``prove`` said ok on
``-j 1`` and ``-j 2`` before the watch. The same model with its delays drawn from a
``random.Random(1)`` of its own proves ok (it is deterministic: the watch is no false
alarm), and with them drawn from ``world.source`` the proof finds the violation the
global generator had hidden.

The property then puts each kind of use of the global module (a draw, a shuffle, a
reseed) in each place a model's code runs (its build, an actor, a checker, a step
hook) under each command that judges runs in this process: always exit 4, one line.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raceproof.cli.main import main
from raceproof.sim import global_random

BIN = Path(sys.executable).parent

TIE_FREE = """
import random

import raceproof
from raceproof import Scenario

DELAYS = {delays!r}
random.seed(1)  # at import, outside every run: the first run's global draws are 0 and 1


def delay(world, rng, name, options):
    if DELAYS in ("global", "reseeded"):
        return random.choice(options)
    if DELAYS == "instance":
        return rng.choice(options)
    return world.source.choose(name + ".delay", options)


def build(world, variant, config):
    if DELAYS == "reseeded":
        random.seed(2)  # the same values (0 and 1) every run: deterministic, still refused
    rng = random.Random(1)  # the model's own generator, made anew each run

    def actor(name, options):
        yield world.sleep(delay(world, rng, name, options))
        world.log(name, "done")

    world.spawn("a0", actor("a0", (0, 2)))  # even delays
    world.spawn("a1", actor("a1", (1, 3)))  # odd delays: never a tie, never a schedule draw


@raceproof.checker
def a0_first(history):
    done = history.of_kind("done")
    if done and done[0].actor != "a0":
        return raceproof.violated("a1 finished first", done[0].index)
    return None


raceproof.register(Scenario(
    name="tie-free", summary="two delays, " + DELAYS,
    variants={{"only": "as written"}}, expect_violation=frozenset(),
    checkers=(a0_first,), build=build,
))
"""


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), *argv]
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def tie_free(folder: Path, delays: str) -> str:
    path = folder / f"tie_free_{delays}.py"
    path.write_text(TIE_FREE.format(delays=delays))
    return str(path)


def assert_refused(done: subprocess.CompletedProcess[str], where: str) -> None:
    """Exit 4, one line on stderr: not deterministic, the global random module, where."""
    assert done.returncode == 4, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "the model is not deterministic: it used the global random module" in lines[0]
    assert where in lines[0], lines[0]
    assert "bug in raceproof" not in lines[0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_prove_refuses_global_random_when_its_one_run_drew_no_tie(
    tmp_path: Path, jobs: str
) -> None:
    """The case that slipped through: one run, no draw, a0 first. It said PROVEN, exit 0."""
    file = tie_free(tmp_path, "global")
    done = run(tmp_path, "prove", "tie-free", "--scenarios", file, "-j", jobs)
    assert_refused(done, "in a step at draw #0 (actor a0)")
    done = run(tmp_path, "prove", "tie-free", "--scenarios", file, "-j", jobs, "--json")
    assert done.returncode == 4 and json.loads(done.stdout)["verdict"] == "error", done.stdout
    checked = run(tmp_path, "check", "tie-free", "--scenarios", file, "-j", jobs)
    assert checked.returncode == 4, checked.stderr
    assert "check stopped at tie-free / only" in checked.stderr
    assert "it used the global random module in a step" in checked.stderr


def test_a_model_that_reseeds_global_random_each_run_is_refused_too(tmp_path: Path) -> None:
    """Each run then draws the same values; they are still no choices a proof walks."""
    file = tie_free(tmp_path, "reseeded")
    for jobs in ("1", "2"):
        done = run(tmp_path, "prove", "tie-free", "--scenarios", file, "-j", jobs)
        assert_refused(done, "while its world was built")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_its_own_generator_proves_ok_and_the_choice_source_finds_the_race(
    tmp_path: Path, jobs: str
) -> None:
    """No false alarm: ``random.Random(1)`` of the model's own is deterministic (ok, one
    run); drawn from ``world.source``, the delays are walked and a1 first is found."""
    done = run(
        tmp_path, "prove", "tie-free", "--scenarios", tie_free(tmp_path, "instance"), "-j", jobs
    )
    assert done.returncode == 0 and "PROVEN" in done.stdout, done.stdout + done.stderr
    done = run(
        tmp_path, "prove", "tie-free", "--scenarios", tie_free(tmp_path, "choices"), "-j", jobs
    )
    assert done.returncode == 1 and "a1 finished first" in done.stdout, done.stdout + done.stderr


# What a model may do with the global module, as a statement, and where it may do it.
USES = {
    "random": "random.random()",
    "choice": "random.choice((1, 2))",
    "shuffle": "random.shuffle([1, 2, 3])",
    "randint": "random.randint(1, 6)",
    "getrandbits": "random.getrandbits(8)",
    "seed": "random.seed(7)",
}
WHERES = {  # where the model uses it -> what the one line says of where
    "build": "while its world was built",
    "actor": "(actor w1)",
    "hook": "between two steps",
    "checker": "in a checker",
}

USING = """
import random

import raceproof
from raceproof.sim import always, checker, invariant_checker, ok, violated

WHERE = {where!r}


def use():
    {statement}


def writer(world, name, shared):
    yield world.sleep(world.source.choose(name + ".gap", (0, 1)))
    if WHERE == "actor" and name == "w1":
        use()
    shared["count"] += 1
    world.log(name, "write", count=shared["count"])


def build(world, variant, config):
    if WHERE == "build":
        use()
    shared = {{"count": 0}}

    def holds():
        if WHERE == "hook" and shared["count"] == 1:
            use()
        return True

    always(world, "counted", holds)
    for name in ("w0", "w1"):
        world.spawn(name, writer(world, name, shared))


@checker("two-writes")
def two_writes(history):
    if WHERE == "checker":
        use()
    return ok() if len(history.of_kind("write")) == 2 else violated("a write lost", 0)


raceproof.register(raceproof.Scenario(
    name={name!r}, summary="uses the global random module",
    variants={{"fixed": "holds, but for its use of random"}}, expect_violation=frozenset(),
    checkers=(two_writes, invariant_checker("counted")), build=build,
))
"""


def using_name(use: str, where: str) -> str:
    return f"uses-{use}-{where}"


@pytest.fixture(scope="module")
def using(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scenario file per use and place (a scenario name registers once per process)."""
    folder = tmp_path_factory.mktemp("using")
    for use, statement in USES.items():
        for where in WHERES:
            name = using_name(use, where)
            text = USING.format(statement=statement, where=where, name=name)
            (folder / f"{name.replace('-', '_')}.py").write_text(text)
    return folder


COMMANDS = (
    ("prove",),
    ("prove", "--no-reduction"),
    ("prove", "--no-state-cache"),
    ("explore", "--examples", "5"),
    ("explore", "--strategy", "pct", "--examples", "5"),
    ("repro", "--seed", "3"),
    ("check",),
)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    use=st.sampled_from(sorted(USES)),
    where=st.sampled_from(sorted(WHERES)),
    command=st.sampled_from(COMMANDS),
)
def test_any_use_of_the_global_module_anywhere_is_error_in_one_line(
    using: Path, capsys: pytest.CaptureFixture[str], use: str, where: str, command: tuple[str, ...]
) -> None:
    name = using_name(use, where)
    path = using / f"{name.replace('-', '_')}.py"
    code = main([command[0], name, *command[1:], "--scenarios", str(path)])
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if not line.startswith("[")]  # check's progress
    assert code == 4 and len(said) == 1, (command, code, out, err)
    assert "it used the global random module" in said[0] and WHERES[where] in said[0], said
    assert "Traceback" not in err and "bug in raceproof" not in err


def test_a_hypothesis_search_is_refused_too(
    using: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hypothesis seeds the global module before each example and puts it back after: the
    watch reads it inside the example, around the run."""
    for where in WHERES:
        name = using_name("choice", where)
        path = using / f"{name.replace('-', '_')}.py"
        argv = ["explore", name, "--strategy", "hypothesis", "--examples", "5"]
        code = main([*argv, "--scenarios", str(path)])
        _, err = capsys.readouterr()
        assert code == 4 and "it used the global random module" in err, (where, err)


def test_another_thread_drawing_from_the_global_module_is_no_use_of_the_models(
    using: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kazoo client's connection loop draws a jitter from the global module on every
    turn, in a thread of whatever process holds one (a user's pytest of real-ZooKeeper
    tests beside the fixture's gate). Such a thread changed the state under the runs of
    ``lost-update/fix-cas``, which never call it: its proof was refused (before the
    located re-run learned to tell the threads apart). It is ok; a model that does call
    it is still refused. The switch interval is shortened so that the thread's draws
    land inside runs (at the default 5 ms a proof of 15 ms saw 9 of them), and the test
    counts the located re-runs that cleared a change: at least one must have."""
    stop = threading.Event()
    cleared = [0]
    locate = global_random.located

    def counted(run: Any, world: Any) -> Any:
        used = locate(run, world)
        cleared[0] += used is None
        return used

    monkeypatch.setattr(global_random, "located", counted)

    def kazoo_like() -> None:
        while not stop.is_set():
            random.randint(1, 40)
            time.sleep(0.0001)

    interval = sys.getswitchinterval()
    thread = threading.Thread(target=kazoo_like, daemon=True)
    sys.setswitchinterval(0.0001)
    thread.start()
    try:
        code = main(["prove", "lost-update", "--variant", "fix-cas"])
        out, err = capsys.readouterr()
        assert code == 0 and "PROVEN" in out, out + err
        name = using_name("choice", "actor")
        path = using / f"{name.replace('-', '_')}.py"
        code = main(["prove", name, "--scenarios", str(path)])
        _, err = capsys.readouterr()
        assert code == 4 and "it used the global random module in a step" in err, err
        assert "(actor w1)" in err
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert cleared[0] > 0  # the thread's draws changed the state under some runs
