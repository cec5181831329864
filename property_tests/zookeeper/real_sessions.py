"""A real ZooKeeper session seen as the Java client (3.6.3) shows it: the conformance test's oracle.

``test_conformance.py`` drives the simulated store and a real server with the
same operations and compares what each session sees. kazoo 2.11 speaks the
wire protocol but is not the client the models stand for (Helix, Brooklin
and Samza use the Java client), and it differs from it where the comparison
looks: it has no ``addWatch`` (persistent and recursive watches), it does
not re-register watches after a reconnection, and it queues calls made
while disconnected until the connection is back. So this module keeps
kazoo for the connection and the plain requests and does the Java client's
part itself:

- ``addWatch`` (opcode 106) and the watched reads are sent as raw requests,
  and the watches live in a registry of this module, dispatched as
  ``ZKWatchManager.materialize`` does: a one-shot data or exists watch on
  created / changed / deleted, a child watch on children-changed and deleted,
  a persistent watch on every event at its path, a recursive one on every
  event at its path or below;
- each notification from the server is recorded with the watches it reached
  (in one notification the Java client's order of watchers is a HashSet's, so
  a notification is a set of watch ids), when kazoo's connection thread reads
  it, before the reply to any later request on the session;
- after a reconnection with the same session, the registry is sent again as
  ``SetWatches2`` (opcode 105) with the last zxid seen, as
  ``ClientCnxn.primeConnection`` does: the server answers with a catch-up
  event for each one-shot watch whose node changed, and re-adds the
  persistent ones without any;
- a connection loss is a TCP proxy between kazoo and the server that drops
  its connections and refuses new ones until restored; a call made during
  the loss raises ``ConnectionLoss`` and is not sent, as the Java client's
  queued packet is failed at the next failed connection attempt
  (``ClientCnxn.cleanup``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import (
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.handlers.threading import AsyncResult
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import Exists, GetChildren, GetData, Watch, write_string
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from raceproof.sim.store import (
    ConnectionLoss,
    StoreError,
    TransactionFailed,
    TxOp,
)
from raceproof.zookeeper.kazoo_store import ERRORS

KINDS = {1: "created", 2: "deleted", 3: "changed", 4: "children"}  # the wire's event types
WAIT_S = 20.0


class Notification(NamedTuple):
    """One event from the server, with the ids of the session's watches it reached."""

    kind: str
    path: str
    watches: frozenset[str]


def _watched(base: type) -> type:
    """``base`` (a kazoo read) sent with the watch flag set, and no watcher kazoo would keep."""

    class WatchedRead(base):  # type: ignore[misc, valid-type]
        def serialize(self) -> bytearray:
            return bytearray(write_string(self.path)) + bytearray([1])

    return WatchedRead


WatchedGetData, WatchedExists, WatchedGetChildren = map(_watched, (GetData, Exists, GetChildren))


class AddWatch(NamedTuple):
    """ZooKeeper 3.6's ``addWatch``: mode 0 persistent, 1 persistent-recursive."""

    path: str
    mode: int
    type = 106

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path)) + bytearray(struct.pack("!i", self.mode))

    @classmethod
    def deserialize(cls, _bytes: bytes, _offset: int) -> None:
        return None


def _strings(paths: list[str]) -> bytearray:
    out = bytearray(struct.pack("!i", len(paths)))
    for path in paths:
        out.extend(write_string(path))
    return out


class SetWatches2(NamedTuple):
    """The watches re-sent after a reconnection (``ClientCnxn.primeConnection``)."""

    zxid: int
    tables: tuple[list[str], ...]  # data, exist, child, persistent, persistent-recursive
    type = 105

    def serialize(self) -> bytearray:
        out = bytearray(struct.pack("!q", self.zxid))
        for paths in self.tables:
            out.extend(_strings(paths))
        return out

    @classmethod
    def deserialize(cls, _bytes: bytes, _offset: int) -> None:
        return None


