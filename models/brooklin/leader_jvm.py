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
- a **connection loss** blocks every leader thread at its next ZooKeeper
  call: Helix's ``retryUntilConnected`` (helix-1.0.2, zookeeper-api
  ``ZkClient.java`` 1649–1714; Brooklin 5.5.0 pins ``helixZkclientVersion``
  1.0.2) catches ``ConnectionLossException``, waits in ``waitUntilConnected``
  and calls again; watch notifications wait with it. The leader's client is
  a ``ZkClient`` of the kernel (30 s session, ``DEFAULT_SESSION_TIMEOUT``),
  whose ``retrying`` is that loop; a call made while it is disconnected
  without waiting first raises ``ConnectionLoss``, so a missed wait shows up
  as a model error, never as a silent pass.

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
    """Every call through the leader's one client: ``retryUntilConnected`` (``ZkClient.retrying``)."""

    def __init__(self, client: ZkClient, rtt_ms: int) -> None:
        self.client, self.rtt_ms = client, rtt_ms

    def round_trip(self) -> Gen:
        yield from self.client.retrying(self.rtt_ms)

    def ready(self) -> Gen:
        """Before calls made with no round trip of their own: wait while disconnected."""
        yield from self.client.until_connected()


class JvmFaults:
    """A GC pause stops the ``leader-jvm`` node; a connection loss cuts the leader's client."""

    def __init__(self, node: Node, client: ZkClient) -> None:
        self.node, self.client = node, client

    def gc_pause(self, duration_ms: int) -> None:
        self.node.pause(duration_ms)

    def lose_connection(self, duration_ms: int) -> None:
        self.client.lose_connection(duration_ms)


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
