"""The kernel's preconditions, messages and less-used paths, each pinned by what it must do.

A mutation run (docs/maintaining/mutation.md) showed each of these changeable without a
test noticing: a precondition's boundary (``quiet_ms > 0``), the message a
user reads when one fails, an argument dropped on its way (a transaction's
data, a timer's lateness), a stale cache entry reloaded, a watch list left
as ``None``. Each test states the behaviour; the footprint keys a step
records are pinned where the reduction's soundness depends on them.
"""

from __future__ import annotations

import importlib
from collections.abc import Generator, Sequence
from typing import Any

import pytest

from property_tests.touch_log import TouchLog
from raceproof.sim import (
    Actor,
    ChoiceSource,
    EventQueue,
    FaultPlan,
    FileSystem,
    FsError,
    LaggingCache,
    Nemesis,
    ReplaySource,
    VersionedStore,
    World,
    ZkClient,
    maybe_expire_session,
    pause_with_session,
)
from raceproof.sim.choices import ReplayMisaligned
from raceproof.sim.errors import KernelError
from raceproof.sim.fs import DiskWriteError, _parent
from raceproof.sim.history import History
from raceproof.sim.store import (
    BadVersion,
    NoNode,
    NotEmpty,
    SessionExpired,
    TransactionFailed,
    TxOp,
)
from raceproof.sim.timers import Debounce, Timer


class _Log(TouchLog):
    """FIFO, listing every footprint entry and every draw with its probability."""

    def __init__(self, values: Sequence[int] = (), source: ChoiceSource | None = None) -> None:
        super().__init__(source or _Draws(values))


class _Draws(ReplaySource):
    def __init__(self, values: Sequence[int]) -> None:
        super().__init__(list(values), strict=False)
        self.asked: list[tuple[str, int, float | None]] = []

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        self.asked.append((label, n, p_nonzero))
        return super()._pick(label, n, p_nonzero, keys)


def _done() -> Generator[Any, Any, None]:
    return
    yield  # a generator that ends at once


def _after(world: World, delay_ms: int, action: Any) -> Generator[Any, Any, None]:
    yield world.sleep(delay_ms)
    action()


# -- the kernel's own contracts ---------------------------------------------------------
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


def test_a_draw_between_equal_bounds_is_that_bound() -> None:
    source = ReplaySource([], strict=False)
    assert source.draw_int("x", 4, 4) == 4
    with pytest.raises(ValueError, match=r"draw_int 'y': empty range \[5, 4\]"):
        source.draw_int("y", 5, 4)


def test_a_misaligned_replay_keeps_its_arguments() -> None:
    error = ReplayMisaligned(3, "label a, recorded b")
    assert error.args == (3, "label a, recorded b")


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
    world = _Log([1])
    fs = FileSystem(world, "disk", fail_writes=True)
    fs.mkdir("/d")
    with pytest.raises(DiskWriteError) as failed:
        fs.write("/d/f", 1)
    assert str(failed.value) == "/d/f"
    assert world.source.asked == [("disk.write-fails", 2, 0.05)]  # type: ignore[attr-defined]
    assert not fs.exists("/d/f")
    world.touched.clear()
    fs.crash()
    assert world.touched[0] == ("disk", True)


def test_history_values_of_sixty_one_characters_are_cut() -> None:
    history = History()
    history.append(0, "a", "put", value="z" * 61)
    assert history[0].describe().endswith("value=" + "z" * 57 + "...")


# -- queues ----------------------------------------------------------------------------
def test_a_queue_keeps_duplicates_unless_asked_to_drop_them() -> None:
    world = World(ReplaySource([], strict=False))
    plain = EventQueue(world, "plain")
    assert plain.put("x") and plain.put("x") and list(plain.items) == ["x", "x"]
    deduped = EventQueue(world, "dedupe", dedupe=True)
    assert deduped.put("x") and not deduped.put("x") and deduped.dropped == 1


