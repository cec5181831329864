"""Kernel helpers at their edges: ``every``, ``poll_until``, the lagging cache, small API paths.

``make mutation`` showed these reached by the model tests but never pinned:
a period of 0 accepted, a poll one interval late, a cache reacting to a path
outside its prefix or drawing under another label all passed. Each case here
fixes one such edge by the trace (times, draws, ops) it must produce.
"""

from __future__ import annotations

import heapq
import pickle
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from property_tests.touch_log import TouchLog
from raceproof.sim import (
    BoundHit,
    DiskWriteError,
    EventQueue,
    Executor,
    FaultPlan,
    FileSystem,
    FsError,
    LaggingCache,
    Lock,
    Nemesis,
    Network,
    ReplayMisaligned,
    ReplaySource,
    SimRuntime,
    VersionedStore,
    World,
    ZkClient,
    every,
    poll_until,
)
from raceproof.sim.fs import _parent
from raceproof.sim.store import BadVersion, SessionExpired, TransactionFailed
from raceproof.sim.timers import Debounce, Timer
from raceproof.sim.world import Bounds


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
    with pytest.raises(ValueError):
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
    with pytest.raises(ValueError):
        next(poll_until(rt, lambda: True, 0, 10))
    with pytest.raises(ValueError):
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
    with pytest.raises(ValueError, match="lag_ms needs at least one option"):
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
    with pytest.raises(ValueError):
        cache.get("/elsewhere")


# -- queues, locks and executors: values, counts and the keys they touch ----------------------
def _touches(world: World) -> list[tuple[str, bool]]:
    """Record the footprint keys the primitives declare (what the reduction reads)."""
    seen: list[tuple[str, bool]] = []
    world.touch = lambda key, write=True: seen.append((key, write))  # type: ignore[method-assign]
    return seen


def test_each_primitive_touches_a_key_named_after_it() -> None:
    world = _world()
    seen = _touches(world)
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
    assert len({k for k in keys if "q1" in k} | {k for k in keys if "l1" in k}) == 2
    assert len(seen) >= 8  # put x3, put_front, get, try_acquire, release, submit


def test_a_lock_hands_itself_to_the_next_waiter_by_name() -> None:
    world = _world()
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
    world = _world()
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
    world = _world()
    executor = Executor(world, "pool", 1)
    names: list[str] = []

    def job() -> Generator[Any, Any, None]:
        names.append(world.active_process.actor)  # type: ignore[union-attr]
        yield world.sleep(1)

    executor.submit("stop", job)
    executor.submit("stop", job)
    world.run()
    assert names == ["pool/stop#1", "pool/stop#2"]


# -- exceptions that cross a process boundary (the parallel proof) --------------------------
def test_a_misaligned_replay_survives_pickling_with_its_message() -> None:
    error = ReplayMisaligned(3, "label a, recorded b")
    again = pickle.loads(pickle.dumps(error))
    assert (again.index, again.detail) == (3, "label a, recorded b")
    assert str(again) == str(error) == "replay misaligned at draw #3: label a, recorded b"
    assert str(BoundHit("steps", "more than 5 steps")) == "steps bound hit: more than 5 steps"
    assert BoundHit("steps", "x").bound == "steps"
    hit = pickle.loads(pickle.dumps(BoundHit("time", "past 10 ms")))
    assert (hit.bound, hit.detail, str(hit)) == ("time", "past 10 ms", "time bound hit: past 10 ms")


# -- the network ----------------------------------------------------------------------------
@given(
    st.sampled_from(
        [frozenset(), frozenset({"drop"}), frozenset({"duplicate"}), frozenset({"delay"})]
    ),
    st.lists(st.integers(0, 1), max_size=12),
)
def test_the_network_draws_per_link_and_delivers_after_the_drawn_latency(
    kinds: frozenset[str], values: list[int]
) -> None:
    world = World(ReplaySource(values, strict=False))
    plan = FaultPlan(kinds=kinds, max_faults=2, p=0.5, delay_ms=(10, 30))
    network = Network(world, Nemesis(world, plan), latency_ms=(1, 4))
    delivered: list[tuple[int, str]] = []
    network.send("a", "b", "m", lambda message: delivered.append((world.now_ms, message)))
    world.run()
    draws = [
        (c.label, c.n, c.value)
        for c in world.source.record
        if c.label.split(".")[0] in ("fault", "latency", "delay")  # not the scheduler's ties
    ]
    labels = [label for label, _, _ in draws]
    assert labels and all(label.endswith(".a->b") for label in labels)
    struck = {
        label.split(".")[1] for label, _, value in draws if label.startswith("fault.") and value
    }
    if "drop" in struck:
        assert delivered == [] and labels == ["fault.drop.a->b"]
        return
    copies = 2 if "duplicate" in struck else 1
    assert len(delivered) == copies and {m for _, m in delivered} == {"m"}
    expected: list[int] = []
    latencies = iter(draws)
    for label, _, value in latencies:
        if label.startswith("latency."):
            latency = (1, 4)[value]
            if "delay" in kinds:
                fault = next(latencies)
                assert fault[0] == "fault.delay.a->b"
                if fault[2]:
                    extra = next(latencies)
                    assert extra[0] == "delay.a->b"
                    latency += (10, 30)[extra[2]]
            expected.append(latency)
    assert sorted(t for t, _ in delivered) == sorted(expected)
    actors = {op.actor for op in world.history if op.actor.startswith("net:")}
    assert actors <= {"net:a->b"}


