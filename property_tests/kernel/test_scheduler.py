"""The world's event order at its edges: due events, keyed sources, bounds and errors that travel.

``peek`` must see events already due before SimPy's heap; a keyed source (PCT)
is offered the actors each due event resumes; bounds and fault plans describe
themselves as JSON; the errors a parallel proof sends between processes pickle.
"""

from __future__ import annotations

import pickle
from collections.abc import Generator
from typing import Any

import pytest

from property_tests.touch_log import fifo_world
from raceproof.sim import (
    BoundHit,
    FaultPlan,
    ReplayMisaligned,
    ReplaySource,
    World,
)
from raceproof.sim.timers import Timer
from raceproof.sim.world import Bounds


def _sleeper(world: World, delay_ms: int) -> Generator[Any, Any, None]:
    yield world.sleep(delay_ms)


def _twice(world: World) -> Generator[Any, Any, None]:
    yield world.sleep(5)
    yield world.sleep(10)


class _KeyedSource(ReplaySource):
    """FIFO, remembering the actor names the world offers a keyed source (PCT's input)."""

    uses_keys = True

    def __init__(self) -> None:
        super().__init__([], strict=False)
        self.offered: list[list[str]] = []

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Any) -> int:
        self.offered.append(list(keys))
        return super()._pick(label, n, p_nonzero, keys)


def test_peek_sees_the_events_already_due_before_simpys_heap() -> None:
    world = fifo_world()
    assert world.peek() == float("inf")  # nothing scheduled
    world.spawn("a", _twice(world))
    world.spawn("b", _twice(world))
    world.step()
    world.step()  # both started; each waits 5 ms
    assert world.peek() == 5
    world.step()  # a ran at 5 ms and waits until 15; b is still due at 5, in the due list
    assert world._due and world._queue[0][0] == 15 and world.peek() == 5


def test_a_keyed_source_is_offered_the_actor_each_due_event_resumes() -> None:
    source = _KeyedSource()
    world = World(source)
    timer = Timer(world, "ticker", lambda: None)
    world.spawn("alpha", _sleeper(world, 3))
    world.spawn("beta", _sleeper(world, 3))
    timer.start(3)
    bare = world.sleep(3)
    bare.callbacks.append(lambda _event: None)  # someone waits, but no actor: its type
    world.run()
    # In insertion order: the timer and the bare timeout were armed before the actors began.
    assert source.offered[0] == ["ticker", "Timeout", "alpha", "beta"]


def test_a_misaligned_replay_survives_pickling_with_its_message() -> None:
    error = ReplayMisaligned(3, "label a, recorded b")
    again = pickle.loads(pickle.dumps(error))
    assert (again.index, again.detail) == (3, "label a, recorded b")
    assert str(again) == str(error) == "replay misaligned at draw #3: label a, recorded b"
    assert str(BoundHit("steps", "more than 5 steps")) == "steps bound hit: more than 5 steps"
    assert BoundHit("steps", "x").bound == "steps"
    hit = pickle.loads(pickle.dumps(BoundHit("time", "past 10 ms")))
    assert (hit.bound, hit.detail, str(hit)) == ("time", "past 10 ms", "time bound hit: past 10 ms")


def test_bounds_and_fault_plans_describe_themselves_as_json() -> None:
    assert Bounds(max_time_ms=7, max_steps=9).to_json() == {"max_time_ms": 7, "max_steps": 9}
    plan = FaultPlan(kinds=frozenset({"pause", "crash"}), max_faults=2, p=0.25)
    assert plan.to_json() == {"kinds": ["crash", "pause"], "max_faults": 2, "p": 0.25}
    FaultPlan(max_faults=0, p=0.0)
    FaultPlan(p=1.0)
    for bad in ({"max_faults": -1}, {"p": -0.01}, {"p": 1.01}):
        with pytest.raises(ValueError):
            FaultPlan(**bad)  # type: ignore[arg-type]
