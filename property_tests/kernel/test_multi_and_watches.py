"""The atomic multi-op and ZooKeeper 3.6+'s persistent watches, on the simulated store and a real ZooKeeper.

The multi-op properties run the same generated op lists on the simulated
store and, through kazoo's transactions, on Debian's ZooKeeper started by the
fixture on 127.0.0.1: results, the failing op and the state afterwards must
agree. If ZooKeeper cannot start, these tests fail: they never skip.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from property_tests.touch_log import TouchLog
from raceproof.sim import (
    BadVersion,
    RandomSource,
    ReplaySource,
    StoreError,
    TransactionFailed,
    TxOp,
    VersionedStore,
    WatchEvent,
    World,
    ZkClient,
)
from raceproof.zookeeper import ZooKeeperServer
from raceproof.zookeeper.kazoo_store import KazooStore
from raceproof.zookeeper.server import CONF_DIRS, ZOOKEEPER_JAR

PATHS = ("/a", "/a/b", "/a/c", "/d")
SEQUENTIAL_PREFIXES = ("/a/s-", "/a/b/s-", "/d/s-")  # kazoo strips a trailing "/"

tx_ops = st.lists(
    st.one_of(
        st.builds(
            lambda p, v: TxOp("check", p, version=v), st.sampled_from(PATHS), st.integers(-1, 2)
        ),
        st.builds(lambda p, d: TxOp("create", p, d), st.sampled_from(PATHS), st.integers(0, 9)),
        st.builds(  # named after the parent's cversion, on both stores
            lambda p, d: TxOp("create", p, d, sequential=True),
            st.sampled_from(SEQUENTIAL_PREFIXES),
            st.integers(0, 9),
        ),
        st.builds(
            lambda p, d, v: TxOp(kind="set", path=p, data=d, version=v),
            st.sampled_from(PATHS),
            st.integers(0, 9),
            st.integers(-1, 2),
        ),
        st.builds(
            lambda p, v: TxOp("delete", p, version=v), st.sampled_from(PATHS), st.integers(-1, 2)
        ),
    ),
    min_size=1,
    max_size=6,
)


def _fresh_store(seed: int = 0) -> VersionedStore:
    store = VersionedStore(World(RandomSource(seed)), watch_delay_ms=(0, 10))
    store.create("/a", 0)
    store.create("/a/b", 1)
    return store


def _state(store: VersionedStore | KazooStore) -> dict[str, tuple[object, int]]:
    """Every node under /a and /d, sequential ones included, with its data and version."""
    state: dict[str, tuple[object, int]] = {}
    pending = [path for path in ("/a", "/d") if store.exists(path)]
    while pending:
        path = pending.pop()
        state[path] = store.get(path)
        pending.extend(f"{path}/{child}" for child in store.children(path))
    return state


def _one_by_one(
    store: VersionedStore, ops: list[TxOp]
) -> tuple[list[object], int | None, type | None]:
    """The reference: the ops applied singly; (results, failing index, its error type)."""
    results: list[object] = []
    for index, op in enumerate(ops):
        try:
            results.append(store._apply(op, None))
        except StoreError as error:
            return results, index, type(error)
    return results, None, None


@given(tx_ops, st.integers(0, 2**16))
def test_multi_is_all_or_nothing(ops: list[TxOp], seed: int) -> None:
    store, reference = _fresh_store(seed), _fresh_store(seed)
    watched: list[WatchEvent] = []
    for path in PATHS:
        store.add_watch(path, watched.append)
    before = _state(store)
    expected, failing, error_type = _one_by_one(reference, ops)
    try:
        results = store.multi(ops)
    except TransactionFailed as failed:
        assert (failed.index, type(failed.error)) == (failing, error_type)
        assert _state(store) == before  # nothing applied
        assert store.world.source.record == []  # no watch fired: nothing drawn
        store.world.run_to_end()
        assert watched == []
        return
    assert failing is None and results == expected
    assert _state(store) == _state(reference)


def test_a_failed_check_rolls_back_the_writes_before_it() -> None:
    store = _fresh_store()
    tx = store.transaction().set_data("/a", "new").create("/a/c", 2).check("/a/b", 5)
    with pytest.raises(TransactionFailed) as failed:
        tx.commit()
    assert failed.value.index == 2 and isinstance(failed.value.error, BadVersion)
    assert _state(store) == {"/a": (0, 0), "/a/b": (1, 0)}
    assert store.transaction().check("/a/b", 0).set_data("/a", "new", 0).commit() == [None, 1]


def test_a_clients_multi_creates_ephemerals_of_its_session() -> None:
    world = World(ReplaySource([], strict=False))
    store = VersionedStore(world)
    client = ZkClient(world, store, "c")
    client.transaction().create("/lock", "me", ephemeral=True).create("/owner", "c").commit()
    client.close()
    assert not store.exists("/lock") and store.exists("/owner")


def _events_after(store: VersionedStore, script: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    store.add_watch("/a", lambda e: seen.append(("persistent", f"{e.kind} {e.path}")))
    store.add_watch(
        "/a", lambda e: seen.append(("recursive", f"{e.kind} {e.path}")), recursive=True
    )
    for action, path in script:
        if action == "create":
            store.create(path, 0)
        elif action == "set":
            store.set(path, 1)
        else:
            store.delete(path)
        store.world.run_to_end()
    return seen


SCRIPT = [
    ("create", "/a"),
    ("set", "/a"),
    ("create", "/a/b"),
    ("set", "/a/b"),
    ("create", "/a/b/c"),
    ("delete", "/a/b/c"),
    ("delete", "/a/b"),
    ("delete", "/a"),
]


def test_persistent_and_recursive_watches_fire_as_zookeeper_3_8_does() -> None:
    store = VersionedStore(World(ReplaySource([], strict=False)))
    seen = _events_after(store, SCRIPT)
    persistent = [event for kind, event in seen if kind == "persistent"]
    recursive = [event for kind, event in seen if kind == "recursive"]
    assert persistent == ["created /a", "changed /a", "children /a", "children /a", "deleted /a"]
    assert recursive == [
        "created /a",
        "changed /a",
        "created /a/b",
        "changed /a/b",
        "created /a/b/c",
        "deleted /a/b/c",
        "deleted /a/b",
        "deleted /a",
    ]


def test_a_removed_persistent_watch_stops_firing() -> None:
    store = VersionedStore(World(ReplaySource([], strict=False)))
    seen: list[str] = []
    store.create("/x", 0)
    store.add_watch("/x", lambda e: seen.append(e.kind))
    store.set("/x", 1)
    store.set("/x", 2)  # a persistent watch reports every change, not one
    assert store.remove_watch("/x", seen.append) is False
    watcher = store.persistent_watches["/x"][0][0]
    assert store.remove_watch("/x", watcher)
    store.set("/x", 3)
    store.world.run_to_end()
    assert seen == ["changed", "changed"]


# -- the real ZooKeeper -----------------------------------------------------------------
@pytest.fixture(scope="module")
def zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer() as server:
        yield server


def _client(hosts: str, chroot: str) -> KazooClient:
    root = KazooClient(hosts=hosts)
    root.start(timeout=30)
    root.ensure_path(chroot)
    root.stop()
    root.close()
    client = KazooClient(hosts=hosts + chroot)
    client.start(timeout=30)
    return client


@pytest.fixture(scope="module")
def real_store(zookeeper: ZooKeeperServer) -> Iterator[KazooStore]:
    client = _client(zookeeper.hosts, "/multi-test")
    try:
        yield KazooStore(client)
    finally:
        client.stop()
        client.close()


def _reset(real: KazooStore) -> None:
    for path in ("/a", "/d"):
        if real.exists(path):
            real.client.delete(path, recursive=True)
    real.create("/a", 0)
    real.create("/a/b", 1)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=tx_ops)
def test_multi_has_the_same_semantics_on_a_real_zookeeper(
    real_store: KazooStore, ops: list[TxOp]
) -> None:
    _reset(real_store)
    store = _fresh_store()
    try:
        simulated: object = store.multi(ops)
    except TransactionFailed as failed:
        simulated = (failed.index, type(failed.error))
    try:
        real: object = real_store.multi(ops)
    except TransactionFailed as failed:
        real = (failed.index, type(failed.error))
    assert real == simulated
    assert _state(real_store) == _state(store)


def test_a_real_transaction_rolls_back_and_names_the_failing_op(real_store: KazooStore) -> None:
    _reset(real_store)
    tx = real_store.transaction().set_data("/a", "new").create("/a/c", 2).check("/a/b", 5)
    with pytest.raises(TransactionFailed) as failed:
        tx.commit()
    assert failed.value.index == 2 and isinstance(failed.value.error, BadVersion)
    assert _state(real_store) == {"/a": (0, 0), "/a/b": (1, 0)}
    assert real_store.transaction().check("/a/b", 0).set_data("/a", "new", 0).create(
        "/d", 1
    ).commit() == [
        None,
        1,
        "/d",
    ]


def _footprint(world: TouchLog, operation: Any) -> dict[str, bool]:
    """What ``operation`` read (False) and wrote (True), as a step's footprint merges it."""
    world.touched.clear()
    operation()
    merged: dict[str, bool] = {}
    for resource, write in world.touched:
        merged[resource] = write or merged.get(resource, False)
    return merged


