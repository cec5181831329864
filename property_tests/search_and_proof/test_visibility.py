"""What observes the states between steps is visible to the reduction (issue 33 item 1).

The issue's model: ``always(world, "never-both-on", lambda: not (p.on and q.on))`` over two
``world.shared.record``s and two actors that each set their flag and clear it after a
``sleep(0)``. The reduced proof used to say ``ok, complete`` after one schedule where the full
walk finds the violation: the two flag steps commute on the final state, not for the
invariant. Pinned here both ways (the buggy model's proof violates, a fixed model's proof holds
and is complete), through the kernel and through ``raceproof prove`` on a user's scenario file;
an invariant reading untracked state and a checker reading op order are named by
``--check-footprints``, and a checker marked ``reads_op_order`` is proven soundly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from raceproof.sim import (
    Budget,
    CheckerResult,
    ChoiceSource,
    History,
    Lock,
    RunOutcome,
    World,
    always,
    checker,
    execute,
    invariant_checker,
    prove,
    reads_op_order,
    violated,
)
from raceproof.sim.footprint_check import FootprintMismatch
from raceproof.sim.outcome import Runner
from raceproof.sim.world import ProcessGenerator

NEVER_BOTH = invariant_checker("never-both-on")


def never_both_on(world: World, *, fixed: bool = False) -> None:
    """Item 1's model; ``fixed``: each actor holds a lock while its flag is on."""
    p = world.shared.record("p", on=False)
    q = world.shared.record("q", on=False)
    lock = Lock(world, "flag")
    always(world, "never-both-on", lambda: not (p.on and q.on))

    def actor(name: str, flag: object, late: bool) -> Callable[[], ProcessGenerator]:
        def body() -> ProcessGenerator:
            if late:  # b starts one tie later: the FIFO schedule runs a's on/off first
                yield world.sleep(0)
            while fixed and name in "ab" and not lock.try_acquire(name):
                yield world.sleep(1)
            flag.on = True  # type: ignore[attr-defined]
            yield world.sleep(0)
            flag.on = False  # type: ignore[attr-defined]
            if fixed and name in "ab":
                lock.release(name)

        return body

    world.spawn("a", actor("a", p, False), interleave=True)
    world.spawn("b", actor("b", q, True), interleave=True)
    for name in ("c", "d") if fixed else ():  # bystanders: they write what no invariant reads
        world.spawn(name, actor(name, world.shared.record(name, on=False), False), interleave=True)


def runner(build: Callable[[World], None], *checkers: Callable[[History], CheckerResult]) -> Runner:
    def run(source: ChoiceSource) -> RunOutcome:
        return execute(build, source, list(checkers) or [NEVER_BOTH])

    return run


def test_the_reduced_proof_finds_the_invariant_violation_the_full_walk_finds() -> None:
    run = runner(never_both_on)
    reduced = prove(run, budget=Budget(examples=1_000))
    full = prove(run, budget=Budget(examples=1_000), reduction=False)
    assert (reduced.verdict, full.verdict) == ("violated", "violated")
    assert reduced.shrunk is not None and reduced.shrunk.violation is not None
    assert reduced.shrunk.violation.checker == "never-both-on"


def test_the_fixed_model_is_proven_and_the_reduction_still_skips_work() -> None:
    run = runner(lambda world: never_both_on(world, fixed=True))
    reduced = prove(run, budget=Budget(examples=5_000))
    full = prove(run, budget=Budget(examples=5_000), reduction=False)
    assert (reduced.verdict, reduced.complete) == ("ok", True)
    assert (full.verdict, full.complete) == ("ok", True)
    assert reduced.schedules < full.schedules


def test_the_footprint_check_passes_the_invariant_it_used_to_blame() -> None:
    checked = prove(runner(never_both_on), budget=Budget(examples=1_000), check_footprints=True)
    assert checked.verdict == "violated"
    fixed = prove(
        runner(lambda world: never_both_on(world, fixed=True)),
        budget=Budget(examples=5_000),
        check_footprints=True,
    )
    assert fixed.verdict == "ok" and fixed.footprints_checked


