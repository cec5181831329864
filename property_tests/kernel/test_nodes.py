"""Faults at the level where they happen: nodes, a shared ZooKeeper connection, one thread.

A node's pause stops every process on it and none of another node's; a
connection loss blocks every actor calling through the client; pausing a
paused actor, and pausing from inside the paused process, work; node faults
are drawn choices, so a run with them replays to the same trace.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.sim import (
    Actor,
    FaultPlan,
    Nemesis,
    RandomSource,
    ReplaySource,
    VersionedStore,
    World,
    ZkClient,
    crash_and_restart_node,
    maybe_jump_clock,
    maybe_lose_connection,
    maybe_pause_node,
    pause_with_session,
    stall_thread,
)
from raceproof.sim.history import History

Gen = Generator[Any, Any, Any]


def fifo_world() -> World:
    return World(ReplaySource([], strict=False))


def ticker(
    world: World, ticks: list[tuple[str, int]], name: str, period_ms: int, end_ms: int
) -> Gen:
    while world.now_ms < end_ms:
        yield world.sleep(period_ms)
        ticks.append((name, world.now_ms))


def run_tickers(pause: tuple[int, int] | None, periods: list[int]) -> list[tuple[str, int]]:
    """Tickers a*, b* on node ``jvm`` and c* on node ``other``; ``pause`` = (start, length) of jvm's."""
    world = fifo_world()
    jvm, other = world.node("jvm"), world.node("other")
    ticks: list[tuple[str, int]] = []
    for i, period in enumerate(periods):
        world.spawn(f"a{i}", ticker(world, ticks, f"a{i}", period, 200), node=jvm)
        world.spawn(f"c{i}", ticker(world, ticks, f"c{i}", period, 200), node=other)
    if pause is not None:
        start_ms, length_ms = pause

        def nemesis() -> Gen:
            yield world.sleep(start_ms)
            jvm.pause(length_ms)

        world.spawn("nemesis", nemesis())
    world.run_to_end()
    return ticks


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 150),
    st.integers(0, 100),
    st.lists(st.integers(1, 30), min_size=1, max_size=3),
)
def test_a_node_pause_stops_all_its_processes_and_none_of_another_nodes(
    start_ms: int, length_ms: int, periods: list[int]
) -> None:
    ticks = run_tickers((start_ms, length_ms), periods)
    end_ms = start_ms + length_ms
    inside = [(n, t) for n, t in ticks if n.startswith("a") and start_ms < t < end_ms]
    assert inside == []  # no process of the paused node stepped during its pause
    unpaused = run_tickers(None, periods)
    assert [x for x in ticks if x[0].startswith("c")] == [
        x for x in unpaused if x[0].startswith("c")
    ]
    if length_ms and any(start_ms < t < end_ms for n, t in unpaused if n.startswith("a")):
        assert ticks != unpaused  # the pause moved something of the paused node


def test_a_node_pauses_itself_and_a_pause_during_a_pause_extends_it() -> None:
    world = fifo_world()
    jvm = world.node("jvm")
    seen: list[tuple[str, int]] = []

    def self_pausing() -> Gen:
        yield world.sleep(5)
        jvm.pause(40)  # from inside the paused node: its next step waits
        seen.append(("self-still-running", world.now_ms))
        yield world.sleep(1)
        seen.append(("self", world.now_ms))

    def nemesis() -> Gen:
        yield world.sleep(25)
        assert jvm.paused
        jvm.pause(30)  # ends at 55, later than 45

    world.spawn("self", self_pausing(), node=jvm)
    world.spawn("nemesis", nemesis())
    world.run_to_end()
    assert seen == [("self-still-running", 5), ("self", 55)]
    assert [op.kind for op in world.history.ops] == ["node.paused", "node.paused"]


def test_a_failed_event_reaches_a_paused_process_after_the_pause() -> None:
    world = fifo_world()
    jvm = world.node("jvm")
    failing = world.event()
    got: list[tuple[str, int]] = []

    def waiter() -> Gen:
        try:
            yield failing
        except ValueError as error:
            got.append((str(error), world.now_ms))

    def nemesis() -> Gen:
        yield world.sleep(1)
        jvm.pause(10)
        failing.fail(ValueError("boom"))

    world.spawn("waiter", waiter(), node=jvm)
    world.spawn("nemesis", nemesis())
    world.run_to_end()
    assert got == [("boom", 11)]