def test_every_store_operation_records_what_it_read_and_wrote_through_its_cells() -> None:
    world = TouchLog()
    store = VersionedStore(world)
    node, kids = "zk:node['{}']".format, "zk:children['{}']".format
    fires = {"zk:listeners": False, "zk:data-watches['/a']": False}
    above = {"zk:persistent-watches['/a']": False, "zk:persistent-watches['/']": False}
    parent = {"zk:child-watches['/']": False}  # the parent's child watches fire
    assert _footprint(world, lambda: store.create("/a", 0)) == {
        node("/"): True,  # its cversion
        node("/a"): True,
        kids("/a"): True,
        kids("/"): True,
        **fires,
        **above,
        **parent,
    }
    assert _footprint(world, lambda: store.get("/a")) == {node("/a"): False}
    assert _footprint(world, lambda: store.children("/")) == {kids("/"): False}
    tx = store.transaction().check("/a", 0).set_data("/a", 1)
    assert _footprint(world, tx.commit) == {node("/a"): True, **fires, **above}
    assert _footprint(world, lambda: store.delete("/a")) == {
        node("/a"): True,
        kids("/a"): True,
        kids("/"): True,
        **fires,
        "zk:child-watches['/a']": False,
        **above,
        **parent,
    }


# -- persistent watches on the real ZooKeeper, through its own command line ----------------
EVENT_KINDS = {
    "NodeCreated": "created",
    "NodeDataChanged": "changed",
    "NodeDeleted": "deleted",
    "NodeChildrenChanged": "children",
}


