"""The simulated ZooKeeper store: what a watcher, a listener and a session see, pinned case by case.

A full mutation run (docs/maintaining/mutation.md) left these changeable without a test
noticing: the node state a listener hears after a multi-op, a child watch on a
node that is deleted, the order of a persistent watch's children events, the
watches an expired session leaves behind, sequence numbers, and the copies the
store hands out. Where ZooKeeper's own behaviour is the reference, the test
cites it; `test_multi_and_watches.py` compares the same behaviours with a real
ZooKeeper on generated op lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.touch_log import DrawLog, TouchLog
from raceproof.sim import (
    BadArguments,
    NodeExists,
    NoNode,
    ReplaySource,
    SessionExpired,
    TxOp,
    VersionedStore,
    WatchEvent,
    World,
    ZkClient,
)
from raceproof.sim.errors import KernelError
from raceproof.sim.store import BadVersion, NotEmpty, TransactionFailed, live_watches


def _store(
    draws: Sequence[int] = (), delays_ms: Sequence[int] = (0,)
) -> tuple[World, VersionedStore]:
    world = World(ReplaySource(list(draws), strict=False))
    return world, VersionedStore(world, watch_delay_ms=delays_ms)


class _SessionWatcher:
    """A watcher set by a session, as ZkClient's are: it carries the ``session`` attribute."""

    def __init__(self, session: int, seen: list[tuple[object, str, str]]) -> None:
        self.session = session
        self.seen = seen

    def __call__(self, event: WatchEvent) -> None:
        self.seen.append((self.session, event.kind, event.path))


def test_the_watches_an_expired_session_set_are_removed_and_never_fire() -> None:
    world, store = _store()
    first, second = store.open_session(), store.open_session()
    assert (first, second) == (1, 2)  # sessions are numbered from one, in order
    seen: list[tuple[object, str, str]] = []
    mine, other = _SessionWatcher(first, seen), _SessionWatcher(second, seen)

    def plain(event: WatchEvent) -> None:  # no session attribute: nobody's to drop
        seen.append((None, event.kind, event.path))

    for watcher in (mine, other, plain):
        store.exists("/a", watch=watcher)
    store.create("/p")
    store.children("/p", watch=mine)
    store.children("/p", watch=other)
    store.add_watch("/p", mine)
    store.add_watch("/p", other, recursive=True)
    store.add_watch("/q", mine)
    store.expire_session(first)
    assert live_watches(store) == {
        "data": {"/a": [other, plain]},
        "child": {"/p": [other]},
        "persistent": {"/p": [(other, True)]},
    }
    store.create("/a")
    store.create("/p/c")
    world.run()
    assert sorted(seen, key=str) == sorted(
        [
            (second, "created", "/a"),
            (None, "created", "/a"),
            (second, "children", "/p"),
            (second, "created", "/p/c"),
        ],
        key=str,
    )


def test_an_unknown_or_expired_session_cannot_own_an_ephemeral_node() -> None:
    _, store = _store()
    with pytest.raises(SessionExpired, match=r"^session 7 has expired$"):
        store.create("/e", ephemeral_session=7)
    session = store.open_session()
    store.create("/e", ephemeral_session=session)
    assert store.expire_session(session) == ["/e"]
    with pytest.raises(SessionExpired, match=rf"^session {session} has expired$"):
        store.create("/e", ephemeral_session=session)
    assert not store.exists("/e")


def test_a_multi_ops_changes_are_heard_after_it_each_with_the_node_as_it_changed() -> None:
    world, store = _store(draws=[0, 1, 0], delays_ms=(0, 50))
    store.create("/p")
    session = store.open_session()
    heard: list[tuple[str, object, int]] = []

    def listener(path: str, node: Any) -> None:
        state = None if node is None else (node.data, node.version, node.ephemeral_session)
        heard.append((path, state, store.nodes.peek()["/a"].version))  # /a as it is when heard

    store.add_listener(listener)
    events: list[tuple[int, str, str]] = []

    def watcher(event: WatchEvent) -> None:
        events.append((world.now_ms, event.kind, event.path))

    store.children("/p", watch=watcher)  # one-shot: draw 0 (0 ms)
    store.add_watch("/p", watcher)  # persistent: draws 1 (50 ms) and 0 (0 ms), in order
    store.multi(
        [
            TxOp("create", "/a", {"n": 1}),
            TxOp("set", "/a", {"n": 2}, version=0),
            TxOp("create", "/p/e", "e", ephemeral=True),
            TxOp("delete", "/p/e"),
        ],
        session=session,
    )
    assert heard == [
        ("/a", ({"n": 1}, 0, None), 1),
        ("/a", ({"n": 2}, 1, None), 1),
        ("/p/e", ("e", 0, session), 1),
        ("/p/e", None, 1),
    ]
    world.run()
    # The persistent watch's second event waits for its first, though drawn to come sooner.
    assert events == [(0, "children", "/p"), (50, "children", "/p"), (50, "children", "/p")]