class Proxy:
    """A TCP relay to ``127.0.0.1:upstream``; ``cut`` drops its connections until ``restore``."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.cut_off = False
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                if self.cut_off:
                    downstream.close()
                    continue
                upstream = socket.create_connection(("127.0.0.1", self.upstream))
                self.open += [downstream, upstream]
            for a, b in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self.lock:
            self.cut_off = True
            for sock in self.open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self.open = []

    def restore(self) -> None:
        with self.lock:
            self.cut_off = False

    def close(self) -> None:
        self.cut()
        self.listener.close()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"ZooKeeper conformance: {what} within {WAIT_S}s")
        time.sleep(0.002)


def _decode(raw: bytes) -> Any:
    return json.loads(raw) if raw else None


class RealSession:
    """One session slot on the real server, through its own proxy, in chroot ``chroot``."""

    def __init__(self, server_port: int, chroot: str) -> None:
        self.proxy = Proxy(server_port)
        self.chroot = chroot
        retry = KazooRetry(max_tries=-1, delay=0.01, backoff=1, max_jitter=0.01, max_delay=0.02)
        self.client = KazooClient(
            hosts=f"127.0.0.1:{self.proxy.port}{chroot}", timeout=10, connection_retry=retry
        )
        self.client._connection._read_watch_event = self._on_event
        self.lock = threading.Lock()
        self.notifications: list[Notification] = []
        # Java's ZKWatchManager tables: path -> watch ids (a watcher per id).
        self.tables: dict[str, dict[str, list[str]]] = {
            t: {} for t in ("data", "exist", "child", "persistent", "recursive")
        }
        self.lost = False
        self.client.start(timeout=WAIT_S)
        self.session_id = self._connected_session()

    # -- watches -------------------------------------------------------------------
    def _on_event(self, buffer: bytes, offset: int) -> None:
        """kazoo's connection thread reads a notification: dispatch it as ZKWatchManager does."""
        watch, _ = Watch.deserialize(buffer, offset)
        if watch.type not in KINDS:
            return
        kind, path = KINDS[watch.type], self.client.unchroot(watch.path)
        with self.lock:
            reached = self._materialize(kind, path)
            self.notifications.append(Notification(kind, path, frozenset(reached)))

    def _materialize(self, kind: str, path: str) -> list[str]:
        one_shot = {
            "created": ("data", "exist"),
            "changed": ("data", "exist"),
            "deleted": ("data", "exist", "child"),
            "children": ("child",),
        }[kind]
        reached = [w for t in one_shot for w in self.tables[t].pop(path, [])]
        reached += self.tables["persistent"].get(path, [])
        at = path
        while True:  # PathParentIterator.forAll: the path and each ancestor
            reached += self.tables["recursive"].get(at, [])
            if at == "/":
                return reached
            at = at.rsplit("/", 1)[0] or "/"

    def _register(self, table: str, path: str, watch_id: str) -> None:
        with self.lock:
            self.tables[table].setdefault(path, []).append(watch_id)

    def take_notifications(self) -> list[Notification]:
        with self.lock:
            taken, self.notifications = self.notifications, []
        return [n for n in taken if n.watches]

    def barrier(self) -> None:
        """A round trip: every notification sent before it has been read."""
        if not self.lost:
            self.client.exists("/")

    # -- requests ------------------------------------------------------------------
    def _raw(self, request: Any) -> Any:
        if self.lost:
            raise ConnectionLoss("the connection is lost: the Java client fails the queued call")
        result = AsyncResult(self.client.handler)
        self.client._call(request, result)
        try:
            return result.get(timeout=WAIT_S)
        except tuple(ERRORS) as error:
            raise ERRORS[type(error)](str(error)) from None

    def _full(self, path: str) -> str:
        return _prefix_root(self.chroot, path)

    def get(self, path: str, watch_id: str | None) -> tuple[Any, int]:
        request = GetData if watch_id is None else WatchedGetData
        raw, stat = self._raw(request(self._full(path), None))
        if watch_id is not None:
            self._register("data", path, watch_id)
        return _decode(raw), int(stat.version)

    def exists(self, path: str, watch_id: str | None) -> bool:
        request = Exists if watch_id is None else WatchedExists
        stat = self._raw(request(self._full(path), None))
        if watch_id is not None:
            self._register("data" if stat is not None else "exist", path, watch_id)
        return stat is not None

    def children(self, path: str, watch_id: str | None) -> list[str]:
        request = GetChildren if watch_id is None else WatchedGetChildren
        names = self._raw(request(self._full(path), None))
        if watch_id is not None:
            self._register("child", path, watch_id)
        return sorted(names)

    def add_watch(self, path: str, watch_id: str, *, recursive: bool) -> None:
        self._raw(AddWatch(self._full(path), 1 if recursive else 0))
        self._register("recursive" if recursive else "persistent", path, watch_id)

    def remove_watch(self, path: str, watch_id: str) -> bool:
        """Java's ``removeWatches(path, watcher, Any, false)``: the watcher goes from the client.

        (The server is only asked whether it has a watch there, ``checkWatches``.)
        """
        if self.lost:
            raise ConnectionLoss("the connection is lost")
        with self.lock:
            for table in ("persistent", "recursive"):
                if watch_id in self.tables[table].get(path, []):
                    self.tables[table][path].remove(watch_id)
                    return True
        return False

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.lost:
            raise ConnectionLoss("the connection is lost: the Java client fails the queued call")
        try:
            return method(*args, **kwargs)
        except tuple(ERRORS) as error:
            raise ERRORS[type(error)](str(error)) from None

    def create(self, path: str, data: Any, *, ephemeral: bool, sequential: bool) -> str:
        value = json.dumps(data).encode()
        created = self._call(
            self.client.create, path, value, ephemeral=ephemeral, sequence=sequential
        )
        return str(created)

    def set(self, path: str, data: Any, version: int) -> int:
        stat = self._call(self.client.set, path, json.dumps(data).encode(), version=version)
        return int(stat.version)

    def delete(self, path: str, version: int) -> None:
        self._call(self.client.delete, path, version=version)

    def multi(self, ops: list[TxOp]) -> list[Any]:
        transaction = self.client.transaction()
        for op in ops:
            value = json.dumps(op.data).encode()
            if op.kind == "check":
                transaction.check(op.path, op.version)
            elif op.kind == "create":
                transaction.create(op.path, value, ephemeral=op.ephemeral, sequence=op.sequential)
            elif op.kind == "set":
                transaction.set_data(op.path, value, op.version)
            else:
                transaction.delete(op.path, op.version)
        results = self._call(transaction.commit)
        for index, (op, result) in enumerate(zip(ops, results, strict=True)):
            if isinstance(result, Exception) and not isinstance(
                result, RolledBackError | RuntimeInconsistency
            ):
                raise TransactionFailed(index, op, ERRORS.get(type(result), StoreError)(op.path))
        kinds = [op.kind for op in ops]
        return [
            str(r) if k == "create" else int(r.version) if k == "set" else None
            for k, r in zip(kinds, results, strict=True)
        ]

    # -- the session ---------------------------------------------------------------
    def _connected_session(self) -> int:
        self.session_id, self.password = self.client.client_id
        return int(self.session_id)

    def _forget_watches(self) -> None:
        with self.lock:
            for table in self.tables.values():
                table.clear()

    def close_and_reopen(self) -> None:
        """``close()`` then a new session, as the sim's ``close`` and ``renew``."""
        self.client.stop()
        self._forget_watches()
        self.client.start(timeout=WAIT_S)
        self._connected_session()

    def expire(self, server_port: int) -> None:
        """The server ends the session: another connection with its id closes it.

        The session's own connection is cut meanwhile, or kazoo's reconnection
        could take the session back from the closing connection first.
        """
        self.proxy.cut()
        thief = KazooClient(
            hosts=f"127.0.0.1:{server_port}", client_id=(self.session_id, self.password)
        )
        thief.start(timeout=WAIT_S)
        thief.stop()
        thief.close()
        if not self.lost:
            self.proxy.restore()
            self._await_new_session(self.session_id)

    def _await_new_session(self, old: int) -> None:
        wait_for(
            lambda: (
                self.client.state == KazooState.CONNECTED
                and self.client.client_id is not None
                and self.client.client_id[0] != old
            ),
            "kazoo opens a new session after its session expired",
        )
        self._connected_session()
        self._forget_watches()

    def lose_connection(self) -> None:
        self.proxy.cut()
        self.lost = True
        wait_for(lambda: self.client.state != KazooState.CONNECTED, "kazoo notices the cut")

    def restore(self) -> bool:
        """The connection is back; False if the session had expired (a new one is open)."""
        old = self.session_id
        self.proxy.restore()
        self.lost = False
        wait_for(lambda: self.client.state == KazooState.CONNECTED, "kazoo reconnects")
        if self._connected_session() != old:
            self._forget_watches()
            return False
        self._set_watches()
        return True

    def _set_watches(self) -> None:
        with self.lock:
            tables = tuple(
                sorted(self._full(p) for p, ids in self.tables[t].items() if ids)
                for t in ("data", "exist", "child", "persistent", "recursive")
            )
        if any(tables):
            self._raw(SetWatches2(self.client.last_zxid, tables))

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop()
            self.client.close()
        self.proxy.close()
