"""The scheduler's own steps, seen from the observer the proof's reduction plugs in.

The reduction (``sim/reduction.py``) trusts what ``World`` tells its observer:
each step's name (its process and that process's step count), the footprint
the step recorded, and which instants offer a choice at all. A full mutation
run showed those reached only by the slow whole-walk comparisons, so a wrong
count or a lost entry went unnoticed by the fast tests. Here one small model
is stepped under a recording observer and every call is pinned; the same
goes for the run's end on a crash, at a bound and on an unknown verdict, and
for cancelling a scheduled event in the middle of SimPy's heap.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim import History, ReplaySource, World, execute
from raceproof.sim.checkers import checker, unknown, violated
from raceproof.sim.timers import Timer
from raceproof.sim.world import ALL, BoundHit, Bounds

Footprint = dict[str, bool] | None


class _Recorder(ReplaySource):
    """A step observer that takes the first option and writes down every call."""

    observes_steps = True

    def __init__(self) -> None:
        super().__init__([], strict=False)
        self.offered: list[list[str | None]] = []
        self.before: list[str | None] = []
        self.calls: list[tuple[str | None, Footprint]] = []

    def schedule_steps(self, keys: list[str | None], world: World) -> int:
        self.offered.append(list(keys))
        return 0

    def before_step(self, key: str | None) -> None:
        self.before.append(key)

    def after_step(self, key: str | None, footprint: Footprint) -> None:
        self.calls.append((key, None if footprint is None else dict(footprint)))


def _child(world: World, name: str) -> Generator[Any, Any, None]:
    world.touch(f"r:{name}", write=False)
    yield world.sleep(5)
    world.touch(f"r:{name}")
    world.touch(f"r:{name}", write=False)  # a read after a write keeps the write


def _parent(world: World) -> Generator[Any, Any, None]:
    first = world.spawn("c", _child(world, "x"))
    world.spawn("c", _child(world, "y"))
    yield first  # joins its first child
    world.log("p", "joined")


def _steps(recorder: _Recorder) -> list[tuple[str | None, Footprint]]:
    assert recorder.before == [key for key, _ in recorder.calls]  # before_step names the same step
    return recorder.calls


def test_each_step_is_named_by_its_process_and_count_with_exactly_its_footprint() -> None:
    recorder = _Recorder()
    world = World(recorder)
    world.declare_footprints()
    world.spawn("p", _parent(world))
    world.run_to_end()
    assert _steps(recorder) == [
        ("/p#0@0", {"proc:/p#0/c#0": False}),  # it waits for its child's end
        ("/p#0/c#0@0", {"r:x": False}),
        ("/p#0/c#1@0", {"r:y": False}),
        ("/p#0/c#0@1", {"r:x": True, "proc:/p#0/c#0": True}),  # its last step writes its end
        ("/p#0/c#1@1", {"r:y": True, "proc:/p#0/c#1": True}),
        (None, {}),  # the second child's end, an event nobody waits on
        ("/p#0@1", {"history:p": True, "proc:/p#0": True}),
        (None, {}),  # the parent's end
    ]
    # Only instants with two steps that wait on something offer a choice.
    assert recorder.offered == [["/p#0/c#0@1", "/p#0/c#1@1"], ["/p#0/c#1@1", "/p#0@1"]]


def test_a_model_that_declares_only_its_state_still_names_its_steps() -> None:
    recorder = _Recorder()
    world = World(recorder)
    world.declare_state(lambda: "state")
    world.spawn("p", _parent(world))
    world.run_to_end()
    assert recorder.offered == [["/p#0/c#0@1", "/p#0/c#1@1"], ["/p#0/c#1@1", "/p#0@1"]]
    assert _steps(recorder)[0] == ("/p#0@0", None)  # footprints are not declared: none passed on


def test_a_model_that_declares_nothing_has_anonymous_steps_and_no_footprints() -> None:
    recorder = _Recorder()
    world = World(recorder)
    world.spawn("p", _parent(world))
    world.run_to_end()
    assert recorder.offered == [[None, None], [None, None]]
    assert set(_steps(recorder)) == {(None, None)}


def test_an_untracked_primitive_or_a_shared_event_withholds_the_footprint() -> None:
    recorder = _Recorder()
    world = World(recorder)
    world.declare_footprints()
    world.untracked_primitive("a socket")
    world.spawn("p", _parent(world))
    world.run_to_end()
    assert set(_steps(recorder)) == {(key, None) for key, _ in _steps(recorder)}
    assert _steps(recorder)[0][0] == "/p#0@0"

    recorder = _Recorder()
    world = World(recorder)
    world.declare_footprints()
    shared = world.event()

    def waiter(name: str) -> Generator[Any, Any, None]:
        world.touch(f"w:{name}")
        yield shared

    world.spawn("a", waiter("a"))  # alone on the event: its footprint is its own
    world.spawn("b", waiter("b"))  # a second waiter: every step depends on this one
    world.run_to_end()
    assert _steps(recorder) == [("/a#0@0", {"w:a": True}), ("/b#1@0", None)]


def test_lone_events_and_callbacks_that_are_no_process_are_stepped_without_a_choice() -> None:
    recorder = _Recorder()
    world = World(recorder)
    world.declare_footprints()
    heard: list[int] = []
    bare = world.timeout(5)
    bare.callbacks.append(lambda event: heard.append(world.now_ms))  # a callback, no process
    unnamed = world.process(_child(world, "z"))  # a process not started through spawn
    world.timeout(7)  # nobody waits on it
    world.run_to_end()
    assert heard == [5] and not unnamed.is_alive
    assert recorder.offered == [[None, None]]  # at 5 ms: the bare callback and the process
    assert {key for key, _ in _steps(recorder)} == {None}


def test_an_event_scheduled_into_the_current_instant_is_ordered_with_those_already_due() -> None:
    """At 5 ms three sleepers are due; the first spawns a process, whose start is urgent:
    it runs next, before the other two, without a draw."""
    source = ReplaySource([], strict=False)
    world = World(source)

    def sleeper(name: str) -> Generator[Any, Any, None]:
        yield world.sleep(5)
        world.log(name, "woke")
        if name == "a":
            world.spawn("d", started())

    def started() -> Generator[Any, Any, None]:
        world.log("d", "started")
        yield world.sleep(1)

    for name in ("a", "b", "c"):
        world.spawn(name, sleeper(name))
    bare = world.timeout(5)  # due at 5 ms too, with nobody waiting: it goes first, no draw
    world.run_to_end()
    assert bare.processed
    assert [op.actor for op in world.history.ops] == ["a", "d", "b", "c"]
    assert [choice.n for choice in source.record] == [3, 2]


def test_a_bound_is_hit_past_its_limit_and_names_it() -> None:
    world = World(ReplaySource([], strict=False), Bounds(max_time_ms=10, max_steps=100))
    world.timeout(10)
    world.timeout(11)
    world.step()  # at exactly the bound: runs
    assert world.now_ms == 10
    with pytest.raises(BoundHit, match=r"^virtual_time bound hit: next event at 11 ms > 10$"):
        world.step()

    world = World(ReplaySource([], strict=False), Bounds(max_steps=2))
    for delay_ms in (1, 2, 3):
        world.timeout(delay_ms)
    world.step()
    world.step()
    with pytest.raises(BoundHit, match=r"^steps bound hit: more than 2 steps$") as hit:
        world.step()
    assert (hit.value.bound, hit.value.detail) == ("steps", "more than 2 steps")


def _explode(world: World) -> Generator[Any, Any, None]:
    yield world.sleep(3)
    raise ValueError("boom")


@checker("always-broken")
def _always_broken(history: History) -> Any:
    return violated("a checker's own finding", 0)


@checker("undecided")
def _undecided(history: History) -> Any:
    return unknown("cannot tell")


def test_a_model_error_ends_the_run_where_it_happened_and_no_checker_judges_it() -> None:
    outcome = execute(
        lambda world: world.spawn("m", _explode(world)),
        ReplaySource([], strict=False),
        [_always_broken],
    )
    line = inspect.getsourcelines(_explode)[1] + 2
    (end,) = outcome.history.ops[-1:]
    assert (end.actor, end.kind, end.fields) == (
        "kernel",
        "run.end",
        {"reason": "error", "steps": 3},
    )
    assert outcome.end_reason == "error" and outcome.status == "error"
    assert outcome.verdicts == []  # a crash is not judged: the always-broken checker never ran
    assert outcome.error is not None and outcome.error.headline == "ValueError: boom"
    assert outcome.error.where == f"{inspect.getsourcefile(_explode)}:{line}"
    assert outcome.steps == 3 and outcome.virtual_ms == 3  # start, wake-up, the failed end


def test_a_checker_that_raises_is_an_error_too() -> None:
    def broken_checker(history: History) -> Any:
        raise KeyError("no such op")

    outcome = execute(lambda world: None, ReplaySource([], strict=False), [broken_checker])
    assert outcome.status == "error" and outcome.error is not None
    assert outcome.error.frames[-1].name == "broken_checker"


def test_an_unknown_verdict_makes_the_run_inconclusive() -> None:
    outcome = execute(lambda world: None, ReplaySource([], strict=False), [_undecided])
    assert (outcome.status, outcome.end_reason, outcome.bound) == (
        "inconclusive",
        "quiescent",
        None,
    )


def test_a_spawn_needs_an_actor_name_that_is_text() -> None:
    world = World(ReplaySource([], strict=False))
    with pytest.raises(ValueError, match="an actor needs a name, got 5"):
        world.spawn(5, iter(()))  # type: ignore[arg-type]
    assert ALL == "*"


@given(st.lists(st.integers(1, 40), min_size=2, max_size=12), st.data())
def test_a_cancelled_event_leaves_the_others_in_time_order(
    delays_ms: Sequence[int], data: st.DataObject
) -> None:
    world = World(ReplaySource([], strict=False))
    fired: list[tuple[int, int]] = []
    events = []
    for index, delay_ms in enumerate(delays_ms):
        event = world.timeout(delay_ms)
        event.callbacks.append(lambda _event, i=index: fired.append((world.now_ms, i)))
        events.append(event)
    cancelled = data.draw(st.integers(0, len(events) - 1))
    assert world.unschedule(events[cancelled], resource="timer") is True
    assert world.unschedule(events[cancelled], resource="timer") is False  # already gone
    world.run_to_end()
    assert [i for _, i in fired] == sorted(
        (i for i in range(len(delays_ms)) if i != cancelled), key=lambda i: (delays_ms[i], i)
    )
    assert [t for t, _ in fired] == sorted(t for t, _ in fired)


def test_a_late_timer_is_due_at_its_delay_plus_the_drawn_lateness() -> None:
    world = World(ReplaySource([1], strict=False))
    fired: list[int] = []
    timer = Timer(world, "t", lambda: fired.append(world.now_ms), late_ms=(0, 5))
    timer.start(10)
    assert timer.due_ms == 15
    world.run()
    assert fired == [15]


def test_a_third_step_is_counted_and_joining_an_untracked_process_names_nothing() -> None:
    recorder = _Recorder()
    world = World(recorder)
    world.declare_footprints()

    def stepper() -> Generator[Any, Any, None]:
        yield world.sleep(1)
        yield world.sleep(1)

    def joiner() -> Generator[Any, Any, None]:
        yield world.process(_child(world, "u"))  # started without spawn: no identity to name

    world.spawn("s", stepper())
    world.spawn("j", joiner())
    world.run_to_end()
    steps = _steps(recorder)
    assert steps[:2] == [("/s#0@0", {}), ("/j#1@0", {})]  # no entry for the untracked child's end
    assert ("/s#0@2", {"proc:/s#0": True}) in steps  # the third step, counted as such
