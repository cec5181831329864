"""The ZooKeeper half of the operation table: every public operation of the store, its clients,
its transactions and its lagging cache, as one step of a generated pair (issue 44 item 2).

Each entry is ``"Class.member": (aim, apply)``: ``aim`` says what the operation is
aimed at (``"path"``: a znode; ``"session"``: a client and its session), which
decides how ``soundness_pairs.py`` relates it to the other side of its pair;
``apply(objects, me, target)`` runs it as actor ``me`` and returns what the actor
saw (logged, so the order shows), an event to wait on, or a generator to run.
A target's ``variant`` picks the call's variant: a watch set or not, a
recursive watch or not, an ephemeral create, a version that matches, the long
pause. ``soundness_ops.py`` merges this table with the others'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from property_tests.soundness_objects import PAUSES_MS, Objects, Target
from raceproof.sim.store import TxOp, WatchEvent

Apply = Callable[[Objects, int, Target], Any]
Entry = tuple[str, Apply]


def _watch(o: Objects, me: int, t: Target) -> Callable[[WatchEvent], None] | None:
    """A one-shot watch of actor ``me`` when the target's variant asks for one."""
    if not t.variant:
        return None
    world = o.world

    def notified(event: WatchEvent) -> None:
        world.log(f"o{me}", "watch", path=event.path, event=event.kind)

    return notified


def _store_listener(o: Objects, me: int) -> Callable[[str, Any], None]:
    """A store listener of actor ``me``: it logs each change it hears, so the order shows."""
    world = o.world

    def heard(path: str, node: Any) -> None:
        world.log(f"o{me}", "listener", path=path, gone=node is None)

    return heard


def _version(t: Target) -> int:
    return 0 if t.variant else -1  # variant 1: the node's first version, expected


def _child(t: Target) -> str:
    return f"{t.path}/n"  # a sequential create's prefix under the target


# -- the store (a model's own server-side calls: no session unless named) ----------------------
STORE: dict[str, Entry] = {
    "VersionedStore.open_session": ("session", lambda o, me, t: o.store.open_session()),
    "VersionedStore.expire_session": (
        "session",
        lambda o, me, t: o.store.expire_session(o.clients[t.client].session),
    ),
    "VersionedStore.session_live": (
        "session",
        lambda o, me, t: o.store.session_live(o.clients[t.client].session),
    ),
    "VersionedStore.add_listener": (
        "path",
        lambda o, me, t: o.store.add_listener(_store_listener(o, me)),
    ),
    "VersionedStore.exists": ("path", lambda o, me, t: o.store.exists(t.path, _watch(o, me, t))),
    "VersionedStore.get": ("path", lambda o, me, t: o.store.get(t.path, _watch(o, me, t))),
    "VersionedStore.children": (
        "path",
        lambda o, me, t: o.store.children(t.path, _watch(o, me, t)),
    ),
    "VersionedStore.watch": ("path", lambda o, me, t: o.store.watch(t.path, o.store_watchers[me])),
    "VersionedStore.add_watch": (
        "path",
        lambda o, me, t: o.store.add_watch(t.path, o.store_watchers[me], recursive=bool(t.variant)),
    ),
    "VersionedStore.remove_watch": (
        "path",
        lambda o, me, t: o.store.remove_watch(t.path, o.store_watchers[me]),
    ),
    "VersionedStore.create": (
        "path",
        lambda o, me, t: o.store.create(
            t.path,
            f"a{me}",
            ephemeral_session=o.clients[t.client].session if t.variant else None,
        ),
    ),
    "VersionedStore.set_watches": (  # a one-shot watch sent again on reconnection: its answer
        "path",
        lambda o, me, t: [
            (event.kind, event.path)
            for _, event in o.store.set_watches(
                [("exist" if t.variant else "data", t.path, o.store_watchers[me])],
                lambda watcher: True,
            )[0]
        ],
    ),
    "VersionedStore.ensure_path": ("path", lambda o, me, t: o.store.ensure_path(t.path)),
    "VersionedStore.set": ("path", lambda o, me, t: o.store.set(t.path, f"a{me}", _version(t))),
    "VersionedStore.delete": ("path", lambda o, me, t: o.store.delete(t.path, _version(t))),
    "VersionedStore.check": ("path", lambda o, me, t: o.store.check(t.path, _version(t))),
    "VersionedStore.transaction": (
        "path",
        lambda o, me, t: o.store.transaction().set_data(t.path, f"a{me}").commit(),
    ),
    "VersionedStore.multi": (
        "path",
        lambda o, me, t: o.store.multi(
            [_tx_op("check", t), _tx_op("set", t, f"a{me}")],
            session=o.clients[t.client].session if t.variant else None,
        ),
    ),
}


def _tx_op(kind: str, t: Target, data: Any = None) -> TxOp:
    return TxOp(kind, t.path, data)


# -- a transaction, built op by op (each builder committed as a one- or two-op multi) -----------
TRANSACTION: dict[str, Entry] = {
    "Transaction.check": (
        "path",
        lambda o, me, t: o.clients[me].transaction().check(t.path, 0).commit(),
    ),
    "Transaction.create": (
        "path",
        lambda o, me, t: (
            o.clients[me].transaction().create(t.path, f"a{me}", ephemeral=bool(t.variant)).commit()
        ),
    ),
    "Transaction.set_data": (
        "path",
        lambda o, me, t: o.clients[me].transaction().set_data(t.path, f"a{me}").commit(),
    ),
    "Transaction.delete": (
        "path",
        lambda o, me, t: o.clients[me].transaction().delete(t.path).commit(),
    ),
    "Transaction.commit": (
        "path",
        lambda o, me, t: (
            o.store.transaction()
            .create(_child(t), f"a{me}", sequential=True)
            .delete(t.path)
            .commit()
        ),
    ),
}