def test_a_node_crash_ends_every_process_and_restart_runs_the_start_hooks() -> None:
    world = fifo_world()
    jvm = world.node("jvm")
    ticks: list[tuple[str, int]] = []
    lost: list[int] = []

    def start() -> None:
        jvm.spawn("t", ticker(world, ticks, f"t{jvm.incarnation}", 10, 60))

    jvm.on_start(start)
    jvm.on_crash(lambda: lost.append(world.now_ms))
    start()
    jvm.spawn("u", ticker(world, ticks, "u", 7, 60))

    def nemesis() -> Gen:
        yield world.sleep(25)
        jvm.crash()
        yield world.sleep(10)
        jvm.restart()

    world.spawn("nemesis", nemesis())
    world.run_to_end()
    assert lost == [25]
    assert [t for n, t in ticks if n == "t1"] == [10, 20]
    assert [t for n, t in ticks if n == "u"] == [7, 14, 21]
    assert [t for n, t in ticks if n == "t2"][:2] == [45, 55]
    kinds = [op.kind for op in world.history.ops]
    assert kinds == ["node.crashed", "node.restarted"]


def test_a_node_crash_from_its_own_process_is_refused_naming_the_call() -> None:
    world = fifo_world()
    jvm = world.node("jvm")

    def suicidal() -> Gen:
        yield world.sleep(1)
        jvm.crash()

    jvm.spawn("worker", suicidal())
    with pytest.raises(RuntimeError, match=r"Node\.crash\(\) of 'jvm' called from its own process"):
        world.run_to_end()


def test_a_clock_jump_moves_the_nodes_wall_clock_not_its_sleeps() -> None:
    world = fifo_world()
    jvm, other = world.node("jvm"), world.node("other")
    seen: list[tuple[int, int, int]] = []

    def body() -> Gen:
        yield world.sleep(10)
        jvm.jump_clock(-5_000)
        yield world.sleep(10)
        seen.append((world.now_ms, jvm.now_ms, other.now_ms))

    jvm.spawn("worker", body())
    world.run_to_end()
    assert seen == [(20, 20 - 5_000, 20)]


def test_a_connection_loss_blocks_every_caller_of_the_client_and_no_other() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.ensure_path("/x")
    shared = ZkClient(world, store, "leader-zk", session_timeout_ms=30_000)
    own = ZkClient(world, store, "rest-zk", session_timeout_ms=30_000)
    done: dict[str, int] = {}

    def caller(name: str, client: ZkClient, start_ms: int) -> Gen:
        yield world.sleep(start_ms)
        yield from client.retrying(2, lambda: client.set("/x", name))
        done[name] = world.now_ms

    def nemesis() -> Gen:
        yield world.sleep(5)
        shared.lose_connection(1_000)

    world.spawn("nemesis", nemesis())
    world.spawn("t1", caller("t1", shared, 4))  # in flight when the loss strikes: made again
    world.spawn("t2", caller("t2", shared, 100))  # starts while disconnected: waits
    world.spawn("rest", caller("rest", own, 100))  # another client: not blocked
    world.run_to_end()
    assert done == {"rest": 102, "t1": 1007, "t2": 1007}
    assert shared.connected and shared.live  # 1 s < the 30 s session


def test_a_connection_loss_past_the_session_timeout_fails_the_blocked_calls() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    client = ZkClient(world, store, "c", session_timeout_ms=100)
    outcome: list[str] = []

    def caller() -> Gen:
        yield world.sleep(10)
        try:
            yield from client.retrying(2, lambda: client.exists("/"))
            outcome.append("called")
        except Exception as error:
            outcome.append(type(error).__name__)

    client.lose_connection(500)
    world.spawn("caller", caller())
    world.run_to_end()
    assert outcome == ["SessionExpired"]


