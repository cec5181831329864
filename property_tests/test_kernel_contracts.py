"""Kernel helpers at their edges: ``every``, ``poll_until`` and the lagging cache.

``make mutation`` showed these reached by the model tests but never pinned:
a period of 0 accepted, a poll one interval late, a cache reacting to a path
outside its prefix or drawing under another label all passed. Each case here
fixes one such edge by the trace (times, draws, ops) it must produce.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim import (
    LaggingCache,
    ReplaySource,
    SimRuntime,
    VersionedStore,
    World,
    every,
    poll_until,
)


def _world(values: list[int] | None = None) -> World:
    return World(ReplaySource(values or [], strict=False))


# -- every ----------------------------------------------------------------------------------
@given(st.integers(1, 20), st.none() | st.integers(0, 20), st.integers(1, 5))
def test_every_ticks_on_its_period_until_told_to_stop(
    period_ms: int, first_delay_ms: int | None, ticks: int
) -> None:
    world = _world()
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
    world = _world()
    seen: list[int] = []

    def tick() -> bool:
        seen.append(world.now_ms)
        if world.now_ms == 20:
            world.finish()
        return True

    every(world, "ticker", 10, tick)
    world.run()
    assert seen == [10, 20]
    with pytest.raises(AssertionError):
        every(_world(), "ticker", 0, tick)


# -- poll_until -----------------------------------------------------------------------------
@given(st.integers(1, 7), st.integers(0, 30), st.none() | st.integers(0, 40))
def test_poll_until_checks_every_interval_until_the_timeout(
    interval_ms: int, timeout_ms: int, ready_at_ms: int | None
) -> None:
    world = _world()
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
    rt = SimRuntime(_world())
    with pytest.raises(AssertionError):
        next(poll_until(rt, lambda: True, 0, 10))
    with pytest.raises(AssertionError):
        next(poll_until(rt, lambda: True, 1, -1))
    with pytest.raises(StopIteration):  # ready at once, timeout 0: no sleep at all
        next(poll_until(rt, lambda: True, 1, 0))


# -- the lagging cache ----------------------------------------------------------------------
def test_the_cache_draws_its_lag_under_its_name_and_ignores_other_paths() -> None:
    world = _world([1])
    store = VersionedStore(world)
    store.ensure_path("/ds")
    store.ensure_path("/other")
    cache = LaggingCache(world, store, "/ds/", name="dscache", lag_ms=(0, 5))
    assert cache.prefix == "/ds/"
    assert LaggingCache(world, store, "/ds", auto_refresh=False).prefix == "/ds/"
    refreshed: list[tuple[int, Any]] = []

    def writer() -> Generator[Any, Any, None]:
        store.create("/other/x", 1)  # outside the prefix: no draw, no refresher
        store.create("/dsx", 1)  # shares the prefix's letters, not its folder
        store.create("/ds/A", "READY")
        yield world.sleep(4)
        refreshed.append((world.now_ms, dict(cache.entries)))
        yield world.sleep(2)
        refreshed.append((world.now_ms, dict(cache.entries)))
        store.delete("/ds/A")
        yield world.sleep(10)
        refreshed.append((world.now_ms, dict(cache.entries)))

    world.spawn("writer", writer())
    world.run()
    draws = [(c.label, c.n, c.value) for c in world.source.record]
    assert draws == [("dscache.lag", 2, 1), ("dscache.lag", 2, 0)]
    assert refreshed == [(4, {}), (6, {"/ds/A": ("READY", 0)}), (16, {})]
    actors = {op.actor for op in world.history if op.actor.startswith("dscache")}
    assert actors <= {"dscache-refresh"}
    with pytest.raises(AssertionError, match="lag_ms needs at least one option"):
        LaggingCache(world, store, "/ds", lag_ms=())


def test_the_default_cache_name_labels_its_draws() -> None:
    world = _world()
    store = VersionedStore(world)
    store.ensure_path("/ds")
    assert LaggingCache(world, store, "/ds", auto_refresh=False).lag_ms == (0,)
    assert not store.listeners
    cache = LaggingCache(world, store, "/ds", lag_ms=(0, 0))  # two options: a recorded draw
    assert cache.name == "cache"

    def writer() -> Generator[Any, Any, None]:
        store.create("/ds/A", 1)
        yield world.sleep(1)

    world.spawn("writer", writer())
    world.run()
    assert [c.label for c in world.source.record] == ["cache.lag"]
    assert cache.get("/ds/B") is None and cache.get("/ds/A") == (1, 0)
    with pytest.raises(AssertionError):
        cache.get("/elsewhere")
