"""The session-bound ZooKeeper client: ephemerals, watches and writes die with the session."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.touch_log import DrawLog, after
from raceproof.sim import (
    Actor,
    ConnectionLoss,
    FaultPlan,
    KeyedReplaySource,
    Nemesis,
    NoChildrenForEphemerals,
    RandomSource,
    ReplaySource,
    SessionEvent,
    SessionExpired,
    VersionedStore,
    World,
    ZkClient,
    maybe_expire_session,
    pause_with_session,
)
from raceproof.sim.store import BadVersion, TransactionFailed


def fifo_world() -> World:
    return World(ReplaySource([], strict=False))


def test_a_pause_longer_than_the_timeout_expires_the_session() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.ensure_path("/leader")
    client = ZkClient(world, store, "host1", session_timeout_ms=1000)
    other = ZkClient(world, store, "host2", session_timeout_ms=1000)
    heard: list[tuple[int, str]] = []
    fired: list[tuple[int, str, str]] = []
    client.add_listener(lambda e: heard.append((world.now_ms, e.state)))
    client.create("/leader/host1", "me", ephemeral=True)
    client.exists("/leader/host2", watch=lambda e: fired.append((world.now_ms, "host1", e.kind)))
    other.children("/leader", watch=lambda e: fired.append((world.now_ms, "host2", e.kind)))

    def scenario() -> Generator[Any, Any, None]:
        yield world.sleep(100)
        client.pause(2500)
        with pytest.raises(ConnectionLoss):
            client.set("/leader/host1", "still me")
        assert client.live and not client.connected  # the server still holds it
        yield world.sleep(1000)  # t=1100: the server expired it at 1100
        assert not client.live and client.state == "disconnected"  # the client cannot know yet
        assert not store.exists("/leader/host1")
        other.create("/leader/host2", "next")  # would fire host1's watch: it died with the session
        yield world.sleep(2000)
        with pytest.raises(SessionExpired):
            client.get("/leader")

    world.spawn("scenario", scenario())
    world.run_to_end()
    assert heard == [(100, "disconnected"), (2600, "expired")]
    assert fired == [(1100, "host2", "children")]  # host2 hears host1's ephemeral go; host1 nothing
    sessions = [(op.time_ms, op.kind, op.get("state")) for op in world.history if "zk." in op.kind]
    assert sessions == [
        (100, "zk.paused", None),
        (100, "zk.session", "disconnected"),
        (1100, "zk.session-expired", None),
        (2600, "zk.session", "expired"),
    ]


def test_a_short_pause_keeps_the_session_and_holds_watch_events_until_reconnect() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.create("/config", 1)
    client = ZkClient(world, store, "app", session_timeout_ms=1000)
    heard: list[SessionEvent] = []
    fired: list[tuple[int, str]] = []
    client.add_listener(heard.append)
    client.get("/config", watch=lambda e: fired.append((world.now_ms, e.kind)))
    client.pause(400)
    store.set("/config", 2)
    world.run_to_end()
    assert [e.state for e in heard] == ["disconnected", "connected"]
    assert fired == [(400, "changed")]  # delivered once the client is back
    assert client.live and client.connected


def test_requests_in_flight_die_with_the_session_or_lose_their_reply() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.create("/x", 0)
    client = ZkClient(world, store, "c", session_timeout_ms=1000, latency_ms=(10, 20))
    outcomes: list[tuple[str, Any]] = []

    def writer(value: int, partition_at_ms: int) -> Generator[Any, Any, None]:
        try:
            result = yield from client.request(lambda: client.set("/x", value))
            outcomes.append(("ok", result))
        except ConnectionLoss as error:
            outcomes.append(("loss", str(error)))

    def partition(at_ms: int, heal_ms: int) -> Generator[Any, Any, None]:
        yield world.sleep(at_ms)
        client.disconnect()
        yield world.sleep(heal_ms)
        client.reconnect()

    world.spawn("w1", writer(1, 5))  # reaches the server at 10, after the partition at 5
    world.spawn("net", partition(5, 100))
    world.run_to_end()
    assert outcomes == [("loss", "c lost the reply: the operation was not applied")]
    assert store.get("/x") == (0, 0)  # never applied

    world.spawn("w2", writer(2, 0))  # applied at 115, its reply due at 125
    world.spawn("net", partition(10, 100))
    world.run_to_end()
    assert outcomes[1] == ("loss", "c lost the reply: the operation was applied")
    assert store.get("/x") == (2, 1)


class _Holder(Actor):
    def main(self) -> Generator[Any, Any, None]:
        while True:
            yield from self.wait(self.world.sleep(100))
            self.world.log(self.name, "tick")


@pytest.mark.parametrize("long_pause, expected", [(0, "connected"), (1, "expired")])
def test_the_drawn_pause_fault_expires_the_session_only_when_it_is_long(
    long_pause: int, expected: str
) -> None:
    world = World(
        KeyedReplaySource({("fault.pause.holder", 0): 1, ("pause.holder", 0): long_pause})
    )
    store = VersionedStore(world)
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"pause"})))
    holder = _Holder(world, "holder")
    client = ZkClient(world, store, "holder", session_timeout_ms=1000)
    client.create("/lock", ephemeral=True)
    holder.start()

    def chaos() -> Generator[Any, Any, None]:
        yield world.sleep(150)
        assert pause_with_session(nemesis, holder, client) == (500, 2000)[long_pause]
        yield world.sleep(3000)
        world.finish()

    world.spawn("chaos", chaos())
    world.run_to_end()
    assert client.state == expected
    assert store.exists("/lock") == (expected == "connected")
    ticks = [op.time_ms for op in world.history if op.kind == "tick"]
    assert ticks[:2] == [100, (650, 2150)[long_pause]]  # the actor sat the pause out


def test_the_session_expiry_fault_and_a_new_session() -> None:
    world = World(RandomSource(0))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c")
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"session-expiry"}), p=1.0))
    client.create("/e", ephemeral=True)
    assert maybe_expire_session(nemesis, client)
    assert client.state == "expired" and not store.exists("/e")
    client.renew()
    client.create("/e", ephemeral=True)
    assert client.connected and store.get("/e")[1] == 0


# -- properties ---------------------------------------------------------------------------
actions = st.lists(
    st.tuples(
        st.sampled_from(["create", "watch", "add_watch", "write", "pause", "expire", "wait"]),
        st.integers(0, 3),
        st.integers(0, 3000),
    ),
    max_size=25,
)


def _run(
    program: list[tuple[str, int, int]], seed: int
) -> tuple[World, list[tuple[int, int]], dict[int, int]]:
    """Two clients act out ``program``; returns the world, (time, session) of each watch firing
    of client A, and A's sessions' death times."""
    world = World(RandomSource(seed))
    store = VersionedStore(world, watch_delay_ms=(0, 5, 500))
    a = ZkClient(world, store, "a", session_timeout_ms=1000, notice_ms=(0, 30))
    b = ZkClient(world, store, "b", session_timeout_ms=1000)
    deaths: dict[int, int] = {}
    fired: list[tuple[int, int]] = []

    def note(session: int) -> Any:
        return lambda _event: fired.append((world.now_ms, session))

    def driver() -> Generator[Any, Any, None]:
        for kind, node, amount in program:
            path = f"/n{node}"
            if a.state in ("expired", "closed"):
                a.renew()
            try:
                if kind == "create" and not store.exists(path):
                    a.create(path, ephemeral=True)
                elif kind == "watch":
                    a.exists(path, watch=note(a.session))
                elif kind == "add_watch":
                    a.add_watch(path, note(a.session), recursive=bool(amount % 2))
                elif kind == "write":
                    b.set(path, amount) if store.exists(path) else b.create(path, amount)
                elif kind == "pause":
                    a.pause(amount)
                elif kind == "expire":
                    a.expire()
                else:
                    yield world.sleep(amount)
            except (ConnectionLoss, SessionExpired):
                pass
        world.finish()

    world.spawn("driver", driver())
    world.run_to_end()
    for op in world.history.of_kind("zk.session-expired"):
        deaths.setdefault(int(op.get("session")), op.time_ms)
    return world, fired, deaths


@given(actions, st.integers(0, 2**32))
def test_an_expired_sessions_ephemerals_are_gone_and_its_watches_never_fire(
    program: list[tuple[str, int, int]], seed: int
) -> None:
    world, fired, deaths = _run(program, seed)
    for at_ms, session in fired:
        assert session not in deaths or at_ms <= deaths[session], (at_ms, session, deaths)
    store = world.history.of_kind("zk.session-expired")
    assert len(store) == len(deaths)  # each session expires once


@given(actions, st.integers(0, 2**32))
def test_session_runs_are_deterministic(program: list[tuple[str, int, int]], seed: int) -> None:
    first, second = _run(program, seed)[0], _run(program, seed)[0]
    assert first.history.trace_hash() == second.history.trace_hash()
    assert first.source.record == second.source.record


def test_the_property_sees_watches_fire_and_sessions_die() -> None:
    """The generated programs do exercise both sides of the property."""
    program = [
        ("watch", 1, 0),
        ("write", 1, 5),
        ("wait", 0, 600),
        ("create", 2, 0),
        ("pause", 0, 2000),
        ("watch", 2, 0),
        ("wait", 0, 3000),
    ]
    world, fired, deaths = _run(program, 7)
    assert fired and deaths
    assert world.history.of_kind("zk.session-expired")[0].get("session") is not None


def test_session_events_reach_listeners_in_order_whatever_the_notice_delays() -> None:
    world = World(
        ReplaySource([1, 0, 1, 0], strict=False)
    )  # disconnected heard late, connected at once
    store = VersionedStore(world)
    client = ZkClient(world, store, "c", session_timeout_ms=1000, notice_ms=(0, 300))
    heard: list[tuple[int, str]] = []
    client.add_listener(lambda e: heard.append((world.now_ms, e.state)))
    client.pause(100)
    world.run_to_end()
    assert heard == [(300, "disconnected"), (300, "connected")]


@given(st.integers(0, 2**32))
def test_notifications_held_while_disconnected_arrive_in_order_on_reconnect(seed: int) -> None:
    world = World(RandomSource(seed))
    store = VersionedStore(world)  # watch delay 0: the store's own ordering is not in question
    store.create("/config", 0)
    client = ZkClient(world, store, "app", session_timeout_ms=1000)
    seen: list[tuple[int, str]] = []
    client.add_watch("/config", lambda e: seen.append((world.now_ms, e.kind)))
    client.pause(300)
    for value in (1, 2, 3):
        store.set("/config", value)
    store.delete("/config")
    world.run_to_end()
    assert seen == [(300, "changed")] * 3 + [(300, "deleted")]


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_a_session_client_closes_and_reports_its_footprints() -> None:
    world = DrawLog()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    states: list[str] = []
    world.touched.clear()
    client.add_listener(lambda e: states.append(e.state))
    listeners = f"{client.resource}.listeners"
    assert world.touched == [(listeners, False), (listeners, True)]
    client.create("/e", 1, ephemeral=True)

    def ask() -> Generator[Any, Any, None]:
        world.touched.clear()
        result = yield from client.request(lambda: store.get("/e"))
        assert result == (1, 0)
        assert world.touched[-1] == (f"{client.resource}.connection", False)  # was it cut?

    world.spawn("asker", ask())
    world.run()
    world.touched.clear()
    client.close()
    assert world.touched[0] == (f"{client.resource}.session", False)
    assert (f"{client.resource}.state", True) in world.touched
    assert client.state == "closed" and not store.exists("/e")
    world.run()
    assert states == ["closed"]
    client.close()  # closing twice changes nothing more
    world.run()
    assert states == ["closed", "closed"] and client.state == "closed"


def test_a_watch_in_flight_when_its_session_dies_is_dropped_and_no_watch_is_none() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world, watch_delay_ms=(5,))
    client = ZkClient(world, store, "c1")
    seen: list[str] = []
    assert client.exists("/p") is False  # no watcher: nothing registered
    assert store.data_watches.peek() == {}
    client.exists("/p", watch=lambda e: seen.append(e.kind))
    store.create("/p", 0)  # notification due at 5 ms
    world.spawn("killer", after(world, 1, client.expire))
    world.run()
    assert seen == [] and not client.live


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


def test_a_session_clients_creates_and_watches_take_their_defaults() -> None:
    world = DrawLog()
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
    session = (f"{client.resource}.session", False)
    assert world.touched[:2] == [session, (f"{store.name}:session[{client.session}]", False)]
    assert (f"{store.name}:session[{client.session}]", True) in world.touched
    assert (f"{store.name}:node['/e']", True) in world.touched
    assert (f"{store.name}:children['/']", True) in world.touched  # the parent's child list
    assert store.exists("/plain") and not store.exists("/e")
    other.create("/plain/child", 1)
    world.run()
    assert sorted(seen) == ["c2 created /plain/child", "c2 deleted /e"]


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


@pytest.mark.parametrize(
    ("end", "heard"), [("close", ["deleted /p/e", "children /p"]), ("expire", [])]
)
def test_closing_a_session_tells_its_own_watches_its_ephemerals_went(
    end: str, heard: list[str]
) -> None:
    """A real server deletes a closing session's ephemerals before it drops the session's
    watches, and sends those notifications before the close's reply (the conformance test
    found it on ZooKeeper 3.8.0). An expiry drops the watches first: they hear nothing."""
    world = fifo_world()
    store = VersionedStore(world, watch_delay_ms=(5,))
    store.create("/p")
    client, other = ZkClient(world, store, "c1"), ZkClient(world, store, "c2")
    seen: list[str] = []
    client.create("/p/e", 1, ephemeral=True)
    client.get("/p/e", watch=lambda e: seen.append(f"{e.kind} {e.path}"))
    client.add_watch("/p", lambda e: seen.append(f"{e.kind} {e.path}"))
    getattr(client, end)()
    world.run_to_end()
    assert seen == heard
    other.create("/p/later")  # after the close: none of its watches hears it
    world.run_to_end()
    assert seen == heard


def test_an_ephemeral_node_has_no_children() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c1")
    client.create("/e", 1, ephemeral=True)
    with pytest.raises(NoChildrenForEphemerals, match=r"^/e$"):
        client.create("/e/child")
    with pytest.raises(TransactionFailed) as failed:
        client.transaction().create("/f").create("/e/s-", sequential=True).commit()
    assert isinstance(failed.value.error, NoChildrenForEphemerals) and failed.value.index == 1
    assert store.children("/") == ["e"] and store.nodes["/"].cversion == 1
