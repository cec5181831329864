"""The World: SimPy order as choice 0, ties as choices, integer time, bounds, crashes."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
import simpy

from raceproof.sim import (
    Bounds,
    RandomSource,
    ReplayMisaligned,
    ReplaySource,
    World,
    checker,
    execute,
    ok,
)
from raceproof.sim.history import History


def _three_actors(env: simpy.Environment, trace: list[tuple[int, str]]) -> None:
    """Three actors whose wake-ups coincide at t=0, 2 and 4."""

    def actor(name: str, delays: list[int]) -> Generator[Any, Any, None]:
        trace.append((int(env.now), f"{name} start"))
        for delay in delays:
            yield env.timeout(delay)
            trace.append((int(env.now), f"{name} woke"))

    plan = {"a": [2, 2], "b": [2, 2], "c": [4]}
    for name, delays in plan.items():
        if isinstance(env, World):
            env.spawn(name, actor(name, delays))
        else:
            env.process(actor(name, delays))


def test_choice_zero_is_simpy_order() -> None:
    plain: list[tuple[int, str]] = []
    env = simpy.Environment()
    _three_actors(env, plain)
    env.run()

    ours: list[tuple[int, str]] = []
    world = World(ReplaySource([], strict=False))
    _three_actors(world, ours)
    assert world.run_to_end() == "quiescent"
    assert ours == plain
    assert plain == [
        (0, "a start"),
        (0, "b start"),
        (0, "c start"),
        (2, "a woke"),
        (2, "b woke"),
        (4, "c woke"),
        (4, "a woke"),
        (4, "b woke"),
    ]


def test_a_tie_choice_reorders_events_due_at_the_same_instant() -> None:
    trace: list[tuple[int, str]] = []
    world = World(ReplaySource([1], strict=False))  # first tie (t=2): wake b before a
    _three_actors(world, trace)
    world.run_to_end()
    assert trace[3:5] == [(2, "b woke"), (2, "a woke")]
    assert world.source.record[0].label == "schedule"
    assert world.source.record[0].n == 2


def test_process_starts_are_not_choices() -> None:
    trace: list[tuple[int, str]] = []
    world = World(RandomSource(3))
    _three_actors(world, trace)
    world.run_to_end()
    assert trace[:3] == [(0, "a start"), (0, "b start"), (0, "c start")]
    assert [c.label for c in world.source.record] == ["schedule"] * len(world.source.record)
    assert len(world.source.record) == 3  # t=2: a|b, t=4: three due, then two


def test_every_tie_is_recorded_and_replays_to_the_same_trace() -> None:
    first: list[tuple[int, str]] = []
    world = World(RandomSource(7))
    _three_actors(world, first)
    world.run_to_end()
    again: list[tuple[int, str]] = []
    replay = World(ReplaySource(world.source.record, strict=True))
    _three_actors(replay, again)
    replay.run_to_end()
    assert again == first
    assert replay.source.record == world.source.record


def test_time_is_integer_milliseconds() -> None:
    world = World(RandomSource(0))
    with pytest.raises(ValueError, match="integer ms"):
        world.timeout(1.5)


def _ticker(world: World) -> None:
    def tick() -> Generator[Any, Any, None]:
        while True:
            yield world.sleep(1000)
            world.log("ticker", "tick")

    world.spawn("ticker", tick())


def test_time_bound_makes_the_run_inconclusive() -> None:
    outcome = execute(_ticker, RandomSource(0), [], Bounds(max_time_ms=3500, max_steps=10_000))
    assert outcome.status == "inconclusive"
    assert outcome.bound == "virtual_time"
    assert [op.kind for op in outcome.history] == ["tick", "tick", "tick", "run.end"]
    assert outcome.history[-1].fields == {"reason": "bound:virtual_time", "steps": 4}


def test_step_bound_makes_the_run_inconclusive() -> None:
    outcome = execute(_ticker, RandomSource(0), [], Bounds(max_time_ms=10**9, max_steps=3))
    assert (outcome.status, outcome.bound) == ("inconclusive", "steps")
    assert len(outcome.history.of_kind("tick")) == 2


def test_finish_ends_a_run_with_perpetual_timers() -> None:
    def build(world: World) -> None:
        _ticker(world)

        def stopper() -> Generator[Any, Any, None]:
            yield world.sleep(2500)
            world.finish()

        world.spawn("stopper", stopper())

    outcome = execute(build, RandomSource(0), [], Bounds(max_time_ms=10**6))
    assert outcome.status == "ok"
    assert outcome.end_reason == "finished"
    assert outcome.virtual_ms == 2500


def test_a_crashing_actor_is_an_error_never_a_violation() -> None:
    def build(world: World) -> None:
        def broken() -> Generator[Any, Any, None]:
            yield world.sleep(5)
            assert world.now_ms < 5, "actor invariant broken"

        world.spawn("broken", broken())

    outcome = execute(build, RandomSource(0), [])
    assert outcome.status == "error" and outcome.violation is None
    assert outcome.error is not None and outcome.error.type == "AssertionError"
    assert outcome.error.message.startswith("actor invariant broken")
    assert [f.name for f in outcome.error.frames] == ["broken"]  # the user's frame only
    assert [op.kind for op in outcome.history.ops] == ["run.end"]  # nothing added but the end


def test_a_declared_exception_is_a_violation_of_model_exception() -> None:
    def build(world: World) -> None:
        def broken() -> Generator[Any, Any, None]:
            yield world.sleep(5)
            raise LookupError("the race's own symptom")

        world.spawn("broken", broken())

    outcome = execute(build, RandomSource(0), [], violation_exceptions=(LookupError,))
    assert outcome.status == "violated" and outcome.error is None
    violation = outcome.violation
    assert violation is not None and violation.checker == "model-exception"
    assert "LookupError: the race's own symptom" in violation.message
    assert outcome.history[violation.op_index].kind == "model.exception"
    # an exception not declared stays an error
    other = execute(build, RandomSource(0), [], violation_exceptions=(KeyError,))
    assert other.status == "error"


def test_misaligned_replay_propagates_from_inside_a_process() -> None:
    def build(world: World) -> None:
        def drawer() -> Generator[Any, Any, None]:
            yield world.sleep(1)
            world.source.choose("pick", ["x", "y", "z"])

        world.spawn("drawer", drawer())

    with pytest.raises(ReplayMisaligned, match="draw #0"):
        execute(build, ReplaySource([5], strict=True), [])


@checker("always-ok")
def _always_ok(history: History) -> Any:
    return ok("always-ok")


def test_execute_closes_the_history_with_run_end_and_judges_it() -> None:
    def build(world: World) -> None:
        world.log("setup", "hello", n=1)

    outcome = execute(build, RandomSource(0), [_always_ok])
    assert [op.to_json() for op in outcome.history] == [
        {"index": 0, "time_ms": 0, "actor": "setup", "kind": "hello", "fields": {"n": 1}},
        {
            "index": 1,
            "time_ms": 0,
            "actor": "kernel",
            "kind": "run.end",
            "fields": {"reason": "quiescent", "steps": 0},
        },
    ]
    assert outcome.status == "ok"
    assert [v.checker for v in outcome.verdicts] == ["always-ok"]
