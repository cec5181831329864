"""Primitives on the World, each checked by the whole trace it produces."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from property_tests.touch_log import DrawLog
from raceproof.sim import (
    Actor,
    BadVersion,
    EventQueue,
    FaultPlan,
    FileSystem,
    FsError,
    LaggingCache,
    Lock,
    Nemesis,
    Network,
    NodeExists,
    NoNode,
    RandomSource,
    ReplaySource,
    SessionExpired,
    SimRuntime,
    VersionedStore,
    World,
    ZkClient,
    crash_and_restart,
    every,
    maybe_expire_session,
    maybe_pause,
    pause_with_session,
    poll_until,
)
from raceproof.sim.fs import DiskWriteError, _parent


def fifo_world() -> World:
    return World(ReplaySource([], strict=False))


def test_event_queue_drops_duplicates_and_puts_retries_in_front() -> None:
    world = fifo_world()
    queue = EventQueue(world, "leader", dedupe=True)
    assert queue.put(("ADD", "A"))
    assert queue.put(("ASSIGN", None))
    assert not queue.put(("ADD", "A"))  # an equal event is pending: dropped
    queue.put_front(("RETRY", "A"))
    seen: list[Any] = []

    def consumer() -> Generator[Any, Any, None]:
        for _ in range(3):
            seen.append((world.now_ms, (yield queue.get())))
            yield world.sleep(10)
        seen.append((world.now_ms, (yield queue.get())))

    world.spawn("consumer", consumer())

    def late() -> Generator[Any, Any, None]:
        yield world.sleep(15)
        assert queue.put(("ADD", "A"))  # no longer pending: accepted

    world.spawn("late", late())
    world.run_to_end()
    assert seen == [
        (0, ("RETRY", "A")),
        (10, ("ADD", "A")),
        (20, ("ASSIGN", None)),
        (30, ("ADD", "A")),
    ]
    assert queue.dropped == 1


def test_lock_hands_over_to_waiters_in_order_and_checks_the_owner() -> None:
    world = fifo_world()
    lock = Lock(world, "1_0/.lock")
    trace: list[tuple[int, str]] = []

    def holder(name: str, hold_ms: int) -> Generator[Any, Any, None]:
        yield lock.acquire(name)
        trace.append((world.now_ms, f"{name} holds"))
        yield world.sleep(hold_ms)
        lock.release(name)

    for name in ("A", "B", "C"):
        world.spawn(name, holder(name, 5))
    world.run_to_end()
    assert trace == [(0, "A holds"), (5, "B holds"), (10, "C holds")]
    assert not lock.locked
    lock.try_acquire("A")
    with pytest.raises(ValueError, match="B releases"):
        lock.release("B")


def test_every_and_poll_until() -> None:
    world = fifo_world()
    ticks: list[int] = []
    flag = {"ready": False}
    every(world, "cleaner", 600_000, lambda: ticks.append(world.now_ms), first_delay_ms=600_000)
    results: list[tuple[int, bool]] = []

    def poller(timeout_ms: int) -> Generator[Any, Any, None]:
        ok = yield from poll_until(SimRuntime(world), lambda: flag["ready"], 1000, timeout_ms)
        results.append((world.now_ms, ok))

    def setter() -> Generator[Any, Any, None]:
        yield world.sleep(2500)
        flag["ready"] = True

    world.spawn("fast", poller(90_000))
    world.spawn("impatient", poller(1000))
    world.spawn("setter", setter())

    def stop() -> Generator[Any, Any, None]:
        yield world.sleep(1_900_000)
        world.finish()

    world.spawn("stop", stop())
    assert world.run_to_end() == "finished"
    assert results == [(1000, False), (3000, True)]
    assert ticks == [600_000, 1_200_000, 1_800_000]


def test_store_versions_conditional_writes_and_errors() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.ensure_path("/ds")
    store.create("/ds/A", {"status": "READY"})
    data, version = store.get("/ds/A")
    assert (data, version) == ({"status": "READY"}, 0)
    data["status"] = "mutated"  # a copy: the store is not aliased
    assert store.get("/ds/A")[0] == {"status": "READY"}
    assert store.set("/ds/A", {"status": "STOPPING"}, version=0) == 1
    with pytest.raises(BadVersion, match="expected version 0, found 1"):
        store.set("/ds/A", {"status": "STOPPED"}, version=0)
    assert store.set("/ds/A", {"status": "STOPPED"}) == 2  # unconditional
    with pytest.raises(NodeExists):
        store.create("/ds/A")
    with pytest.raises(NoNode):
        store.get("/ds/B")
    store.create("/ds/C")
    assert store.children("/ds") == ["A", "C"]


def test_ephemeral_nodes_vanish_with_their_session_and_watches_fire() -> None:
    world = fifo_world()
    store = VersionedStore(world, watch_delay_ms=(0, 50))
    store.ensure_path("/live")
    session = store.open_session()
    store.create("/live/host1", "h1", ephemeral_session=session)
    events: list[tuple[int, str, str]] = []
    store.children("/live", watch=lambda e: events.append((world.now_ms, e.kind, e.path)))
    store.exists("/live/host1", watch=lambda e: events.append((world.now_ms, e.kind, e.path)))
    assert store.expire_session(session) == ["/live/host1"]
    world.run_to_end()
    assert sorted(events) == [(0, "children", "/live"), (0, "deleted", "/live/host1")]
    assert store.children("/live") == []
    with pytest.raises(SessionExpired):
        store.create("/live/host1", ephemeral_session=session)


def test_watch_delivery_delay_is_a_choice() -> None:
    world = World(ReplaySource([1], strict=False))  # the first watch-delay draw takes option 1
    store = VersionedStore(world, watch_delay_ms=(0, 50))
    store.create("/x", 1)
    seen: list[int] = []
    store.get("/x", watch=lambda e: seen.append(world.now_ms))
    store.set("/x", 2)
    world.run_to_end()
    assert seen == [50]
    assert [(c.label, c.n, c.value) for c in world.source.record] == [("zk.watch-delay", 2, 1)]


def test_lagging_cache_learns_late_and_never_goes_back() -> None:
    world = World(ReplaySource([1, 0], strict=False))  # first change lags 100 ms, second 0
    store = VersionedStore(world)
    store.ensure_path("/ds")
    store.create("/ds/A", "READY")
    cache = LaggingCache(world, store, "/ds", lag_ms=(0, 100))
    assert cache.get("/ds/A") == ("READY", 0)
    observed: list[tuple[int, Any]] = []

    def writer() -> Generator[Any, Any, None]:
        store.set("/ds/A", "STOPPING")
        yield world.sleep(10)
        store.set("/ds/A", "STOPPED")
        for _ in range(3):
            observed.append((world.now_ms, cache.get("/ds/A")))
            yield world.sleep(60)

    world.spawn("writer", writer())
    world.run_to_end()
    # Even a 0 ms lag lands after the writer's step; v1 arrives at t=100 and is ignored as older.
    assert observed == [(10, ("READY", 0)), (70, ("STOPPED", 2)), (130, ("STOPPED", 2))]


def test_explicit_cache_changes_only_on_refresh() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.ensure_path("/ds")
    store.create("/ds/A", "READY")
    cache = LaggingCache(world, store, "/ds", auto_refresh=False)
    assert cache.get("/ds/A") == ("READY", 0)
    store.set("/ds/A", "STOPPED")
    assert cache.get("/ds/A") == ("READY", 0)  # stale until refreshed
    cache.refresh()
    assert cache.get("/ds/A") == ("STOPPED", 1)


def test_file_system_mtimes_generations_and_crash() -> None:
    world = fifo_world()
    fs = FileSystem(world)

    def actor() -> Generator[Any, Any, None]:
        fs.mkdir("/state/app/1_0")
        first = fs.generation("/state/app/1_0")
        fs.write("/state/app/1_0/.checkpoint", {"offset": 5}, sync=True)
        yield world.sleep(1000)
        fs.write("/state/app/1_0/.checkpoint", {"offset": 9})
        assert fs.mtime_ms("/state/app/1_0") == 0  # rewriting a file leaves the dir mtime
        fs.write("/state/app/1_0/store", [1, 2, 3])
        assert fs.mtime_ms("/state/app/1_0") == 1000  # a new entry changes it
        assert fs.listdir("/state/app/1_0") == [".checkpoint", "store"]
        fs.crash()
        assert fs.read("/state/app/1_0/.checkpoint") == {"offset": 5}
        assert not fs.exists("/state/app/1_0/store")
        yield world.sleep(1000)
        fs.rmtree("/state/app/1_0")
        assert fs.listdir("/state/app") == []
        assert fs.mtime_ms("/state/app") == 2000
        fs.mkdir("/state/app/1_0")
        assert fs.generation("/state/app/1_0") != first

    world.spawn("actor", actor())
    world.run_to_end()
    assert world.now_ms == 2000


class _Worker(Actor):
    def __init__(self, world: World) -> None:
        super().__init__(world, "worker")
        self.count = 0

    def main(self) -> Generator[Any, Any, None]:
        while True:
            yield from self.wait(self.world.sleep(100))
            self.count += 1
            self.world.log(self.name, "tick", count=self.count, incarnation=self.incarnation)

    def on_crash(self) -> None:
        self.count = 0


def test_crash_restart_and_pause_of_an_actor() -> None:
    # The crash strikes; restart after the first option (100 ms).
    world = World(ReplaySource([1, 0], strict=False))
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"crash"}), max_faults=1))
    worker = _Worker(world)
    worker.start()

    def chaos() -> Generator[Any, Any, None]:
        yield world.sleep(250)
        yield from crash_and_restart(nemesis, worker)
        yield world.sleep(120)
        worker.pause(150)
        yield world.sleep(200)
        world.finish()

    world.spawn("chaos", chaos())
    world.run_to_end()
    assert [(op.time_ms, op.kind, dict(op.fields)) for op in world.history] == [
        (100, "tick", {"count": 1, "incarnation": 1}),
        (200, "tick", {"count": 2, "incarnation": 1}),
        (250, "fault.crash", {"target": "worker"}),
        (250, "actor.crashed", {"incarnation": 1}),
        (450, "tick", {"count": 1, "incarnation": 2}),
        (470, "actor.paused", {"duration_ms": 150}),
        (620, "tick", {"count": 2, "incarnation": 2}),
    ]
    assert [c.label for c in world.source.record] == [
        "fault.crash.worker",
        "restart.worker",
    ]


def test_nemesis_never_exceeds_its_plan() -> None:
    world = World(RandomSource(1))
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"drop"}), max_faults=2, p=1.0))
    assert [nemesis.strikes("drop", "a->b") for _ in range(4)] == [True, True, False, False]
    assert not nemesis.strikes("crash", "x")  # not in the plan: not even drawn
    assert len(world.source.record) == 2


def test_network_drop_duplicate_and_latency() -> None:
    world = World(
        ReplaySource([0, 1, 1, 0], strict=False)
    )  # no drop, duplicate, latencies 5 then 1
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"drop", "duplicate"}), p=0.5))
    net = Network(world, nemesis, latency_ms=(1, 5))
    got: list[tuple[int, str]] = []
    net.send("a", "b", "hello", lambda m: got.append((world.now_ms, m)))
    world.run_to_end()
    assert got == [(1, "hello"), (5, "hello")]


def test_a_drawn_pause_delays_an_actor_by_the_drawn_while() -> None:
    world = World(
        ReplaySource([1, 2], strict=False)
    )  # the pause strikes; it lasts option 2 (1000 ms)
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"pause"}), max_faults=1))
    worker = _Worker(world)
    worker.start()

    def chaos() -> Generator[Any, Any, None]:
        yield world.sleep(150)
        maybe_pause(nemesis, worker)
        yield world.sleep(1200)
        world.finish()

    world.spawn("chaos", chaos())
    world.run_to_end()
    ticks = [op.time_ms for op in world.history if op.kind == "tick"]
    assert ticks == [100, 1150, 1250]  # the tick due at 200 waits out the pause (150 + 1000)
    assert [c.label for c in world.source.record][:2] == ["fault.pause.worker", "pause.worker"]


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_the_root_directory_is_not_removable_and_not_a_file_path() -> None:
    world = World(ReplaySource([], strict=False))
    fs = FileSystem(world, "disk")
    fs.mkdir("/d")
    with pytest.raises(FsError, match=r"^the root directory cannot be removed$"):
        fs.rmtree("/")
    assert fs.isdir("/d")
    for bad in ("/", "d", "/d/"):
        with pytest.raises(ValueError, match=f"bad path {bad!r}"):
            _parent(bad)
    assert _parent("/d") == "/" and _parent("/d/e") == "/d"


def test_a_disk_write_fault_is_drawn_at_five_percent_and_names_the_file() -> None:
    world = DrawLog([1])
    fs = FileSystem(world, "disk", fail_writes=True)
    fs.mkdir("/d")
    with pytest.raises(DiskWriteError) as failed:
        fs.write("/d/f", 1)
    assert str(failed.value) == "/d/f"
    assert world.source.asked == [("disk.write-fails", 2, 0.05)]  # type: ignore[attr-defined]
    assert not fs.exists("/d/f")
    fs.write("/d/g", 2)  # the replay is exhausted: no failure, never synced
    world.touched.clear()
    fs.crash()  # reads every directory's entries, writes what it loses
    assert world.touched[0] == ("disk:entries['/']", False)
    assert {key for key, write in world.touched if write} == {
        "disk:file['/d/g']",
        "disk:entries['/d']",
    }


def test_a_queue_keeps_duplicates_unless_asked_to_drop_them() -> None:
    world = World(ReplaySource([], strict=False))
    plain = EventQueue(world, "plain")
    assert plain.put("x") and plain.put("x") and list(plain.items) == ["x", "x"]
    deduped = EventQueue(world, "dedupe", dedupe=True)
    assert deduped.put("x") and not deduped.put("x") and deduped.dropped == 1


def test_a_cache_copies_what_it_hands_out_and_keeps_a_stale_view_until_refreshed() -> None:
    world = DrawLog()
    store = VersionedStore(world)
    store.ensure_path("/jobX")  # a prefix ending in a character a mutant might strip
    store.create("/jobX/a", {"rows": [1]})
    cache = LaggingCache(world, store, "/jobX/", name="view", auto_refresh=False)
    assert cache.prefix == "/jobX/"
    world.touched.clear()
    cache.refresh()
    assert world.touched[0] == ("view", True)  # emptied first, then filled
    assert world.touched[-1] == ("view", True)
    store.set("/jobX/a", {"rows": [2]})
    got = cache.get("/jobX/a")
    assert got == ({"rows": [1]}, 0)  # stale: refreshed before the write
    assert got is not None
    got[0]["rows"].append(99)  # the caller's copy only
    world.touched.clear()
    assert cache.get("/jobX/a") == ({"rows": [1]}, 0)
    assert world.touched == [("view", False)]  # a hit only reads the cache
    world.touched.clear()
    assert (
        cache.get("/jobX/b") is None and ("view", True) not in world.touched
    )  # a miss absent there
    store.create("/jobX/c", 3)
    world.touched.clear()
    assert cache.get("/jobX/c") == (3, 0) and world.touched[-1] == ("view", True)  # a miss loaded
    with pytest.raises(ValueError, match=r"^lag_ms needs at least one option(\n|$)"):
        LaggingCache(world, store, "/jobX", lag_ms=())


def test_an_auto_refreshed_cache_copies_the_change_and_forgets_a_deleted_node() -> None:
    world = DrawLog()
    store = VersionedStore(world)
    store.create("/c", None)
    store.create("/c/x", {"v": [0]})  # before the cache: never loaded into it
    store.create("/c/w", 0)  # likewise, and deleted without ever being cached
    cache = LaggingCache(world, store, "/c", name="auto", lag_ms=(5,))
    data = {"v": [1]}
    store.set("/c/x", data)
    data["v"].append(2)  # the writer's object changes after the write
    world.run()
    assert cache.entries["/c/x"] == ({"v": [1]}, 1)
    store.delete("/c/x")
    store.delete("/c/w")
    store.create("/c/y", 1)
    store.delete("/c/y")  # deleted before its creation reached the cache
    world.run()
    assert cache.entries == {}
    assert ("auto", True) in world.touched
    with pytest.raises(NoNode):
        store.get("/c/x")


class _Idle(Actor):
    def main(self) -> Generator[Any, Any, None]:
        yield from self.wait(self.world.sleep(50))
        self.world.log(self.name, "done")


def test_fault_helpers_say_whether_a_fault_struck() -> None:
    world = DrawLog([0, 0])  # no fault strikes
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"pause", "session-expiry"}), p=0.5))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    actor = _Idle(world, "worker")
    assert actor.process is None and actor.interleave is False
    world.touched.clear()
    actor.start()
    assert world.touched[-1] == ("actor:worker", True)  # its process's cell, after its incarnation
    assert ("actor:worker.incarnation", True) in world.touched
    assert actor.process is not None and actor.process.actor == "worker"  # type: ignore[attr-defined]
    world.touched.clear()
    assert maybe_expire_session(nemesis, client) is False
    assert world.touched == [("nemesis", False)]  # the faults fired so far: none fires, a read
    assert world.source.asked[0][0] == "fault.session-expiry.c1"  # type: ignore[attr-defined]
    assert pause_with_session(nemesis, actor, client) == 0
    assert client.live and client.state == "connected"
    struck = DrawLog([1, 1])
    hit = Nemesis(struck, FaultPlan(kinds=frozenset({"session-expiry"}), p=0.5))
    other = ZkClient(struck, VersionedStore(struck), "c2")
    assert maybe_expire_session(hit, other) is True and not other.live
    with pytest.raises(ValueError, match=r"unknown fault kinds \['bogus'\]"):
        FaultPlan(kinds=frozenset({"bogus"}))


def test_fault_ops_are_logged_by_the_nemesis() -> None:
    world = World(ReplaySource([1], strict=False))
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"crash"}), p=0.5))
    assert nemesis.strikes("crash", "host1") is True
    (op,) = world.history.of_kind("fault.crash")
    assert (op.actor, op.get("target")) == ("nemesis", "host1")