# -- the simulated runtime port -------------------------------------------------------------
def test_the_sim_runtime_is_the_world_behind_the_port() -> None:
    world = _world([1])
    rt = SimRuntime(world)
    seen: list[Any] = []

    def actor() -> Generator[Any, Any, None]:
        assert world.active_process.actor == "actor"  # type: ignore[union-attr]
        yield rt.sleep(5)
        seen.append(rt.now_ms())
        seen.append(rt.choose("pick", ["x", "y"]))
        rt.log("actor", "did", what=1)
        rt.checkpoint("actor", "mark.write", entity="d")
        queue = rt.queue("q", dedupe=True)
        assert queue.put(1) and not queue.put(1) and len(queue) == 1 and queue.name == "q"
        plain = rt.queue("p")
        assert plain.put(1) and plain.put(1) and len(plain) == 2  # no dedupe unless asked
        pool = rt.executor("pool", 2)
        assert isinstance(pool, Executor) and pool.workers == 2 and pool.name == "pool"
        assert pool.world is world
        rt.finish()

    rt.spawn("actor", actor())
    world.run()
    assert seen == [5, "y"]
    assert [(c.label, c.value) for c in world.source.record] == [("pick", 1)]
    ops = [
        (op.actor, op.kind, op.fields) for op in world.history if op.kind in ("did", "checkpoint")
    ]
    assert ops == [
        ("actor", "did", {"what": 1}),
        ("actor", "checkpoint", {"point": "mark.write", "entity": "d"}),
    ]
    assert world.finished is not None


# -- the simulated file system --------------------------------------------------------------
def test_the_file_system_keeps_posix_shapes_and_declares_reads_and_writes() -> None:
    world = _world()
    seen = _touches(world)
    fs = FileSystem(world, "disk")
    assert fs.name == "disk" and not fs.fail_writes and fs.dirs["/"].generation == 0
    assert fs.mtime_ms("/") == 0 and FileSystem(world).name == "fs"
    assert (_parent("/a"), _parent("/a/b")) == ("/", "/a")
    for bad in ("/", "/a/", "a", "a/b"):
        with pytest.raises(ValueError, match=r"^bad path"):
            _parent(bad)
    assert fs.mkdir("/a/b") and not fs.mkdir("/a/b")
    assert (fs.generation("/a"), fs.generation("/a/b"), fs.generation("/x")) == (1, 2, None)
    with pytest.raises(FsError, match=r"^no such directory /q$"):
        fs.mkdir("/q/r", parents=False)
    fs.mkdir("/ab")
    fs.write("/a/b/f", 1)
    fs.write("/a/g", 2, sync=True)
    assert fs.listdir("/a") == ["b", "g"] and fs.listdir("/") == ["a", "ab"]
    assert fs.listdir("/a/b") == ["f"]
    with pytest.raises(FsError, match=r"^no such directory /nope$"):
        fs.listdir("/nope")
    assert fs.exists("/a") and fs.exists("/a/g") and not fs.exists("/a/h") and fs.isdir("/a/b")
    assert not fs.isdir("/a/g")
    with pytest.raises(FsError, match=r"^no such file /a/h$"):
        fs.read("/a/h")
    with pytest.raises(FsError, match=r"^no such file or directory /a/h$"):
        fs.mtime_ms("/a/h")
    with pytest.raises(FsError, match=r"^no such directory /z$"):
        fs.write("/z/f", 1)
    reads = {write for key, write in seen if key == "disk"}
    assert reads == {True, False}
    before = len(seen)
    for look in (fs.read, fs.exists, fs.isdir, fs.listdir, fs.mtime_ms, fs.generation):
        look("/a/g" if look == fs.read else "/a")
    assert seen[before:] == [("disk", False)] * 6
    fs.remove("/a/g")
    fs.rmtree("/a")
    assert seen[-2:] == [("disk", True)] * 2
    assert {key for key, _ in seen} == {"disk"}
    assert fs.listdir("/") == ["ab"] and not fs.exists("/a/b/f")
    fs.mkdir("/dX/eX")  # a name ending in the characters a mutant might strip
    fs.mkdir("/d")
    assert fs.listdir("/dX") == ["eX"] and fs.listdir("/d") == []
    fs.rmtree("/dX")
    assert fs.isdir("/d") and not fs.isdir("/dX/eX")
    with pytest.raises(FsError, match=r"^no such directory /a$"):
        fs.rmtree("/a")