# -- timers ----------------------------------------------------------------------------
def test_a_debounce_checks_its_periods_with_their_names() -> None:
    world = World(ReplaySource([], strict=False))
    with pytest.raises(ValueError, match=r"^quiet_ms must be > 0(\n|$)"):
        Debounce(world, "d", 0, lambda: None)
    with pytest.raises(ValueError, match=r"^max_wait_ms must be >= quiet_ms(\n|$)"):
        Debounce(world, "d", 10, lambda: None, max_wait_ms=9)
    Debounce(world, "d", 1, lambda: None, max_wait_ms=1)  # the boundaries are allowed
    debounce = Debounce(world, "d", 5, lambda: None, late_ms=(0, 3), resource="r")
    assert (debounce.timer.actor, debounce.timer.late_ms) == ("d", (0, 3))
    assert debounce.timer.resource == "timer:r"
    assert Debounce(world, "e", 5, lambda: None).timer.resource == "timer:e"


def test_a_debounce_past_its_max_wait_fires_at_once() -> None:
    world = _Log([0, 1])  # the first firing is 3 ms late, past the max wait
    fired: list[int] = []
    debounce = Debounce(
        world, "d", 10, lambda: fired.append(world.now_ms), max_wait_ms=10, late_ms=(3, 0)
    )
    world.touched.clear()
    debounce.trigger()  # at 0: due at 10 (+3 late)
    assert world.touched[0] == ("timer:d", True)
    world.spawn("t", _after(world, 12, debounce.trigger))  # 12 > 0 + max_wait: now
    world.run()
    assert fired == [12]


# -- the store, its transactions and its cache ------------------------------------------
def test_a_transaction_carries_every_argument_of_its_ops() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    store.create("/q", None)
    tx = store.transaction().create("/q/item-", {"n": 1}, sequential=True).set_data("/q", 7, 0)
    assert tx.ops == [
        TxOp("create", "/q/item-", {"n": 1}, sequential=True),
        TxOp(kind="set", path="/q", data=7, version=0),
    ]
    assert tx.commit() == ["/q/item-0000000000", 1]
    assert store.get("/q/item-0000000000") == ({"n": 1}, 0) and store.get("/q") == (7, 1)
    with pytest.raises(TransactionFailed) as failed:
        store.transaction().set_data("/q", 8, 0).commit()  # version 0 is gone
    assert str(failed.value) == "op #0 (set /q) failed: BadVersion: /q: expected version 0, found 1"
    assert (
        failed.value.op == TxOp(kind="set", path="/q", data=8, version=0)
        and failed.value.index == 0
    )


def test_ensure_path_creates_every_missing_parent() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    store.ensure_path("/a/b/c")
    assert [store.exists(p) for p in ("/a", "/a/b", "/a/b/c")] == [True, True, True]
    assert store.children("/a") == ["b"] and store.children("/a/b") == ["c"]
    store.ensure_path("/a/b/c")  # idempotent
    assert store.get("/a/b/c") == (None, 0)


def test_removing_one_persistent_watch_leaves_the_others_on_the_path() -> None:
    world = _Log()
    store = VersionedStore(world)
    seen: list[str] = []

    def first(event: Any) -> None:
        seen.append(f"first {event.kind}")

    def second(event: Any) -> None:
        seen.append(f"second {event.kind}")

    assert store.remove_watch("/w", first) is False  # no watch on the path at all
    store.add_watch("/w", first)
    store.add_watch("/w", second)
    world.touched.clear()
    assert store.remove_watch("/w", first) is True
    assert world.touched == [(f"{store.name}:/w", True)]
    store.create("/w", 0)
    world.run()
    assert seen == ["second created"]
    assert store.remove_watch("/w", second) is True and "/w" not in store.persistent_watches


def test_a_cache_copies_what_it_hands_out_and_keeps_a_stale_view_until_refreshed() -> None:
    world = _Log()
    store = VersionedStore(world)
    store.ensure_path("/jobX")  # a prefix ending in a character a mutant might strip
    store.create("/jobX/a", {"rows": [1]})
    cache = LaggingCache(world, store, "/jobX/", name="view", auto_refresh=False)
    assert cache.prefix == "/jobX/"
    world.touched.clear()
    cache.refresh()
    assert world.touched[0] == ("view", True)
    store.set("/jobX/a", {"rows": [2]})
    got = cache.get("/jobX/a")
    assert got == ({"rows": [1]}, 0)  # stale: refreshed before the write
    assert got is not None
    got[0]["rows"].append(99)  # the caller's copy only
    assert cache.get("/jobX/a") == ({"rows": [1]}, 0)
    assert world.touched[-1] == ("view", True)
    with pytest.raises(ValueError, match=r"^lag_ms needs at least one option(\n|$)"):
        LaggingCache(world, store, "/jobX", lag_ms=())


