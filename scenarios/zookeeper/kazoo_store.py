"""The model's ZooKeeper port on a real ZooKeeper, through kazoo.

Same methods and the same errors as the simulated ``VersionedStore``: data is
JSON, ``set`` with a version is ZooKeeper's conditional ``setData`` and raises
the kernel's ``BadVersion``, children come back sorted, and ``watch`` is
kazoo's persistent ``DataWatch`` (its first, immediate call is skipped, as the
simulated watch reports only changes).
"""

from __future__ import annotations

import json
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from raceproof.sim import BadVersion, NodeExists, NoNode
from raceproof.sim.history import JSONValue
from raceproof.sim.store import Watcher, WatchEvent


class KazooStore:
    def __init__(self, client: KazooClient) -> None:
        self.client = client

    def get(self, path: str) -> tuple[JSONValue, int]:
        try:
            raw, stat = self.client.get(path)
        except NoNodeError:
            raise NoNode(path) from None
        return (json.loads(raw) if raw else None), int(stat.version)

    def set(self, path: str, data: JSONValue, version: int = -1) -> int:
        try:
            stat = self.client.set(path, json.dumps(data).encode(), version=version)
        except BadVersionError:
            raise BadVersion(f"{path}: expected version {version}") from None
        except NoNodeError:
            raise NoNode(path) from None
        return int(stat.version)

    def create(self, path: str, data: JSONValue = None) -> str:
        try:
            return str(self.client.create(path, json.dumps(data).encode()))
        except NodeExistsError:
            raise NodeExists(path) from None
        except NoNodeError:
            raise NoNode(path) from None

    def delete(self, path: str, version: int = -1) -> None:
        try:
            self.client.delete(path, version=version)
        except NoNodeError:
            raise NoNode(path) from None
        except BadVersionError:
            raise BadVersion(f"{path}: expected version {version}") from None

    def exists(self, path: str) -> bool:
        return self.client.exists(path) is not None

    def children(self, path: str) -> list[str]:
        try:
            return sorted(self.client.get_children(path))
        except NoNodeError:
            raise NoNode(path) from None

    def ensure_path(self, path: str) -> None:
        self.client.ensure_path(path)

    def watch(self, path: str, callback: Watcher) -> None:
        first = [True]

        def on_change(data: Any, stat: Any, event: Any = None) -> None:
            if first[0]:
                first[0] = False
                return
            callback(WatchEvent("changed" if stat is not None else "deleted", path))

        self.client.DataWatch(path, on_change)
