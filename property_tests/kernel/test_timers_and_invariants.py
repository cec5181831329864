"""Cancellable timers, debounce, interleaved starts, step-level invariants, @checker, Budget."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.touch_log import DrawLog, after
from raceproof.sim import (
    Actor,
    Budget,
    CheckerResult,
    Debounce,
    History,
    RandomSource,
    ReplaySource,
    Timer,
    World,
    always,
    checker,
    checker_name,
    execute,
    invariant_checker,
    ok,
    unknown,
    violated,
)


def fifo_world() -> World:
    return World(ReplaySource([], strict=False))


# -- timers -------------------------------------------------------------------------------
def test_a_timer_fires_once_at_its_deadline_and_can_be_rearmed() -> None:
    world = fifo_world()
    fired: list[int] = []
    timer = Timer(world, "lease", lambda: fired.append(world.now_ms))
    timer.start(100)
    assert timer.active and timer.due_ms == 100

    def mover() -> Generator[Any, Any, None]:
        yield world.sleep(50)
        timer.start(100)  # re-armed at 50: due at 150, not 100

    world.spawn("mover", mover())
    world.run_to_end()
    assert fired == [150] and timer.fired == 1 and not timer.active


def test_a_cancelled_timer_leaves_nothing_behind() -> None:
    world = World(RandomSource(3))
    fired: list[int] = []
    timer = Timer(world, "retry", lambda: fired.append(world.now_ms))
    timer.start(10_000)

    def worker() -> Generator[Any, Any, None]:
        yield world.sleep(20)
        assert timer.cancel() and not timer.cancel()

    world.spawn("worker", worker())
    assert world.run_to_end() == "quiescent"
    assert fired == [] and world.now_ms == 20  # the run did not wait for the dead deadline
    assert world.source.record == []  # and it never tied with anything


def test_a_timer_callback_may_wait_and_lateness_is_a_choice() -> None:
    world = World(ReplaySource([1], strict=False))  # the timer runs late: option 1
    seen: list[tuple[int, str]] = []

    def expire() -> Generator[Any, Any, None]:
        seen.append((world.now_ms, "expiring"))
        yield world.sleep(5)
        seen.append((world.now_ms, "expired"))

    Timer(world, "session", expire, late_ms=(0, 30)).start(100)
    world.run_to_end()
    assert seen == [(130, "expiring"), (135, "expired")]
    assert [c.label for c in world.source.record] == ["timer.session.late"]


def _debounced(gaps_ms: list[int], quiet_ms: int) -> tuple[list[int], list[int]]:
    world = fifo_world()
    fired: list[int] = []
    debounce = Debounce(
        world, "rebalance", quiet_ms=quiet_ms, callback=lambda: fired.append(world.now_ms)
    )
    times: list[int] = []

    def changes() -> Generator[Any, Any, None]:
        for gap_ms in gaps_ms:
            yield world.sleep(gap_ms)
            times.append(world.now_ms)
            debounce.trigger()

    world.spawn("changes", changes())
    world.run_to_end()
    assert debounce.fired == len(fired) and debounce.triggers == len(gaps_ms)
    return times, fired


@given(st.lists(st.integers(1, 300).filter(lambda gap: gap != 100), max_size=30))
def test_a_debounce_fires_once_per_quiet_period(gaps_ms: list[int]) -> None:
    times, fired = _debounced(gaps_ms, 100)
    last_of_bursts = [
        t for i, t in enumerate(times) if i + 1 == len(times) or times[i + 1] - t > 100
    ]
    assert fired == [t + 100 for t in last_of_bursts]


def test_a_debounce_with_max_wait_fires_during_a_steady_stream() -> None:
    world = fifo_world()
    fired: list[int] = []
    debounce = Debounce(
        world, "flush", quiet_ms=100, callback=lambda: fired.append(world.now_ms), max_wait_ms=250
    )

    def stream() -> Generator[Any, Any, None]:
        for _ in range(10):  # a change every 60 ms, never quiet for 100
            debounce.trigger()
            yield world.sleep(60)

    world.spawn("stream", stream())
    world.run_to_end()
    assert fired == [250, 550]  # bursts from 0 and from 300, each cut at 250 ms


# -- an actor's start as an interleaving point ---------------------------------------------
def _starts(interleave: bool, source: Any) -> World:
    world = World(source)

    def first() -> Generator[Any, Any, None]:
        world.log("a", "a.begin")
        yield world.sleep(0)
        world.log("a", "a.after-tie")

    def second_by_hand() -> Generator[Any, Any, None]:
        yield world.sleep(0)
        world.log("b", "b.begin")
        yield world.sleep(0)
        world.log("b", "b.after-tie")

    def second() -> Generator[Any, Any, None]:
        world.log("b", "b.begin")
        yield world.sleep(0)
        world.log("b", "b.after-tie")

    world.spawn("a", first())
    if interleave:
        world.spawn("b", second(), interleave=True)
    else:
        world.spawn("b", second_by_hand())
    world.run_to_end()
    return world


@given(st.integers(0, 2**32))
def test_spawn_interleave_is_a_hand_written_sleep_zero(seed: int) -> None:
    by_hand, interleaved = _starts(False, RandomSource(seed)), _starts(True, RandomSource(seed))
    assert interleaved.history.trace_hash() == by_hand.history.trace_hash()
    assert interleaved.source.record == by_hand.source.record


def test_choice_zero_keeps_simpy_order_and_choice_one_starts_b_first() -> None:
    fifo = _starts(True, ReplaySource([], strict=False))
    assert [op.kind for op in fifo.history] == ["a.begin", "a.after-tie", "b.begin", "b.after-tie"]
    swapped = _starts(True, ReplaySource([1], strict=False))
    assert [op.kind for op in swapped.history][:3] == ["a.begin", "b.begin", "a.after-tie"]
    assert [c.label for c in swapped.source.record][:1] == ["schedule"]


class _Starter(Actor):
    def main(self) -> Generator[Any, Any, None]:
        self.world.log(self.name, "started")
        yield self.world.sleep(0)


def test_an_actor_can_ask_for_an_interleaved_start() -> None:
    world = World(ReplaySource([1], strict=False))
    _Starter(world, "late", interleave=True).start()
    _Starter(world, "early").start()
    world.run_to_end()
    assert [op.actor for op in world.history] == ["early", "late"]


# -- step-level invariants -------------------------------------------------------------------
def _leaders_model(world: World, overlap: bool) -> dict[str, bool]:
    leaders = {"n1": True, "n2": False}

    def handover() -> Generator[Any, Any, None]:
        yield world.sleep(10)
        if overlap:
            leaders["n2"] = True
            world.log("n2", "became-leader")
            yield world.sleep(5)
            leaders["n1"] = False
        else:
            leaders["n1"] = False
            yield world.sleep(5)
            leaders["n2"] = True

    world.spawn("handover", handover())
    always(
        world,
        "single-leader",
        lambda: sum(leaders.values()) <= 1,
        explain=lambda: f"leaders {sorted(k for k, v in leaders.items() if v)}",
    )
    return leaders


def test_always_logs_the_first_violation_and_its_checker_reports_it() -> None:
    single = invariant_checker("single-leader")
    bad = execute(lambda w: _leaders_model(w, True), RandomSource(0), [single])
    assert bad.status == "violated"
    verdict = bad.verdicts[0]
    op = bad.history.ops[verdict.op_index]  # type: ignore[index]
    assert (op.kind, op.time_ms, op.get("invariant")) == ("invariant.violated", 10, "single-leader")
    assert verdict.message == "leaders ['n1', 'n2']" and verdict.checker == "single-leader"
    assert len(bad.history.of_kind("invariant.violated")) == 1  # logged once, not every step
    good = execute(lambda w: _leaders_model(w, False), RandomSource(0), [single])
    assert good.status == "ok" and checker_name(single) == "single-leader"


# -- @checker --------------------------------------------------------------------------------
def test_checker_fills_in_its_name() -> None:
    @checker
    def no_stop_after_resume(history: History) -> CheckerResult | None:
        for op in history.of_kind("stop"):
            return violated(f"stopped at {op.time_ms} ms", op.index)
        return None

    @checker("explicit-name")
    def undecided(history: History) -> CheckerResult:
        return unknown("cannot tell") if len(history) else ok()

    history = History()
    assert no_stop_after_resume(history) == ok("no-stop-after-resume")
    history.append(7, "a", "stop")
    assert no_stop_after_resume(history) == violated("no-stop-after-resume", 0, "stopped at 7 ms")
    assert undecided(history) == unknown("explicit-name", "cannot tell")
    assert checker_name(no_stop_after_resume) == "no-stop-after-resume"

    @checker("mine")
    def wrong(history: History) -> CheckerResult:
        return ok("someone-else")

    with pytest.raises(TypeError, match="checker mine returned"):
        wrong(history)


# -- Budget ----------------------------------------------------------------------------------
def test_a_budget_in_seconds_needs_a_clock() -> None:
    with pytest.raises(ValueError, match="needs a clock"):
        Budget(examples=10, seconds=5.0)
    assert Budget(examples=10, seconds=5.0, clock=lambda: 0.0).seconds == 5.0
    assert Budget(examples=10).seconds is None


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_a_debounce_checks_its_periods_with_their_names() -> None:
    world = World(ReplaySource([], strict=False))
    with pytest.raises(ValueError, match=r"^quiet_ms must be > 0(\n|$)"):
        Debounce(world, "d", quiet_ms=0, callback=lambda: None)
    with pytest.raises(ValueError, match=r"^max_wait_ms must be >= quiet_ms(\n|$)"):
        Debounce(world, "d", quiet_ms=10, callback=lambda: None, max_wait_ms=9)
    Debounce(
        world, "d", quiet_ms=1, callback=lambda: None, max_wait_ms=1
    )  # the boundaries are allowed
    debounce = Debounce(world, "d", quiet_ms=5, callback=lambda: None, late_ms=(0, 3), resource="r")
    assert (debounce.timer.actor, debounce.timer.late_ms) == ("d", (0, 3))
    assert debounce.timer.resource == "timer:r"
    assert Debounce(world, "e", quiet_ms=5, callback=lambda: None).timer.resource == "timer:e"


def test_a_debounce_past_its_max_wait_fires_at_once() -> None:
    world = DrawLog([0, 1])  # the first firing is 3 ms late, past the max wait
    fired: list[int] = []
    debounce = Debounce(
        world,
        "d",
        quiet_ms=10,
        callback=lambda: fired.append(world.now_ms),
        max_wait_ms=10,
        late_ms=(3, 0),
    )
    world.touched.clear()
    debounce.trigger()  # at 0: due at 10 (+3 late)
    assert ("timer:d.triggers", True) in world.touched  # its cells: the count, the burst's start
    assert ("timer:d.burst", True) in world.touched and world.touched[-1] == ("timer:d", True)
    world.spawn("t", after(world, 12, debounce.trigger))  # 12 > 0 + max_wait: now
    world.run()
    assert fired == [12]


def test_what_a_timer_spawns_is_named_after_the_timer_and_its_firing() -> None:
    from raceproof.sim.reduction import SleepSetSource

    world = World(SleepSetSource((), None, reduce=True))
    world.declare_footprints()
    names: list[str] = []

    def work() -> Generator[Any, Any, None]:
        names.append(world.active_process.rp_id)  # type: ignore[union-attr]
        yield world.sleep(0)

    timer = Timer(world, "ticker", work)
    timer.start(1)
    world.run()
    timer.start(1)
    world.run()
    assert names == ["timer:ticker#1/ticker#0", "timer:ticker#2/ticker#0"]
    assert world._context == ""  # restored after each firing
    world.touch("r")  # footprint entries are checked in an observed world too


def test_a_timer_checks_its_lateness_and_delays_and_cancels_by_its_resource() -> None:
    world = DrawLog()
    for late in ((), (-1,), (1.5,)):
        with pytest.raises(ValueError):
            Timer(world, "t", lambda: None, late_ms=late)  # type: ignore[arg-type]
    timer = Timer(world, "t", lambda: None)
    assert timer.due_ms is None and not timer.active
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match=f"^delay_ms must be >= 0, got {bad}(\n|$)"):
            timer.start(bad)  # type: ignore[arg-type]
    timer.start(5)
    assert timer.due_ms == 5 and timer.active
    world.touched.clear()
    assert timer.cancel() is True
    assert world.touched == [("timer:t", False), ("timer:t", True)]  # its deadline's cell
    assert timer.due_ms is None
    world.touched.clear()
    assert timer.cancel() is False
    assert world.touched == [("timer:t", False)]  # idle: a cancel only reads the deadline