class _ZkCli:
    """ZooKeeper's own ``ZooKeeperMain`` (kazoo 2.11 has no ``addWatch``): commands in, events out."""

    def __init__(self, hosts: str, chroot: str) -> None:
        conf = next((d for d in CONF_DIRS if d.exists()), None)
        classpath = f"{conf}:{ZOOKEEPER_JAR}" if conf else str(ZOOKEEPER_JAR)
        command = [
            "java",
            "-cp",
            classpath,
            "org.apache.zookeeper.ZooKeeperMain",
            "-server",
            hosts + chroot,
        ]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.buffer = b""

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def read_until(self, marker: str, timeout_s: float = 60.0) -> str:
        """The output up to and including ``marker`` (fails after ``timeout_s`` without it)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while marker.encode() not in self.buffer:
            left_s = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left_s, 0))
            assert ready, (
                f"ZooKeeperMain printed no {marker!r} in {timeout_s}s: {self.buffer[-500:]!r}"
            )
            chunk = os.read(fd, 65536)
            assert chunk, f"ZooKeeperMain exited: {self.buffer[-2000:]!r}"
            self.buffer += chunk
        end = self.buffer.index(marker.encode()) + len(marker)
        text, self.buffer = self.buffer[:end].decode(errors="replace"), self.buffer[end:]
        return text

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)


def _real_events(zookeeper: ZooKeeperServer, mode: str, chroot: str) -> list[str]:
    writer = _client(zookeeper.hosts, chroot)
    cli = _ZkCli(zookeeper.hosts, chroot)
    try:
        cli.send(f"addWatch -m {mode} /a")
        cli.send("ls /")  # answered after addWatch: the watch is in place
        cli.read_until("[]")
        for action, path in SCRIPT:
            if action == "create":
                writer.create(path, b"0")
            elif action == "set":
                writer.set(path, b"1")
            else:
                writer.delete(path)
        writer.create("/a", b"end")  # a last event both modes report: the end of the script
        text = cli.read_until("type:NodeCreated path:/a\n", timeout_s=60)
        text += cli.read_until("type:NodeCreated path:/a\n", timeout_s=60)
    finally:
        cli.close()
        writer.stop()
        writer.close()
    # ``type:None`` lines are the session's state changes (the CLI's own connection event
    # is printed by its event thread, so it can land after the ``ls /`` answer): not znode events.
    found = [(k, p) for k, p in re.findall(r"type:(\w+) path:(\S+)", text) if k != "None"]
    return [f"{EVENT_KINDS[kind]} {path}" for kind, path in found][:-1]


@pytest.mark.parametrize("recursive", [False, True])
def test_persistent_watches_fire_as_on_a_real_zookeeper(
    zookeeper: ZooKeeperServer, recursive: bool
) -> None:
    mode = "PERSISTENT_RECURSIVE" if recursive else "PERSISTENT"
    real = _real_events(zookeeper, mode, f"/watch-{mode.lower()}")
    simulated = _events_after(VersionedStore(World(ReplaySource([], strict=False))), SCRIPT)
    kind = "recursive" if recursive else "persistent"
    assert real == [event for k, event in simulated if k == kind]


@given(st.integers(0, 2**32), st.lists(st.sampled_from(["/a", "/a/b", "/a/c"]), max_size=12))
def test_a_persistent_watch_sees_changes_in_their_order_whatever_the_delays(
    seed: int, writes: list[str]
) -> None:
    store = VersionedStore(World(RandomSource(seed)), watch_delay_ms=(0, 5, 50))
    seen: list[str] = []
    store.add_watch("/a", lambda e: seen.append(f"{e.kind} {e.path}"), recursive=True)
    expected = []
    for path in ["/a", *writes]:
        if store.exists(path):
            store.set(path, 1)
            expected.append(f"changed {path}")
        else:
            store.create(path, 0)
            expected.append(f"created {path}")
    store.world.run_to_end()
    assert seen == expected
