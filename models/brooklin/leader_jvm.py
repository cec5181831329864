"""The leader's JVM and its one ZooKeeper client: where Brooklin's GC pause and connection loss act.

Why it exists: a fault stops what it stops in reality. Every thread of the
Brooklin leader (the coordinator's event thread, the ZooKeeper event thread
that queues its notifications, the 16 stop-task threads of the pool) lives in
one JVM and calls ZooKeeper through one Helix ``ZkClient`` (Brooklin's
``ZkClient`` extends ``org.apache.helix.zookeeper.impl.client.ZkClient``,
``datastream-utils/.../common/zk/ZkClient.java`` line 30 at 417d1f29). So:

- a **GC pause** stops the whole JVM: the ``leader-jvm`` node
  (``raceproof.sim.nodes``) holds every leader thread until it ends; a
  round trip already on the wire is answered meanwhile and its thread sees
  the reply when the pause ends;
- a **connection loss** fails the leader's calls that are on the wire when
  it happens. Both of the leader's clients are built with
  ``operationRetryTimeout = -1`` (brooklin 417d1f29 ``ZkAdapter.java``
  209-212, 255-256 for the coordinator's; ``DatastreamServer.java`` 156-157
  for the cache's, through ``ZkClient.DEFAULT_OPERATION_RETRY_TIMEOUT`` = -1,
  ``ZkClient.java`` 34). Helix 1.0.2's ``retryUntilConnected`` (zookeeper-api
  ``zkclient/ZkClient.java`` 1649-1714) catches the call's
  ``ConnectionLossException``, waits ``waitUntilConnected(-1 ms)``, which
  returns at once, and then ``now - start > -1`` holds, so it throws
  ``ZkTimeoutException`` (1677-1681, 1699-1703): the call is not made again.
  Brooklin's own comment ("retry forever") says otherwise; the code wins.
  Calls made while the client is disconnected wait in its queue and go out
  once it reconnects (the kinder reading: a reconnection attempt that failed
  meanwhile would fail them too). Watch notifications wait with it (the
  session survives, < 30 s). What each leader thread does with the exception
  is ``model.py``'s (``Leader``).

The REST hosts and the followers are other JVMs with their own clients: no
leader fault stops them. The real backend (``raceproof.zookeeper.brooklin``)
runs the leader on threads of one Python process; it cannot pause them all or
cut its kazoo connection, so it refuses a counterexample that needs either.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol

from raceproof.sim.nodes import Node
from raceproof.sim.runtime import Runtime
from raceproof.sim.session import ZkClient

Gen = Generator[Any, Any, Any]
LEADER_NODE = "leader-jvm"
LEADER_CLIENT = "leader-zk"
SESSION_TIMEOUT_MS = 30_000  # Brooklin ZkClient.DEFAULT_SESSION_TIMEOUT (ZkClient.java 33)


class ZkTimeout(Exception):
    """Helix ``ZkTimeoutException``: a call cut by a connection loss, not made again."""


class LeaderLink(Protocol):
    """How a leader thread reaches ZooKeeper: the round trip of a call, and the wait before one."""

    def round_trip(self) -> Gen: ...
    def ready(self) -> Gen: ...


class LeaderFaults(Protocol):
    """The faults that act on the leader as a whole."""

    def gc_pause(self, duration_ms: int) -> None: ...
    def lose_connection(self, duration_ms: int) -> None: ...


class PlainLink:
    """A round trip is ``rtt_ms`` of sleep; nothing ever waits for a connection."""

    def __init__(self, rt: Runtime, rtt_ms: int) -> None:
        self.rt, self.rtt_ms = rt, rtt_ms

    def round_trip(self) -> Gen:
        yield self.rt.sleep(self.rtt_ms)

    def ready(self) -> Gen:
        return
        yield  # pragma: no cover


class ClientLink:
    """Every call through the leader's client: ``retryUntilConnected`` with a retry timeout of -1.

    A call waits while the client is disconnected, then takes one round trip;
    if the connection drops while it is on the wire, it raises ``ZkTimeout``
    (it is not made again). ``cut_next`` makes the connection drop with the
    calling thread's next call on the wire: the fault, drawn where a stop task
    has decided and not yet written, cuts its write's first call.
    """

    def __init__(self, client: ZkClient, rtt_ms: int) -> None:
        self.client, self.rtt_ms = client, rtt_ms
        self.drops = 0  # connection losses so far (written with the client's state)
        self.cut_ms = 0  # a loss armed for the next call, made in the same step

    def cut_next(self, duration_ms: int) -> None:
        self.cut_ms = duration_ms

    def round_trip(self) -> Gen:
        yield from self.client.until_connected()  # queued until the client reconnects
        drops = self.drops
        if self.cut_ms:
            duration_ms, self.cut_ms = self.cut_ms, 0
            self.drops += 1
            self.client.lose_connection(duration_ms)  # touches the client's state (a write)
        yield self.client.world.sleep(self.rtt_ms)
        self.client.world.touch(self.client.resource, write=False)
        if self.drops != drops:
            raise ZkTimeout(
                "Operation cannot be retried because of retry timeout (-1 milli seconds). "
                "Retry was caused by CONNECTIONLOSS"
            )

    def ready(self) -> Gen:
        """Before calls made with no round trip of their own: wait while disconnected."""
        yield from self.client.until_connected()


class JvmFaults:
    """A GC pause stops the ``leader-jvm`` node; a connection loss cuts the caller's next call."""

    def __init__(self, node: Node, link: ClientLink) -> None:
        self.node, self.link = node, link

    def gc_pause(self, duration_ms: int) -> None:
        self.node.pause(duration_ms)

    def lose_connection(self, duration_ms: int) -> None:
        self.link.cut_next(duration_ms)


class NoLeaderFaults:
    """The real backend: it cannot stop every leader thread, so it refuses to pretend."""

    def gc_pause(self, duration_ms: int) -> None:
        raise NotImplementedError(
            f"a GC pause of the leader JVM ({duration_ms} ms) cannot be forced on the real "
            "backend: its leader threads share a Python process with the harness"
        )

    def lose_connection(self, duration_ms: int) -> None:
        raise NotImplementedError(
            f"a connection loss of the leader's ZooKeeper client ({duration_ms} ms) cannot be "
            "forced on the real backend"
        )