def untracked_invariant(world: World) -> None:
    """The predicate reads a plain dict the actors write beside their own touches."""
    flags = {"a": False, "b": False}
    always(world, "never-both-on", lambda: not (flags["a"] and flags["b"]))

    def actor(name: str, late: bool) -> Callable[[], ProcessGenerator]:
        def body() -> ProcessGenerator:
            if late:
                yield world.sleep(0)
            world.touch(f"model:{name}")
            flags[name] = True
            yield world.sleep(0)
            world.touch(f"model:{name}")
            flags[name] = False

        return body

    world.declare_footprints()
    world.spawn("a", actor("a", False), interleave=True)
    world.spawn("b", actor("b", True), interleave=True)


def test_the_footprint_check_names_an_invariant_that_reads_untracked_state() -> None:
    with pytest.raises(FootprintMismatch) as caught:
        prove(runner(untracked_invariant), budget=Budget(examples=1_000), check_footprints=True)
    message = str(caught.value)
    assert "the invariant 'never-both-on'" in message and "no footprint records" in message


@checker
def a_logs_first(history: History) -> CheckerResult | None:
    """Reads the order of two actors' ops at one instant: b's op must never come first."""
    took = history.of_kind("took")
    if took and took[0].actor == "b":
        return violated("b logged first", took[0].index)
    return None


def two_loggers(world: World) -> None:
    world.declare_footprints()
    for name in ("a", "b"):
        world.spawn(name, lambda name=name: world.log(name, "took"), interleave=True)


def test_a_checker_reading_op_order_is_named_unless_marked_and_proven_when_marked() -> None:
    unmarked = runner(two_loggers, a_logs_first)
    assert prove(unmarked, budget=Budget(examples=100)).verdict == "ok"  # the unsound claim
    assert prove(unmarked, budget=Budget(examples=100), reduction=False).verdict == "violated"
    with pytest.raises(FootprintMismatch, match=r"reads the order of ops.*reads_op_order"):
        prove(unmarked, budget=Budget(examples=100), check_footprints=True)
    marked = runner(two_loggers, reads_op_order(a_logs_first))
    assert prove(marked, budget=Budget(examples=100)).verdict == "violated"
    assert prove(marked, budget=Budget(examples=100), check_footprints=True).verdict == "violated"


def test_every_invariant_is_checked_when_one_of_them_stops() -> None:
    """The first invariant's violation removes its hook; the second is still checked then."""

    def build(world: World) -> None:
        flag = world.shared.record("flag", on=False)
        always(world, "first", lambda: not flag.on)
        always(world, "second", lambda: not flag.on)
        world.spawn("setter", lambda: setattr(flag, "on", True))

    outcome = runner(build, invariant_checker("first"), invariant_checker("second"))(ChoiceSource())
    assert [v.status for v in outcome.verdicts] == ["violated", "violated"]


SCENARIO_FILE = """
import raceproof
from raceproof import Scenario, World, always, invariant_checker


def build(world: World, variant: str, config: object) -> None:
    p = world.shared.record("p", on=False)
    q = world.shared.record("q", on=False)
    lock = raceproof.Lock(world, "flag")
    always(world, "never-both-on", lambda: not (p.on and q.on))

    def actor(name, flag, late):
        def body():
            if late:
                yield world.sleep(0)
            while variant == "fix-lock" and not lock.try_acquire(name):
                yield world.sleep(1)
            flag.on = True
            yield world.sleep(0)
            flag.on = False
            if variant == "fix-lock":
                lock.release(name)
        return body

    world.spawn("a", actor("a", p, False), interleave=True)
    world.spawn("b", actor("b", q, True), interleave=True)


raceproof.register(
    Scenario(
        name="never-both-on",
        summary="two flags that must never be on together",
        variants={"buggy": "no lock", "fix-lock": "a lock around each flag"},
        expect_violation=frozenset({"buggy"}),
        checkers=(invariant_checker("never-both-on"),),
        build=build,
    )
)
"""


@pytest.mark.parametrize(
    ("variant", "code", "verdict"), [("buggy", 1, "violated"), ("fix-lock", 0, "ok")]
)
def test_raceproof_prove_on_the_issue_scenario(
    tmp_path: Path, variant: str, code: int, verdict: str
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'flags'\n")
    (tmp_path / "flags.py").write_text(textwrap.dedent(SCENARIO_FILE))
    command = [
        str(Path(sys.executable).parent / "raceproof"),
        "prove",
        "never-both-on",
        "--scenarios",
        "flags.py",
        "--variant",
        variant,
        "--check-footprints",
        "--json",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == code, done.stdout + done.stderr
    assert json.loads(done.stdout)["verdict"] == verdict
