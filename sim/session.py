"""A ZooKeeper client bound to a session: what the model's process sees of its ZooKeeper.

``VersionedStore`` is the server. A ``ZkClient`` is one process's handle on
it, holding one session, as a ZooKeeper or kazoo client does:

- its ephemeral nodes, its watches and its writes die with the session: the
  server removes the session's watches when it expires (they never fire), a
  delivery in flight to an expired session is dropped (one to a session the
  client closed arrives: the server sent it before the close's reply), and a
  request (``request``) whose session has gone is not applied;
- it tells its listeners ``disconnected``, ``connected`` (reconnected),
  ``expired`` and ``closed`` (kazoo's SUSPENDED / CONNECTED / LOST), each
  delivered after a drawn notice delay, in the order they happened, and
  logged as a ``zk.session`` op at that moment: when the client's code hears
  of it, not when the server acted (the server logs ``zk.session-expired``
  when it expires a session);
- ``connected`` is the client's own view, ``live`` the server's truth: a
  paused or partitioned process keeps believing in a session the server has
  already expired, which is the root of most ZooKeeper coordination races;
- a request is two halves (``raceproof.sim.remote``): ``request`` sends it
  (a step of the caller, held while the caller's node is paused), the server
  applies it one drawn latency later at its own time, whatever the caller's
  node is doing, and the reply is read another latency later (held while the
  caller's node is paused). A request whose connection broke before it
  arrived is not applied; one whose connection broke before its reply was
  read raises ``ConnectionLoss`` although it *was* applied, as in ZooKeeper;
- a request made while the client is reconnecting is queued, as ZooKeeper
  3.6.3 queues it (``ClientCnxn.queuePacket``, 1678-1688): it is sent when
  the client reconnects, unless a reconnect attempt fails first, which fails
  every queued request with ``ConnectionLoss`` (``SendThread.run``'s catch,
  1291-1309, and ``cleanup()``, 1389-1405). ``reconnect_attempt_ms`` sets how
  often an attempt fails during ``lose_connection`` (0, the default: none
  fails, the queued requests go out on reconnection);
- while disconnected, the direct calls (``get``, ``set``...) fail with
  ``ConnectionLoss``. Watches follow ZooKeeper 3.6.3 across a lost
  connection (``disconnect``, ``lose_connection``): the server drops them
  with the connection, so a persistent watch misses what happens meanwhile,
  and on reconnection the client sends its one-shot watches again and the
  server answers each whose node changed with one event of the node's state
  then (``VersionedStore.set_watches``); across a pause (the socket stays
  open) deliveries are held until it reconnects; the server expires the session
  ``session_timeout_ms`` after the connection dropped (a cancellable timer),
  so a pause (``pause``, or the drawn fault ``pause_with_session``) longer
  than the timeout expires it and the client hears ``expired`` when it comes
  back;
- a client may belong to a node (``ZkClient(..., node=node)``), as a real
  client lives in one JVM: the node's pause (``Node.pause``, the drawn
  ``maybe_pause_node``) stops its heartbeats, so the connection drops for the
  pause and the session expires when the pause outlasts the timeout, with no
  wiring by hand; its listeners and held watch deliveries run on the node (a
  paused JVM hears nothing); the node's crash drops the connection for good
  (the server expires the session a timeout later, its ephemerals with it);
- a connection loss (``lose_connection``, or the drawn fault
  ``maybe_lose_connection``) blocks every actor that calls through the client
  with ``retrying`` (Helix/I0Itec ``ZkClient.retryUntilConnected``): each waits
  until the client reconnects, and a call whose round trip the loss cut is
  made again (applied twice if the loss cut only its reply, as with Helix);
  ``until_connected`` is the wait alone (``waitUntilConnected``), no step at
  all while connected.

Every decision is a draw: request latencies (``latency_ms``), how late the
client notices a change of its connection (``notice_ms``), and the store's
watch delays. Choice 0 of each is the boring one (its first option).

Footprints (for the proof's reduction): the client keeps its state in cells
(``raceproof.sim.cells``), one per field, named ``<store>-client:<name>.<field>``
(its connection state, session id, held deliveries, persistent watches,
listeners, connections broken so far, blocked and queued actors): a step's
footprint is the fields it read and wrote. Whether the session is live is
the store's ``<store>:session[<id>]``, written by expiring and closing it.
The server's expiry clock is a ``Timer`` of its own resource, so one client's
expiry commutes with other clients' steps that touch neither its session's
entry nor its znodes. Ephemeral nodes die in the expiring step, which writes
each of their paths and their parents' child lists.

No plain ``assert``: an unknown session state is a ``KernelError``; bad
settings, a negative pause and renewing a live session are ``ValueError`` errors.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

from simpy.events import Event, Process

from raceproof.sim.cells import Cell, Primitive, Scratch
from raceproof.sim.errors import contract
from raceproof.sim.history import JSONValue
from raceproof.sim.nodes import Node
from raceproof.sim.remote import RemoteCall, hold_send, round_trip_halves, send_held
from raceproof.sim.store import (
    ConnectionLoss,
    Delivery,
    SessionExpired,
    Transaction,
    TxOp,
    VersionedStore,
    Watcher,
    WatchEvent,
)
from raceproof.sim.timers import Timer
from raceproof.sim.world import World

T = TypeVar("T")
SessionState = Literal["connected", "disconnected", "expired", "closed"]


@dataclass(frozen=True)
class SessionEvent:
    """A change of the client's connection, as its listeners hear it."""

    state: SessionState
    session: int


