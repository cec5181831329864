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

Footprints (for the proof's reduction) come from the store's cells
(``raceproof.sim.cells``): each znode (``<store>:node['/a']``), its child list
(``<store>:children['/a']``), each session's entry and its ephemerals, the
one-shot and persistent watch tables per path, the listeners. A step's
footprint is what it read and wrote of them: a create reads the watch tables
of every ancestor (a recursive watch there fires), a session's end writes the
child lists its ephemerals leave.

The cache is a client-side view that learns about changes late: either after
a drawn lag (``auto_refresh``) or only when the model refreshes it explicitly
(Brooklin's datastream cache).

No plain ``assert``: a nested multi-op is a ``KernelError``; bad paths,
unknown sessions, an ephemeral create without a session and empty option
lists are ``ValueError`` errors naming the call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from simpy.events import Process

from raceproof.sim.cells import Cell, CellMap, Journal, Primitive
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


@dataclass(frozen=True)
class Node:
    data: JSONValue
    version: int
    ephemeral_session: int | None
    # Children created under this node, ever: ZooKeeper's cversion, the next sequential suffix.
    # PrepRequestProcessor (3.8.0) appends it to a sequential name and adds one on every create;
    # a delete leaves it, so numbers are never reused under a parent that lives on.
    cversion: int = 0

    # ``dataclasses.replace``, spelled out (it walks the fields on every call; a write makes one).
    def with_child(self) -> Node:
        """This node with one more child created under it."""
        return Node(self.data, self.version, self.ephemeral_session, cversion=self.cversion + 1)

    def written(self, data: JSONValue) -> Node:
        """This node with ``data`` as its next version."""
        return Node(data, self.version + 1, self.ephemeral_session, cversion=self.cversion)


@dataclass(frozen=True)
class WatchEvent:
    kind: str  # "changed", "deleted", "created", "children"
    path: str


Watcher = Callable[[WatchEvent], None]
Delivery = tuple[Watcher, WatchEvent]
# The one-shot tables an event reaches in the Java client (``ZKWatchManager.materialize``).
MATERIALIZE = {
    "created": ("data", "exist"),
    "changed": ("data", "exist"),
    "deleted": ("data", "exist", "child"),
    "children": ("child",),
}


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


def _name(path: str) -> str:
    """The last component of ``path``: its name in its parent's child list."""
    return path.rsplit("/", 1)[1]


def _parent(path: str) -> str:
    if not (path.startswith("/") and (path == "/" or not path.endswith("/"))):
        raise ValueError(f"bad path {path!r}")
    head = path.rsplit("/", 1)[0]
    return head or "/"


class VersionedStore(Primitive):
    """ZooKeeper-like znodes: ``create``, ``get``, ``set``/``delete`` with expected versions."""

    def __init__(
        self, world: World, name: str = "zk", watch_delay_ms: Sequence[int] = (0,)
    ) -> None:
        if not watch_delay_ms:
            raise ValueError("watch_delay_ms needs at least one option")
        self.world = world
        self.name = name
        self.watch_delay_ms = tuple(watch_delay_ms)
        self._journal = Journal()  # a multi-op's undo and its deferred notifications
        self.nodes: CellMap[str, Node] = self._cells("node", {"/": Node(None, 0, None)})
        self.child_lists: CellMap[str, tuple[str, ...]] = self._cells("children", {"/": ()})
        self.ephemerals: CellMap[int, tuple[str, ...]] = self._cells("ephemerals")
        self.sessions: CellMap[int, bool] = self._cells("session")
        self.data_watches: CellMap[str, tuple[Watcher, ...]] = self._cells("data-watches")
        self.child_watches: CellMap[str, tuple[Watcher, ...]] = self._cells("child-watches")
        # path -> (watcher, recursive) of each ``add_watch`` there
        self.persistent_watches: CellMap[str, tuple[tuple[Watcher, bool], ...]] = self._cells(
            "persistent-watches"
        )
        self.listeners: Cell[tuple[Listener, ...]] = Cell(world, f"{name}:listeners", ())
        self._next_session = Cell(world, f"{name}:sessions", 1)
        # The latest delivery to each persistent watcher: (watcher, process) pairs.
        self._deliveries: Cell[tuple[tuple[Watcher, Process], ...]] = Cell(
            world, f"{name}:deliveries", ()
        )
        self.freeze()

    def _cells(self, what: str, initial: dict[Any, Any] | None = None) -> CellMap[Any, Any]:
        return CellMap(self.world, f"{self.name}:{what}", initial, journal=self._journal)

    def add_listener(self, listener: Listener) -> None:
        """``listener(path, node)`` on every change, ``node`` None for a deletion."""
        self.listeners.set((*self.listeners.get(), listener))

    # -- sessions ------------------------------------------------------------
    def open_session(self) -> int:
        session = self._next_session.get()
        self._next_session.set(session + 1)
        self.sessions[session] = True
        return session

    def expire_session(self, session: int, *, closing: bool = False) -> list[str]:
        """Expire ``session``: its ephemeral nodes vanish (watches fire). Returns their paths.

        Watches the session set (watchers with a ``session`` attribute, as a
        ``ZkClient`` registers them) never fire from now on: a firing skips
        them (``_live``), reading the session's entry this expiry writes. With
        ``closing`` the client closes the session over its own connection, and
        the server deletes the ephemerals before it drops that connection's
        watches: the session's own watches see its ephemerals go (ZooKeeper
        3.8.0, found by the conformance test), so the entry is written after.
        """
        if session not in self.sessions:
            raise ValueError(f"unknown session {session}")
        if not closing:
            self.sessions[session] = False
        owned = self.ephemerals.pop(session, ())
        for path in owned:
            self._remove(path)
        if closing:
            self.sessions[session] = False
        return list(owned)

    def session_live(self, session: int) -> bool:
        """True while the server holds ``session`` (not expired, not closed)."""
        return bool(self.sessions.get(session, False))

    def _live(self, watcher: Watcher) -> bool:
        """The watcher's session, if it has one, has not ended: else it never fires."""
        session = getattr(watcher, "session", None)
        return session is None or self.sessions.get(session) is not False

    def _check_session(self, session: int | None) -> None:
        if session is not None and not self.session_live(session):
            raise SessionExpired(f"session {session} has expired")

    # -- reads ---------------------------------------------------------------
    def exists(self, path: str, watch: Watcher | None = None) -> bool:
        if watch is not None:
            self._add(self.data_watches, path, watch)
        return path in self.nodes

    def get(self, path: str, watch: Watcher | None = None) -> tuple[JSONValue, int]:
        """(data, version); NoNode if absent. A copy: callers cannot alias the store."""
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if watch is not None:
            self._add(self.data_watches, path, watch)
        return copy_json(node.data), node.version

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        """Child names, sorted (never in dict or directory-listing order): the node's child list."""
        names = self.child_lists.get(path)
        if names is None:
            raise NoNode(path)
        if watch is not None:
            self._add(self.child_watches, path, watch)
        return list(names)

    @staticmethod
    def _add(table: CellMap[str, tuple[Any, ...]], path: str, entry: Any) -> None:
        table[path] = (*(table.get(path) or ()), entry)

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
        self._add(self.persistent_watches, path, (watcher, recursive))

    def remove_watch(self, path: str, watcher: Watcher) -> bool:
        """Remove a watch ``add_watch`` set; False if there was none."""
        entries = self.persistent_watches.get(path) or ()
        kept = tuple((w, r) for w, r in entries if w is not watcher)
        if len(kept) == len(entries) or not self._live(watcher):
            return False
        if kept:
            self.persistent_watches[path] = kept
        else:
            self.persistent_watches.pop(path)
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
        above = self.nodes.get(parent)
        if above is None:
            raise NoNode(parent)
        if sequential:
            path = f"{path}{above.cversion:010d}"
        if path in self.nodes:
            raise NodeExists(path)
        if above.ephemeral_session is not None:
            raise NoChildrenForEphemerals(parent)
        node = Node(copy_json(data), 0, ephemeral_session)
        self.nodes[path] = node
        self.child_lists[path] = ()
        self.nodes[parent] = above.with_child()
        self.child_lists[parent] = tuple(sorted((*self.child_lists[parent], _name(path))))
        if ephemeral_session is not None:
            owned = self.ephemerals.get(ephemeral_session) or ()
            self.ephemerals[ephemeral_session] = tuple(sorted((*owned, path)))
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
        node = self._at_version(path, version)
        node = node.written(copy_json(data))
        self.nodes[path] = node
        self._notify(path, node, "changed")
        return node.version

    def delete(self, path: str, version: int = -1) -> None:
        if path == "/":  # ZooKeeper's PrepRequestProcessor refuses the root as a special path
            raise BadArguments("the root znode cannot be deleted")
        _parent(path)
        node = self._at_version(path, version)
        if self.child_lists[path]:
            raise NotEmpty(path)
        owner = node.ephemeral_session
        if owner is not None:
            self.ephemerals[owner] = tuple(p for p in self.ephemerals[owner] if p != path)
        self._remove(path)

    def _at_version(self, path: str, version: int) -> Node:
        """The node at ``path``: NoNode if absent, BadVersion unless ``version`` is -1 or matches."""
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if version >= 0 and node.version != version:
            raise BadVersion(f"{path}: expected version {version}, found {node.version}")
        return node

    def _remove(self, path: str) -> None:
        """Remove the node: its own cells, and its name from the parent's child list."""
        parent = _parent(path)
        self.nodes.pop(path)
        self.child_lists.pop(path)
        name = _name(path)
        self.child_lists[parent] = tuple(n for n in self.child_lists[parent] if n != name)
        self._notify(path, None, "deleted")
        self._children_changed(parent)

    def check(self, path: str, version: int = -1) -> None:
        """A multi-op's ``check``: NoNode if absent, BadVersion unless ``version`` is -1 or matches."""
        self._at_version(path, version)

    # -- multi-op ----------------------------------------------------------------
    def transaction(self) -> Transaction:
        return Transaction(self)

    def multi(self, ops: Sequence[TxOp], *, session: int | None = None) -> list[JSONValue]:
        """Apply ``ops`` all or nothing (ZooKeeper's ``multi``); results in op order.

        The ops run in order against the store; if one fails, every change is
        rolled back (the journal puts the cells' values back), no watch fires,
        nothing is drawn, and TransactionFailed names the op. Otherwise the
        watches fire as the ops would have fired them one by one. ``session``
        owns the ephemeral nodes it creates.
        """
        contract(not self._journal.active, "a multi-op cannot nest")
        self._journal.begin()
        results: list[JSONValue] = []
        try:
            for index, op in enumerate(ops):
                try:
                    results.append(self._apply(op, session))
                except StoreError as error:
                    self._journal.rollback()
                    raise TransactionFailed(index, op, error) from None
        finally:
            deferred = self._journal.end()
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
        if self._journal.active:
            self._journal.after.append(lambda: self._notify(path, node, kind))
            return
        for listener in self.listeners.get():
            listener(path, node)
        self._fire(self.data_watches, path, kind)
        if kind == "deleted":
            self._fire(self.child_watches, path, "deleted")
        self._fire_persistent(path, kind)

    def _children_changed(self, parent: str) -> None:
        if self._journal.active:
            self._journal.after.append(lambda: self._children_changed(parent))
            return
        self._fire(self.child_watches, parent, "children")
        self._fire_persistent(parent, "children")

    def _fire_persistent(self, path: str, kind: str) -> None:
        for watcher in self._persistent_for(path, kind):
            if self._live(watcher):
                self._send(watcher, WatchEvent(kind, path), in_order=True)

    def _persistent_for(self, path: str, kind: str) -> list[Watcher]:
        """Persistent watches on ``path``, recursive ones on it and above, nearest first (for
        ``children``: those on ``path`` alone); reads each table (an add or remove there counts)."""
        chosen: list[Watcher] = []
        at = path
        while True:
            for watcher, recursive in self.persistent_watches.get(at) or ():
                fires = (recursive and kind != "children") or (not recursive and at == path)
                if fires and not any(w is watcher for w in chosen):
                    chosen.append(watcher)
            if at == "/" or kind == "children":
                return chosen
            at = _parent(at)

    def set_watches(
        self, sent: Sequence[tuple[str, str, Watcher]], owned: Callable[[Watcher], bool]
    ) -> tuple[list[Delivery], list[tuple[str, Watcher]]]:
        """The server's answer to the one-shot watches a client sends again as it reconnects.

        ZooKeeper 3.6.3 ``DataTree.setWatches`` (1527-1566); ``sent`` holds (table,
        path, watcher), table ``data``, ``exist`` or ``child``, for watches whose
        node changed since the client's last reply. A data watch hears ``deleted``
        if its node is gone, else ``changed``; an exists watch ``created`` if its
        node is there, else it is armed again (the second list); a child watch
        ``deleted`` or ``children``. Paths go table by table, each sorted, and the
        client hands each event to its watches as ``MATERIALIZE`` says (the
        one-shot ones left on the path) and to the persistent ones it ``owned``
        there, which the server re-adds without what they missed.
        """
        tables: dict[str, dict[str, list[Watcher]]] = {t: {} for t in ("data", "exist", "child")}
        for table, path, watcher in sent:
            tables[table].setdefault(path, []).append(watcher)
        order = [(table, path) for table, paths in tables.items() for path in sorted(paths)]
        events: list[Delivery] = []
        armed: list[tuple[str, Watcher]] = []
        for table, path in order:
            kind = _caught_up(table, path in self.nodes)
            if kind is None:
                armed += [(path, watcher) for watcher in tables[table].pop(path, ())]
                continue
            reached = [w for t in MATERIALIZE[kind] for w in tables[t].pop(path, ())]
            reached += [w for w in self._persistent_for(path, kind) if owned(w)]
            events += [(watcher, WatchEvent(kind, path)) for watcher in reached]
        return events, armed

    def _fire(self, table: CellMap[str, tuple[Watcher, ...]], path: str, kind: str) -> None:
        """One-shot watches on ``path`` fire once: the entry goes (a write only when there is one)."""
        watchers = table.get(path)
        if not watchers:
            return
        table.pop(path)
        for watcher in watchers:
            if self._live(watcher):
                self._send(watcher, WatchEvent(kind, path))

    def _send(self, watcher: Watcher, event: WatchEvent, *, in_order: bool = False) -> None:
        """Deliver ``event`` after a drawn delay; ``in_order``: never before the watcher's earlier ones.

        A persistent watch sees a stream of events, and ZooKeeper delivers a
        session's notifications in the order of the changes, so its deliveries
        queue behind each other; a one-shot watch fires once and needs no queue.
        """
        delay_ms = self.world.source.choose(f"{self.name}.watch-delay", self.watch_delay_ms)
        if not in_order:
            self.world.spawn(f"{self.name}-watch", self._deliver(watcher, event, delay_ms))
            return
        latest = self._deliveries.get()
        previous = next((p for w, p in latest if w == watcher), None)  # as a dict keyed by it
        process = self.world.spawn(
            f"{self.name}-watch", self._deliver(watcher, event, delay_ms, previous)
        )
        others = tuple((w, p) for w, p in latest if w != watcher)
        self._deliveries.set((*others, (watcher, process)))

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


def _caught_up(table: str, exists: bool) -> str | None:
    """``setWatches``' event for a sent watch of ``table`` whose node changed (None: re-armed)."""
    if table == "exist":
        return "created" if exists else None
    if not exists:
        return "deleted"
    return "changed" if table == "data" else "children"


def live_watches(store: VersionedStore) -> dict[str, dict[str, list[Any]]]:
    """The watches that can still fire, per table and path; unrecorded: for tests and reports.

    ``{"data": {path: [watcher]}, "child": ..., "persistent": {path: [(watcher, recursive)]}}``:
    a watch whose session ended is left out, as the server removed it. Not a
    model's operation: it reads the store's cells without recording them.
    """
    sessions: dict[Any, bool] = store.sessions.peek()

    def live(watcher: Watcher) -> bool:
        return sessions.get(getattr(watcher, "session", None)) is not False

    tables = {"data": store.data_watches, "child": store.child_watches}
    found: dict[str, dict[str, list[Any]]] = {
        kind: {p: [w for w in ws if live(w)] for p, ws in table.peek().items()}
        for kind, table in tables.items()
    }
    found["persistent"] = {
        p: [(w, r) for w, r in ws if live(w)] for p, ws in store.persistent_watches.peek().items()
    }
    return {kind: {p: ws for p, ws in table.items() if ws} for kind, table in found.items()}


class LaggingCache(Primitive):
    """A view of the store's nodes under ``prefix`` that may be stale.

    ``auto_refresh``: each change reaches the cache after a lag drawn from
    ``lag_ms`` (never going back to an older version). Otherwise the cache
    changes only through ``refresh`` and ``invalidate_all``, and a miss loads
    the node lazily, as Brooklin's datastream cache does. Its entries are one
    cell (``<name>``): a refresh or an invalidation replaces them all.
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
        self._entries: Cell[Mapping[str, tuple[JSONValue, int]]] = Cell(
            world, name, MappingProxyType({})
        )
        self.freeze()
        if auto_refresh:
            store.add_listener(self._on_change)

    @property
    def entries(self) -> Mapping[str, tuple[JSONValue, int]]:
        """The cached (data, version) of each path, read-only (a read of the cache)."""
        return self._entries.get()

    def _put(self, path: str, value: tuple[JSONValue, int] | None) -> None:
        entries = dict(self._entries.get())
        if value is None:
            entries.pop(path, None)
        else:
            entries[path] = value
        self._entries.set(MappingProxyType(entries))

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
        current = self.entries.get(path)
        if value is None:
            if current is not None:
                self._put(path, None)
        elif current is None or current[1] < value[1]:
            self._put(path, value)

    def get(self, path: str) -> tuple[JSONValue, int] | None:
        """The cached (data, version), loading a miss from the store; None if absent there."""
        if not path.startswith(self.prefix):
            raise ValueError(f"{path} is outside {self.prefix}")
        cached = self.entries.get(path)
        if cached is None:
            try:
                cached = self.store.get(path)
            except NoNode:
                return None
            self._put(path, cached)
        return copy_json(cached[0]), cached[1]

    def refresh(self) -> None:
        """Reload every node under the prefix from the store, now (emptied if the prefix is gone)."""
        self.invalidate_all()
        entries = {}
        for name in self.store.children(self.prefix.rstrip("/")):
            path = self.prefix + name
            entries[path] = self.store.get(path)
        self._entries.set(MappingProxyType(entries))

    def invalidate_all(self) -> None:
        self._entries.set(MappingProxyType({}))