def test_mtimes_move_with_entries_and_a_crash_keeps_only_synced_content() -> None:
    world = _world()
    fs = FileSystem(world)
    times: dict[str, Any] = {}

    def actor() -> Generator[Any, Any, None]:
        fs.mkdir("/d")
        yield world.sleep(10)
        fs.write("/d/f", "v1")
        times["new file"] = (fs.mtime_ms("/d"), fs.mtime_ms("/d/f"))
        yield world.sleep(10)
        fs.write("/d/f", "v2", sync=True)
        times["rewrite"] = (fs.mtime_ms("/d"), fs.mtime_ms("/d/f"))
        fs.write("/d/f", "v3")
        fs.write("/d/g", "never synced")
        yield world.sleep(10)
        fs.mkdir("/d/sub")
        times["subdir"] = (fs.mtime_ms("/d"), fs.mtime_ms("/d/sub"))
        yield world.sleep(10)
        fs.remove("/d/g")
        times["remove"] = fs.mtime_ms("/d")
        fs.write("/d/g", "again")
        yield world.sleep(10)
        fs.rmtree("/d/sub")
        times["rmtree"] = fs.mtime_ms("/d")
        fs.crash()

    world.spawn("actor", actor())
    world.run()
    assert times == {
        "new file": (10, 10),
        "rewrite": (10, 20),
        "subdir": (30, 30),
        "remove": 40,
        "rmtree": 50,
    }
    assert fs.read("/d/f") == "v2" and not fs.exists("/d/g")


def test_an_injected_write_failure_is_drawn_logged_and_raised() -> None:
    world = _world([1])
    fs = FileSystem(world, "disk", fail_writes=True)
    fs.mkdir("/d")
    with pytest.raises(DiskWriteError):
        fs.write("/d/f", 1)
    assert not fs.exists("/d/f")
    assert [(c.label, c.value) for c in world.source.record] == [("disk.write-fails", 1)]
    assert [(op.actor, op.kind, op.fields) for op in world.history] == [
        ("disk", "fault.disk-write", {"path": "/d/f"})
    ]
    fs.write("/d/f", 2)  # the replay is exhausted: the boring choice, no failure
    assert fs.read("/d/f") == 2


# -- small API paths the model tests never take ---------------------------------------------
def test_bounds_and_fault_plans_describe_themselves_as_json() -> None:
    assert Bounds(max_time_ms=7, max_steps=9).to_json() == {"max_time_ms": 7, "max_steps": 9}
    plan = FaultPlan(kinds=frozenset({"pause", "crash"}), max_faults=2, p=0.25)
    assert plan.to_json() == {"kinds": ["crash", "pause"], "max_faults": 2, "p": 0.25}
    FaultPlan(max_faults=0, p=0.0)
    FaultPlan(p=1.0)
    for bad in ({"max_faults": -1}, {"p": -0.01}, {"p": 1.01}):
        with pytest.raises(ValueError):
            FaultPlan(**bad)  # type: ignore[arg-type]


def test_the_runtime_names_the_models_own_state_in_the_footprint() -> None:
    world = TouchLog()
    runtime = SimRuntime(world)
    runtime.touch("ledger")
    runtime.touch("ledger", write=False)
    assert world.touched == [("ledger", True), ("ledger", False)]
    world.untracked_primitive("socket")
    world.untracked_primitive("pipe")
    assert world.untracked == ["socket", "pipe"]


def test_peek_sees_the_events_already_due_before_simpys_heap() -> None:
    world = _world()
    assert world.peek() == float("inf")  # nothing scheduled
    world.spawn("a", _twice(world))
    world.spawn("b", _twice(world))
    world.step()
    world.step()  # both started; each waits 5 ms
    assert world.peek() == 5
    world.step()  # a ran at 5 ms and waits until 15; b is still due at 5, in the due list
    assert world._due and world._queue[0][0] == 15 and world.peek() == 5


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
    assert cache.entries == {} and world.touched == [("view", True)]


def test_a_debounce_cancelled_mid_burst_never_fires_and_starts_a_new_burst() -> None:
    world = TouchLog()
    fired: list[int] = []
    debounce = Debounce(world, "d", 10, lambda: fired.append(world.now_ms), max_wait_ms=15)
    assert debounce.cancel() is False  # nothing pending
    debounce.trigger()
    world.touched.clear()
    assert debounce.cancel() is True and not debounce.pending
    assert world.touched[0] == (debounce.timer.resource, True)
    world.run()
    assert fired == [] and debounce.fired == 0
    world.spawn("later", _sleeper(world, 20))
    world.run()
    debounce.trigger()  # a new burst: max_wait counts from here, not from the cancelled one
    world.run()
    assert fired == [30]


def test_a_session_client_removes_watches_deletes_and_checks_through_its_session() -> None:
    world = _world()
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