def test_a_child_watch_fires_on_its_nodes_deletion_but_not_on_a_change_of_its_data() -> None:
    """ZooKeeper's DataTree.deleteNode triggers the node's child watches with NodeDeleted."""
    world, store = _store()
    store.create("/n")
    seen: list[tuple[str, str]] = []
    store.children("/n", watch=lambda event: seen.append((event.kind, event.path)))
    store.set("/n", 1)
    world.run()
    assert seen == []
    store.delete("/n")
    world.run()
    assert seen == [("deleted", "/n")]


def test_the_root_is_version_zero_and_cannot_be_deleted() -> None:
    """ZooKeeper refuses to delete "/" (PrepRequestProcessor: a special path)."""
    _, store = _store()
    assert store.get("/") == (None, 0)
    with pytest.raises(BadArguments, match=r"^the root znode cannot be deleted$"):
        store.delete("/")
    assert store.exists("/") and store.children("/") == []


def test_missing_and_existing_nodes_are_named_in_the_error() -> None:
    _, store = _store()
    for call, message in (
        (lambda: store.get("/none"), r"^/none$"),
        (lambda: store.set("/none", 1), r"^/none$"),
        (lambda: store.create("/none/child"), r"^/none$"),
        (lambda: store.create("/none/s-", sequential=True), r"^/none$"),
    ):
        with pytest.raises(NoNode, match=message):
            call()
    store.create("/x")
    with pytest.raises(NodeExists, match=r"^/x$"):
        store.create("/x")
    with pytest.raises(ValueError, match=r"^watch_delay_ms needs at least one option"):
        VersionedStore(World(ReplaySource([], strict=False)), watch_delay_ms=())


def test_the_store_copies_nested_data_in_and_out() -> None:
    _, store = _store()
    data = {"members": ["a"]}
    store.create("/g", data)
    data["members"].append("b")  # the caller's object, changed after the create
    got, _ = store.get("/g")
    assert got == {"members": ["a"]}
    got["members"].append("c")  # and the copy handed out, changed after the get
    assert store.get("/g") == ({"members": ["a"]}, 0)


def test_exists_reads_its_node_unless_it_sets_a_watch() -> None:
    world = TouchLog()
    store = VersionedStore(world)
    store.exists("/x")
    assert world.touched == [("zk:node['/x']", False)]
    world.touched.clear()
    store.exists("/x", watch=lambda event: None)
    table = "zk:data-watches['/x']"  # the watch table: read, then written with the new watch
    assert world.touched == [(table, False), (table, True), ("zk:node['/x']", False)]


@given(
    st.lists(
        st.sampled_from(["create /q", "create /r", "delete", "seq /q", "seq /r", "fail"]),
        max_size=12,
    )
)
def test_a_sequence_counts_the_children_ever_created_under_its_parent(steps: list[str]) -> None:
    """ZooKeeper 3.8.0's PrepRequestProcessor names a sequential node after its parent's
    cversion, which every create under it raises by one and a delete leaves; a failed
    multi-op changes nothing. The model here is the count kept by hand."""
    _, store = _store()
    store.create("/q")
    store.create("/r")
    created = {"/q": 0, "/r": 0}
    alive: list[str] = []
    for step in steps:
        if step == "delete":
            if alive:
                store.delete(alive.pop(0))
        elif step == "fail":  # a multi that creates, then fails: rolled back whole
            with pytest.raises(Exception, match="NoNode"):
                store.multi([TxOp("create", "/q/s-", sequential=True), TxOp("delete", "/none")])
        else:
            kind, parent = step.split()
            prefix = (
                f"{parent}/s-" if kind == "seq" else f"{parent}/n{len(alive)}-{created[parent]}"
            )
            path = store.create(prefix, sequential=kind == "seq")
            expected = f"{prefix}{created[parent]:010d}" if kind == "seq" else prefix
            assert path == expected
            created[parent] += 1
            alive.append(path)
    assert sorted(alive) == sorted(
        f"{parent}/{name}" for parent in ("/q", "/r") for name in store.children(parent)
    )