class Sleeper(Actor):
    def __init__(self, world: World, name: str) -> None:
        super().__init__(world, name)
        self.woke: list[int] = []

    def main(self) -> Gen:
        while self.world.now_ms < 100:
            yield from self.wait(self.world.sleep(10))
            self.woke.append(self.world.now_ms)


def test_pausing_a_paused_actor_extends_its_pause() -> None:
    world = fifo_world()
    actor = Sleeper(world, "a")
    actor.start()

    def nemesis() -> Gen:
        yield world.sleep(5)
        actor.pause(20)  # until 25
        yield world.sleep(5)
        actor.pause(30)  # while paused: until 40

    world.spawn("nemesis", nemesis())
    world.run_to_end()
    # Sat out until 40 (the wait's event fired meanwhile, so it returns then), not 25.
    assert actor.woke[:3] == [40, 50, 60]


def test_an_actor_pauses_itself_with_its_session() -> None:
    world = World(RandomSource(3))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c", session_timeout_ms=1_000)
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"pause"}), p=1.0))

    class SelfPausing(Actor):
        paused_ms = 0

        def main(self) -> Gen:
            yield from self.wait(self.world.sleep(1))
            self.paused_ms = pause_with_session(nemesis, self, client, (300,))
            yield from self.wait(self.world.sleep(1))
            self.world.log(self.name, "after", at=self.world.now_ms)

    actor = SelfPausing(world, "self")
    actor.start()
    world.run_to_end()
    assert actor.paused_ms == 300
    assert world.history.of_kind("after")[0].get("at") == 301  # paused at 1 for 300 ms
    assert client.connected


def node_faults_model(world: World) -> None:
    """Two nodes of tickers sharing a client; every node fault may strike, drawn."""
    plan = FaultPlan(
        kinds=frozenset({"node-pause", "node-crash", "clock-jump", "connection-loss", "pause"}),
        max_faults=4,
        p=0.3,
        delay_ms=(5, 40),
        restart_ms=(10, 30),
        clock_jump_ms=(-1_000, 1_000),
    )
    nemesis = Nemesis(world, plan)
    store = VersionedStore(world)
    store.ensure_path("/n")
    client = ZkClient(world, store, "zk", session_timeout_ms=50)
    nodes = [world.node("n0"), world.node("n1")]

    def worker(node_index: int, k: int) -> Gen:
        node = nodes[node_index]
        for step in range(4):
            yield world.sleep(7 + k)
            try:
                data = [node_index, k, step]
                yield from client.retrying(1, lambda data=data: client.set("/n", data))
            except Exception as error:
                world.log(f"w{node_index}{k}", "call.failed", error=type(error).__name__)
                return
            world.log(f"w{node_index}{k}", "wrote", step=step, wall=node.now_ms)

    for i, node in enumerate(nodes):
        node.on_start(lambda i=i, node=node: [node.spawn(f"w{i}{k}", worker(i, k)) for k in (0, 1)])
        for k in (0, 1):
            node.spawn(f"w{i}{k}", worker(i, k))

    stalled = Sleeper(world, "sleeper")
    stalled.start()

    def chaos() -> Gen:
        for _ in range(6):
            yield world.sleep(9)
            maybe_pause_node(nemesis, nodes[0])
            maybe_jump_clock(nemesis, nodes[1])
            maybe_lose_connection(nemesis, client)
            stall_thread(nemesis, stalled)
            yield from crash_and_restart_node(nemesis, nodes[1])

    world.spawn("nemesis", chaos())


def run_model(source: Any) -> tuple[History, list[int]]:
    world = World(source)
    node_faults_model(world)
    world.run_to_end()
    return world.history, [c.value for c in source.record]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_a_run_with_node_faults_replays_to_the_same_trace(seed: int) -> None:
    history, values = run_model(RandomSource(seed))
    replayed, again = run_model(ReplaySource(values, strict=True))
    assert again == values
    assert replayed.trace_hash() == history.trace_hash()


def test_choice_zero_is_no_fault() -> None:
    history, values = run_model(ReplaySource([], strict=False))
    assert not any(
        op.kind.startswith(("node.", "zk.connection", "actor.paused")) for op in history.ops
    )
    assert set(values) <= {0}