SessionListener = Callable[[SessionEvent], Any]


class _SessionWatcher(Primitive):
    """A watcher registered by a client: the store drops it with its session.

    ``table`` is what the client registered: ``data`` (get, exists), ``child``
    (children), ``persistent`` (add_watch) or ``rearmed`` (``watch``: a data
    watch the store re-arms at each firing).
    """

    def __init__(self, client: ZkClient, callback: Watcher, table: str = "data") -> None:
        self.client = client
        self.callback = callback
        self.session = client.session
        self.table = table
        self.freeze()

    def __call__(self, event: WatchEvent) -> None:
        client = self.client
        if self.session in client._closed.get():  # sent before the close's reply: it arrives
            self.callback(event)
            return
        if client.session != self.session or not client.store.session_live(self.session):
            return  # the session died while the notification was on its way
        if client.state == "disconnected":
            client._off_line(self, event)
            return
        self.callback(event)


class ZkClient(Primitive):
    """One process's ZooKeeper handle with one session on ``store``."""

    def __init__(
        self,
        world: World,
        store: VersionedStore,
        name: str,
        *,
        session_timeout_ms: int = 30_000,
        latency_ms: Sequence[int] = (0,),
        notice_ms: Sequence[int] = (0,),
        node: Node | None = None,
        reconnect_attempt_ms: int = 0,
    ) -> None:
        if not (session_timeout_ms > 0 and latency_ms and notice_ms and reconnect_attempt_ms >= 0):
            raise ValueError(
                f"ZkClient {name!r}: session_timeout_ms must be > 0, latency_ms and notice_ms "
                "non-empty, reconnect_attempt_ms >= 0"
            )
        self.world = world
        self.store = store
        self.name = name
        self.session_timeout_ms = session_timeout_ms
        self.latency_ms = tuple(latency_ms)
        self.notice_ms = tuple(notice_ms)
        self.resource = resource = f"{store.name}-client:{name}"
        self._session = Cell(world, f"{resource}.session", store.open_session())
        self._state: Cell[SessionState] = Cell(world, f"{resource}.state", "connected")
        self._listeners: Cell[tuple[SessionListener, ...]] = Cell(
            world, f"{resource}.listeners", ()
        )
        # Watch deliveries that arrived while disconnected, in order.
        self._held: Cell[tuple[tuple[_SessionWatcher, WatchEvent], ...]] = Cell(
            world, f"{resource}.held", ()
        )
        # One-shot watches that fired while the connection was lost (the first event of each):
        # the server dropped them with the connection; the client sends them again when it
        # reconnects (``_catch_up``). The current disconnection lost the connection's watches.
        self._lost: Cell[tuple[tuple[_SessionWatcher, WatchEvent], ...]] = Cell(
            world, f"{resource}.lost-watches", ()
        )
        self._watches_lost = Cell(world, f"{resource}.watches-lost", False)
        # Sessions it closed itself (``close``): their deliveries on the way arrive.
        self._closed: Cell[frozenset[int]] = Cell(world, f"{resource}.closed", frozenset())
        self._persistent: Cell[tuple[tuple[str, Watcher, _SessionWatcher], ...]] = Cell(
            world, f"{resource}.persistent", ()
        )
        self._expiry = Timer(
            world, f"{store.name}-server", self._server_expires, resource=f"{resource}:expiry"
        )
        self._last_tell: Cell[Process | None] = Cell(world, f"{resource}.last-tell", None)
        # The end of the latest pause or connection loss.
        self._reconnect_at_ms = Cell(world, f"{resource}.reconnect-at", 0)
        # Connections broken so far (a request on the wire of a broken one is lost).
        self._connection = Cell(world, f"{resource}.connection", 0)
        # Actors blocked until the client reconnects.
        self._waiting: Cell[tuple[Event, ...]] = Cell(world, f"{resource}.waiting", ())
        # Requests made while reconnecting: each waits for True (send it) or False (failed).
        self._queued: Cell[tuple[Event, ...]] = Cell(world, f"{resource}.queued", ())
        self.reconnect_attempt_ms = reconnect_attempt_ms
        self._cut_ms = Cell(world, f"{resource}.cut", 0)  # a loss to follow the next send
        # True while a request of this client is applied at the server (within that step).
        self._serving: Scratch[bool] = Scratch(False)
        self.node = node
        # Its node crashed: the connection never comes back.
        self._dead = Cell(world, f"{resource}.dead", False)
        self.freeze()
        if node is not None:
            node.on_pause(self._node_paused)
            node.on_crash(self._node_crashed)

    def _node_paused(self, until_ms: int) -> None:
        """The node's JVM stops: no heartbeats until ``until_ms``, then it reconnects.

        The connection itself stays open (the server's socket does not close
        because the client's JVM stopped): a request already on the wire is
        applied at the server and its reply waits for the node.
        """
        if self.state in ("connected", "disconnected") and not self._dead.get():
            self._disconnect_for(until_ms - self.world.now_ms, broken=False)  # the node logged

    def _node_crashed(self) -> None:
        """The node's process died: the connection drops and never comes back.

        Nobody is told (the listeners died with the node); the server expires
        the session ``session_timeout_ms`` later, and its ephemerals with it.
        """
        self._dead.set(True)
        self._drop_held()
        if self.state == "connected":  # requests already on the wire still arrive
            self._state.set("disconnected")
            self._expiry.start(self.session_timeout_ms)

    def _spawn(self, actor: str, generator: Generator[Event, Any, None]) -> Process:
        """A process of the client's own threads: on its node while that node is up."""
        node = self.node if self.node is not None and self.node.up else None
        return self.world.spawn(actor, generator, node=node)

    # -- the session -------------------------------------------------------------
    @property
    def session(self) -> int:
        """The session this client holds now (a new one after ``renew``)."""
        return self._session.get()

    @property
    def state(self) -> SessionState:
        """The client's view of its connection: connected, disconnected, expired or closed."""
        return self._state.get()

    @property
    def listeners(self) -> tuple[SessionListener, ...]:
        return self._listeners.get()

    @property
    def connected(self) -> bool:
        """The client's view: connected, with a session it believes live."""
        return self.state == "connected"

    @property
    def live(self) -> bool:
        """The server's truth: the session exists (not expired, not closed)."""
        return self.store.session_live(self.session)

    def add_listener(self, listener: SessionListener) -> None:
        """``listener(SessionEvent)`` on every change of connection state, in order."""
        self._listeners.set((*self._listeners.get(), listener))

    def _drop_held(self) -> None:
        if self._held.get():
            self._held.set(())
        if self._lost.get():
            self._lost.set(())

    def _off_line(self, watcher: _SessionWatcher, event: WatchEvent) -> None:
        """A delivery while disconnected: held if the socket stayed open (the node paused, the
        server sent it), else the watch was lost with the connection: a one-shot one is sent
        again at reconnection (its first event kept, for its kind), a persistent one missed it."""
        if not self._watches_lost.get():
            self._held.set((*self._held.get(), (watcher, event)))
            return
        lost = self._lost.get()
        if watcher.table != "persistent" and not any(w is watcher for w, _ in lost):
            self._lost.set((*lost, (watcher, event)))

    def _wake_waiting(self) -> None:
        """Wake the actors blocked until the client reconnects (or closes)."""
        waiting = self._waiting.get()
        if waiting:
            self._waiting.set(())
        for waiter in waiting:
            waiter.succeed()

    def disconnect(self, *, broken: bool = True, watches_kept: bool | None = None) -> None:
        """The connection drops (a partition, a paused process): the server's expiry clock starts.

        ``broken=False``: the client stops hearing the server but the socket
        stays open (its node paused), so requests on the wire still arrive.
        ``watches_kept`` (default: not ``broken``): the server keeps the
        session's watches on the connection and what fires is delivered on
        reconnection; else the server dropped them with the connection
        (``DataTree.removeCnxn``) and the client sends them again when it
        reconnects (``_catch_up``).
        """
        if self.state != "connected":
            return
        if broken:
            self._connection.set(self._connection.get() + 1)
        self._watches_lost.set(broken if watches_kept is None else not watches_kept)
        self._set_state("disconnected")
        self._expiry.start(self.session_timeout_ms)

    def reconnect(self) -> None:
        """The connection is back: ``connected`` if the session survived, else ``expired``."""
        if self.state != "disconnected":
            return
        self._wake_waiting()
        self._release_queued(sent=True)
        if self.live:
            self._expiry.cancel()
            self._set_state("connected")
            held: list[Delivery] = list(self._held.get())
            if held:
                self._held.set(())
            lost = self._lost.get()
            if lost:
                self._lost.set(())
                held += self._catch_up(lost)
            if held:
                self._spawn(f"{self.name}-watch", self._deliver_held(held))
        else:
            self._drop_held()
            self._set_state("expired")

    def pause(self, duration_ms: int) -> None:
        """The process stops for ``duration_ms`` (a GC pause): no heartbeats, then it reconnects.

        A pause of 0 ms is no pause: nothing happens (no op, no disconnect, no
        reconnect), as a drawn "no pause" must not be a fault in disguise.
        """
        if not isinstance(duration_ms, int) or isinstance(duration_ms, bool) or duration_ms < 0:
            raise ValueError(
                f"ZkClient.pause: duration_ms must be an int >= 0, got {duration_ms!r}"
            )
        if duration_ms == 0:
            return
        self.world.log(self.name, "zk.paused", session=self.session, duration_ms=duration_ms)
        self._disconnect_for(duration_ms, watches_kept=True)  # its socket's unread events

    def lose_connection(self, duration_ms: int) -> None:
        """The connection drops for ``duration_ms``; every actor calling through it is blocked."""
        assert duration_ms >= 0
        self.world.log(
            self.name, "zk.connection-lost", session=self.session, duration_ms=duration_ms
        )
        self._disconnect_for(duration_ms)
        if self.reconnect_attempt_ms and duration_ms > self.reconnect_attempt_ms:
            self.world.spawn(f"{self.name}-reconnect", self._failed_attempts())

    def lose_connection_after_next_send(self, duration_ms: int) -> None:
        """The connection drops for ``duration_ms`` just after the next ``request`` leaves.

        The fault "the network broke with a request on the wire": that request
        is not applied (it never arrives) and its caller hears ``ConnectionLoss``.
        """
        self._cut_ms.set(duration_ms)

    def _failed_attempts(self) -> Generator[Event, Any, None]:
        """Every ``reconnect_attempt_ms`` while the loss lasts, an attempt fails: cleanup()."""
        while True:
            yield self.world.sleep(self.reconnect_attempt_ms)
            if self.state != "disconnected" or self.world.now_ms >= self._reconnect_at_ms.get():
                return
            self._release_queued(sent=False)

    def _release_queued(self, *, sent: bool) -> None:
        """Wake the queued requests: sent on reconnection, or failed with CONNECTIONLOSS."""
        queued = self._queued.get()
        if queued:
            self._queued.set(())
        for waiter in queued:
            waiter.succeed(sent)

    def _disconnect_for(
        self, duration_ms: int, *, broken: bool = True, watches_kept: bool | None = None
    ) -> None:
        self.disconnect(broken=broken, watches_kept=watches_kept)
        until = max(self._reconnect_at_ms.get(), self.world.now_ms + duration_ms)
        self._reconnect_at_ms.set(until)
        self.world.spawn(f"{self.name}-resume", self._resume_after(duration_ms))

    def until_connected(self) -> Generator[Event, Any, None]:
        """``waitUntilConnected``: ``yield from client.until_connected()``; no step if connected.

        Raises ``SessionExpired`` if the client comes back to an expired or closed session.
        """
        while self.state == "disconnected":
            waiter = self.world.event()
            self._waiting.set((*self._waiting.get(), waiter))
            yield waiter
        if self.state != "connected":
            raise SessionExpired(f"{self.name}: session {self.session} is {self.state}")

    def retrying(
        self, round_trip_ms: int, operation: Callable[[], T] | None = None
    ) -> Generator[Event, Any, T | None]:
        """``retryUntilConnected``: wait for the connection, make the call, again if a loss cut it.

        ``result = yield from client.retrying(rtt_ms, lambda: client.get(path))``:
        the call is a request of two halves (half the round trip each way,
        applied at the server at its arrival); a connection lost meanwhile makes
        the caller wait for the reconnection and call again, so a call whose
        reply the loss cut is applied twice, as with Helix. Every actor calling
        through one client is blocked by its loss.
        """
        out_ms, back_ms = round_trip_halves(round_trip_ms)
        while True:
            yield from self.until_connected()
            try:
                return (yield from self._call(operation or _nothing, out_ms, back_ms))
            except ConnectionLoss:
                continue

    def expire(self) -> None:
        """The server expires the session now (the ``session-expiry`` fault)."""
        if not self.live:
            return
        self._expiry.cancel()
        self._server_expires()
        if self.state == "connected":  # nothing is held while connected
            self._set_state("expired")

    def close(self) -> None:
        """Close the session: its ephemeral nodes go now, and its watches end.

        As a real server does, the close deletes the ephemerals before it drops
        the session's watches, and the client reads every notification sent
        before the close's reply: its own watches see its ephemerals go, and
        deliveries on their way arrive. Later changes reach none of its watches.
        """
        if self.live:
            self._expiry.cancel()
            self._closed.set(self._closed.get() | {self.session})
            self.store.expire_session(self.session, closing=True)
        self._drop_held()
        self._set_state("closed")
        self._wake_waiting()  # they wake to a closed session: SessionExpired
        self._release_queued(sent=True)  # and so do the queued requests

    def renew(self) -> None:
        """After ``expired``: a new session (as kazoo does after LOST); ephemerals must be re-created."""
        if self.state not in ("expired", "closed"):
            raise ValueError(f"{self.name} renews a {self.state} session")
        self._session.set(self.store.open_session())
        if self._persistent.get():
            self._persistent.set(())
        self._set_state("connected")

    def _server_expires(self) -> None:
        self.world.log(f"{self.store.name}-server", "zk.session-expired", session=self.session)
        self.store.expire_session(self.session)

    def _resume_after(self, duration_ms: int) -> Generator[Event, Any, None]:
        yield self.world.sleep(duration_ms)
        if (
            self.world.now_ms >= self._reconnect_at_ms.get() and not self._dead.get()
        ):  # a later loss: longer
            self.reconnect()

    def _deliver_held(self, held: list[Delivery]) -> Generator[Event, Any, None]:
        """The notifications that arrived while disconnected, in the order they arrived, then
        the server's catch-up of the watches lost with the connection."""
        yield self.world.sleep(0)
        for watcher, event in held:
            watcher(event)

    def _catch_up(self, lost: tuple[tuple[_SessionWatcher, WatchEvent], ...]) -> list[Delivery]:
        """The one-shot watches lost with the connection, sent again (``store.set_watches``).

        Each fired during the loss, so its node changed since the client's last
        reply; the others are still armed. An exists watch whose node is missing
        again is armed again (a ``watch`` re-arms itself at each firing).
        """
        sent = [(_table_of(watcher, event), event.path, watcher) for watcher, event in lost]
        events, armed = self.store.set_watches(sent, self._owns)
        for path, watcher in armed:
            if getattr(watcher, "table", None) != "rearmed":
                self.store.exists(path, watch=watcher)
        return events

    def _owns(self, watcher: Watcher) -> bool:
        return isinstance(watcher, _SessionWatcher) and watcher.session == self.session

    def _set_state(self, state: SessionState) -> None:
        contract(state in get_args(SessionState), f"unknown session state {state!r}")
        self._state.set(state)
        notice_ms = self.world.source.choose(f"{self.name}.notice", self.notice_ms)
        event = SessionEvent(state, self.session)
        previous = self._last_tell.get()
        self._last_tell.set(
            self._spawn(f"{self.name}-events", self._tell(event, notice_ms, previous))
        )

    def _tell(
        self, event: SessionEvent, notice_ms: int, previous: Process | None
    ) -> Generator[Event, Any, None]:
        """Deliver ``event`` after ``notice_ms``, never before the events told before it."""
        yield self.world.sleep(notice_ms)
        if previous is not None and self.world.alive(previous):
            yield previous  # a failure of ``previous``: see ``VersionedStore._deliver``
        # Logged when the client's code hears of it, ``notice_ms`` after the change (the
        # server's own ``zk.session-expired`` is logged when it expires the session).
        self.world.log(self.name, "zk.session", state=event.state, session=event.session)
        for listener in self.listeners:
            result = listener(event)
            if isinstance(result, Generator):
                yield from result

    # -- requests ------------------------------------------------------------------
    def _require(self) -> None:
        if self._serving.value:  # at the server: the session's truth, not the client's view
            if not self.store.session_live(self.session):
                raise SessionExpired(f"{self.name}: session {self.session} is gone")
            return
        state = self.state
        if state == "disconnected":
            raise ConnectionLoss(f"{self.name} is disconnected")
        if state != "connected" or not self.live:
            raise SessionExpired(f"{self.name}: session {self.session} is {self.state}")

    def request(self, operation: Callable[[], T]) -> Generator[Event, Any, T]:
        """A remote call in two halves: ``result = yield from client.request(lambda: client.set(...))``.

        Sent now (or when the caller's node's pause ends; queued while the
        client reconnects), applied at the server a drawn latency later if the
        connection it went on is still up and the session live (else
        ConnectionLoss / SessionExpired: not applied), and its reply read a
        drawn latency after that; a connection lost before the reply is read
        raises ConnectionLoss although the operation *was* applied, as in
        ZooKeeper. What the operation raised at the server is raised here.
        """
        label = f"{self.name}.latency"
        out_ms = self.world.source.choose(label, self.latency_ms)
        back_ms = self.world.source.choose(label, self.latency_ms)
        return (yield from self._call(operation, out_ms, back_ms))

    def _call(
        self, operation: Callable[[], T], out_ms: int, back_ms: int
    ) -> Generator[Event, Any, T]:
        if send_held(self.world):  # a request its paused node has not sent waits
            yield from hold_send(self.world)
        drops = self._connection.get()
        while self.state == "disconnected" and not self._dead.get():
            waiter = self.world.event()
            self._queued.set((*self._queued.get(), waiter))
            if not (yield waiter):
                raise ConnectionLoss(f"{self.name}: a reconnect attempt failed: not sent")
            drops = self._connection.get()
        call = RemoteCall(
            self.world,
            f"{self.store.name}-server",
            lambda: self._at_server(operation),
            one_way_ms=out_ms,
            back_ms=back_ms,
            guard=lambda: self._broken_since(drops),
        )
        if duration_ms := self._cut_ms.get():
            self._cut_ms.set(0)
            self.lose_connection(duration_ms)  # writes the client's state
        try:
            result: T = yield call.reply
        except Exception:  # what the server raised, unless the connection broke meanwhile
            self._lost_reply(call, drops)
            raise
        self._lost_reply(call, drops)
        return result

    def _lost_reply(self, call: RemoteCall[Any], drops: int) -> None:
        """A reply read over a connection that broke since the send is lost with it."""
        if self._connection.get() != drops:
            applied = "applied" if call.applied else "not applied"
            raise ConnectionLoss(f"{self.name} lost the reply: the operation was {applied}")

    def _at_server(self, operation: Callable[[], T]) -> T:
        with self._serving.using(True):
            return operation()

    def _broken_since(self, drops: int) -> ConnectionLoss | None:
        """At the server: the connection a request went on broke before it arrived."""
        if self._connection.get() != drops:  # (a crash of its node closes it after the bytes sent)
            return ConnectionLoss(f"{self.name}: the connection broke: the request never arrived")
        return None

    def _wrap(self, callback: Watcher | None, table: str = "data") -> Watcher | None:
        return None if callback is None else _SessionWatcher(self, callback, table)

    def exists(self, path: str, watch: Watcher | None = None) -> bool:
        self._require()
        return self.store.exists(path, watch=self._wrap(watch))

    def get(self, path: str, watch: Watcher | None = None) -> tuple[JSONValue, int]:
        self._require()
        return self.store.get(path, watch=self._wrap(watch))

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        self._require()
        return self.store.children(path, watch=self._wrap(watch, "child"))

    def watch(self, path: str, callback: Watcher) -> None:
        """A data watch re-armed at each firing (kazoo's DataWatch, ``VersionedStore.watch``).

        Its notifications are held while the client's node is paused; after a lost connection
        it hears one catch-up event if its node changed meanwhile; it dies with the session.
        """
        self._require()
        self.store.watch(path, _SessionWatcher(self, callback, "rearmed"))

    def ensure_path(self, path: str) -> None:
        self._require()
        self.store.ensure_path(path)

    def add_watch(self, path: str, callback: Watcher, *, recursive: bool = False) -> None:
        """A persistent (or persistent-recursive) watch that dies with the session."""
        self._require()
        watcher = _SessionWatcher(self, callback, "persistent")
        self._persistent.set((*self._persistent.get(), (path, callback, watcher)))
        self.store.add_watch(path, watcher, recursive=recursive)

    def remove_watch(self, path: str, callback: Watcher) -> bool:
        """Remove the watch ``add_watch(path, callback)`` set; False if there is none."""
        self._require()
        entries = self._persistent.get()
        for entry in entries:
            if entry[0] == path and entry[1] is callback:
                self._persistent.set(tuple(e for e in entries if e is not entry))
                return self.store.remove_watch(path, entry[2])
        return False

    def create(
        self,
        path: str,
        data: JSONValue = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
    ) -> str:
        self._require()
        owner = self.session if ephemeral else None
        return self.store.create(path, data, ephemeral_session=owner, sequential=sequential)

    def set(self, path: str, data: JSONValue, version: int = -1) -> int:
        self._require()
        return self.store.set(path, data, version)

    def delete(self, path: str, version: int = -1) -> None:
        self._require()
        self.store.delete(path, version)

    def check(self, path: str, version: int = -1) -> None:
        self._require()
        self.store.check(path, version)

    def multi(self, ops: Sequence[TxOp]) -> list[JSONValue]:
        """All or nothing; its ephemeral creates belong to this client's session."""
        self._require()
        return self.store.multi(ops, session=self.session)

    def transaction(self) -> Transaction:
        return Transaction(self)


def _table_of(watcher: _SessionWatcher, event: WatchEvent) -> str:
    """The Java client's table of a one-shot watch: an exists watch fired ``created``."""
    if event.kind == "created":
        return "exist"
    return "child" if watcher.table == "child" else "data"


def _nothing() -> None:
    """A request that carries no operation (a ping through ``retrying``)."""
