"""The speed work's own guards: the World's bookkeeping beside ``_due``, swarm testing, the bench.

The kernel looks for "events nobody waits on" among the due events only when
one may be there (``World._scan_waiters``); properties drive random actors that
sleep, race timeouts, interrupt each other and cancel timers, and check that
the flag is on whenever an unwaited event is due and that gating the scan
changes no run against a World that scans on every step. Swarm testing (``SwarmSource``) must replay and shrink like
any search and find what random finds, without reporting a fixed variant.
The bench's alternation is a pure function and is checked as one.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.measure.bench import alternate, spread
from raceproof.scenarios.catalogue import get
from raceproof.sim import (
    Bounds,
    Budget,
    RandomSource,
    ReplaySource,
    SwarmSource,
    World,
    deviations,
    explore,
)

SCENARIO = get("lost-update")
BUGGY = SCENARIO.runner("buggy", SCENARIO.config)
FIXED = SCENARIO.runner("fix-cas", SCENARIO.config)


class _AlwaysScanning(World):
    """The World before the scan was gated: it looks for an unwaited due event on every step."""

    def step(self) -> None:
        self._scan_waiters = True
        super().step()


def _busy_world(seed: int, actors: int, kind: type[World] = World) -> World:
    """Actors that sleep, race two timeouts (a condition), interrupt each other, cancel timers."""
    world = kind(RandomSource(seed), Bounds(max_time_ms=10_000, max_steps=100_000))
    processes: list[simpy.Process] = []
    timers: list[simpy.Event] = []

    def actor(index: int) -> Generator[Any, Any, None]:
        name = f"a{index}"
        for step in range(6):
            try:
                timer = world.sleep((index + step) % 3)
                timers.append(timer)
                if step % 3 == 1:  # the losing timeout loses its only callback
                    yield timer | world.sleep((index * 3 + step) % 4)
                else:
                    yield timer
                world.log(name, "woke", step=step)
            except simpy.Interrupt:
                world.log(name, "interrupted", step=step)
            other = processes[(index + step) % len(processes)]
            if step % 2 and other.is_alive and other is not world.active_process:
                other.interrupt("nudge")
            if step == 3 and timers:
                world.unschedule(timers[(index * 5) % len(timers)], resource="timer")

    for index in range(actors):
        processes.append(world.spawn(f"a{index}", actor(index)))
    return world


def _steps(world: World) -> Generator[World, None, None]:
    while True:
        try:
            world.step()
        except simpy.core.EmptySchedule:
            return
        yield world


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), actors=st.integers(1, 8))
def test_the_scan_for_unwaited_events_is_on_whenever_one_is_due(seed: int, actors: int) -> None:
    for world in _steps(_busy_world(seed, actors)):
        unwaited = [entry for entry in world._due if not entry[3].callbacks]
        assert world._scan_waiters or not unwaited, "an unwaited event is due, unscanned"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), actors=st.integers(2, 8))
def test_gating_the_scan_changes_no_run(seed: int, actors: int) -> None:
    gated, always = _busy_world(seed, actors), _busy_world(seed, actors, _AlwaysScanning)
    assert sum(1 for _ in _steps(gated)) == sum(1 for _ in _steps(always)) > 0
    assert gated.history.trace_hash() == always.history.trace_hash()
    assert gated.source.record == always.source.record


def test_the_busy_world_has_unwaited_due_events_to_find() -> None:
    # The properties above mean something only if the workload puts unwaited events in ``_due``.
    found = sum(
        any(not entry[3].callbacks for entry in world._due)
        for seed in range(20)
        for world in _steps(_busy_world(seed, 6))
    )
    assert found > 0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**64 - 1))
def test_a_swarm_run_replays_from_its_record(seed: int) -> None:
    source = SwarmSource(seed)
    outcome = BUGGY(source)
    again = BUGGY(ReplaySource(outcome.choices, strict=True))
    assert again.trace_hash == outcome.trace_hash
    # Every disabled kind took the boring option; the enabled set is the seed's alone.
    for choice in outcome.choices:
        if not source.enabled(choice.label):
            assert choice.value == 0
    assert SwarmSource(seed).kinds == {} and BUGGY(SwarmSource(seed)).trace_hash == (
        outcome.trace_hash
    )


def test_swarm_disables_some_kinds_and_enables_others_across_seeds() -> None:
    seen: dict[str, set[bool]] = {}
    for seed in range(40):
        source = SwarmSource(seed)
        BUGGY(source)
        for kind, on in source.kinds.items():
            seen.setdefault(kind, set()).add(on)
    assert seen and all(states == {True, False} for states in seen.values())


def test_swarm_finds_and_shrinks_the_lost_update_and_passes_the_fix() -> None:
    report = explore(BUGGY, "swarm", seed=1, budget=Budget(examples=500))
    assert report.verdict == "violated" and report.strategy == "swarm"
    assert report.shrunk is not None and deviations(report.shrunk.values) == 1
    again = BUGGY(ReplaySource(report.shrunk.choices, strict=True))
    assert again.trace_hash == report.shrunk.trace_hash
    fixed = explore(FIXED, "swarm", seed=1, budget=Budget(examples=300))
    assert fixed.verdict == "ok" and fixed.examples == 300


def test_a_swarm_search_is_a_function_of_its_seed() -> None:
    first = explore(BUGGY, "swarm", seed=4, budget=Budget(examples=200))
    second = explore(BUGGY, "swarm", seed=4, budget=Budget(examples=200))
    assert first.examples == second.examples
    assert first.shrunk is not None and second.shrunk is not None
    assert first.shrunk.trace_hash == second.shrunk.trace_hash


@given(rounds=st.integers(1, 6), measures=st.integers(1, 4))
def test_alternate_rotates_who_goes_first_and_keeps_one_figure_per_round(
    rounds: int, measures: int
) -> None:
    calls: list[int] = []

    def measure(index: int) -> Any:
        return lambda: calls.append(index) or float(len(calls))

    figures = alternate(rounds, *[measure(i) for i in range(measures)])
    assert [len(f) for f in figures] == [rounds] * measures
    for round_index in range(rounds):
        order = calls[round_index * measures : (round_index + 1) * measures]
        assert order[0] == round_index % measures and sorted(order) == list(range(measures))


def test_warm_up_runs_each_measure_once_unrecorded() -> None:
    calls: list[str] = []
    (figures,) = alternate(2, lambda: calls.append("x") or 1.0, warm_up=True)
    assert len(calls) == 3 and figures == [1.0, 1.0]


@pytest.mark.parametrize(
    ("values", "median", "low", "high"), [([3.0], 3.0, 3.0, 3.0), ([1.0, 9.0, 2.0], 2.0, 1.0, 9.0)]
)
def test_spread_is_the_median_and_the_range(
    values: list[float], median: float, low: float, high: float
) -> None:
    figure = spread(values)
    assert figure["median"] == median and figure["range"] == [low, high]


@pytest.mark.parametrize("variant", ["fix-cas", "buggy"])
@pytest.mark.parametrize("in_process_runs", [0, 10, 10_000])
def test_a_proof_walks_the_same_shards_in_process_or_on_the_pool(
    variant: str, in_process_runs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raceproof.sim import proof_units

    pool = SCENARIO.prove(variant, Budget(1_000_000), jobs=2, state_cache=False)
    monkeypatch.setattr(proof_units, "IN_PROCESS_RUNS", in_process_runs)
    here = SCENARIO.prove(variant, Budget(1_000_000), jobs=2, state_cache=False)
    sequential = SCENARIO.prove(variant, Budget(1_000_000), jobs=1, state_cache=False)
    assert (here.verdict, here.schedules, here.runs, here.shards) == (
        pool.verdict,
        pool.schedules,
        pool.runs,
        pool.shards,
    )
    assert here.verdict == sequential.verdict
    if variant == "fix-cas":  # a sequential proof stops at its first violation, shards do not
        assert here.schedules == sequential.schedules
    assert here.verdict == ("violated" if variant == "buggy" else "ok")


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(2, 300))
def test_hypothesis_draws_integers_directly_up_to_128_options_and_in_range(
    data: st.DataObject, n: int
) -> None:
    from raceproof.sim import HypothesisSource

    source = HypothesisSource(data)
    assert source._integer is not None  # the direct draw is live on this Hypothesis
    value = source.draw_int("x", 0, n - 1)
    assert 0 <= value < n and source.record[-1] == ("x", n, value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.tuples(inner, inner)
    ),
    max_leaves=20,
)


def _mutable_parts(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(part for item in value.values() for part in _mutable_parts(item))]
    if isinstance(value, list | tuple):
        own = [value] if isinstance(value, list) else []
        return own + [part for item in value for part in _mutable_parts(item)]
    return []


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_the_stores_json_copy_is_a_deep_copy(value: Any) -> None:
    import copy

    from raceproof.sim.history import copy_json

    copied = copy_json(value)
    assert copied == copy.deepcopy(value) and type(copied) is type(value)
    # No dict or list of the copy is one of the original's: the store cannot be aliased.
    originals = {id(part) for part in _mutable_parts(value)}
    assert not any(id(part) in originals for part in _mutable_parts(copied))


def _stop_first(world: World) -> None:
    for name in ("leader", "stop-task2", "other"):
        world.spawn(name, lambda name=name: world.log(name, "ran"), interleave=True)


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis", "swarm"])
def test_a_search_names_deviations_only_in_the_run_it_reports(strategy: str) -> None:
    from raceproof.sim import checker, execute, violated

    @checker
    def leader_first(history: Any) -> Any:
        ran = [op.actor for op in history.of_kind("ran")]
        return violated("the stop task ran first", 0) if ran[0] == "stop-task2" else None

    report = explore(
        lambda source: execute(_stop_first, source, [leader_first]),
        strategy,
        1,
        Budget(examples=200),
    )
    assert report.found is not None and report.shrunk is not None
    # The search's own run drew the deviation without naming it ...
    assert not report.found.actors_named and report.found.overtaken == {}
    # ... and the reported run, replayed, names who ran and whom it overtook.
    assert report.shrunk.actors_named
    assert list(report.shrunk.overtaken.values()) == [("stop-task2", "leader")]
