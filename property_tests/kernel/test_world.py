"""The World: SimPy order as choice 0, ties as choices, integer time, bounds, crashes."""

from __future__ import annotations

import inspect
from collections.abc import Generator, Sequence
from typing import Any

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from property_tests.touch_log import DrawLog
from raceproof.sim import (
    Actor,
    Bounds,
    History,
    RandomSource,
    ReplayMisaligned,
    ReplaySource,
    World,
    checker,
    execute,
    ok,
)
from raceproof.sim.checkers import unknown, violated
from raceproof.sim.timers import Timer
from raceproof.sim.world import ALL, BoundHit


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


# ------------------------------------------------------------------------------------------
# The scheduler's own steps, seen from the observer the proof's reduction plugs in.
#
# The reduction (``sim/reduction.py``) trusts what ``World`` tells its observer:
# each step's name (its process and that process's step count), the footprint
# the step recorded, and which instants offer a choice at all. A full mutation
# run showed those reached only by the slow whole-walk comparisons, so a wrong
# count or a lost entry went unnoticed by the fast tests. Here one small model
# is stepped under a recording observer and every call is pinned; the same
# goes for the run's end on a crash, at a bound and on an unknown verdict, and
# for cancelling a scheduled event in the middle of SimPy's heap.
# (was test_world_edges.py)

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
    # At 5 ms: the bare callback's timeout, named by the step that made it (here the start,
    # before any step: ``World._name_event``), and the process, which has no identity: only
    # its first step, the start event scheduled with it, is named (it was made at the start).
    assert recorder.offered == [["start!0@event", None]]
    assert {key for key, _ in _steps(recorder)} == {"start!0@event", "start!1@event", None}


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


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_footprint_entries_and_actor_names_are_checked_where_they_are_made() -> None:
    world = World(ReplaySource([], strict=False))
    with pytest.raises(TypeError, match="a footprint entry is a resource name and a bool"):
        world.touch(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a footprint entry is a resource name and a bool"):
        world.touch("r", write=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a footprint entry is a resource name and a bool"):
        world.touch("")
    with pytest.raises(ValueError, match="an actor needs a name, got None"):
        world.spawn(None, iter(()))  # type: ignore[arg-type]
    world.touch("r", write=False)  # outside an observed step: nothing to record, no error


class _Waiting(Actor):
    def main(self) -> Generator[Any, Any, None]:
        yield from self.wait(self.world.sleep(50))


def test_an_actor_sits_out_a_pause_but_not_another_interrupt() -> None:
    world = World(ReplaySource([], strict=False))
    actor = _Waiting(world, "w")
    actor.start()
    assert actor.process is not None
    world.run(until=1)
    actor.process.interrupt(("resume", 5))  # a tuple, but not a pause
    with pytest.raises(RuntimeError, match=r"unexpected interrupt \('resume', 5\)"):
        world.run()


def _done() -> Generator[Any, Any, None]:
    return
    yield  # a generator that ends at once


def test_alive_reads_a_named_process_end_and_an_unnamed_one_touches_everything() -> None:
    from raceproof.sim.reduction import SleepSetSource

    world = DrawLog(source=SleepSetSource((), None, reduce=True))
    world.declare_footprints()  # processes get names that do not depend on interleavings
    process = world.spawn("p", _done())

    def probe() -> Generator[Any, Any, None]:
        yield world.sleep(1)
        world.touched.clear()
        assert world.alive(process) is False
        assert world.touched == [("proc:/p#0", False)]

    world.spawn("q", probe())
    world.run()
    plain = DrawLog()
    unnamed = plain.spawn("p", _done())
    plain.alive(unnamed)
    assert plain.touched == []  # not recorded by name: it touches everything instead
    timer_event = plain.sleep(5)
    plain.touched.clear()
    assert plain.unschedule(timer_event, "timer:t") is True
    assert plain.touched == [("timer:t", True)]
    assert plain.unschedule(timer_event, "timer:t") is False  # gone already


class _LastOption(_Recorder):
    """The same observer taking the last option: the opposite order of every tie."""

    def schedule_steps(self, keys: list[str | None], world: World) -> int:
        self.offered.append(list(keys))
        return len(keys) - 1


def _shared_event_model(world: World) -> None:
    """``a`` and ``b`` wait on one event ``t`` triggers; ``c`` waits on two sleeps at once."""
    world.declare_footprints()
    shared = world.event()

    def waiter(name: str) -> Generator[Any, Any, None]:
        yield world.sleep(1)
        world.touch(f"r:{name}")
        yield shared
        world.touch(f"r:{name}")

    def both() -> Generator[Any, Any, None]:
        yield world.sleep(1)
        yield world.all_of([world.sleep(1), world.sleep(1)])
        world.touch("r:both")

    def trigger() -> Generator[Any, Any, None]:
        yield world.sleep(2)
        shared.succeed()

    for name in ("a", "b"):
        world.spawn(name, waiter(name))
    world.spawn("c", both())
    world.spawn("t", trigger())


def test_an_event_no_one_process_owns_is_named_by_the_step_that_triggered_it() -> None:
    """In both orders of every tie: the event both ``a`` and ``b`` wait on is named by ``t``'s
    step that triggered it, the sleeps ``c``'s condition waits on by ``c``'s step; the
    condition itself, which whichever sleep runs second triggers, stays unnamed."""
    keyed: list[dict[str | None, Footprint]] = []
    for recorder in (_Recorder(), _LastOption()):
        world = World(recorder)
        _shared_event_model(world)
        world.run_to_end()
        steps = _steps(recorder)
        keys = [key for key, _ in steps]
        assert all(keys.count(key) == 1 for key in keys if key is not None)
        keyed.append({key: footprint for key, footprint in steps if key is not None})
        condition = [fp for key, fp in steps if key is None and fp and "r:both" in fp]
        assert condition == [{"r:both": True, "proc:/c#2": True}]
    assert keyed[0].keys() == keyed[1].keys()
    assert {"/t#3@1!0@event", "/c#2@1!0@event", "/c#2@1!1@event"} <= keyed[0].keys()
    woken = {"r:a": True, "r:b": True, "proc:/a#0": True, "proc:/b#1": True}
    woken["step:/t#3@1!0@event"] = True  # a step no one process owns: a cancel would write it
    assert keyed[0]["/t#3@1!0@event"] == keyed[1]["/t#3@1!0@event"] == woken