def test_an_auto_refreshed_cache_copies_the_change_and_forgets_a_deleted_node() -> None:
    world = _Log()
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


# -- faults ------------------------------------------------------------------------------
class _Idle(Actor):
    def main(self) -> Generator[Any, Any, None]:
        yield from self.wait(self.world.sleep(50))
        self.world.log(self.name, "done")


def test_fault_helpers_say_whether_a_fault_struck() -> None:
    world = _Log([0, 0])  # no fault strikes
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"pause", "session-expiry"}), p=0.5))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    actor = _Idle(world, "worker")
    assert actor.process is None and actor.interleave is False
    world.touched.clear()
    actor.start()
    assert world.touched[0] == ("actor:worker", True)
    assert actor.process is not None and actor.process.actor == "worker"  # type: ignore[attr-defined]
    world.touched.clear()
    assert maybe_expire_session(nemesis, client) is False
    assert world.touched[0] == ("nemesis", True)
    assert world.source.asked[0][0] == "fault.session-expiry.c1"  # type: ignore[attr-defined]
    assert pause_with_session(nemesis, actor, client) == 0
    assert client.live and client.state == "connected"
    struck = _Log([1, 1])
    hit = Nemesis(struck, FaultPlan(kinds=frozenset({"session-expiry"}), p=0.5))
    other = ZkClient(struck, VersionedStore(struck), "c2")
    assert maybe_expire_session(hit, other) is True and not other.live
    with pytest.raises(ValueError, match=r"unknown fault kinds \['bogus'\]"):
        FaultPlan(kinds=frozenset({"bogus"}))


def test_a_session_client_closes_and_reports_its_footprints() -> None:
    world = _Log()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    states: list[str] = []
    world.touched.clear()
    client.add_listener(lambda e: states.append(e.state))
    assert world.touched == [(client.resource, True)]
    client.create("/e", 1, ephemeral=True)

    def ask() -> Generator[Any, Any, None]:
        world.touched.clear()
        result = yield from client.request(lambda: store.get("/e"))
        assert result == (1, 0)
        assert world.touched[-1] == (client.resource, False)

    world.spawn("asker", ask())
    world.run()
    world.touched.clear()
    client.close()
    assert world.touched[0] == (client.resource, True)
    assert client.state == "closed" and not store.exists("/e")
    world.run()
    assert states == ["closed"]
    client.close()  # closing twice changes nothing more
    world.run()
    assert states == ["closed", "closed"] and client.state == "closed"


def test_draw_bool_takes_probabilities_from_zero_to_one_inclusive() -> None:
    source = ReplaySource([], strict=False)
    assert source.draw_bool("never", 0.0) is False and source.draw_bool("always", 1.0) is False
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"draw_bool 'x': p={bad} is not a probability"):
            source.draw_bool("x", bad)


def test_a_watch_in_flight_when_its_session_dies_is_dropped_and_no_watch_is_none() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world, watch_delay_ms=(5,))
    client = ZkClient(world, store, "c1")
    seen: list[str] = []
    assert client.exists("/p") is False  # no watcher: nothing registered
    assert store.data_watches == {}
    client.exists("/p", watch=lambda e: seen.append(e.kind))
    store.create("/p", 0)  # notification due at 5 ms
    world.spawn("killer", _after(world, 1, client.expire))
    world.run()
    assert seen == [] and not client.live


def test_fault_ops_are_logged_by_the_nemesis() -> None:
    world = World(ReplaySource([1], strict=False))
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"crash"}), p=0.5))
    assert nemesis.strikes("crash", "host1") is True
    (op,) = world.history.of_kind("fault.crash")
    assert (op.actor, op.get("target")) == ("nemesis", "host1")


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


# -- the store's errors, children and multi-ops ---------------------------------------------
def test_store_errors_name_the_node_and_versions_from_zero_are_checked() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    for call in (
        lambda: store.check("/none"),
        lambda: store.children("/none"),
        lambda: store.delete("/none"),
    ):
        with pytest.raises(NoNode, match=r"^/none$"):
            call()
    store.create("/n", 0)
    store.set("/n", 1)  # version 1
    with pytest.raises(BadVersion, match=r"^/n: expected version 0, found 1$"):
        store.check("/n", 0)
    with pytest.raises(BadVersion, match=r"^/n: expected version 0, found 1$"):
        store.delete("/n", 0)
    store.check("/n", 1)
    store.create("/n/child", 0)
    with pytest.raises(NotEmpty, match=r"^/n$"):
        store.delete("/n", 1)
    store.delete("/n/child", 0)
    store.delete("/n", 1)
    assert not store.exists("/n")