def test_the_servers_expiry_of_a_paused_client_reads_the_client_and_is_the_servers_step() -> None:
    world = TouchLog()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1", session_timeout_ms=1)  # the shortest timeout there is
    assert (client._expiry.actor, client._expiry.resource) == (
        "zk-server",
        "timer:zk-client:c1:expiry",
    )
    client.pause(5)  # longer than the timeout: the server expires the session at 1 ms
    world.touched.clear()
    world.run()
    field = "zk-client:c1.{}".format
    assert world.touched == [
        (field("listeners"), False),  # the notice of the lost connection reads the listeners
        ("timer:zk-client:c1:expiry", False),  # the server's timer fires (its cells)
        ("timer:zk-client:c1:expiry", True),
        ("timer:zk-client:c1:expiry.fired", False),
        ("timer:zk-client:c1:expiry.fired", True),
        (field("session"), False),  # which session (logged)
        (field("session"), False),  # (expired)
        ("zk:session[1]", False),  # the server expires it
        ("zk:session[1]", True),
        ("zk:ephemerals[1]", True),  # and its ephemerals (none)
        (field("reconnect-at"), False),  # the client resumes: no later loss
        (field("dead"), False),
        (field("state"), False),  # disconnected: reconnect
        (field("waiting"), False),  # no actor blocked,
        (field("queued"), False),  # no request queued
        (field("session"), False),
        ("zk:session[1]", False),  # and finds the session expired
        (field("held"), False),  # nothing held or lost to drop
        (field("lost-watches"), False),
        (field("state"), True),
        (field("session"), False),
        (field("last-tell"), False),  # the notice queues behind the one before
        (field("last-tell"), True),
        (field("listeners"), False),  # and tells its listeners
    ]
    assert [(op.actor, op.kind) for op in world.history.ops] == [
        ("c1", "zk.paused"),
        ("c1", "zk.session"),
        ("zk-server", "zk.session-expired"),
        ("c1", "zk.session"),
    ]


def test_a_clients_persistent_watch_is_not_recursive_unless_asked() -> None:
    world, store = _store()
    client = ZkClient(world, store, "c1")
    seen: list[tuple[str, str]] = []
    store.create("/p")
    client.add_watch("/p", lambda event: seen.append((event.kind, event.path)))
    store.create("/p/c")
    world.run()
    assert seen == [("children", "/p")]  # a recursive watch would see ("created", "/p/c")


def test_paths_are_absolute_without_a_trailing_slash_and_the_root_exists() -> None:
    _, store = _store()
    for bad in ("relative", "/a/"):
        with pytest.raises(ValueError, match=f"bad path {bad!r}"):
            store.create(bad)
    with pytest.raises(NodeExists, match=r"^/$"):
        store.create("/")
    store.create("/q")
    assert store.create("/q/", sequential=True) == "/q/0000000000"  # a prefix may end in "/"


