"""The leader's JVM and its one ZooKeeper client: where Brooklin's GC pause and connection loss act.

Why it exists: a fault stops what it stops in reality. Every thread of the
Brooklin leader (the coordinator's event thread, the ZooKeeper event thread
that queues its notifications, the 16 stop-task threads of the pool) lives in
one JVM and calls ZooKeeper through one Helix ``ZkClient`` (Brooklin's
``ZkClient`` extends ``org.apache.helix.zookeeper.impl.client.ZkClient``,
``datastream-utils/.../common/zk/ZkClient.java`` line 30 at 417d1f29). So:

- every ZooKeeper call is a remote call in two halves (``raceproof.sim.remote``,
  ``ZkClient.request``): the request leaves in a step of the calling thread,
  the server (actor ``zk-server``) applies it half a round trip later at its
  own time, and the thread reads the reply in a later step of its own;
- a **GC pause** stops the whole JVM: the ``leader-jvm`` node
  (``raceproof.sim.nodes``) holds every leader thread until it ends. It holds
  only the JVM's own work: a request not yet sent waits, a reply not yet read
  waits, but a request already on the wire is applied at the server during
  the pause (ZooKeeper applies what it has received whatever the client's JVM
  does);
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
  A call made while the client is reconnecting is queued by ZooKeeper 3.6.3
  (``ClientCnxn.queuePacket``, 1678-1688) and failed with CONNECTIONLOSS at
  the next failed reconnect attempt (``SendThread.run``'s catch, 1291-1309,
  ``cleanup()``, 1389-1405), so it too throws ``ZkTimeoutException``; the
  model fails an attempt every ``RECONNECT_ATTEMPT_MS`` while the loss lasts
  (a refused connection; an unreachable server's attempt would last the
  30 s connect timeout, longer than the loss). Watch notifications wait with
  it (the session survives, < 30 s). What each leader thread does with the
  exception is ``model.py``'s (``Leader``).

The REST hosts and the followers are other JVMs with their own clients: no
leader fault stops them. Every Brooklin instance runs the REST endpoint and a
follower role beside a possible leader role (``DatastreamServer.java`` 155-160
at 417d1f29), so the REST hosts that run on through the leader's pause are
instances other than the leader (``rest@host1``, ``rest@host2``), not the
leader's own endpoint; their calls are ``ServerLink`` calls (two halves, no
session of their own modelled: no fault of theirs is drawn). The real backend (``raceproof.zookeeper.brooklin``)
runs the leader on threads of one Python process; it cannot pause them all or
cut its kazoo connection, so it refuses a counterexample that needs either.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar

from raceproof.sim.nodes import Node
from raceproof.sim.remote import call as remote_call
from raceproof.sim.remote import round_trip_halves
from raceproof.sim.runtime import Runtime
from raceproof.sim.session import ZkClient
from raceproof.sim.store import ConnectionLoss
from raceproof.sim.world import World

Gen = Generator[Any, Any, Any]
T = TypeVar("T")
LEADER_NODE = "leader-jvm"
SERVER = "zk-server"  # the actor that applies every request, at the server's time
LEADER_CLIENT = "leader-zk"
SESSION_TIMEOUT_MS = 30_000  # Brooklin ZkClient.DEFAULT_SESSION_TIMEOUT (ZkClient.java 33)
# During a connection loss, a reconnect attempt fails this often and fails every request made
# since (ZooKeeper 3.6.3 cleanup()): with one server, the host provider sleeps 1 s before each
# new attempt (StaticHostProvider.next(1000)) and startConnect up to 1 s more (not drawn).
RECONNECT_ATTEMPT_MS = 1_000


class ZkTimeout(Exception):
    """Helix ``ZkTimeoutException``: a call cut by a connection loss, not made again."""


class LeaderLink(Protocol):
    """How a thread reaches ZooKeeper: one call, ``result = yield from link.call(lambda: zk.get(p))``."""

    def call(self, operation: Callable[[], T]) -> Generator[Any, Any, T]: ...


class PlainLink:
    """The real backend: a round trip of ``rtt_ms`` sleep, then the (real, remote) call."""

    def __init__(self, rt: Runtime, rtt_ms: int) -> None:
        self.rt, self.rtt_ms = rt, rtt_ms

    def call(self, operation: Callable[[], T]) -> Generator[Any, Any, T]:
        yield self.rt.sleep(self.rtt_ms)
        return operation()


class ServerLink:
    """A simulated host's call with no session of its own (a REST host, a follower).

    A remote call in two halves (``raceproof.sim.remote``): applied at the
    server half a round trip after the send, at the server's time; the reply
    read by the caller the other half later.
    """

    def __init__(self, world: World, rtt_ms: int) -> None:
        self.world = world
        self.out_ms, self.back_ms = round_trip_halves(rtt_ms)

    def call(self, operation: Callable[[], T]) -> Generator[Any, Any, T]:
        return (
            yield from remote_call(
                self.world,
                operation,
                one_way_ms=self.out_ms,
                back_ms=self.back_ms,
                receiver=SERVER,
            )
        )


class ClientLink:
    """Every call through the leader's client: ``retryUntilConnected`` with a retry timeout of -1.

    Each call is a request of ``ZkClient`` (two halves: applied at the server
    at its arrival, whatever the leader JVM does meanwhile). Any
    ``ConnectionLoss`` becomes ``ZkTimeout`` (it is not made again): a request
    on the wire when the connection drops (not applied), and a request made
    while the client reconnects, queued and failed at the next failed reconnect
    attempt (ZooKeeper 3.6.3). ``cut_next`` drops the connection just after the
    calling thread's next request leaves.
    """

    def __init__(self, client: ZkClient) -> None:
        self.client = client

    def cut_next(self, duration_ms: int) -> None:
        self.client.lose_connection_after_next_send(duration_ms)

    def call(self, operation: Callable[[], T]) -> Generator[Any, Any, T]:
        try:
            return (yield from self.client.request(operation))
        except ConnectionLoss as exc:
            raise ZkTimeout(
                "Operation cannot be retried because of retry timeout (-1 milli seconds). "
                f"Retry was caused by CONNECTIONLOSS ({exc})"
            ) from None


class LeaderFaults(Protocol):
    """The faults that act on the leader as a whole."""

    def gc_pause(self, duration_ms: int) -> None: ...
    def lose_connection(self, duration_ms: int) -> None: ...


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