def test_children_are_the_direct_ones_sorted_and_a_watch_makes_the_read_a_write() -> None:
    world = _Log()
    store = VersionedStore(world)
    store.ensure_path("/a/b/c")
    store.create("/a/x", 0)
    store.create("/z", 0)
    assert store.children("/") == ["a", "z"]
    assert store.children("/a") == ["b", "x"]  # not the grandchild /a/b/c
    world.touched.clear()
    store.children("/a")
    store.children("/a", watch=lambda e: None)
    assert world.touched == [("zk:/a", False), ("zk:/a", True)]


def test_a_multi_op_applies_every_argument_and_rolls_back_ephemerals_and_sequences() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    session = store.open_session()
    store.create("/q", "q")
    results = store.multi(
        [
            TxOp("create", "/q/s-", "one", sequential=True),
            TxOp("create", "/q/e", "eph", ephemeral=True),
            TxOp("set", "/q", "q2", version=0),
            TxOp("check", "/q", version=1),
        ],
        session=session,
    )
    assert results == ["/q/s-0000000000", "/q/e", 1, None]
    assert store.get("/q/s-0000000000") == ("one", 0) and store.get("/q") == ("q2", 1)
    assert store.nodes["/q/e"].ephemeral_session == session
    with pytest.raises(TransactionFailed):
        store.multi(
            [TxOp("create", "/q/s-", "two", sequential=True), TxOp("delete", "/q", version=0)],
            session=session,
        )
    assert store.nodes["/q/e"].ephemeral_session == session  # rolled back intact
    # /q has had two children created: its sequence goes on from 2, as ZooKeeper's cversion does.
    assert store.create("/q/s-", "three", sequential=True) == "/q/s-0000000002"
    store.multi([TxOp("delete", "/q/s-0000000002", version=0)])
    assert not store.exists("/q/s-0000000002")
    with pytest.raises(TransactionFailed, match="BadVersion"):
        store.multi([TxOp("delete", "/q/s-0000000000", version=3)])
    with pytest.raises(ValueError, match=r"^an ephemeral create needs a session(\n|$)"):
        store.multi([TxOp("create", "/q/f", ephemeral=True)])


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


def test_a_multi_op_cannot_start_inside_another() -> None:
    """Notifications of a multi-op run after it, so no model can nest one; the guard stays."""
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    heard: list[bool] = []
    store.listeners.append(lambda path, node: heard.append(store._deferred is None))
    store.multi([TxOp("create", "/m", 1)])
    assert heard == [True]  # the listener ran once the multi-op was over
    store._deferred = []  # as if inside one
    with pytest.raises(KernelError, match=r"^a multi-op cannot nest(\n|$)"):
        store.multi([TxOp("check", "/")])


def test_a_closed_session_renews_and_a_live_one_does_not() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    with pytest.raises(ValueError, match=r"^c1 renews a connected session(\n|$)"):
        client.renew()
    first = client.session
    client.close()
    client.renew()
    assert client.state == "connected" and client.session != first and client.live
    client.create("/v", 0)
    with pytest.raises(BadVersion):
        client.set("/v", 1, version=3)
    assert client.set("/v", 1, version=0) == 1


def test_pct_is_told_the_fifo_runs_schedule_draws_at_least_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from property_tests.toy_model import Toy, runner
    from raceproof.sim import Budget

    explore_module = importlib.import_module("raceproof.sim.explore")  # not the function
    from raceproof.sim.choices import PCTSource

    told: list[int] = []

    class Told(PCTSource):
        def __init__(self, seed: int, depth: int, expected_steps: int) -> None:
            told.append(expected_steps)
            super().__init__(seed, depth, expected_steps)

    monkeypatch.setattr(explore_module, "PCTSource", Told)
    alone = ((("/a", True),),)  # one actor: no tie, no schedule draw
    pair = ((("/a", True),), (("/a", True),))  # two writers: one schedule draw
    for scripts, draws in ((alone, 0), (pair, 1)):
        told.clear()
        explore_module.explore_pct(runner(Toy(scripts)), 0, Budget(examples=2), None, 2)
        assert told == [max(1, draws)] * 2
    with pytest.raises(KernelError, match="a schedule draw of 2 options names 1 actors"):
        PCTSource(0, 1, 1).schedule(2, lambda: ["a"])


