"""The model's ZooKeeper port on a real ZooKeeper, through kazoo.

Same methods and the same errors as the simulated ``VersionedStore``: data is
JSON, ``set`` with a version is ZooKeeper's conditional ``setData`` and raises
the kernel's ``BadVersion``, children come back sorted, and ``watch`` is
kazoo's persistent ``DataWatch`` (its first, immediate call is skipped, as the
simulated watch reports only changes). ``multi`` is kazoo's transaction
(ZooKeeper's ``multi``), all or nothing, and fails with the kernel's
``TransactionFailed`` naming the op that failed, as the simulated store does.

ZooKeeper 3.6+'s ``addWatch`` (persistent and recursive watches) has no
kazoo API as of kazoo 2.11 (python-zk/kazoo pull request #715 is open), so
``add_watch`` exists only on the simulated store.
"""

from __future__ import annotations

import json
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)

from raceproof.sim import BadVersion, NodeExists, NoNode
from raceproof.sim.history import JSONValue
from raceproof.sim.store import (
    BadArguments,
    NoChildrenForEphemerals,
    NotEmpty,
    StoreError,
    Transaction,
    TransactionFailed,
    TxOp,
    Watcher,
    WatchEvent,
)

# kazoo's errors as the kernel's (also the conformance test's real sessions)
ERRORS: dict[type[Exception], type[StoreError]] = {
    NoNodeError: NoNode,
    NodeExistsError: NodeExists,
    BadVersionError: BadVersion,
    NotEmptyError: NotEmpty,
    BadArgumentsError: BadArguments,
    NoChildrenForEphemeralsError: NoChildrenForEphemerals,
}


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

    def transaction(self) -> Transaction:
        return Transaction(self)

    def multi(self, ops: list[TxOp] | tuple[TxOp, ...]) -> list[JSONValue]:
        """ZooKeeper's ``multi`` through a kazoo transaction: all or nothing.

        Results as the simulated store gives them: the created path, the new
        version of a set, None for a check or a delete. On failure kazoo
        returns one result per op, the failing op's error among rolled-back
        ones; it is raised as ``TransactionFailed`` with the kernel's error.
        """
        transaction = self.client.transaction()
        for op in ops:
            if op.kind == "check":
                transaction.check(op.path, op.version)
            elif op.kind == "create":
                transaction.create(
                    op.path,
                    json.dumps(op.data).encode(),
                    ephemeral=op.ephemeral,
                    sequence=op.sequential,
                )
            elif op.kind == "set":
                transaction.set_data(op.path, json.dumps(op.data).encode(), op.version)
            else:
                transaction.delete(op.path, op.version)
        results = transaction.commit()
        for index, (op, result) in enumerate(zip(ops, results, strict=True)):
            if isinstance(result, Exception) and not isinstance(
                result, RolledBackError | RuntimeInconsistency
            ):
                error = ERRORS.get(type(result), StoreError)(op.path)
                raise TransactionFailed(index, op, error)
        if any(isinstance(result, Exception) for result in results):
            raise StoreError(f"the transaction was rolled back without a failing op: {results!r}")
        converted: list[JSONValue] = []
        for op, result in zip(ops, results, strict=True):
            if op.kind == "create":
                converted.append(str(result))
            elif op.kind == "set":
                converted.append(int(result.version))
            else:
                converted.append(None)
        return converted
