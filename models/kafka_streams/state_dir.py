"""Kafka Streams 2.1.1's ``StateDirectory``, ``OffsetCheckpoint`` and state-directory cleaner.

Split from ``model.py`` because these are the file-system facts the verdicts
hang on, each cited in ``docs/models/kafka_streams.md``:

* ``directory_for_task`` is the only code path (with the store's own open,
  which calls it here too) that creates a task directory
  (StateDirectory.java 97-104 at 2.1.1).
* ``lock``/``unlock`` and the cleaner's pass are ``synchronized`` on one
  monitor: a thread's ``lock`` waits while a cleaner pass runs
  (StateDirectory.java 130, 215, 251-316). ``lock`` creates the directory if
  missing and opens ``.lock`` with CREATE (a new entry: the directory's mtime
  moves).
* A checkpoint write opens ``.checkpoint.tmp`` with a plain
  ``FileOutputStream`` and renames it; into a deleted directory it fails, and
  ``ProcessorStateManager.checkpoint`` logs a WARN (OffsetCheckpoint.java
  69-95; ProcessorStateManager.java 292-296). It never re-creates the
  directory.
* The cleaner runs at a fixed rate of ``state.cleanup.delay.ms`` from that
  delay, only when the instance state is RUNNING at the start of a run
  (KafkaStreams.java 789-797), skips directories in the lock map, takes the
  lock (which may create ``.lock``), then deletes the directory if
  ``now > mtime + delay`` (StateDirectory.java 266-291). Deleting a directory
  takes time (a RocksDB store is many files); the directory vanishes at the
  start of its deletion, which can only shorten the window (see the docs).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

from raceproof.sim import FileSystem, Lock, World
from raceproof.sim.fs import FsError
from raceproof.sim.history import JSONValue

APP_DIR = "/state/app"
LOCKS = "streams:locks"  # the footprint of ``StateDirectory.locks`` (the model's own state)
CLEANER = "cleaner"
Gen = Generator[Any, Any, Any]


# The race window's probe: the cleaner deleted a task directory while a task object for it
# is created and not locked (before KAFKA-9113 it has read the checkpoint, and its lock will
# re-create the directory empty); a deletion no such task sees is harmless.
DELETE_WINDOW = "the cleaner deleted a directory a created, unlocked task holds"


def task_dir(task: str) -> str:
    return f"{APP_DIR}/{task}"


class StateDirectory:
    """One instance's state directory: task directories, the lock map, the monitor, the cleaner."""

    def __init__(self, world: World, cleanup_delay_ms: int, delete_ms: Sequence[int]) -> None:
        self.world = world
        self.cleanup_delay_ms = cleanup_delay_ms
        self.delete_ms = tuple(delete_ms)
        self.fs = FileSystem(world)
        self.fs.mkdir(APP_DIR)  # the StateDirectory constructor creates the application directory
        self.locks: dict[str, str] = {}  # task -> owning thread (StateDirectory.locks)
        self.monitor = Lock(world, "StateDirectory monitor")
        # The probe's view of the instance (set by it): is a task object of this task created
        # and not yet locked? It reads the instance's tasks, touched as such by the instance.
        self.unlocked_holder: Callable[[str], bool] = lambda task: False

    # -- directories -------------------------------------------------------------------
    def directory_for_task(self, actor: str, task: str) -> int | None:
        """Get or create the task directory; returns its generation."""
        if self.fs.mkdir(task_dir(task)):
            self.world.log(
                actor, "dir.create", task=task, generation=self.fs.generation(task_dir(task))
            )
        return self.fs.generation(task_dir(task))

    def generation(self, task: str) -> int | None:
        return self.fs.generation(task_dir(task))

    def store(self, task: str) -> dict[str, JSONValue]:
        path = f"{task_dir(task)}/store"
        if self.fs.exists(path):
            return dict(self.fs.read(path))
        return {"from": None, "to": 0, "keys": []}

    def store_fields(self, task: str) -> dict[str, JSONValue]:
        store = self.store(task)
        return {"store_from": store["from"], "store_to": store["to"]}

    def write_store(self, task: str, store: dict[str, JSONValue]) -> None:
        self.fs.write(f"{task_dir(task)}/store", store)

    # -- the lock (synchronized) ------------------------------------------------------------
    def lock(self, thread: str, task: str) -> Gen:
        """StateDirectory.lock: waits for the monitor; True if ``thread`` now owns the lock."""
        yield self.monitor.acquire(thread)
        try:
            self.world.touch(LOCKS)
            owner = self.locks.get(task)
            if owner is not None:
                return owner == thread
            self.directory_for_task(thread, task)
            self._open_lock_file(task)
            self.locks[task] = thread
            return True
        finally:
            self.monitor.release(thread)

    def unlock(self, thread: str, task: str) -> Gen:
        yield self.monitor.acquire(thread)
        self.world.touch(LOCKS)
        if self.locks.get(task) == thread:
            del self.locks[task]
        self.monitor.release(thread)

    def _open_lock_file(self, task: str) -> None:
        """FileChannel.open(.lock, CREATE, WRITE): a new file is a new entry (mtime moves)."""
        path = f"{task_dir(task)}/.lock"
        if not self.fs.exists(path):
            self.fs.write(path, "")

    # -- checkpoints ----------------------------------------------------------------------
    def read_checkpoint(self, task: str) -> int | None:
        """OffsetCheckpoint.read: the offset, or None when the file is missing."""
        path = f"{task_dir(task)}/.checkpoint"
        return int(self.fs.read(path)) if self.fs.exists(path) else None

    def write_checkpoint(self, actor: str, task: str, offset: int, **fields: JSONValue) -> bool:
        """OffsetCheckpoint.write: ``.checkpoint.tmp`` then a rename; fails if the directory is gone."""
        tmp, path = f"{task_dir(task)}/.checkpoint.tmp", f"{task_dir(task)}/.checkpoint"
        try:
            self.fs.write(tmp, offset)
        except FsError:
            self.world.log(
                actor,
                "checkpoint.fail",
                task=task,
                offset=offset,
                level="WARN",
                reason="FileNotFoundException: the task directory does not exist",
            )
            return False
        self.fs.remove(tmp)
        self.fs.write(path, offset)
        self.world.log(
            actor,
            "checkpoint.write",
            task=task,
            offset=offset,
            generation=self.generation(task),
            **fields,
            **self.store_fields(task),
        )
        return True

    # -- the cleaner ----------------------------------------------------------------------
    def cleaner(self, instance_running: Callable[[], bool]) -> Gen:
        """The stateDirCleaner: fixed rate, first run after one delay, a pass under the monitor."""
        delay, tick = self.cleanup_delay_ms, 0
        while True:
            tick += 1
            yield self.world.sleep(tick * delay - self.world.now_ms)
            if not instance_running():
                self.world.log(CLEANER, "cleaner.skip", reason="instance not RUNNING")
                continue
            yield from self._clean_removed_tasks()

    def _clean_removed_tasks(self) -> Gen:
        yield self.monitor.acquire(CLEANER)
        self.world.touch(LOCKS, write=False)
        names = [n for n in self.fs.listdir(APP_DIR) if self.fs.isdir(task_dir(n))]
        if (
            len(names) > 1
            and self.world.source.choose("cleaner.order", ["sorted", "reversed"]) == "reversed"
        ):
            names.reverse()  # File.listFiles order is unspecified
        self.world.log(CLEANER, "cleaner.run", dirs=names, locked=sorted(self.locks))
        for name in names:
            self.world.touch(LOCKS, write=False)  # after a deletion's sleep, a later step
            if name in self.locks or not self.fs.isdir(task_dir(name)):
                continue
            self._open_lock_file(name)  # lock(id): the cleaner takes the lock first
            age_ms = self.world.now_ms - self.fs.mtime_ms(task_dir(name))
            if age_ms > self.cleanup_delay_ms:
                generation = self.generation(name)
                self.fs.rmtree(task_dir(name))
                self.world.log(
                    CLEANER, "dir.delete", task=name, generation=generation, age_ms=age_ms
                )
                if self.unlocked_holder(name):
                    self.world.reach(DELETE_WINDOW)
                yield self.world.sleep(
                    self.world.source.choose("cleaner.delete_ms", self.delete_ms)
                )
        self.monitor.release(CLEANER)