def test_a_session_clients_creates_and_watches_take_their_defaults() -> None:
    world = _Log()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    other = ZkClient(world, store, "c2")
    client.create("/plain", 0)  # not ephemeral by default
    # The root has had one child created (/plain): the sequence under it goes on from 1.
    assert client.create("/q-", 0, sequential=True) == "/q-0000000001"
    assert client.create("/e", 0, ephemeral=True) == "/e"
    seen: list[str] = []
    client.add_watch("/plain", lambda e: seen.append(f"c1 {e.kind} {e.path}"))  # not recursive
    other.add_watch("/plain", lambda e: seen.append(f"c2 {e.kind} {e.path}"), recursive=True)
    other.exists("/e", watch=lambda e: seen.append(f"c2 {e.kind} {e.path}"))
    client.exists("/e", watch=lambda e: seen.append(f"c1 {e.kind} {e.path}"))
    world.touched.clear()
    client.expire()  # the server drops c1's watches and its ephemeral /e
    assert world.touched[:2] == [(client.resource, True), (client.resource, False)]
    assert (f"{store.name}:sessions", True) in world.touched
    assert (f"{store.name}:/e", True) in world.touched
    assert store.exists("/plain") and not store.exists("/e")
    other.create("/plain/child", 1)
    world.run()
    assert sorted(seen) == ["c2 created /plain/child", "c2 deleted /e"]


def test_one_shot_watches_are_delivered_after_their_own_delays_only() -> None:
    world = World(ReplaySource([1, 0], strict=False))  # 50 ms for the first, 0 for the second
    store = VersionedStore(world, watch_delay_ms=(0, 50))
    seen: list[str] = []

    def watcher(event: Any) -> None:
        seen.append(f"{world.now_ms} {event.path}")

    store.exists("/a", watch=watcher)
    store.exists("/b", watch=watcher)  # the same watcher, a second one-shot watch
    store.create("/a", 0)
    store.create("/b", 0)
    world.run()
    assert seen == ["0 /b", "50 /a"]  # one-shot deliveries do not queue behind each other


# -- footprints, exactly: what each operation reads and writes ------------------------------
def test_each_client_and_store_operation_records_exactly_its_footprint() -> None:
    """The reduction treats two steps as commuting when these entries allow it: a read
    recorded as a write only costs schedules, a write recorded as a read hides some."""
    world = _Log()
    store = VersionedStore(world)
    store.create("/x", 0)
    client = ZkClient(world, store, "c1")
    x, table = ("zk:/x", True), ("zk:sessions", False)
    read_x = ("zk:/x", False)
    # A request reads the client's state (connected?) and, through ``live``, the session table.
    asks = [(client.resource, False), (client.resource, False), table]
    cases: list[tuple[Any, list[tuple[str, bool]]]] = [
        (lambda: client.get("/x"), [*asks, read_x]),
        (lambda: client.exists("/x"), [*asks, read_x]),
        (lambda: client.children("/x"), [*asks, read_x]),
        (lambda: client.set("/x", 1), [*asks, x]),
        (lambda: client.check("/x"), [*asks, read_x]),
        (lambda: store.session_live(client.session), [table]),
        (lambda: store.add_watch("/x", lambda e: None), [x]),
        (lambda: store.get("/x", watch=lambda e: None), [x]),
    ]
    for operation, footprint in cases:
        world.touched.clear()
        operation()
        assert world.touched == footprint, operation
    assert store.session_live(12345) is False  # an unknown session is not live


