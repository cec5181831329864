"""A versioned store in the manner of ZooKeeper, and a cache that lags behind it.

The store is what a model's ZooKeeper is: znodes with data and a version,
conditional set and delete, ephemeral nodes bound to sessions, session expiry,
one-shot data and child watches, ZooKeeper 3.6+'s persistent and
persistent-recursive watches (``add_watch``), and the atomic multi-op
(``multi`` / ``transaction``). Operations are atomic and instantaneous; a
model adds the network round trip with ``world.sleep`` where the real client
would wait, or uses a session-bound ``ZkClient`` (``sim/session.py``). Watch
notifications arrive after a delay drawn from the run's choice source, so
"the watch fired late" is a schedule like any other.

Every operation names what it touches through one method, ``_touch(mode,
path)``; ``on_touch`` (if set) sees each access, so a reduction can record a
step's footprint.

The cache is a client-side view that learns about changes late: either after
a drawn lag (``auto_refresh``) or only when the model refreshes it explicitly
(Brooklin's datastream cache).

No plain ``assert``: a nested multi-op is a ``KernelError``; bad paths,
unknown sessions, an ephemeral create without a session and empty option
lists are ``ValueError`` errors naming the call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from simpy.events import Process

from raceproof.sim.errors import contract
from raceproof.sim.history import JSONValue, copy_json
from raceproof.sim.world import ProcessGenerator, World


class StoreError(Exception):
    """Base of the store's errors (ZooKeeper's KeeperException)."""


class NoNode(StoreError):
    pass


class NodeExists(StoreError):
    pass


class BadVersion(StoreError):
    pass


class NotEmpty(StoreError):
    pass


class SessionExpired(StoreError):
    pass


class BadArguments(StoreError):
    """A request ZooKeeper refuses outright, such as deleting the root (BadArgumentsException)."""


class NoChildrenForEphemerals(StoreError):
    """A create under an ephemeral node: ephemerals have no children (NoChildrenForEphemeralsException)."""


class ConnectionLoss(StoreError):
    """The client is disconnected: the request was not sent (ZooKeeper's ConnectionLossException)."""


class TransactionFailed(StoreError):
    """A multi-op failed as a whole: op ``index`` raised ``error`` and nothing was applied."""

    def __init__(self, index: int, op: TxOp, error: StoreError) -> None:
        super().__init__(
            f"op #{index} ({op.kind} {op.path}) failed: {type(error).__name__}: {error}"
        )
        self.index = index
        self.op = op
        self.error = error


@dataclass
class Node:
    data: JSONValue
    version: int
    ephemeral_session: int | None
    # Children created under this node, ever: ZooKeeper's cversion, the next sequential suffix.
    # PrepRequestProcessor (3.8.0) appends it to a sequential name and adds one on every create;
    # a delete leaves it, so numbers are never reused under a parent that lives on.
    cversion: int = 0


@dataclass(frozen=True)
class WatchEvent:
    kind: str  # "changed", "deleted", "created", "children"
    path: str


Watcher = Callable[[WatchEvent], None]
TouchHook = Callable[[str, str], None]  # (mode "read"/"write", "<store>:<path>")


@dataclass(frozen=True)
class TxOp:
    """One operation of a multi-op: ``check``, ``create``, ``set`` or ``delete``."""

    kind: str
    path: str
    data: JSONValue = None
    version: int = -1
    ephemeral: bool = False
    sequential: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("check", "create", "set", "delete"):
            raise ValueError(f"unknown multi op {self.kind!r}")


class Transaction:
    """Builds a multi-op as kazoo's ``client.transaction()`` does; ``commit`` runs it on the backend.

    The backend is anything with ``multi(ops)``: the simulated store, a
    session-bound client, or the real ZooKeeper's ``KazooStore``.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.ops: list[TxOp] = []

    def check(self, path: str, version: int) -> Transaction:
        self.ops.append(TxOp("check", path, version=version))
        return self

    def create(
        self,
        path: str,
        data: JSONValue = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
    ) -> Transaction:
        self.ops.append(TxOp("create", path, data, ephemeral=ephemeral, sequential=sequential))
        return self

    def set_data(self, path: str, data: JSONValue, version: int = -1) -> Transaction:
        self.ops.append(TxOp(kind="set", path=path, data=data, version=version))
        return self

    def delete(self, path: str, version: int = -1) -> Transaction:
        self.ops.append(TxOp("delete", path, version=version))
        return self

    def commit(self) -> list[JSONValue]:
        """Results in op order (created path, new version, None); TransactionFailed if any op fails."""
        return list(self.backend.multi(self.ops))


Listener = Callable[[str, "Node | None"], None]


def _parent(path: str) -> str:
    if not (path.startswith("/") and (path == "/" or not path.endswith("/"))):
        raise ValueError(f"bad path {path!r}")
    head = path.rsplit("/", 1)[0]
    return head or "/"


class VersionedStore:
    """ZooKeeper-like znodes: ``create``, ``get``, ``set``/``delete`` with expected versions."""

    def __init__(
        self, world: World, name: str = "zk", watch_delay_ms: Sequence[int] = (0,)
    ) -> None:
        if not watch_delay_ms:
            raise ValueError("watch_delay_ms needs at least one option")
        self.world = world
        self.name = name
        self.watch_delay_ms = tuple(watch_delay_ms)
        self.nodes: dict[str, Node] = {"/": Node(None, 0, None)}
        self.data_watches: dict[str, list[Watcher]] = {}
        self.child_watches: dict[str, list[Watcher]] = {}
        self.persistent_watches: dict[str, list[tuple[Watcher, bool]]] = {}  # (watcher, recursive)
        self.listeners: list[Listener] = []
        self.sessions: dict[int, bool] = {}
        self.on_touch: TouchHook | None = None
        self._next_session = 1
        self._deferred: list[Callable[[], None]] | None = None  # notifications of a multi-op
        self._last_delivery: dict[Watcher, Process] = {}  # of each persistent watch

    def _touch(self, mode: str, path: str) -> None:
        """The one place every operation names the znode it reads or writes."""
        self.world.touch(f"{self.name}:{path}", write=mode == "write")  # the proof's footprints
        if self.on_touch is not None:
            self.on_touch(mode, f"{self.name}:{path}")

    # -- sessions ------------------------------------------------------------
    def open_session(self) -> int:
        self.world.touch(f"{self.name}:sessions")
        session = self._next_session
        self._next_session += 1
        self.sessions[session] = True
        return session

    def expire_session(self, session: int, *, closing: bool = False) -> list[str]:
        """Expire ``session``: its ephemeral nodes vanish (watches fire). Returns their paths.

        Watches the session set (watchers with a ``session`` attribute, as a
        ``ZkClient`` registers them) are removed first: they never fire. With
        ``closing`` the client closes the session over its own connection, and
        the server deletes the ephemerals before it drops that connection's
        watches: the session's own watches see its ephemerals go (ZooKeeper
        3.8.0, found by the conformance test).
        """
        if session not in self.sessions:
            raise ValueError(f"unknown session {session}")
        self.world.touch(f"{self.name}:sessions")
        self.sessions[session] = False
        if not closing:
            self._drop_watches_of(session)  # its watchers read the sessions table when they fire
        owned = sorted(p for p, n in self.nodes.items() if n.ephemeral_session == session)
        for path in owned:
            self._touch("write", path)
            self._remove(path)
        if closing:
            self._drop_watches_of(session)
        return owned

    def session_live(self, session: int) -> bool:
        """True while the server holds ``session`` (not expired, not closed)."""
        self.world.touch(f"{self.name}:sessions", write=False)
        return self.sessions.get(session, False)

    def _drop_watches_of(self, session: int) -> None:
        def keep(watcher: Watcher) -> bool:
            return getattr(watcher, "session", None) != session

        for table in (self.data_watches, self.child_watches):
            for path in sorted(table):
                table[path] = [w for w in table[path] if keep(w)]
                if not table[path]:
                    del table[path]
        for path in sorted(self.persistent_watches):
            kept = [(w, r) for w, r in self.persistent_watches[path] if keep(w)]
            if kept:
                self.persistent_watches[path] = kept
            else:
                del self.persistent_watches[path]

    def _check_session(self, session: int | None) -> None:
        if session is None:
            self.world.touch(f"{self.name}:sessions", write=False)  # as if it looked
        elif not self.session_live(session):
            raise SessionExpired(f"session {session} has expired")

    # -- reads ---------------------------------------------------------------
    def exists(self, path: str, watch: Watcher | None = None) -> bool:
        self._touch("write" if watch is not None else "read", path)
        if watch is not None:
            self.data_watches.setdefault(path, []).append(watch)
        return path in self.nodes

    def get(self, path: str, watch: Watcher | None = None) -> tuple[JSONValue, int]:
        """(data, version); NoNode if absent. A copy: callers cannot alias the store."""
        self._touch("write" if watch is not None else "read", path)
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if watch is not None:
            self.data_watches.setdefault(path, []).append(watch)
        return copy_json(node.data), node.version

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        """Child names, sorted (never in dict or directory-listing order)."""
        self._touch("write" if watch is not None else "read", path)
        if path not in self.nodes:
            raise NoNode(path)
        if watch is not None:
            self.child_watches.setdefault(path, []).append(watch)
        prefix = path.rstrip("/") + "/"
        return sorted(
            p[len(prefix) :]
            for p in self.nodes
            if p != path and p.startswith(prefix) and "/" not in p[len(prefix) :]
        )  # p != path: the root "/" is not its own child

    def watch(self, path: str, callback: Watcher) -> None:
        """A persistent watch on ``path`` (kazoo's DataWatch): re-armed each time it fires.

        Like ZooKeeper's one-shot watches re-registered by the client, changes
        between a firing and its delivery are not reported separately.
        """

        def fire(event: WatchEvent) -> None:
            self.exists(path, watch=fire)
            callback(event)

        self.exists(path, watch=fire)

    def add_watch(self, path: str, watcher: Watcher, *, recursive: bool = False) -> None:
        """ZooKeeper 3.6+'s ``addWatch``: a watch that stays until removed.

        As the 3.8.0 server has it (WatchManager.triggerWatch, DataTree.addWatch):
        ``PERSISTENT`` (``recursive=False``) fires for the node's creation, data
        change and deletion and for its children changing; ``PERSISTENT_RECURSIVE``
        fires for creation, data change and deletion of the node and of every
        node below it (the event names the changed node), never for children
        changing. ``path`` need not exist. Each firing is one delivery with a
        drawn delay; changes meanwhile are each delivered, in order of firing.
        """
        self._touch("write", path)  # the watch table
        self.persistent_watches.setdefault(path, []).append((watcher, recursive))

    def remove_watch(self, path: str, watcher: Watcher) -> bool:
        """Remove a watch ``add_watch`` set; False if there was none."""
        self._touch("write", path)
        entries = self.persistent_watches.get(path, [])
        kept = [(w, r) for w, r in entries if w is not watcher]
        if len(kept) == len(entries):
            return False
        if kept:
            self.persistent_watches[path] = kept
        else:
            del self.persistent_watches[path]
        return True

    # -- writes --------------------------------------------------------------
    def create(
        self,
        path: str,
        data: JSONValue = None,
        *,
        ephemeral_session: int | None = None,
        sequential: bool = False,
    ) -> str:
        """A sequential create appends the parent's count of children created so far ("/q/job-"
        gives "/q/job-0000000003"; the server takes "/q/" too, which kazoo would send as "/q");
        the created path is returned."""
        self._check_session(ephemeral_session)
        parent = _parent(f"{path}0" if sequential else path)
        if sequential and parent in self.nodes:
            path = f"{path}{self.nodes[parent].cversion:010d}"
        self._touch("write", path)
        self._touch("write", parent)
        if parent not in self.nodes:
            raise NoNode(parent)
        if path in self.nodes:
            raise NodeExists(path)
        if self.nodes[parent].ephemeral_session is not None:
            raise NoChildrenForEphemerals(parent)
        node = Node(copy_json(data), 0, ephemeral_session)
        self.nodes[path] = node
        self.nodes[parent].cversion += 1
        self._notify(path, node, "created")
        self._children_changed(parent)
        return path

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing parents with no data."""
        sub = ""
        for part in [p for p in path.split("/") if p]:
            sub += "/" + part
            if sub not in self.nodes:
                self.create(sub)

    def set(self, path: str, data: JSONValue, version: int = -1) -> int:
        """Overwrite the node; with ``version`` >= 0 only if that is its version. New version."""
        self._touch("write", path)
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if version >= 0 and node.version != version:
            raise BadVersion(f"{path}: expected version {version}, found {node.version}")
        node.data = copy_json(data)
        node.version += 1
        self._notify(path, node, "changed")
        return node.version

    def delete(self, path: str, version: int = -1) -> None:
        if path == "/":  # ZooKeeper's PrepRequestProcessor refuses the root as a special path
            raise BadArguments("the root znode cannot be deleted")
        self._touch("write", path)
        self._touch("write", _parent(path))
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if version >= 0 and node.version != version:
            raise BadVersion(f"{path}: expected version {version}, found {node.version}")
        if self.children(path):
            raise NotEmpty(path)
        self._remove(path)

    def _remove(self, path: str) -> None:
        del self.nodes[path]
        self._notify(path, None, "deleted")
        self._children_changed(_parent(path))

    def check(self, path: str, version: int = -1) -> None:
        """A multi-op's ``check``: NoNode if absent, BadVersion unless ``version`` is -1 or matches."""
        self._touch("read", path)
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if version >= 0 and node.version != version:
            raise BadVersion(f"{path}: expected version {version}, found {node.version}")

    # -- multi-op ----------------------------------------------------------------
    def transaction(self) -> Transaction:
        return Transaction(self)

    def multi(self, ops: Sequence[TxOp], *, session: int | None = None) -> list[JSONValue]:
        """Apply ``ops`` all or nothing (ZooKeeper's ``multi``); results in op order.

        The ops run in order against the store; if one fails, every change is
        rolled back, no watch fires, nothing is drawn, and TransactionFailed
        names the op. Otherwise the watches fire as the ops would have fired
        them one by one. ``session`` owns the ephemeral nodes it creates.
        """
        contract(self._deferred is None, "a multi-op cannot nest")
        saved = {p: dataclasses.replace(n) for p, n in self.nodes.items()}
        self._deferred = []
        results: list[JSONValue] = []
        try:
            for index, op in enumerate(ops):
                try:
                    results.append(self._apply(op, session))
                except StoreError as error:
                    self.nodes = saved
                    raise TransactionFailed(index, op, error) from None
            deferred = self._deferred
        finally:
            self._deferred = None
        for notification in deferred:
            notification()
        return results

    def _apply(self, op: TxOp, session: int | None) -> JSONValue:
        if op.kind == "check":
            self.check(op.path, op.version)
            return None
        if op.kind == "create":
            owner = session if op.ephemeral else None
            if op.ephemeral and session is None:
                raise ValueError("an ephemeral create needs a session")
            return self.create(op.path, op.data, ephemeral_session=owner, sequential=op.sequential)
        if op.kind == "set":
            return self.set(op.path, op.data, op.version)
        self.delete(op.path, op.version)
        return None

    # -- notification ----------------------------------------------------------
    def _notify(self, path: str, node: Node | None, kind: str) -> None:
        if self._deferred is not None:
            frozen = None if node is None else dataclasses.replace(node)
            self._deferred.append(lambda: self._notify(path, frozen, kind))
            return
        for listener in list(self.listeners):
            listener(path, node)
        self._fire(self.data_watches, path, kind)
        if kind == "deleted":
            self._fire(self.child_watches, path, "deleted")
        if self.persistent_watches:
            self._fire_persistent(path, kind)

    def _children_changed(self, parent: str) -> None:
        if self._deferred is not None:
            self._deferred.append(lambda: self._children_changed(parent))
            return
        self._fire(self.child_watches, parent, "children")
        for watcher, recursive in list(self.persistent_watches.get(parent, ())):
            if not recursive:
                self._send(watcher, WatchEvent("children", parent), in_order=True)

    def _fire_persistent(self, path: str, kind: str) -> None:
        """Persistent watches on ``path`` and recursive ones on its ancestors, nearest first."""
        chosen: list[Watcher] = []
        at = path
        while True:
            for watcher, recursive in self.persistent_watches.get(at, ()):
                if (recursive or at == path) and not any(w is watcher for w in chosen):
                    chosen.append(watcher)
            if at == "/":
                break
            at = _parent(at)
        for watcher in chosen:
            self._send(watcher, WatchEvent(kind, path), in_order=True)

    def _fire(self, table: dict[str, list[Watcher]], path: str, kind: str) -> None:
        watchers = table.pop(path, [])
        for watcher in watchers:
            self._send(watcher, WatchEvent(kind, path))

    def _send(self, watcher: Watcher, event: WatchEvent, *, in_order: bool = False) -> None:
        """Deliver ``event`` after a drawn delay; ``in_order``: never before the watcher's earlier ones.

        A persistent watch sees a stream of events, and ZooKeeper delivers a
        session's notifications in the order of the changes, so its deliveries
        queue behind each other; a one-shot watch fires once and needs no queue.
        """
        delay_ms = self.world.source.choose(f"{self.name}.watch-delay", self.watch_delay_ms)
        previous = self._last_delivery.get(watcher) if in_order else None
        process = self.world.spawn(
            f"{self.name}-watch", self._deliver(watcher, event, delay_ms, previous)
        )
        if in_order:
            self._last_delivery[watcher] = process

    def _deliver(
        self, watcher: Watcher, event: WatchEvent, delay_ms: int, previous: Process | None = None
    ) -> ProcessGenerator:
        yield self.world.sleep(delay_ms)
        if previous is not None and self.world.alive(previous):
            # If ``previous`` fails, SimPy throws a copy of its exception in here; the
            # World lets the choice source's and the kernel's own (StopTest, ...) out
            # unchanged instead (``World._process``), and a model error is reported from
            # its original (``errors``).
            yield previous
        watcher(event)