def _request(o: Objects, me: int, t: Target) -> Any:
    client = o.clients[t.client]
    return client.request(lambda: client.set(t.path, f"a{me}"))


def _retrying(o: Objects, me: int, t: Target) -> Any:
    client = o.clients[t.client]
    return client.retrying(0, lambda: client.get(t.path))


def _listener(o: Objects, me: int, t: Target) -> None:
    world = o.world
    o.clients[t.client].add_listener(lambda e: world.log(f"l{me}", "session", state=e.state))


# -- a session-bound client (``t.client``: whose session) -----------------------------------
CLIENT: dict[str, Entry] = {
    "ZkClient.connected": ("session", lambda o, me, t: o.clients[t.client].connected),
    "ZkClient.live": ("session", lambda o, me, t: o.clients[t.client].live),
    "ZkClient.state": ("session", lambda o, me, t: o.clients[t.client].state),
    "ZkClient.session": ("session", lambda o, me, t: o.clients[t.client].session),
    "ZkClient.listeners": ("session", lambda o, me, t: len(o.clients[t.client].listeners)),
    "ZkClient.add_listener": ("session", _listener),
    "ZkClient.disconnect": ("session", lambda o, me, t: o.clients[t.client].disconnect()),
    "ZkClient.reconnect": ("session", lambda o, me, t: o.clients[t.client].reconnect()),
    "ZkClient.pause": (
        "session",
        lambda o, me, t: o.clients[t.client].pause(PAUSES_MS[t.variant]),
    ),
    "ZkClient.lose_connection": (
        "session",
        lambda o, me, t: o.clients[t.client].lose_connection(PAUSES_MS[t.variant]),
    ),
    "ZkClient.lose_connection_after_next_send": (
        "session",
        lambda o, me, t: o.clients[t.client].lose_connection_after_next_send(PAUSES_MS[t.variant]),
    ),
    "ZkClient.until_connected": ("session", lambda o, me, t: o.clients[t.client].until_connected()),
    "ZkClient.retrying": ("path", _retrying),
    "ZkClient.expire": ("session", lambda o, me, t: o.clients[t.client].expire()),
    "ZkClient.close": ("session", lambda o, me, t: o.clients[t.client].close()),
    "ZkClient.renew": ("session", lambda o, me, t: o.clients[t.client].renew()),
    "ZkClient.request": ("path", _request),
    "ZkClient.exists": (
        "path",
        lambda o, me, t: o.clients[t.client].exists(t.path, _watch(o, me, t)),
    ),
    "ZkClient.get": ("path", lambda o, me, t: o.clients[t.client].get(t.path, _watch(o, me, t))),
    "ZkClient.children": (
        "path",
        lambda o, me, t: o.clients[t.client].children(t.path, _watch(o, me, t)),
    ),
    "ZkClient.watch": (
        "path",
        lambda o, me, t: o.clients[t.client].watch(t.path, o.client_watchers[me]),
    ),
    "ZkClient.ensure_path": ("path", lambda o, me, t: o.clients[t.client].ensure_path(t.path)),
    "ZkClient.add_watch": (
        "path",
        lambda o, me, t: o.clients[t.client].add_watch(
            t.path, o.client_watchers[me], recursive=bool(t.variant)
        ),
    ),
    "ZkClient.remove_watch": (
        "path",
        lambda o, me, t: o.clients[t.client].remove_watch(t.path, o.client_watchers[me]),
    ),
    "ZkClient.create": (
        "path",
        lambda o, me, t: o.clients[t.client].create(t.path, f"a{me}", ephemeral=bool(t.variant)),
    ),
    "ZkClient.set": (
        "path",
        lambda o, me, t: o.clients[t.client].set(t.path, f"a{me}", _version(t)),
    ),
    "ZkClient.delete": ("path", lambda o, me, t: o.clients[t.client].delete(t.path, _version(t))),
    "ZkClient.check": ("path", lambda o, me, t: o.clients[t.client].check(t.path, _version(t))),
    "ZkClient.multi": (
        "path",
        lambda o, me, t: o.clients[t.client].multi(
            [_tx_op("check", t), _tx_op("set", t, f"a{me}")]
        ),
    ),
    "ZkClient.transaction": (
        "path",
        lambda o, me, t: (
            o.clients[t.client]
            .transaction()
            .create(_child(t), f"a{me}", ephemeral=True, sequential=True)
            .commit()
        ),
    ),
}


def _cached(o: Objects, t: Target) -> Any:
    path = t.path if t.path != "/a" else "/a/b"  # the cache holds what is under /a
    return o.cache.get(path)


CACHE: dict[str, Entry] = {
    "LaggingCache.get": ("path", lambda o, me, t: _cached(o, t)),
    "LaggingCache.entries": ("path", lambda o, me, t: sorted(o.cache.entries)),
    "LaggingCache.refresh": ("path", lambda o, me, t: o.cache.refresh()),
    "LaggingCache.invalidate_all": ("path", lambda o, me, t: o.cache.invalidate_all()),
}

ZOOKEEPER: dict[str, Entry] = {**STORE, **TRANSACTION, **CLIENT, **CACHE}
