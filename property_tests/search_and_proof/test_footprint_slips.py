"""The footprint slips issue 24 lists, planted one at a time: the check must report each.

Each slip is planted in a small model where it makes a difference (two steps
the slipped footprint calls independent really are not): a queue take
recorded as a read, the end of a run (``World.finish``) that no longer
touches everything, a model's ``touch`` deleted, a lock release that records
nothing. For each, the reduced proof alone reports ``ok, complete`` while the
full walk finds the violation (except the finish slip: see below), and
``prove(check_footprints=True)`` stops with
``FootprintMismatch`` naming both steps. Without the slip the same models
pass the check and the reduced walk agrees with the full one.

Why the built-in models' proofs did not catch the same slips: at their proof
configurations the slips change nothing a run can observe (the dropped
``brooklin:leader`` touch skips 120 of 1,344 schedules of brooklin-double-stop
``fix-conditional-write``, and the reduced walk still reaches the same 423
endings; the other slips leave the walk unchanged), so there is nothing to
catch there; ``test_a_dropped_brooklin_touch_is_harmless_at_the_proof_configuration``
pins that.

The finish slip cannot make this kernel's reduced walk miss the finishing
order (a run that finishes is a schedule even with due steps asleep), but it
is still a wrong claim, and the check reports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from property_tests.soundness_slips import unrecorded
from raceproof.sim import Bounds, Budget, ChoiceSource, RunOutcome, World, execute, prove, violated
from raceproof.sim.checkers import CheckerResult, checker
from raceproof.sim.footprint_check import FootprintMismatch
from raceproof.sim.history import History
from raceproof.sim.outcome import Runner
from raceproof.sim.primitives import EventQueue, Lock
from raceproof.sim.world import ProcessGenerator

BOUNDS = Bounds(max_time_ms=10_000, max_steps=300)


def queue_take_recorded_as_read() -> contextlib.AbstractContextManager[None]:
    return unrecorded(EventQueue, "get", lambda queue: (queue.items, queue.getters))


@contextlib.contextmanager
def finish_touching_nothing() -> Iterator[None]:
    original = World.finish

    def finish(self: World, reason: str = "finished") -> None:
        self.finished = reason  # the slip: no touch_all

    World.finish = finish  # type: ignore[method-assign]
    try:
        yield
    finally:
        World.finish = original  # type: ignore[method-assign]


@contextlib.contextmanager
def touch_dropped(resource: str) -> Iterator[None]:
    original = World.touch

    def touch(self: World, name: str, write: bool = True) -> None:
        if name != resource:
            original(self, name, write)

    World.touch = touch  # type: ignore[method-assign]
    try:
        yield
    finally:
        World.touch = original  # type: ignore[method-assign]


def release_recording_nothing() -> contextlib.AbstractContextManager[None]:
    return unrecorded(Lock, "release")


@checker
def first_come_first_served(history: History) -> CheckerResult | None:
    """The model's claim (false): c1 always takes the first item (whichever take comes first does)."""
    for op in history.of_kind("took"):
        if op.actor == "c2" and op.get("item") == "a":
            return violated("c2 took the first item", op.index)
    return None


@checker
def audit_last(history: History) -> CheckerResult | None:
    """The auditor's round must be logged (it runs at the instant the workload finishes)."""
    if not history.of_kind("audited"):
        return violated("the audit never ran", len(history.ops) - 1)
    return None


@checker
def seen_written(history: History) -> CheckerResult | None:
    """A reader at the writer's instant must see the write (the model orders them by a flag)."""
    for op in history.of_kind("saw"):
        if op.get("value") != "written":
            return violated("the reader saw no write", op.index)
    return None


def queue_model(world: World) -> None:
    world.declare_footprints()
    queue = EventQueue(world, "work")

    def producer() -> ProcessGenerator:
        yield world.sleep(0)  # both items are queued before anyone takes one
        queue.put("a")
        queue.put("b")

    def consumer(name: str) -> ProcessGenerator:
        yield world.sleep(1)
        item = yield queue.get()
        world.log(name, "took", item=item)

    world.spawn("producer", producer())
    world.spawn("c1", consumer("c1"))
    world.spawn("c2", consumer("c2"))


