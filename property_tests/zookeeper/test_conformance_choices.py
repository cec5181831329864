"""Where the simulated ZooKeeper knowingly differs from a real one: each choice, shown on both.

(And one former difference, now followed on both sides: watches across a lost connection.)

``test_conformance.py`` compares the simulation with a real server on
generated sequences and leaves these cases out of its generator; here each
one runs on both sides and pins what each does, so a change on either side
(a ZooKeeper fix, a kernel change) shows. The real side is Debian's server
(3.8.0 here; 3.6.3 behaves the same in each case, from its source) seen
through the Java client's dispatch (``real_sessions``). The choices are
listed in ``docs/reference/kernel-primitives.md`` ("A real ZooKeeper").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from property_tests.zookeeper.real_sessions import Notification, RealSession
from property_tests.zookeeper.test_conformance import SimSide
from raceproof.zookeeper import ZooKeeperServer

N = Notification
chroots = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer() as started:
        yield started


@pytest.fixture
def real(server: ZooKeeperServer) -> Iterator[list[RealSession]]:
    """Two sessions in a fresh chroot of the module's server."""
    chroot = f"/choices-{next(chroots)}"
    admin = KazooClient(hosts=server.hosts, timeout=10)
    admin.start(timeout=30)
    admin.create(chroot)
    sessions = [RealSession(server.port, chroot) for _ in range(2)]
    try:
        yield sessions
    finally:
        for session in sessions:
            session.stop()
        admin.delete(chroot, recursive=True)
        admin.stop()
        admin.close()


def real_seen(sessions: list[RealSession]) -> list[Notification]:
    for session in sessions:
        session.barrier()
    return sessions[0].take_notifications()


def sim_seen(sim: SimSide) -> list[Notification]:
    sim.settle()
    return sim.take(0)


def sim_watch(sim: SimSide, watch_id: str) -> Callable[[Any], None]:
    return sim.watcher(0, watch_id)


def test_a_one_shot_watch_ends_a_persistent_one_on_its_path_only_on_the_server(
    real: list[RealSession],
) -> None:
    """The server keeps one mode per session and path (``WatcherModeManager``): the last
    watch added sets it, so a one-shot watch after a persistent one makes the path one-shot
    and the persistent watch hears the first change only (ZOOKEEPER-4466). The simulation
    keeps the two watches apart: the persistent one hears every change."""
    s, o = real
    s.create("/a", 0, ephemeral=False, sequential=False)
    s.add_watch("/a", "p", recursive=False)
    s.get("/a", "g")
    o.set("/a", 1, -1)
    o.set("/a", 2, -1)
    assert real_seen(real) == [N("changed", "/a", frozenset({"g", "p"}))]

    sim = SimSide()
    client, other = sim.clients[0], sim.clients[1]
    client.create("/a", 0)
    client.add_watch("/a", sim_watch(sim, "p"))
    client.get("/a", watch=sim_watch(sim, "g"))
    other.set("/a", 1)
    other.set("/a", 2)
    assert sim_seen(sim) == [
        N("changed", "/a", frozenset({"g", "p"})),
        N("changed", "/a", frozenset({"p"})),
    ]


def test_a_recursive_watch_hears_children_events_only_with_the_java_client(
    real: list[RealSession],
) -> None:
    """The server sends a session a children event for ``/a`` when it has a child watch
    there, and the Java client hands it to the recursive watches on ``/a`` and above too
    (``ZKWatchManager.addPersistentWatches``); a recursive watch alone never gets one. The
    simulation gives recursive watches no children events at all, as the server means."""
    s, o = real
    s.create("/a", 0, ephemeral=False, sequential=False)
    s.children("/a", "c")
    s.add_watch("/", "r", recursive=True)
    o.create("/a/x", 0, ephemeral=False, sequential=False)
    assert real_seen(real) == [
        N("created", "/a/x", frozenset({"r"})),
        N("children", "/a", frozenset({"c", "r"})),
    ]

    sim = SimSide()
    client = sim.clients[0]
    client.create("/a", 0)
    client.children("/a", watch=sim_watch(sim, "c"))
    client.add_watch("/", sim_watch(sim, "r"), recursive=True)
    sim.clients[1].create("/a/x", 0)
    assert sim_seen(sim) == [
        N("created", "/a/x", frozenset({"r"})),
        N("children", "/a", frozenset({"c"})),
    ]