def test_a_data_watch_fired_by_a_multi_op_gets_the_kind_of_change() -> None:
    world, store = _store()
    seen: list[tuple[str, str]] = []
    store.exists("/a", watch=lambda event: seen.append((event.kind, event.path)))
    store.create("/b")
    store.get("/b", watch=lambda event: seen.append((event.kind, event.path)))
    store.multi([TxOp("create", "/a", 1), TxOp("set", "/b", 2)])
    world.run()
    assert seen == [("created", "/a"), ("changed", "/b")]


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
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
    world = DrawLog()
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
    table = f"{store.name}:persistent-watches['/w']"
    assert world.touched == [(table, False), (table, True)]
    store.create("/w", 0)
    world.run()
    assert seen == ["second created"]
    assert store.remove_watch("/w", second) is True and "/w" not in store.persistent_watches.peek()


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
    world = DrawLog()
    store = VersionedStore(world)
    store.ensure_path("/a/b/c")
    store.create("/a/x", 0)
    store.create("/z", 0)
    assert store.children("/") == ["a", "z"]
    assert store.children("/a") == ["b", "x"]  # not the grandchild /a/b/c
    world.touched.clear()
    store.children("/a")
    store.children("/a", watch=lambda e: None)
    children, watches = "zk:children['/a']", "zk:child-watches['/a']"
    assert world.touched == [
        (children, False),
        (children, False),
        (watches, False),
        (watches, True),
    ]


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
    assert store.nodes.peek()["/q/e"].ephemeral_session == session
    with pytest.raises(TransactionFailed):
        store.multi(
            [TxOp("create", "/q/s-", "two", sequential=True), TxOp("delete", "/q", version=0)],
            session=session,
        )
    assert store.nodes.peek()["/q/e"].ephemeral_session == session  # rolled back intact
    # /q has had two children created: its sequence goes on from 2, as ZooKeeper's cversion does.
    assert store.create("/q/s-", "three", sequential=True) == "/q/s-0000000002"
    store.multi([TxOp("delete", "/q/s-0000000002", version=0)])
    assert not store.exists("/q/s-0000000002")
    with pytest.raises(TransactionFailed, match="BadVersion"):
        store.multi([TxOp("delete", "/q/s-0000000000", version=3)])
    with pytest.raises(ValueError, match=r"^an ephemeral create needs a session(\n|$)"):
        store.multi([TxOp("create", "/q/f", ephemeral=True)])


def test_a_multi_op_cannot_start_inside_another() -> None:
    """Notifications of a multi-op run after it, so no model can nest one; the guard stays."""
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    heard: list[bool] = []
    store.add_listener(lambda path, node: heard.append(not store._journal.active))
    store.multi([TxOp("create", "/m", 1)])
    assert heard == [True]  # the listener ran once the multi-op was over
    store._journal.begin()  # as if inside one
    with pytest.raises(KernelError, match=r"^a multi-op cannot nest(\n|$)"):
        store.multi([TxOp("check", "/")])


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


def test_each_client_and_store_operation_records_exactly_its_footprint() -> None:
    """The reduction treats two steps as commuting when these entries allow it: a read
    recorded as a write only costs schedules, a write recorded as a read hides some."""
    world = DrawLog()
    store = VersionedStore(world)
    store.create("/x", 0)
    client = ZkClient(world, store, "c1")
    node, table = "zk:node['/x']", ("zk:session[1]", False)
    x, read_x = (node, True), (node, False)
    # A call reads the client's state (connected?) and, through ``live``, its session's entry.
    asks = [(f"{client.resource}.state", False), (f"{client.resource}.session", False), table]
    data_watch = [("zk:data-watches['/x']", False), ("zk:data-watches['/x']", True)]
    persistent = [("zk:persistent-watches['/x']", False), ("zk:persistent-watches['/x']", True)]
    fires = [("zk:listeners", False), ("zk:data-watches['/x']", False)]
    above = [("zk:persistent-watches['/x']", False), ("zk:persistent-watches['/']", False)]
    cases: list[tuple[Any, list[tuple[str, bool]]]] = [
        (lambda: client.get("/x"), [*asks, read_x]),
        (lambda: client.exists("/x"), [*asks, read_x]),
        (lambda: client.children("/x"), [*asks, ("zk:children['/x']", False)]),
        (lambda: client.set("/x", 1), [*asks, read_x, x, *fires, *above]),
        (lambda: client.check("/x"), [*asks, read_x]),
        (lambda: store.session_live(client.session), asks[1:]),  # client.session is a read
        (lambda: store.add_watch("/x", lambda e: None), persistent),
        (lambda: store.get("/x", watch=lambda e: None), [read_x, *data_watch]),
    ]
    for operation, footprint in cases:
        world.touched.clear()
        operation()
        assert world.touched == footprint, operation
    assert store.session_live(12345) is False  # an unknown session is not live
