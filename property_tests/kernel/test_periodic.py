"""Periodic work in simulated time: ``every``, ``poll_until`` and ``Debounce`` at their edges.

``make mutation`` showed these reached by the model tests but never pinned: a
period of 0 accepted, a poll one interval late, a debounce cancelled mid-burst
still firing. Each case fixes one edge by the times and ops it must produce.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.touch_log import TouchLog, fifo_world
from raceproof.sim import (
    SimRuntime,
    World,
    every,
    poll_until,
)
from raceproof.sim.timers import Debounce


def _sleeper(world: World, delay_ms: int) -> Generator[Any, Any, None]:
    yield world.sleep(delay_ms)


@given(st.integers(1, 20), st.none() | st.integers(0, 20), st.integers(1, 5))
def test_every_ticks_on_its_period_until_told_to_stop(
    period_ms: int, first_delay_ms: int | None, ticks: int
) -> None:
    world = fifo_world()
    seen: list[int] = []

    def tick() -> bool | None:
        seen.append(world.now_ms)
        return False if len(seen) == ticks else None  # None keeps going

    process = every(world, "ticker", period_ms, tick, first_delay_ms=first_delay_ms)
    assert process.actor == "ticker"  # type: ignore[attr-defined]
    world.run()
    start = period_ms if first_delay_ms is None else first_delay_ms
    assert seen == [start + i * period_ms for i in range(ticks)]


def test_every_stops_when_the_run_finishes_and_needs_a_period() -> None:
    world = fifo_world()
    seen: list[int] = []

    def tick() -> bool:
        seen.append(world.now_ms)
        if world.now_ms == 20:
            world.finish()
        return True

    every(world, "ticker", 10, tick)
    world.run()
    assert seen == [10, 20]
    with pytest.raises(ValueError):
        every(fifo_world(), "ticker", 0, tick)


@given(st.integers(1, 7), st.integers(0, 30), st.none() | st.integers(0, 40))
def test_poll_until_checks_every_interval_until_the_timeout(
    interval_ms: int, timeout_ms: int, ready_at_ms: int | None
) -> None:
    world = fifo_world()
    rt = SimRuntime(world)
    checks: list[int] = []
    result: list[tuple[int, bool]] = []

    def ready() -> bool:
        checks.append(world.now_ms)
        return ready_at_ms is not None and world.now_ms >= ready_at_ms

    def poller() -> Generator[Any, Any, None]:
        yield world.sleep(3)  # the timeout counts from the first check, not from 0
        ok = yield from poll_until(rt, ready, interval_ms, timeout_ms)
        result.append((world.now_ms, ok))

    world.spawn("poller", poller())
    world.run()
    expected: list[int] = []
    t = 3
    while True:
        expected.append(t)
        if ready_at_ms is not None and t >= ready_at_ms:
            outcome = True
            break
        if t - 3 >= timeout_ms:
            outcome = False
            break
        t += interval_ms
    assert checks == expected
    assert result == [(expected[-1], outcome)]


def test_poll_until_needs_a_positive_interval_and_a_timeout() -> None:
    rt = SimRuntime(fifo_world())
    with pytest.raises(ValueError):
        next(poll_until(rt, lambda: True, 0, 10))
    with pytest.raises(ValueError):
        next(poll_until(rt, lambda: True, 1, -1))
    with pytest.raises(StopIteration):  # ready at once, timeout 0: no sleep at all
        next(poll_until(rt, lambda: True, 1, 0))


def test_a_debounce_cancelled_mid_burst_never_fires_and_starts_a_new_burst() -> None:
    world = TouchLog()
    fired: list[int] = []
    debounce = Debounce(
        world, "d", quiet_ms=10, callback=lambda: fired.append(world.now_ms), max_wait_ms=15
    )
    assert debounce.cancel() is False  # nothing pending
    debounce.trigger()
    world.touched.clear()
    assert debounce.cancel() is True and not debounce.pending
    assert (debounce.timer.resource, True) in world.touched  # the cancel writes the armed timer
    world.run()
    assert fired == [] and debounce.fired == 0
    world.spawn("later", _sleeper(world, 20))
    world.run()
    debounce.trigger()  # a new burst: max_wait counts from here, not from the cancelled one
    world.run()
    assert fired == [30]
