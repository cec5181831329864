"""A versioned store in the manner of ZooKeeper, and a cache that lags behind it.

The store is what a model's ZooKeeper is: znodes with data and a version,
conditional set and delete, ephemeral nodes bound to sessions, session expiry,
one-shot data and child watches. Operations are atomic and instantaneous; a
model adds the network round trip with ``world.sleep`` where the real client
would wait. Watch notifications arrive after a delay drawn from the run's
choice source, so "the watch fired late" is a schedule like any other.

The cache is a client-side view that learns about changes late: either after
a drawn lag (``auto_refresh``) or only when the model refreshes it explicitly
(Brooklin's datastream cache).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from raceproof.sim.history import JSONValue
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


@dataclass
class Node:
    data: JSONValue
    version: int
    ephemeral_session: int | None


@dataclass(frozen=True)
class WatchEvent:
    kind: str  # "changed", "deleted", "created", "children"
    path: str


Watcher = Callable[[WatchEvent], None]
Listener = Callable[[str, "Node | None"], None]


def _parent(path: str) -> str:
    assert path.startswith("/") and (path == "/" or not path.endswith("/")), f"bad path {path!r}"
    head = path.rsplit("/", 1)[0]
    return head or "/"


class VersionedStore:
    """ZooKeeper-like znodes: ``create``, ``get``, ``set``/``delete`` with expected versions."""

    def __init__(
        self, world: World, name: str = "zk", watch_delay_ms: Sequence[int] = (0,)
    ) -> None:
        assert watch_delay_ms, "watch_delay_ms needs at least one option"
        self.world = world
        self.name = name
        self.watch_delay_ms = tuple(watch_delay_ms)
        self.nodes: dict[str, Node] = {"/": Node(None, 0, None)}
        self.data_watches: dict[str, list[Watcher]] = {}
        self.child_watches: dict[str, list[Watcher]] = {}
        self.listeners: list[Listener] = []
        self.sessions: dict[int, bool] = {}
        self._next_session = 1
        self._sequence = 0

    # -- sessions ------------------------------------------------------------
    def open_session(self) -> int:
        session = self._next_session
        self._next_session += 1
        self.sessions[session] = True
        return session

    def expire_session(self, session: int) -> list[str]:
        """Expire ``session``: its ephemeral nodes vanish (watches fire). Returns their paths."""
        assert session in self.sessions, f"unknown session {session}"
        self.sessions[session] = False
        owned = sorted(p for p, n in self.nodes.items() if n.ephemeral_session == session)
        for path in owned:
            self._remove(path)
        return owned

    def _check_session(self, session: int | None) -> None:
        if session is not None and not self.sessions.get(session, False):
            raise SessionExpired(f"session {session} has expired")

    # -- reads ---------------------------------------------------------------
    def exists(self, path: str, watch: Watcher | None = None) -> bool:
        if watch is not None:
            self.data_watches.setdefault(path, []).append(watch)
        return path in self.nodes

    def get(self, path: str, watch: Watcher | None = None) -> tuple[JSONValue, int]:
        """(data, version); NoNode if absent. A copy: callers cannot alias the store."""
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if watch is not None:
            self.data_watches.setdefault(path, []).append(watch)
        return copy.deepcopy(node.data), node.version

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        """Child names, sorted (never in dict or directory-listing order)."""
        if path not in self.nodes:
            raise NoNode(path)
        if watch is not None:
            self.child_watches.setdefault(path, []).append(watch)
        prefix = path.rstrip("/") + "/"
        return sorted(
            p[len(prefix) :]
            for p in self.nodes
            if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    def watch(self, path: str, callback: Watcher) -> None:
        """A persistent watch on ``path`` (kazoo's DataWatch): re-armed each time it fires.

        Like ZooKeeper's one-shot watches re-registered by the client, changes
        between a firing and its delivery are not reported separately.
        """

        def fire(event: WatchEvent) -> None:
            self.exists(path, watch=fire)
            callback(event)

        self.exists(path, watch=fire)

    # -- writes --------------------------------------------------------------
    def create(
        self,
        path: str,
        data: JSONValue = None,
        *,
        ephemeral_session: int | None = None,
        sequential: bool = False,
    ) -> str:
        self._check_session(ephemeral_session)
        if sequential:
            path = f"{path}{self._sequence:010d}"
            self._sequence += 1
        parent = _parent(path)
        if parent not in self.nodes:
            raise NoNode(parent)
        if path in self.nodes:
            raise NodeExists(path)
        node = Node(copy.deepcopy(data), 0, ephemeral_session)
        self.nodes[path] = node
        self._notify(path, node, "created")
        self._fire(self.child_watches, parent, "children")
        return path

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing parents with no data."""
        parts = [p for p in path.split("/") if p]
        for depth in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:depth])
            if sub not in self.nodes:
                self.create(sub)

    def set(self, path: str, data: JSONValue, version: int = -1) -> int:
        """Overwrite the node; with ``version`` >= 0 only if that is its version. New version."""
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if version >= 0 and node.version != version:
            raise BadVersion(f"{path}: expected version {version}, found {node.version}")
        node.data = copy.deepcopy(data)
        node.version += 1
        self._notify(path, node, "changed")
        return node.version

    def delete(self, path: str, version: int = -1) -> None:
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
        self._fire(self.child_watches, _parent(path), "children")

    # -- notification ----------------------------------------------------------
    def _notify(self, path: str, node: Node | None, kind: str) -> None:
        for listener in list(self.listeners):
            listener(path, node)
        self._fire(self.data_watches, path, kind)
        if kind == "deleted":
            self._fire(self.child_watches, path, "deleted")

    def _fire(self, table: dict[str, list[Watcher]], path: str, kind: str) -> None:
        watchers = table.pop(path, [])
        for watcher in watchers:
            delay_ms = self.world.source.choose(f"{self.name}.watch-delay", self.watch_delay_ms)
            self.world.spawn(
                f"{self.name}-watch", self._deliver(watcher, WatchEvent(kind, path), delay_ms)
            )

    def _deliver(self, watcher: Watcher, event: WatchEvent, delay_ms: int) -> ProcessGenerator:
        yield self.world.sleep(delay_ms)
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
        assert lag_ms, "lag_ms needs at least one option"
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
        value = None if node is None else (copy.deepcopy(node.data), node.version)
        lag_ms = self.world.source.choose(f"{self.name}.lag", self.lag_ms)
        self.world.spawn(f"{self.name}-refresh", self._apply_later(path, value, lag_ms))

    def _apply_later(
        self, path: str, value: tuple[JSONValue, int] | None, lag_ms: int
    ) -> ProcessGenerator:
        yield self.world.sleep(lag_ms)
        if value is None:
            self.entries.pop(path, None)
            return
        current = self.entries.get(path)
        if current is None or current[1] < value[1]:
            self.entries[path] = value

    def get(self, path: str) -> tuple[JSONValue, int] | None:
        """The cached (data, version), loading a miss from the store; None if absent there."""
        assert path.startswith(self.prefix), f"{path} is outside {self.prefix}"
        cached = self.entries.get(path)
        if cached is None:
            try:
                cached = self.store.get(path)
            except NoNode:
                return None
            self.entries[path] = cached
        return copy.deepcopy(cached[0]), cached[1]

    def refresh(self) -> None:
        """Reload every node under the prefix from the store, now."""
        self.entries = {}
        for name in self.store.children(self.prefix.rstrip("/")):
            path = self.prefix + name
            self.entries[path] = self.store.get(path)

    def invalidate_all(self) -> None:
        self.entries = {}
