"""The walk's caps, the sleep-set source's commuting instants and the state fingerprint, by hand.

``test_proof_parts.py`` checks these parts on toy models; a full mutation run
(docs/maintaining/mutation.md) still found changes they let through: a cap that prunes
one option too many or reports a zero-sized prune, a commuting instant whose
same-process steps were judged by the wrong process name (an actor may have
an ``@`` in its name), an instant closed over a step with no footprint, and a
fingerprint that depended on the absolute time. Each case below is small
enough to work out by hand, and the expected values are that working.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import pytest

from property_tests.search_and_proof.test_proof_parts import SAMPLE
from property_tests.toy_model import Toy, final_of, runner
from raceproof.sim import Budget, RunOutcome, World, execute, prove
from raceproof.sim.enumeration import Walk
from raceproof.sim.proof_plan import split
from raceproof.sim.reduction import SleepSetSource
from raceproof.sim.state_cache import kernel_fingerprint
from raceproof.sim.world import Bounds, SleepBlocked


# -- the walk's caps -------------------------------------------------------------------
def _two_draws(source: Any) -> RunOutcome:
    """A model of two draws, of three options and then two: six schedules in all."""

    def build(world: World) -> None:
        world.log(
            "m", "drew", a=world.source.choose("a", (0, 1, 2)), b=world.source.choose("b", (0, 1))
        )

    return execute(build, source, [])


def _walk(max_deviations: int | None, max_branch: int | None) -> tuple[list[tuple], list[tuple]]:
    pruned: list[tuple[str, int]] = []
    walk = Walk(
        _two_draws, max_deviations, max_branch, lambda bound, count: pruned.append((bound, count))
    )
    runs = [(tuple(outcome.values), depth) for outcome, depth in walk]
    return runs, pruned


def test_an_uncapped_walk_runs_every_schedule_breadth_first() -> None:
    runs, pruned = _walk(None, None)
    assert runs == [((0, 0), 0), ((1, 0), 1), ((2, 0), 1), ((0, 1), 1), ((1, 1), 2), ((2, 1), 2)]
    assert pruned == []


def test_a_deviation_cap_prunes_what_lies_past_it_and_counts_each_draw() -> None:
    runs, pruned = _walk(1, None)
    assert runs == [((0, 0), 0), ((1, 0), 1), ((2, 0), 1), ((0, 1), 1)]
    assert pruned == [("max_deviations", 1), ("max_deviations", 1)]
    runs, pruned = _walk(0, None)
    assert runs == [((0, 0), 0)]
    assert pruned == [("max_deviations", 2), ("max_deviations", 1)]  # every draw, not the first


def test_a_branch_cap_keeps_the_first_options_and_counts_the_rest() -> None:
    runs, pruned = _walk(None, 2)
    assert runs == [((0, 0), 0), ((1, 0), 1), ((0, 1), 1), ((1, 1), 2)]
    assert pruned == [("max_branch", 1)]  # the draw of two options is within the cap: no prune
    runs, pruned = _walk(0, 1)
    assert runs == [((0, 0), 0)]
    assert pruned == [("max_branch", 2), ("max_branch", 1)]  # nothing left for the other cap


# -- commuting instants, driven by hand -------------------------------------------------
@dataclass
class _Clock:
    """What the source reads of the world: the time, and that no state is declared."""

    now_ms: int = 5
    state_fingerprint: None = None


def _step(source: SleepSetSource, key: str, footprint: dict[str, bool] | None) -> None:
    source.before_step(key)
    source.after_step(key, footprint)


def test_steps_of_one_process_keep_their_order_so_an_instant_of_them_commutes() -> None:
    source = SleepSetSource((), None, reduce=True)
    clock = _Clock()
    assert source.schedule_steps(["/a#0@1", "/b#1@0"], clock) == 0  # type: ignore[arg-type]
    _step(source, "/a#0@1", {"r": True})
    assert source.schedule_steps(["/b#1@0", "/a#0@2"], clock) == 0  # type: ignore[arg-type]
    _step(source, "/b#1@0", {"s": True})
    _step(source, "/a#0@2", {"r": True})  # a's second step writes r again: same process
    clock.now_ms = 10
    _step(source, "/c#2@0", {})  # time moved on: the instant at 5 ms is closed
    assert [draw.commutes for draw in source.draws] == [True, True]
    assert [choice.label for choice in source.record] == ["schedule", "schedule"]


def test_an_at_sign_in_an_actor_name_does_not_merge_two_processes() -> None:
    source = SleepSetSource((), None, reduce=True)
    clock = _Clock()
    source.schedule_steps(["/w@h1#0@1", "/w@h2#1@1"], clock)  # type: ignore[arg-type]
    _step(source, "/w@h1#0@1", {"r": True})
    _step(source, "/w@h2#1@1", {"r": True})  # another process writes r: they do not commute
    clock.now_ms = 10
    _step(source, "/c#2@0", {})
    assert [draw.commutes for draw in source.draws] == [False]


def test_an_instant_commutes_only_from_where_its_rest_does() -> None:
    source = SleepSetSource((), None, reduce=True)
    clock = _Clock()
    source.schedule_steps(["/a#0@1", "/b#1@1", "/c#2@1"], clock)  # type: ignore[arg-type]
    _step(source, "/a#0@1", {"r": True})
    source.schedule_steps(["/b#1@1", "/c#2@1"], clock)  # type: ignore[arg-type]
    _step(source, "/b#1@1", {"r": False})  # depends on a's write
    _step(source, "/c#2@1", {"s": True})
    clock.now_ms = 10
    _step(source, "/d#3@0", {})
    assert [draw.commutes for draw in source.draws] == [False, True]

    source = SleepSetSource((), None, reduce=True)
    clock = _Clock()
    source.schedule_steps(["/a#0@1", "/b#1@1"], clock)  # type: ignore[arg-type]
    _step(source, "/a#0@1", {"r": True})
    _step(source, "/b#1@1", None)  # its last step touched everything: nothing commutes
    clock.now_ms = 10
    _step(source, "/d#3@0", {})
    assert [draw.commutes for draw in source.draws] == [False]

    source = SleepSetSource((), None, reduce=True)
    clock = _Clock()
    source.schedule_steps(["/a#0@1", "/b#1@1"], clock)  # type: ignore[arg-type]
    _step(source, "/a#0@1", {"r": True})
    source.before_step("/b#1@1")
    source.choose("b.delay", (0, 5))  # its last step drew a choice: its order matters
    source.after_step("/b#1@1", {"s": True})
    clock.now_ms = 10
    _step(source, "/d#3@0", {})
    assert [draw.commutes for draw in source.draws if draw.keys] == [False]


def test_the_steps_after_one_that_touched_everything_can_still_commute() -> None:
    source = SleepSetSource((), None, reduce=True)
    clock = _Clock()
    source.schedule_steps(["/a#0@1", "/b#1@1", "/c#2@1"], clock)  # type: ignore[arg-type]
    _step(source, "/a#0@1", None)  # touched everything: the instant cannot commute from here
    source.schedule_steps(["/b#1@1", "/c#2@1"], clock)  # type: ignore[arg-type]
    _step(source, "/b#1@1", {"s": True})
    _step(source, "/c#2@1", {"t": True})  # but b and c commute: the second draw is marked
    clock.now_ms = 10
    _step(source, "/d#3@0", {})
    assert [draw.commutes for draw in source.draws] == [False, True]


def test_a_step_outside_any_draw_is_not_charged_to_one() -> None:
    source = SleepSetSource((), None, reduce=True)
    assert source.choose("setup", (1, 2)) == 1  # drawn while building: no step is running
    assert source.draw_step == {}
    source.schedule_steps(["/a#0@0", "/b#1@0"])
    _step(source, "/a#0@0", {"r": True})
    source.before_step("/b#1@0")  # the only step due: run without a draw
    source.choose("b.delay", (0, 5))
    source.after_step("/b#1@0", {"s": True})
    assert source.draw_step == {} and source.step_footprints == {1: {"r": True}}


def test_a_replayed_value_at_or_past_the_options_is_the_first_and_a_full_sleep_set_cuts() -> None:
    source = SleepSetSource((2,), {"/b#1@0": {"r": True}}, reduce=True)
    assert source.schedule_steps(["/a#0@0", "/b#1@0"]) == 0  # 2 of two options: out of range
    _step(source, "/a#0@0", {"s": True})
    with pytest.raises(SleepBlocked, match=r"^every step due now is asleep$"):
        source.schedule_steps(["/b#1@0"])
    with pytest.raises(SleepBlocked, match=r"^step /b#1@0 is asleep$"):
        source.before_step("/b#1@0")


# -- the state fingerprint ----------------------------------------------------------------
def _sleeper(world: World, first_ms: int, then_ms: int) -> Generator[Any, Any, None]:
    yield world.sleep(first_ms)
    yield world.sleep(then_ms)


def _world_at(first_ms: int, then_ms: int, bare_ms: int | None = None) -> World:
    world = World(SleepSetSource((), None, reduce=True))
    world.declare_footprints()
    if bare_ms is not None:
        world.timeout(bare_ms)  # nobody waits on it
    world.spawn("p", _sleeper(world, first_ms, then_ms))
    world.step()  # p starts and sleeps
    while world.now_ms < first_ms or world.peek() == first_ms:
        world.step()
    return world


def test_a_fingerprint_sees_pending_events_relative_to_now_and_ignores_bare_ones() -> None:
    def model() -> str:
        return "m"

    at_3, at_4 = _world_at(3, 5), _world_at(4, 5)
    assert (at_3.now_ms, at_4.now_ms) == (3, 4)
    assert kernel_fingerprint(at_3, model) == kernel_fingerprint(at_4, model)  # both: p wakes in 5
    assert kernel_fingerprint(at_3, model) != kernel_fingerprint(_world_at(3, 6), model)
    with_bare = _world_at(3, 5, bare_ms=4)
    assert kernel_fingerprint(with_bare, model) == kernel_fingerprint(at_3, model)
    assert kernel_fingerprint(with_bare, model) != kernel_fingerprint(_world_at(3, 6, 4), model)
    assert len(kernel_fingerprint(at_3, model) or "") == 32


def test_a_sibling_sleeps_on_a_steps_footprint_only_if_it_finished_without_drawing() -> None:
    source = SleepSetSource((), None, reduce=True)
    source.schedule_steps(["/a#0@0", "/b#1@0"])
    _step(source, "/a#0@0", {"r": True})  # position 0: finished, drew nothing
    source.schedule_steps(["/b#1@0", "/c#2@0"])
    source.before_step("/b#1@0")
    source.choose("b.delay", (0, 5))
    source.after_step("/b#1@0", {"s": True})  # position 1: drew a choice
    source.schedule_steps(["/c#2@0", "/d#3@0"])  # position 3 (2 is b's draw): never finished
    assert source.remembered_footprint(0) == {"r": True}
    assert source.remembered_footprint(1) is None
    assert source.remembered_footprint(3) is None


def test_a_violation_reports_what_a_budget_of_as_many_runs_reports() -> None:
    """The walk is the same up to the violating run, so every count must be too."""
    run = runner(Toy(SAMPLE))
    finals: list[str] = []

    def recording(source: Any) -> RunOutcome:
        outcome = run(source)
        finals.append(final_of(outcome))
        return outcome

    prove(recording, budget=Budget(), reduction=True, max_deviations=2)
    late = finals[-1]  # a final state reached only late in the reduced walk
    assert finals.index(late) > 2
    found = prove(
        runner(Toy(SAMPLE, planted=late)), budget=Budget(), reduction=True, max_deviations=2
    )
    cut = prove(run, budget=Budget(examples=found.runs), reduction=True, max_deviations=2)
    assert found.verdict == "violated" and cut.verdict == "inconclusive"
    assert found.complete is False and cut.complete is False
    assert (found.runs, found.schedules, found.max_deviations_seen, found.frontier_left) == (
        cut.runs,
        cut.schedules,
        cut.max_deviations_seen,
        cut.frontier_left,
    )
    assert (found.skipped_equivalent, found.sleep_blocked, found.reduction) == (
        cut.skipped_equivalent,
        cut.sleep_blocked,
        True,
    )
    assert found.skipped_equivalent > 0 and found.max_deviations_seen == 2
    assert {**found.pruned, "budget": cut.frontier_left} == cut.pruned and found.pruned


@pytest.mark.parametrize("reduction", [True, False])
@pytest.mark.parametrize("case", ["ok", "violated", "bound"])
def test_a_splits_first_report_counts_what_one_run_of_the_walk_counts(
    reduction: bool, case: str
) -> None:
    toy, bounds = Toy(SAMPLE), Bounds(max_time_ms=10, max_steps=10_000)
    if case == "violated":  # the FIFO run's own final state: the first run violates
        toy = Toy(SAMPLE, planted=final_of(runner(toy)(SleepSetSource((), None, reduce=False))))
    elif case == "bound":
        bounds = Bounds(max_time_ms=10, max_steps=3)
    run = runner(toy, bounds)
    _, first = split(run, reduction=reduction, max_deviations=2, max_branch=2)
    one = prove(run, budget=Budget(examples=1), reduction=reduction, max_deviations=2, max_branch=2)
    # A budget of one run leaves the rest unwalked ("inconclusive"); the split hands it to shards.
    assert first.verdict == ("violated" if case == "violated" else "ok")
    assert (first.schedules, first.runs, first.max_deviations_seen) == (
        one.schedules,
        one.runs,
        one.max_deviations_seen,
    )
    assert first.schedules == (0 if case == "bound" else 1)
    assert (first.reduction, first.skipped_equivalent) == (reduction, one.skipped_equivalent)
    assert first.pruned == {k: v for k, v in one.pruned.items() if k != "budget"}
    assert (first.found is not None) == (case == "violated")
    if case != "bound":
        assert first.pruned.get("max_branch", 0) > 0
        shards, fifo_only = split(run, reduction=reduction, max_deviations=0)
        assert shards == [] and fifo_only.pruned.get("max_deviations", 0) > 0
    assert split(run)[1].reduction is True  # the reduction is on unless turned off