def finish_model(world: World) -> None:
    world.declare_footprints()

    def workload() -> ProcessGenerator:
        yield world.sleep(5)
        world.finish()

    def auditor() -> ProcessGenerator:
        yield world.sleep(5)
        world.log("auditor", "audited")

    world.spawn("auditor", auditor())  # first: the boring order audits before the end
    world.spawn("workload", workload())


def touch_model(world: World) -> None:
    flag = {"value": None}  # a model's own state, named with world.touch

    def writer() -> ProcessGenerator:
        yield world.sleep(1)
        world.touch("model:flag")
        flag["value"] = "written"

    def reader() -> ProcessGenerator:
        yield world.sleep(1)
        world.touch("model:flag", write=False)
        if flag["value"] is not None:
            world.log("reader", "saw", value=flag["value"])
        else:  # the bug this model hides: the read may come first
            world.log("reader", "saw", value=None)

    world.declare_footprints()
    world.spawn("writer", writer())
    world.spawn("reader", reader())


def lock_model(world: World) -> None:
    world.declare_footprints()
    lock = Lock(world, "lease")
    lock.try_acquire("a")

    def holder() -> ProcessGenerator:
        yield world.sleep(1)
        lock.release("a")

    def contender() -> ProcessGenerator:
        yield world.sleep(1)
        world.log("b", "saw", value="written" if lock.try_acquire("b") else None)

    world.spawn("holder", holder())
    world.spawn("contender", contender())


Plant = Callable[[], contextlib.AbstractContextManager[None]]
Slip = tuple[Plant, Callable[[World], None], Callable[..., CheckerResult | None], tuple[str, str]]
SLIPS: dict[str, Slip] = {
    "queue take recorded as a read": (
        queue_take_recorded_as_read,
        queue_model,
        first_come_first_served,
        ("c1", "c2"),
    ),
    "finish touches nothing": (
        finish_touching_nothing,
        finish_model,
        audit_last,
        ("workload", "auditor"),
    ),
    "a model's touch deleted": (
        lambda: touch_dropped("model:flag"),
        touch_model,
        seen_written,
        ("writer", "reader"),
    ),
    "a lock release records nothing": (
        release_recording_nothing,
        lock_model,
        seen_written,
        ("holder", "contender"),
    ),
}


def runner(build: Callable[[World], None], check: Callable[..., CheckerResult | None]) -> Runner:
    def run(source: ChoiceSource) -> RunOutcome:
        return execute(build, source, [check], BOUNDS)

    return run


# "finish touches nothing" is left out: a run that finishes is a schedule even with its
# other due steps asleep, so the walk still takes the finishing order; the check catches it.
@pytest.mark.parametrize("slip", sorted(set(SLIPS) - {"finish touches nothing"}))
def test_the_slip_lets_a_reduced_proof_say_ok_where_the_full_walk_finds_the_violation(
    slip: str,
) -> None:
    plant, build, check, _ = SLIPS[slip]
    with plant():
        reduced = prove(runner(build, check), budget=Budget(examples=1_000))
        full = prove(runner(build, check), budget=Budget(examples=1_000), reduction=False)
    assert (reduced.verdict, reduced.complete) == ("ok", True)
    assert full.verdict == "violated"


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_the_footprint_check_reports_each_slip(slip: str) -> None:
    plant, build, check, (first, second) = SLIPS[slip]
    with plant(), pytest.raises(FootprintMismatch) as caught:
        prove(runner(build, check), budget=Budget(examples=1_000), check_footprints=True)
    message = str(caught.value)
    assert "does not commute" in message
    assert f"({first}," in message and f"({second}," in message


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_without_the_slip_the_check_passes_and_the_reduced_proof_finds_the_violation(
    slip: str,
) -> None:
    _, build, check, _ = SLIPS[slip]
    checked = prove(runner(build, check), budget=Budget(examples=1_000), check_footprints=True)
    assert checked.verdict == "violated"