def test_after_a_connection_loss_both_catch_up_with_one_event_per_watch(
    real: list[RealSession],
) -> None:
    """No longer a difference (issue 45): a lost connection takes the session's watches off
    the server; the Java client sends them again on reconnection (``SetWatches2``) and the
    server answers each one-shot watch whose node changed with one event of the node's state
    *then*, in table order (data, exists, child), and re-adds persistent ones without what
    they missed. The simulation does the same (``VersionedStore.set_watches``); before, it
    held what fired during the loss and delivered it all (here: a change, then a deletion)."""
    s, o = real
    for path in ("/a", "/b", "/c"):
        s.create(path, 0, ephemeral=False, sequential=False)
    sim = SimSide()
    client, other = sim.clients[0], sim.clients[1]
    for path in ("/a", "/b", "/c"):
        client.create(path, 0)
    watches = [("get", "/a", "g"), ("exists", "/d", "x"), ("exists", "/e", "y")]
    watches += [("children", "/b", "c"), ("get", "/c", "u")]
    for read, path, watch_id in watches:
        getattr(s, read)(path, watch_id)
        getattr(client, read)(path, watch=sim_watch(sim, watch_id))
    s.add_watch("/a", "p", recursive=False)
    client.add_watch("/a", sim_watch(sim, "p"))
    s.lose_connection()
    client.disconnect()
    sim.settle()
    for side, write in ((o, _real_write), (other, _sim_write)):
        write(side, "set", "/a")  # g and p fire: changed, then deleted
        write(side, "delete", "/a")
        write(side, "create", "/d")  # x: created
        write(side, "create", "/e")  # y: created, then gone again: armed again
        write(side, "delete", "/e")
        write(side, "create", "/b/k")  # c: children
        sim.settle()
    assert s.restore()
    client.reconnect()
    caught_up = [
        N("deleted", "/a", frozenset({"g", "p"})),
        N("created", "/d", frozenset({"x"})),
        N("children", "/b", frozenset({"c"})),
    ]
    assert real_seen(real) == caught_up
    assert sim_seen(sim) == caught_up
    o.create("/e", 0, ephemeral=False, sequential=False)  # y was armed again, u never fired
    o.set("/c", 1, -1)
    other.create("/e", 0)
    other.set("/c", 1)
    then = [N("created", "/e", frozenset({"y"})), N("changed", "/c", frozenset({"u"}))]
    assert real_seen(real) == then
    assert sim_seen(sim) == then


def _real_write(session: RealSession, kind: str, path: str) -> None:
    if kind == "set":
        session.set(path, 1, -1)
    elif kind == "delete":
        session.delete(path, -1)
    else:
        session.create(path, 0, ephemeral=False, sequential=False)


def _sim_write(client: Any, kind: str, path: str) -> None:
    if kind == "set":
        client.set(path, 1)
    elif kind == "delete":
        client.delete(path)
    else:
        client.create(path, 0)


def test_an_expired_sessions_ephemerals_go_in_path_order_in_the_simulation(
    real: list[RealSession], server: ZooKeeperServer
) -> None:
    """The server deletes an ended session's ephemerals in its hash set's order; the
    simulation in path order, so a run never depends on hashing. Each watcher hears the
    same events either way (the conformance test compares a close's or an expiry's
    notifications as a set)."""
    s, o = real
    names = ["/e3", "/e1", "/e2"]
    for name in names:
        s.create(name, 0, ephemeral=True, sequential=False)
        o.exists(name, f"x{name}")
    s.expire(server.port)
    heard = _real_heard(o, s)
    assert sorted(heard) == [N("deleted", n, frozenset({f"x{n}"})) for n in sorted(names)]

    sim = SimSide()
    for name in names:
        sim.clients[0].create(name, 0, ephemeral=True)
        sim.clients[1].exists(name, watch=sim.watcher(1, f"x{name}"))
    sim.clients[0].expire()
    sim.settle()
    assert sim.take(1) == [N("deleted", n, frozenset({f"x{n}"})) for n in sorted(names)]


def _real_heard(listener: RealSession, other: RealSession) -> list[Notification]:
    other.barrier()
    listener.barrier()
    return listener.take_notifications()


def test_a_call_during_a_connection_loss_fails_and_is_not_applied_on_both_sides(
    real: list[RealSession],
) -> None:
    """ZooKeeper 3.6.3's Java client queues a call made while it reconnects and fails it
    with CONNECTIONLOSS at the next failed attempt (``ClientCnxn.cleanup``); the oracle
    does that (kazoo would send it after the reconnection). The simulation's direct calls
    fail at once, and neither side applies them."""
    s, o = real
    s.create("/a", 0, ephemeral=False, sequential=False)
    s.lose_connection()
    sim = SimSide()
    sim.clients[0].create("/a", 0)
    sim.clients[0].disconnect()
    for call in (
        lambda side: side.set("/a", 1, -1),
        lambda side: side.create("/b", 0, ephemeral=False, sequential=False),
    ):
        for side in (s, _SimCalls(sim.clients[0])):
            with pytest.raises(Exception) as failed:
                call(side)
            assert type(failed.value).__name__ == "ConnectionLoss"
    assert s.restore()
    assert o.get("/a", None) == (0, 0) and not o.exists("/b", None)
    sim.clients[0].reconnect()
    assert sim.clients[1].get("/a") == (0, 0) and not sim.clients[1].exists("/b")


class _SimCalls:
    """The simulated client with the oracle's call shapes."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def set(self, path: str, data: Any, version: int) -> int:
        return int(self.client.set(path, data, version))

    def create(self, path: str, data: Any, *, ephemeral: bool, sequential: bool) -> str:
        return str(self.client.create(path, data, ephemeral=ephemeral, sequential=sequential))
