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

from property_tests.touch_log import TouchLog
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
    assert store.data_watches == {"/a": [other, plain]}
    assert store.child_watches == {"/p": [other]}
    assert store.persistent_watches == {"/p": [(other, True)]}
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
        heard.append((path, state, store.nodes["/a"].version))  # /a as it is when heard

    store.listeners.append(listener)
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
    _, store = _store()
    touched: list[tuple[str, str]] = []
    store.on_touch = lambda mode, resource: touched.append((mode, resource))
    store.exists("/x")
    store.exists("/x", watch=lambda event: None)
    assert touched == [("read", "zk:/x"), ("write", "zk:/x")]


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
    client_read, client_write = ("zk-client:c1", False), ("zk-client:c1", True)
    assert world.touched == [
        client_read,  # the client's state-change notice reads its listeners (connection lost)
        ("timer:zk-client:c1:expiry", True),  # the server's timer fires
        client_read,  # which session
        ("zk:sessions", True),
        client_write,
        client_read,
        ("zk:sessions", False),  # the client resumes, finds it expired
        client_write,
        client_read,  # and tells its listeners
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