class LaggingCache:
    """A view of the store's nodes under ``prefix`` that may be stale.

    ``auto_refresh``: each change reaches the cache after a lag drawn from
    ``lag_ms`` (never going back to an older version). Otherwise the cache
    changes only through ``refresh`` and ``invalidate_all``, and a miss loads
    the node lazily, as Brooklin's datastream cache does.
    """

    def __init__(
        self,
        world: World,
        store: VersionedStore,
        prefix: str,
        *,
        name: str = "cache",
        auto_refresh: bool = True,
        lag_ms: Sequence[int] = (0,),
    ) -> None:
        if not lag_ms:
            raise ValueError("lag_ms needs at least one option")
        self.world = world
        self.store = store
        self.prefix = prefix.rstrip("/") + "/"
        self.name = name
        self.lag_ms = tuple(lag_ms)
        self.entries: dict[str, tuple[JSONValue, int]] = {}
        if auto_refresh:
            store.listeners.append(self._on_change)

    def _on_change(self, path: str, node: Node | None) -> None:
        if not path.startswith(self.prefix):
            return
        # No copy needed: the store copies data in and out, and a set replaces a node's data object.
        value = None if node is None else (node.data, node.version)
        lag_ms = self.world.source.choose(f"{self.name}.lag", self.lag_ms)
        self.world.spawn(f"{self.name}-refresh", self._apply_later(path, value, lag_ms))

    def _apply_later(
        self, path: str, value: tuple[JSONValue, int] | None, lag_ms: int
    ) -> ProcessGenerator:
        yield self.world.sleep(lag_ms)
        self.world.touch(self.name)
        if value is None:
            self.entries.pop(path, None)
            return
        current = self.entries.get(path)
        if current is None or current[1] < value[1]:
            self.entries[path] = value

    def get(self, path: str) -> tuple[JSONValue, int] | None:
        """The cached (data, version), loading a miss from the store; None if absent there."""
        if not path.startswith(self.prefix):
            raise ValueError(f"{path} is outside {self.prefix}")
        self.world.touch(self.name)
        cached = self.entries.get(path)
        if cached is None:
            try:
                cached = self.store.get(path)
            except NoNode:
                return None
            self.entries[path] = cached
        return copy_json(cached[0]), cached[1]

    def refresh(self) -> None:
        """Reload every node under the prefix from the store, now."""
        self.world.touch(self.name)
        self.entries = {}
        for name in self.store.children(self.prefix.rstrip("/")):
            path = self.prefix + name
            self.entries[path] = self.store.get(path)

    def invalidate_all(self) -> None:
        self.world.touch(self.name)
        self.entries = {}