def test_a_session_logs_its_changes_with_the_session_and_tells_its_listeners() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    heard: list[tuple[str, int]] = []
    client.add_listener(lambda e: heard.append((e.state, e.session)))
    client.pause(10)
    world.run()
    assert (client.state, heard) == ("connected", [("disconnected", 1), ("connected", 1)])
    paused = world.history.of_kind("zk.paused")[0]
    assert dict(paused.fields) == {"session": 1, "duration_ms": 10}
    changes = [dict(op.fields) for op in world.history.of_kind("zk.session")]
    assert changes == [
        {"state": "disconnected", "session": 1},
        {"state": "connected", "session": 1},
    ]
    with pytest.raises(SessionExpired, match=r"^c1: session 1 is expired$"):
        client.expire()
        client.get("/")


def test_a_client_checks_its_settings() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    assert ZkClient(world, store, "d").session_timeout_ms == 30_000
    for bad in ({"session_timeout_ms": 0}, {"latency_ms": ()}, {"notice_ms": ()}):
        with pytest.raises(ValueError):
            ZkClient(world, store, "c", **bad)  # type: ignore[arg-type]


def test_alive_reads_a_named_process_end_and_an_unnamed_one_touches_everything() -> None:
    from raceproof.sim.reduction import SleepSetSource

    world = _Log(source=SleepSetSource((), None, reduce=True))
    world.declare_footprints()  # processes get names that do not depend on interleavings
    process = world.spawn("p", _done())

    def probe() -> Generator[Any, Any, None]:
        yield world.sleep(1)
        world.touched.clear()
        assert world.alive(process) is False
        assert world.touched == [("proc:/p#0", False)]

    world.spawn("q", probe())
    world.run()
    plain = _Log()
    unnamed = plain.spawn("p", _done())
    plain.alive(unnamed)
    assert plain.touched == []  # not recorded by name: it touches everything instead
    timer_event = plain.sleep(5)
    plain.touched.clear()
    assert plain.unschedule(timer_event, "timer:t") is True
    assert plain.touched == [("timer:t", True)]
    assert plain.unschedule(timer_event, "timer:t") is False  # gone already


# -- timers, the shrinker's swap, the proof's estimate ------------------------------------
def test_a_timer_checks_its_lateness_and_delays_and_cancels_by_its_resource() -> None:
    world = _Log()
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
    assert world.touched == [("timer:t", True), ("timer:t", True)]  # its own, and unschedule's
    assert timer.due_ms is None


def test_swapping_one_deviation_tries_every_other_draw_and_value_in_order() -> None:
    from types import SimpleNamespace

    from raceproof.sim.choices import Choice
    from raceproof.sim.shrink import _swap_one

    best = SimpleNamespace(
        choices=[Choice("s", 2, 1), Choice("s", 3, 0), Choice("d", 2, 0), Choice("s", 2, 1)]
    )
    tried: list[dict[tuple[str, int], int]] = []

    def refuse(candidate: dict[tuple[str, int], int]) -> bool:
        tried.append(candidate)
        return False

    assert _swap_one(best, refuse) is False  # type: ignore[arg-type]
    # Deviations at (s,0) and (s,2); free draws (s,1) with values 1..2 and (d,0) with 1.
    assert tried == [
        {("s", 2): 1, ("s", 1): 1},
        {("s", 2): 1, ("s", 1): 2},
        {("s", 2): 1, ("d", 0): 1},
        {("s", 0): 1, ("s", 1): 1},
        {("s", 0): 1, ("s", 1): 2},
        {("s", 0): 1, ("d", 0): 1},
    ]
    tried.clear()
    assert _swap_one(best, lambda c: refuse(c) or len(tried) == 2) is True  # type: ignore[arg-type]
    assert len(tried) == 2


def test_an_estimate_samples_paths_seeded_from_its_seed_with_capped_widths() -> None:
    from property_tests.toy_model import Toy, runner
    from raceproof.sim.proof_plan import _UniformSource, estimate

    run = runner(Toy(((("/a", True), ("/b", False)), (("/b", True),), (("/a", False),))))
    for seed, cap in ((0, None), (5, 2)):
        products = []
        for index in range(4):
            source = _UniformSource(seed * 1_000_003 + index, cap)
            run(source)
            assert cap is None or max(source.widths) <= cap
            product = 1.0
            for width in source.widths:
                product *= width
            products.append(product)
        plan = estimate(run, samples=4, seed=seed, max_branch=cap)
        assert plan.schedules == sum(products) / 4
    assert (
        estimate(run).samples == 30 and estimate(run).schedules == estimate(run, seed=0).schedules
    )
    assert estimate(run, samples=1).samples == 1
