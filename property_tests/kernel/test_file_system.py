"""The simulated file system and the runtime port: POSIX shapes, mtimes, crashes, footprints.

Models that keep state directories (Kafka Streams' task folders, Samza's
checkpoints) go through ``FileSystem`` and ``SimRuntime``; the reduction trusts
the reads and writes they declare, and a crash must keep only synced content.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from property_tests.touch_log import TouchLog, fifo_world
from raceproof.sim import (
    DiskWriteError,
    Executor,
    FileSystem,
    FsError,
    SimRuntime,
)
from raceproof.sim.fs import _parent


def test_the_sim_runtime_is_the_world_behind_the_port() -> None:
    world = fifo_world([1])
    rt = SimRuntime(world)
    seen: list[Any] = []

    def actor() -> Generator[Any, Any, None]:
        assert world.active_process.actor == "actor"  # type: ignore[union-attr]
        yield rt.sleep(5)
        seen.append(rt.now_ms())
        seen.append(rt.choose("pick", ["x", "y"]))
        rt.log("actor", "did", what=1)
        rt.checkpoint("actor", "mark.write", entity="d")
        queue = rt.queue("q", dedupe=True)
        assert queue.put(1) and not queue.put(1) and len(queue) == 1 and queue.name == "q"
        plain = rt.queue("p")
        assert plain.put(1) and plain.put(1) and len(plain) == 2  # no dedupe unless asked
        pool = rt.executor("pool", 2)
        assert isinstance(pool, Executor) and pool.workers == 2 and pool.name == "pool"
        assert pool.world is world
        rt.finish()

    rt.spawn("actor", actor())
    world.run()
    assert seen == [5, "y"]
    assert [(c.label, c.value) for c in world.source.record] == [("pick", 1)]
    ops = [
        (op.actor, op.kind, op.fields) for op in world.history if op.kind in ("did", "checkpoint")
    ]
    assert ops == [
        ("actor", "did", {"what": 1}),
        ("actor", "checkpoint", {"point": "mark.write", "entity": "d"}),
    ]
    assert world.finished is not None


def test_the_file_system_keeps_posix_shapes_and_declares_reads_and_writes() -> None:
    world = TouchLog()
    seen = world.touched
    fs = FileSystem(world, "disk")
    assert fs.name == "disk" and not fs.fail_writes and fs.dirs["/"].generation == 0
    assert fs.mtime_ms("/") == 0 and FileSystem(world).name == "fs"
    assert (_parent("/a"), _parent("/a/b")) == ("/", "/a")
    for bad in ("/", "/a/", "a", "a/b"):
        with pytest.raises(ValueError, match=r"^bad path"):
            _parent(bad)
    assert fs.mkdir("/a/b") and not fs.mkdir("/a/b")
    assert (fs.generation("/a"), fs.generation("/a/b"), fs.generation("/x")) == (1, 2, None)
    with pytest.raises(FsError, match=r"^no such directory /q$"):
        fs.mkdir("/q/r", parents=False)
    fs.mkdir("/ab")
    fs.write("/a/b/f", 1)
    fs.write("/a/g", 2, sync=True)
    assert fs.listdir("/a") == ["b", "g"] and fs.listdir("/") == ["a", "ab"]
    assert fs.listdir("/a/b") == ["f"]
    with pytest.raises(FsError, match=r"^no such directory /nope$"):
        fs.listdir("/nope")
    assert fs.exists("/a") and fs.exists("/a/g") and not fs.exists("/a/h") and fs.isdir("/a/b")
    assert not fs.isdir("/a/g")
    with pytest.raises(FsError, match=r"^no such file /a/h$"):
        fs.read("/a/h")
    with pytest.raises(FsError, match=r"^no such file or directory /a/h$"):
        fs.mtime_ms("/a/h")
    with pytest.raises(FsError, match=r"^no such directory /z$"):
        fs.write("/z/f", 1)
    assert {write for _, write in seen} == {True, False}
    assert all(key.startswith("disk:") for key, _ in seen)  # every entry is one of its cells
    before = len(seen)
    for look in (fs.read, fs.exists, fs.isdir, fs.listdir, fs.mtime_ms, fs.generation):
        look("/a/g" if look == fs.read else "/a")
    a, a_file = ("disk:dir['/a']", False), ("disk:file['/a']", False)
    listing = ("disk:entries['/a']", False)
    assert seen[before:] == [("disk:file['/a/g']", False), a_file, a, a, a, listing, a, a]
    before = len(seen)
    fs.remove("/a/g")  # the file, the parent's entries and its mtime
    assert {key for key, write in seen[before:] if write} == {
        "disk:file['/a/g']",
        "disk:entries['/a']",
        "disk:dir['/a']",
    }
    before = len(seen)
    fs.rmtree("/a")  # everything below it, and the root's entries and mtime
    assert {key for key, write in seen[before:] if write} == {
        "disk:file['/a/b/f']",
        "disk:dir['/a/b']",
        "disk:entries['/a/b']",
        "disk:dir['/a']",
        "disk:entries['/a']",
        "disk:entries['/']",
        "disk:dir['/']",
    }
    assert fs.listdir("/") == ["ab"] and not fs.exists("/a/b/f")
    fs.mkdir("/dX/eX")  # a name ending in the characters a mutant might strip
    fs.mkdir("/d")
    assert fs.listdir("/dX") == ["eX"] and fs.listdir("/d") == []
    fs.rmtree("/dX")
    assert fs.isdir("/d") and not fs.isdir("/dX/eX")
    with pytest.raises(FsError, match=r"^no such directory /a$"):
        fs.rmtree("/a")


def test_mtimes_move_with_entries_and_a_crash_keeps_only_synced_content() -> None:
    world = fifo_world()
    fs = FileSystem(world)
    times: dict[str, Any] = {}

    def actor() -> Generator[Any, Any, None]:
        fs.mkdir("/d")
        yield world.sleep(10)
        fs.write("/d/f", "v1")
        times["new file"] = (fs.mtime_ms("/d"), fs.mtime_ms("/d/f"))
        yield world.sleep(10)
        fs.write("/d/f", "v2", sync=True)
        times["rewrite"] = (fs.mtime_ms("/d"), fs.mtime_ms("/d/f"))
        fs.write("/d/f", "v3")
        fs.write("/d/g", "never synced")
        yield world.sleep(10)
        fs.mkdir("/d/sub")
        times["subdir"] = (fs.mtime_ms("/d"), fs.mtime_ms("/d/sub"))
        yield world.sleep(10)
        fs.remove("/d/g")
        times["remove"] = fs.mtime_ms("/d")
        fs.write("/d/g", "again")
        yield world.sleep(10)
        fs.rmtree("/d/sub")
        times["rmtree"] = fs.mtime_ms("/d")
        fs.crash()

    world.spawn("actor", actor())
    world.run()
    assert times == {
        "new file": (10, 10),
        "rewrite": (10, 20),
        "subdir": (30, 30),
        "remove": 40,
        "rmtree": 50,
    }
    assert fs.read("/d/f") == "v2" and not fs.exists("/d/g")


def test_an_injected_write_failure_is_drawn_logged_and_raised() -> None:
    world = fifo_world([1])
    fs = FileSystem(world, "disk", fail_writes=True)
    fs.mkdir("/d")
    with pytest.raises(DiskWriteError):
        fs.write("/d/f", 1)
    assert not fs.exists("/d/f")
    assert [(c.label, c.value) for c in world.source.record] == [("disk.write-fails", 1)]
    assert [(op.actor, op.kind, op.fields) for op in world.history] == [
        ("disk", "fault.disk-write", {"path": "/d/f"})
    ]
    fs.write("/d/f", 2)  # the replay is exhausted: the boring choice, no failure
    assert fs.read("/d/f") == 2


def test_the_runtime_names_the_models_own_state_in_the_footprint() -> None:
    world = TouchLog()
    runtime = SimRuntime(world)
    runtime.touch("ledger")
    runtime.touch("ledger", write=False)
    assert world.touched == [("ledger", True), ("ledger", False)]
    world.untracked_primitive("socket")
    world.untracked_primitive("pipe")
    assert world.untracked == ["socket", "pipe"]