def test_node_faults_strike_under_random_search() -> None:
    kinds: set[str] = set()
    for seed in range(40):
        history, _ = run_model(RandomSource(seed))
        kinds |= {op.kind for op in history.ops}
    assert {
        "node.paused",
        "node.crashed",
        "node.restarted",
        "node.clock-jump",
        "zk.connection-lost",
        "actor.paused",
    } <= kinds


def test_an_actor_crashing_itself_is_refused_naming_the_call() -> None:
    world = fifo_world()

    class Suicidal(Actor):
        def main(self) -> Gen:
            yield from self.wait(self.world.sleep(1))
            self.crash()

    Suicidal(world, "s").start()
    with pytest.raises(RuntimeError, match=r"Actor\.crash\(\) of 's' called from its own process"):
        world.run_to_end()


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_a_bad_pause_is_refused_naming_the_call(bad: Any) -> None:
    world = fifo_world()
    with pytest.raises(ValueError, match=r"Node\.pause\("):
        world.node("jvm").pause(bad)


# -- a session-bound client that belongs to a node -----------------------------------------
def node_bound_session(pause_ms: int, *, bound: bool = True) -> tuple[World, ZkClient, list[str]]:
    """A client with an ephemeral znode on node ``jvm``, paused for ``pause_ms`` at 10 ms."""
    world = fifo_world()
    store = VersionedStore(world)
    jvm = world.node("jvm")
    client = ZkClient(world, store, "c", session_timeout_ms=100, node=jvm if bound else None)
    client.create("/leader", "c", ephemeral=True)
    heard: list[str] = []
    client.add_listener(lambda event: heard.append(f"{event.state}@{world.now_ms}"))

    def nemesis() -> Gen:
        yield world.sleep(10)
        jvm.pause(pause_ms)

    world.spawn("nemesis", nemesis())
    world.run_to_end()
    return world, client, heard


def test_a_node_pause_past_the_timeout_expires_its_clients_session() -> None:
    world, client, heard = node_bound_session(300)
    expired = world.history.of_kind("zk.session-expired")
    assert [op.time_ms for op in expired] == [110]  # 100 ms after the heartbeats stopped
    assert not client.live and not client.store.exists("/leader")
    # The client's code hears nothing while its JVM is paused: both at the pause's end.
    assert heard == ["disconnected@310", "expired@310"]
    assert client.state == "expired"


def test_a_short_node_pause_keeps_the_session() -> None:
    world, client, heard = node_bound_session(50)
    assert world.history.of_kind("zk.session-expired") == []
    assert client.live and client.connected and client.store.exists("/leader")
    assert heard == ["disconnected@60", "connected@60"]


def test_a_node_pause_of_zero_is_no_fault_for_its_client() -> None:
    world, client, heard = node_bound_session(0)
    assert client.connected and client.live and heard == []
    assert [op.kind for op in world.history if op.kind.startswith("zk.")] == []


def test_a_client_of_no_node_keeps_its_heartbeats_through_the_pause() -> None:
    world, client, heard = node_bound_session(300, bound=False)
    assert world.history.of_kind("zk.session-expired") == []
    assert client.live and heard == []


def test_a_node_crash_expires_its_clients_session_a_timeout_later_and_tells_nobody() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    jvm = world.node("jvm")
    client = ZkClient(world, store, "c", session_timeout_ms=100, node=jvm)
    client.create("/leader", "c", ephemeral=True)
    heard: list[str] = []
    client.add_listener(lambda event: heard.append(event.state))

    def nemesis() -> Gen:
        yield world.sleep(10)
        jvm.crash()
        yield world.sleep(50)
        assert store.exists("/leader")  # the server has not noticed yet
        yield world.sleep(500)
        jvm.restart()

    world.spawn("nemesis", nemesis())
    world.run_to_end()
    assert [op.time_ms for op in world.history.of_kind("zk.session-expired")] == [110]
    assert not store.exists("/leader") and heard == []
    assert client.state == "disconnected" and not client.live  # it never comes back