def test_a_dropped_brooklin_touch_is_harmless_at_the_proof_configuration() -> None:
    """Why 300 runs of the check found nothing there: the slip skips schedules whose endings
    the reduced walk reaches anyway (120 of 1,344 skipped, the same 423 endings)."""
    from raceproof.scenarios import catalogue
    from raceproof.sim import exhaustive
    from raceproof.sim.state_cache import ending

    scenario = catalogue.get("brooklin-double-stop")
    endings: list[set[object]] = []
    counts = []
    for plant in (contextlib.nullcontext, lambda: touch_dropped("brooklin:leader")):
        seen: set[object] = set()
        original = exhaustive.prove

        def recording(
            run: Runner, seen: set[object] = seen, original: Any = original, **options: Any
        ) -> exhaustive.ProofReport:
            def record(source: ChoiceSource) -> RunOutcome:
                outcome = run(source)
                seen.add(ending(outcome, 0))
                return outcome

            return original(record, **options)  # type: ignore[no-any-return]

        with plant(), pytest.MonkeyPatch.context() as patch:
            patch.setattr("raceproof.scenarios.catalogue.prove", recording)
            report = scenario.prove(
                "fix-conditional-write", Budget(examples=5_000), state_cache=False
            )  # every ending of the walk is a run's (none cut at a state)
        assert report.complete and report.verdict == "ok"
        endings.append(seen)
        counts.append(report.schedules)
    assert counts[1] < counts[0]  # the slip does change the walk...
    assert endings[1] == endings[0]  # ...but loses no ending: nothing for the check to find


@pytest.mark.parametrize("slip", sorted(set(SLIPS) - {"finish touches nothing"}))
def test_the_cross_check_reports_each_slip_that_hides_a_violation(slip: str) -> None:
    from raceproof.sim.cross_check import cross_check

    plant, build, check, _ = SLIPS[slip]
    with plant(), pytest.raises(FootprintMismatch, match="the full walk finds violated"):
        cross_check(runner(build, check), budget=Budget(examples=1_000))


@checker
def nothing(history: History) -> CheckerResult | None:
    return None


def test_the_cross_check_reports_a_final_state_the_reduced_walk_skips() -> None:
    """No checker at all: the slip shows as an ending (an op) only the full walk reaches."""
    from raceproof.sim.cross_check import cross_check

    with touch_dropped("model:flag"), pytest.raises(FootprintMismatch) as caught:
        cross_check(runner(touch_model, nothing), budget=Budget(examples=1_000))
    assert "1 final state(s)" in str(caught.value) and "reader saw" in str(caught.value)


def test_the_cross_check_passes_a_sound_reduction_and_counts_the_full_walk() -> None:
    from property_tests.zombie_model import ZombieConfig
    from property_tests.zombie_model import runner as zombie

    config = ZombieConfig(
        pause_ms=(0, 200, 300), notice_ms=(0, 50), feed_ms=50, feeds=8, watch=True
    )
    from raceproof.sim.cross_check import cross_check

    report = cross_check(zombie("fix", config), budget=Budget(examples=5_000))
    assert report.complete and report.verdict == "ok"
    assert report.cross_checked is not None and report.cross_checked > report.schedules
    capped = cross_check(zombie("fix", config), budget=Budget(examples=300))
    assert capped.cross_checked is None  # the full walk did not complete: nothing claimed


def test_prove_cross_check_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad footprint's exit 2 is shared with --check-footprints (FootprintMismatch)."""
    from raceproof.cli.main import main

    argv = ["prove", "lost-update", "--variant", "fix-cas", "--cross-check", "--json"]
    assert main(argv) == 0
    assert '"cross_checked": ' in capsys.readouterr().out
