"""Remote calls in two halves (``sim/remote.py``, ``ZkClient.request``): a fault is local to its node.

A request sent takes effect at the server at the server's time, whatever the
sender's node does after; a request its node has not sent waits for the node.
Each test checks both directions: the pause during the flight (applied) and
the pause before the send (not applied until the pause ends).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from property_tests.touch_log import fifo_world
from raceproof.sim import ConnectionLoss, VersionedStore, World, ZkClient
from raceproof.sim.remote import call, round_trip_halves
from raceproof.sim.store import BadVersion

Gen = Generator[Any, Any, None]
PAUSE_MS = 1_000


def setup(world: World, **client: Any) -> tuple[VersionedStore, ZkClient]:
    store = VersionedStore(world)
    store.create("/x", 0)
    jvm = world.node("jvm")
    zk = ZkClient(world, store, "c", latency_ms=(10,), node=jvm, **client)
    return store, zk


def seen_at(world: World, store: VersionedStore, at_ms: list[int], seen: list[Any]) -> Gen:
    """Another host's view of /x at the given instants (on no node: no pause holds it)."""
    for when in at_ms:
        yield world.sleep(when - world.now_ms)
        seen.append((world.now_ms, store.get("/x")))


def writer(world: World, zk: ZkClient, send_at_ms: int, done: list[Any], pause_first: bool) -> Gen:
    yield world.sleep(send_at_ms)
    if pause_first:  # a fault drawn between the writer's last step and its send
        world.node("jvm").pause(PAUSE_MS)
    version = yield from zk.request(lambda: zk.set("/x", 1))
    done.append((world.now_ms, version))


def pauser(world: World, at_ms: int) -> Gen:
    yield world.sleep(at_ms)
    world.node("jvm").pause(PAUSE_MS)


def test_a_write_in_flight_when_its_node_pauses_is_applied_at_the_server_during_the_pause() -> None:
    world = fifo_world()
    store, zk = setup(world)
    done: list[Any] = []
    seen: list[Any] = []
    world.spawn("writer", writer(world, zk, 0, done, pause_first=False), node=world.node("jvm"))
    world.spawn("gc", pauser(world, 5))  # the request left at 0; it arrives at 10
    world.spawn("other-host", seen_at(world, store, [9, 11, 500], seen))
    world.run_to_end()
    assert seen == [(9, (0, 0)), (11, (1, 1)), (500, (1, 1))]  # applied at 10, mid-pause
    assert done == [(5 + PAUSE_MS, 1)]  # its reply (due at 20) read when the pause ended


def test_a_write_not_yet_sent_when_its_node_pauses_waits_for_the_pause() -> None:
    world = fifo_world()
    store, zk = setup(world)
    done: list[Any] = []
    seen: list[Any] = []
    world.spawn("writer", writer(world, zk, 10, done, pause_first=False), node=world.node("jvm"))
    world.spawn("gc", pauser(world, 5))  # before the send at 10: the send waits
    world.spawn("other-host", seen_at(world, store, [11, 500, 5 + PAUSE_MS + 11], seen))
    world.run_to_end()
    assert seen == [(11, (0, 0)), (500, (0, 0)), (5 + PAUSE_MS + 11, (1, 1))]
    assert done == [(5 + PAUSE_MS + 20, 1)]  # sent at the pause's end, applied 10 ms later


def test_a_pause_begun_in_the_senders_own_step_holds_its_send() -> None:
    """The fault drawn after a reply is read and before the next send: nothing leaves."""
    world = fifo_world()
    store, zk = setup(world)
    done: list[Any] = []
    seen: list[Any] = []
    world.spawn("writer", writer(world, zk, 10, done, pause_first=True), node=world.node("jvm"))
    world.spawn("other-host", seen_at(world, store, [21, 10 + PAUSE_MS + 11], seen))
    world.run_to_end()
    assert seen == [(21, (0, 0)), (10 + PAUSE_MS + 11, (1, 1))]
    assert done == [(10 + PAUSE_MS + 20, 1)]


def test_a_crash_of_the_sender_does_not_cancel_its_request_on_the_wire() -> None:
    world = fifo_world()
    store, zk = setup(world)
    done: list[Any] = []

    def crasher() -> Gen:
        yield world.sleep(5)
        world.node("jvm").crash()

    world.spawn("writer", writer(world, zk, 0, done, pause_first=False), node=world.node("jvm"))
    world.spawn("chaos", crasher())
    world.run_to_end()
    assert store.get("/x") == (1, 1) and done == []  # applied; nobody read the reply


def test_what_the_server_raises_is_raised_at_the_reply_in_the_caller() -> None:
    world = fifo_world()
    store, zk = setup(world)
    outcome: list[Any] = []

    def conditional() -> Gen:
        try:
            yield from zk.request(lambda: zk.set("/x", 5, version=7))
        except BadVersion:
            outcome.append(("bad-version", world.now_ms))

    world.spawn("writer", conditional())
    world.run_to_end()
    assert outcome == [("bad-version", 20)] and store.get("/x") == (0, 0)


@pytest.mark.parametrize(("attempt_ms", "expected"), [(0, ("ok", 3_020)), (1_000, ("lost", 1_000))])
def test_a_call_made_while_reconnecting_is_queued_and_failed_by_a_failed_attempt(
    attempt_ms: int, expected: tuple[str, int]
) -> None:
    """ZooKeeper 3.6.3: queued while reconnecting (queuePacket); a failed reconnect attempt
    fails it with CONNECTIONLOSS (cleanup()); with no failed attempt it goes out on reconnection."""
    world = fifo_world()
    store, zk = setup(world, reconnect_attempt_ms=attempt_ms)
    outcome: list[Any] = []

    def late_writer() -> Gen:
        yield world.sleep(500)
        try:
            yield from zk.request(lambda: zk.set("/x", 1))
            outcome.append(("ok", world.now_ms))
        except ConnectionLoss:
            outcome.append(("lost", world.now_ms))

    zk.lose_connection(3_000)
    world.spawn("writer", late_writer())
    world.run_to_end()
    assert outcome == [expected]
    assert store.get("/x") == ((1, 1) if expected[0] == "ok" else (0, 0))


def test_a_connection_cut_with_a_request_on_the_wire_loses_it() -> None:
    world = fifo_world()
    store, zk = setup(world)
    outcome: list[Any] = []

    def cut_writer() -> Gen:
        zk.lose_connection_after_next_send(100)
        try:
            yield from zk.request(lambda: zk.set("/x", 1))
        except ConnectionLoss as exc:
            outcome.append((world.now_ms, str(exc)))

    world.spawn("writer", cut_writer())
    world.run_to_end()
    assert outcome == [(20, "c lost the reply: the operation was not applied")]
    assert store.get("/x") == (0, 0)


def test_the_plain_call_applies_at_the_receivers_time() -> None:
    world = fifo_world()
    store = VersionedStore(world)
    store.create("/x", 0)
    times: list[int] = []

    def rest_host() -> Gen:
        version = yield from call(world, lambda: store.set("/x", 1), one_way_ms=3, back_ms=4)
        times.append(world.now_ms)
        assert version == 1

    def other() -> Gen:
        yield world.sleep(3)
        times.append(store.get("/x")[1])

    world.spawn("rest", rest_host())
    world.spawn("other", other())
    world.run_to_end()
    assert times == [1, 7]  # the other host already sees the write at 3; the reply is read at 7
    assert round_trip_halves(5) == (2, 3)
    with pytest.raises(ValueError, match="one_way_ms must be an int >= 0"):
        list(call(world, lambda: None, one_way_ms=-1, back_ms=0))
