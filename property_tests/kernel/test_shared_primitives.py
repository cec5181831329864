"""Shared-state primitives at their edges: the lagging cache, queues, locks, executors, store, session.

``make mutation`` showed these reached by the model tests but never pinned: a
cache reacting to a path outside its prefix or drawing under another label, a
lock handed to the wrong waiter, an executor running past its workers all
passed. Each case fixes one edge by the trace (draws, ops, footprint keys) it
must produce.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from property_tests.touch_log import TouchLog, fifo_world
from raceproof.sim import (
    EventQueue,
    Executor,
    LaggingCache,
    Lock,
    VersionedStore,
    ZkClient,
)
from raceproof.sim.store import BadVersion, SessionExpired, TransactionFailed


def test_the_cache_draws_its_lag_under_its_name_and_ignores_other_paths() -> None:
    world = fifo_world([1])
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
    with pytest.raises(ValueError, match="lag_ms needs at least one option"):
        LaggingCache(world, store, "/ds", lag_ms=())


def test_the_default_cache_name_labels_its_draws() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.ensure_path("/ds")
    assert LaggingCache(world, store, "/ds", auto_refresh=False).lag_ms == (0,)
    assert not store.listeners.peek()
    cache = LaggingCache(world, store, "/ds", lag_ms=(0, 0))  # two options: a recorded draw
    assert cache.name == "cache"

    def writer() -> Generator[Any, Any, None]:
        store.create("/ds/A", 1)
        yield world.sleep(1)

    world.spawn("writer", writer())
    world.run()
    assert [c.label for c in world.source.record] == ["cache.lag"]
    assert cache.get("/ds/B") is None and cache.get("/ds/A") == (1, 0)
    with pytest.raises(ValueError):
        cache.get("/elsewhere")


def test_each_primitive_touches_a_key_named_after_it() -> None:
    world = TouchLog()
    seen = world.touched
    queue = EventQueue(world, "q1", dedupe=True)
    queue.put("a")
    assert not queue.put("a") and not queue.put("a")
    assert queue.dropped == 2  # counted, not just flagged
    queue.put_front("b")
    assert len(queue) == 2 and seen[-1] == ("queue:q1", False)
    queue.get()
    lock = Lock(world, "l1")
    lock.try_acquire("me")
    lock.release("me")
    executor = Executor(world, "e1", 1)

    def body() -> Generator[Any, Any, int]:
        yield world.sleep(1)
        return 7

    executor.submit("t", body)
    keys = {key for key, _ in seen}
    assert all(key is not None for key in keys)
    assert {k for k in keys if "q1" in k} and {k for k in keys if "l1" in k}
    assert {k for k in keys if "e1" in k}
    assert {k for k in keys if "q1" in k} | {k for k in keys if "l1" in k} == {
        "queue:q1",  # its cells: the items, the takers waiting, the count dropped
        "queue:q1.getters",
        "queue:q1.dropped",
        "lock:l1",  # the owner, the owners waiting
        "lock:l1.waiters",
    }
    assert len(seen) >= 8  # put x3, put_front, get, try_acquire, release, submit


def test_a_lock_hands_itself_to_the_next_waiter_by_name() -> None:
    world = fifo_world()
    lock = Lock(world, "lock")
    got: list[tuple[int, str]] = []

    def holder(name: str, hold_ms: int) -> Generator[Any, Any, None]:
        owner = yield lock.acquire(name)
        got.append((world.now_ms, owner))
        yield world.sleep(hold_ms)
        lock.release(name)

    world.spawn("a", holder("a", 5))
    world.spawn("b", holder("b", 5))
    world.run()
    assert got == [(0, "a"), (5, "b")]
    assert not lock.locked and lock.name == "lock"
    with pytest.raises(ValueError, match=r"^a lock owner needs a name(\n|$)"):
        lock.try_acquire("")


@given(st.integers(1, 3), st.lists(st.integers(1, 5), min_size=1, max_size=6))
@example(workers=2, durations_ms=[10, 10, 10])  # was test_primitives.py's one case
def test_an_executor_runs_at_most_its_workers_in_fifo_order(
    workers: int, durations_ms: list[int]
) -> None:
    world = fifo_world()
    executor = Executor(world, "pool", workers)
    busy_seen: list[int] = []
    results: list[Any] = []
    started_ms: dict[int, int] = {}

    def job(i: int, duration_ms: int) -> Generator[Any, Any, int]:
        busy_seen.append(executor.busy)
        started_ms[i] = world.now_ms  # dicts keep insertion order: the order of starts
        yield world.sleep(duration_ms)
        return i

    def client() -> Generator[Any, Any, None]:
        events = [
            executor.submit("job", lambda i=i, d=d: job(i, d)) for i, d in enumerate(durations_ms)
        ]
        for event in events:
            results.append((yield event))

    world.spawn("client", client())
    world.run()
    assert results == list(range(len(durations_ms)))
    assert executor.submitted == len(durations_ms) and executor.busy == 0
    assert max(busy_seen) == min(workers, len(durations_ms))
    # In submission order, each job starts when the earliest worker is free.
    free_ms = [0] * workers
    expected_ms = []
    for duration_ms in durations_ms:
        start_ms = heapq.heappop(free_ms)
        expected_ms.append(start_ms)
        heapq.heappush(free_ms, start_ms + duration_ms)
    assert [started_ms[i] for i in range(len(durations_ms))] == expected_ms
    assert list(started_ms) == sorted(started_ms, key=lambda i: (expected_ms[i], i))
    actors = sorted({op.actor for op in world.history} | set())
    assert all(a is not None for a in actors)
    with pytest.raises(ValueError):
        Executor(world, "none", 0)
    assert Executor(world, "one", 1).workers == 1


def test_executor_tasks_run_as_named_actors() -> None:
    world = fifo_world()
    executor = Executor(world, "pool", 1)
    names: list[str] = []

    def job() -> Generator[Any, Any, None]:
        names.append(world.active_process.actor)  # type: ignore[union-attr]
        yield world.sleep(1)

    executor.submit("stop", job)
    executor.submit("stop", job)
    world.run()
    assert names == ["pool/stop#1", "pool/stop#2"]


def test_store_watches_transactions_and_caches_in_their_less_used_forms() -> None:
    world = TouchLog()
    store = VersionedStore(world)
    seen: list[tuple[str, str]] = []
    store.watch("/w", lambda e: seen.append((e.kind, e.path)))
    store.create("/w", 1)
    world.run()
    store.set("/w", 2)
    world.run()
    store.delete("/w")
    world.run()
    assert seen == [("created", "/w"), ("changed", "/w"), ("deleted", "/w")]  # re-armed each time
    store.create("/t", 0)
    with pytest.raises(TransactionFailed, match=r"op #1 \(delete /t\)"):
        store.transaction().set_data("/t", 1).delete("/t", version=5).commit()
    assert store.get("/t") == (0, 0)  # nothing applied
    assert store.transaction().delete("/t", version=0).commit() == [None]
    assert not store.exists("/t")
    store.create("/c", None)
    store.create("/c/x", "x")
    cache = LaggingCache(world, store, "/c", name="view", auto_refresh=False)
    assert cache.get("/c/x") == ("x", 0)
    world.touched.clear()
    cache.invalidate_all()
    assert world.touched == [("view", True)] and cache.entries == {}


def test_a_session_client_removes_watches_deletes_and_checks_through_its_session() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    seen: list[str] = []

    def watcher(event: Any) -> None:
        seen.append(f"{event.kind} {event.path}")

    client.add_watch("/p", watcher)
    assert client.remove_watch("/p", lambda e: None) is False  # another callback
    assert client.remove_watch("/q", watcher) is False  # another path
    client.create("/p", 0)
    world.run()
    assert seen == ["created /p"]
    assert client.remove_watch("/p", watcher) is True
    assert client.remove_watch("/p", watcher) is False  # gone already
    client.set("/p", 1)
    world.run()
    assert seen == ["created /p"]
    client.check("/p", 1)
    with pytest.raises(BadVersion):
        client.check("/p", 0)
    with pytest.raises(BadVersion):
        client.delete("/p", 0)
    client.delete("/p", 1)
    assert not store.exists("/p")
    client.expire()
    for call in (
        lambda: client.check("/p"),
        lambda: client.delete("/p"),
        lambda: client.remove_watch("/p", watcher),
    ):
        with pytest.raises(SessionExpired):
            call()
