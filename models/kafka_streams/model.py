"""Kafka Streams' state directory across rebalances: checkpoint resurrection (KAFKA-8187).

Two StreamThreads of one instance share a state directory: a task directory
per task, holding the store and ``.checkpoint``, and a ``.lock`` owned by at
most one thread. Facts of 2.0/2.1 the model keeps (MODELS.md §2):

1. A standby is created on assignment: its directory is created if missing
   and ``.checkpoint`` is loaded into memory, before the lock is taken.
2. The lock is taken when stores are registered; a failure leaves the task
   "created", retried only while the thread is in PARTITIONS_ASSIGNED.
3. Before the fix a thread declares itself RUNNING once its *active* tasks
   run: a thread with only a standby goes RUNNING at once.
4. The previous owner keeps its lock until it handles its own assignment.
5. The cleaner (first delay and period 600 000 ms, only while the instance
   is RUNNING) deletes an unlocked task directory older than the delay.
6. A standby seeks its restore consumer to the offsets loaded at creation.
7. A checkpoint write writes the offsets held in memory, stale ones included;
   writing into a deleted directory re-creates it (a new generation).

The stale created-but-uninitialized standby survives into the next
assignment: if it stays assigned it initializes there (taking the now free
lock, seeking to its stale offset in a re-created, empty directory); if not,
closing it writes its stale offset back. At the end the task is promoted to
active on this instance and restored from whatever checkpoint its directory
holds; records below that offset are never restored.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from raceproof.sim import FileSystem, Lock, World
from raceproof.sim.history import JSONValue

VARIANTS = {
    "buggy": "2.1 before the fix: RUNNING once active tasks run; checkpoints loaded at "
    "creation and written with or without the lock",
    "fix-standby-running": "PR #6818 (merged workaround): a thread is RUNNING only when its "
    "standby tasks run too, so it keeps retrying the lock",
    "fix-checkpoint-under-lock": "a checkpoint is written only while holding the task's lock",
    "fix-load-after-lock": "KAFKA-9113 (the root-cause fix, 2.6): checkpoints are loaded only "
    "after the lock is taken",
}
TASK = "1_0"
APP_DIR = "/state/app"
RUNNING, REVOKED, ASSIGNED = "RUNNING", "PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED"
Gen = Generator[Any, Any, Any]


@dataclass(frozen=True)
class StreamsConfig:
    """Workload and timing; tuples are the options a run chooses among (first = boring)."""

    cleanup_delay_ms: int = 600_000  # state.cleanup.delay.ms
    poll_ms: int = 100
    commit_interval_ms: int = 30_000
    record_interval_ms: int = 60_000  # the active task elsewhere appends a changelog record
    first_record_ms: int = 7_000
    first_rebalance_ms: tuple[int, ...] = (120_000, 45_000)
    # The second rebalance, after the first: before the cleaner could delete, or after.
    second_rebalance_after_ms: tuple[int, ...] = (300_000, 1_500_000)
    # Where the task's standby goes at the second rebalance: stays on B, or moves to A.
    second_assignment: tuple[str, ...] = ("B", "A")
    handler_gap_ms: int = 50  # between the two threads handling their assignment
    thread_b_phase_ms: int = (
        10_000  # thread B's commits run this far behind A's (threads are not in lockstep)
    )
    promote_after_ms: int = 120_000  # after the second rebalance, the task turns active here

    def __post_init__(self) -> None:
        assert self.cleanup_delay_ms > 0 and self.poll_ms > 0 and self.commit_interval_ms > 0
        assert set(self.second_assignment) <= {"A", "B"}, "a standby goes to thread A or B"


def task_dir(task: str) -> str:
    return f"{APP_DIR}/{task}"


@dataclass
class Changelog:
    """The task's changelog topic: appended by the active task on another instance."""

    records: list[str] = field(default_factory=list)

    @property
    def end(self) -> int:
        return len(self.records)


@dataclass
class StandbyTask:
    task: str
    thread: str
    loaded_offset: int | None = None  # the offset in memory (checkpoint loaded, or position)
    loaded_generation: int | None = None  # directory generation it was loaded from
    initialized: bool = False
    position: int = 0


class Instance:
    """One Kafka Streams instance: threads A and B, the state directory, the cleaner."""

    def __init__(self, world: World, variant: str, config: StreamsConfig) -> None:
        assert variant in VARIANTS, f"unknown variant {variant}"
        self.world = world
        self.variant = variant
        self.config = config
        self.fs = FileSystem(world)
        self.locks: dict[str, Lock] = {}
        self.changelog = Changelog()
        self.state = {"A": RUNNING, "B": RUNNING}
        self.standbys: dict[str, dict[str, StandbyTask]] = {"A": {}, "B": {}}
        self.fs.mkdir(APP_DIR)

    # -- the state directory -------------------------------------------------------
    def lock(self, task: str) -> Lock:
        if task not in self.locks:
            self.locks[task] = Lock(self.world, f"{task}/.lock")
        return self.locks[task]

    def _ensure_dir(self, actor: str, task: str) -> None:
        if self.fs.mkdir(task_dir(task)):
            self.world.log(
                actor, "dir.create", task=task, generation=self.fs.generation(task_dir(task))
            )

    def _store(self, task: str) -> dict[str, JSONValue]:
        path = f"{task_dir(task)}/store"
        if self.fs.exists(path):
            return dict(self.fs.read(path))
        return {"from": None, "to": 0, "keys": []}

    def _store_fields(self, task: str) -> dict[str, JSONValue]:
        store = self._store(task) if self.fs.isdir(task_dir(task)) else {"from": None, "to": 0}
        return {"store_from": store["from"], "store_to": store["to"]}

    def _read_checkpoint(self, task: str) -> int | None:
        path = f"{task_dir(task)}/.checkpoint"
        return int(self.fs.read(path)) if self.fs.exists(path) else None

    def _load(self, standby: StandbyTask) -> None:
        standby.loaded_offset = self._read_checkpoint(standby.task)
        standby.loaded_generation = self.fs.generation(task_dir(standby.task))
        self.world.log(standby.thread, "checkpoint.load", task=standby.task, offset=standby.loaded_offset,
                       generation=standby.loaded_generation)  # fmt: skip

    def write_checkpoint(self, standby: StandbyTask) -> None:
        """Write the offsets held in memory; a deleted directory is re-created by the write."""
        holds_lock = self.lock(standby.task).owner == standby.thread
        if self.variant == "fix-checkpoint-under-lock" and not holds_lock:
            self.world.log(standby.thread, "checkpoint.skip", task=standby.task, reason="no lock")
            return
        offset = standby.position if standby.initialized else standby.loaded_offset
        if offset is None:
            return
        self._ensure_dir(standby.thread, standby.task)
        # OffsetCheckpoint writes a temporary file and renames it over .checkpoint.
        tmp = f"{task_dir(standby.task)}/.checkpoint.tmp"
        self.fs.write(tmp, offset)
        self.fs.remove(tmp)
        self.fs.write(f"{task_dir(standby.task)}/.checkpoint", offset)
        self.world.log(standby.thread, "checkpoint.write", task=standby.task, offset=offset, holds_lock=holds_lock,
                       loaded_generation=standby.loaded_generation,
                       generation=self.fs.generation(task_dir(standby.task)),
                       **self._store_fields(standby.task))  # fmt: skip

    # -- standby tasks -------------------------------------------------------------------
    def create_standby(self, thread: str, task: str) -> None:
        standby = StandbyTask(task, thread)
        self.standbys[thread][task] = standby
        self._ensure_dir(thread, task)
        self.world.log(thread, "standby.create", task=task)
        if self.variant != "fix-load-after-lock":
            self._load(standby)

    def try_initialize(self, standby: StandbyTask) -> bool:
        if not self.lock(standby.task).try_acquire(standby.thread):
            self.world.log(
                standby.thread, "lock.fail", task=standby.task, owner=self.lock(standby.task).owner
            )
            return False
        self._ensure_dir(standby.thread, standby.task)  # store registration re-creates it
        if self.variant == "fix-load-after-lock":
            self._load(standby)
        standby.initialized = True
        standby.position = standby.loaded_offset or 0
        self.world.log(standby.thread, "seek", task=standby.task, offset=standby.position,
                       loaded_generation=standby.loaded_generation,
                       generation=self.fs.generation(task_dir(standby.task)),
                       **self._store_fields(standby.task))  # fmt: skip
        return True

    def consume(self, standby: StandbyTask) -> None:
        """Apply the changelog from the standby's position into the store in its directory."""
        if not standby.initialized or standby.position >= self.changelog.end:
            return
        self._ensure_dir(standby.thread, standby.task)
        store = self._store(standby.task)
        start = standby.position
        keys = list(store["keys"])
        for offset in range(start, self.changelog.end):
            keys.append(self.changelog.records[offset])
        store_from = start if store["from"] is None else min(store["from"], start)
        self.fs.write(f"{task_dir(standby.task)}/store", {"from": store_from, "to": self.changelog.end,
                                                         "keys": sorted(set(keys), key=lambda k: int(k[1:]))})  # fmt: skip
        standby.position = self.changelog.end
        self.world.log(
            standby.thread, "store.apply", task=standby.task, offsets=[start, self.changelog.end]
        )

    def close_standby(self, thread: str, task: str) -> None:
        standby = self.standbys[thread].pop(task)
        self.write_checkpoint(standby)
        if self.lock(task).owner == thread:
            self.lock(task).release(thread)
        self.world.log(thread, "standby.close", task=task, initialized=standby.initialized)

    # -- threads -------------------------------------------------------------------
    def all_standbys_running(self, thread: str) -> bool:
        return all(s.initialized for s in self.standbys[thread].values())

    def maybe_running(self, thread: str) -> None:
        # No active tasks here: the buggy rule declares RUNNING at once.
        if self.variant == "fix-standby-running" and not self.all_standbys_running(thread):
            return
        self.state[thread] = RUNNING
        self.world.log(thread, "thread.state", state=RUNNING)

    def on_revoked(self, thread: str) -> None:
        self.state[thread] = REVOKED  # tasks are suspended; their locks are kept

    def on_assigned(self, thread: str, assigned: set[str]) -> None:
        self.state[thread] = ASSIGNED
        self.world.log(thread, "thread.state", state=ASSIGNED, standbys=sorted(assigned))
        for task in sorted(set(self.standbys[thread]) - assigned):
            self.close_standby(thread, task)
        for task in sorted(assigned - set(self.standbys[thread])):
            self.create_standby(thread, task)
        for standby in list(self.standbys[thread].values()):
            if not standby.initialized:
                self.try_initialize(standby)
        self.maybe_running(thread)

    def thread_loop(self, thread: str, phase_ms: int) -> Gen:
        """Polls: retries the lock while PARTITIONS_ASSIGNED, consumes and commits while RUNNING."""
        config = self.config
        yield self.world.sleep(phase_ms)
        next_commit_ms = phase_ms + config.commit_interval_ms
        while True:
            if self.state[thread] == ASSIGNED:
                for standby in list(self.standbys[thread].values()):
                    if not standby.initialized:
                        self.try_initialize(standby)
                if self.state[thread] == ASSIGNED:
                    self.maybe_running(thread)
                yield self.world.sleep(config.poll_ms)
                continue
            if self.state[thread] == RUNNING and self.world.now_ms >= next_commit_ms:
                for standby in list(self.standbys[thread].values()):
                    self.consume(standby)
                    if standby.initialized:
                        self.write_checkpoint(standby)
                next_commit_ms = self.world.now_ms + config.commit_interval_ms
            yield self.world.sleep(
                config.commit_interval_ms if self.state[thread] == RUNNING else config.poll_ms
            )

    def cleaner(self) -> Gen:
        config = self.config
        yield self.world.sleep(config.cleanup_delay_ms)
        while True:
            if all(state == RUNNING for state in self.state.values()):
                for name in self.fs.listdir(APP_DIR):
                    path = task_dir(name)
                    lock = self.lock(name)
                    if lock.try_acquire("cleaner"):
                        if self.world.now_ms > self.fs.mtime_ms(path) + config.cleanup_delay_ms:
                            generation = self.fs.generation(path)
                            self.fs.rmtree(path)
                            self.world.log(
                                "cleaner", "dir.delete", task=name, generation=generation
                            )
                        lock.release("cleaner")
            yield self.world.sleep(config.cleanup_delay_ms)

    def producer(self) -> Gen:
        yield self.world.sleep(self.config.first_record_ms)
        while True:
            key = f"r{self.changelog.end}"
            self.changelog.records.append(key)
            self.world.log(
                "changelog", "changelog.append", task=TASK, offset=self.changelog.end - 1, key=key
            )
            yield self.world.sleep(self.config.record_interval_ms)

    def rebalance(self, number: int, assignment: dict[str, set[str]]) -> Gen:
        self.world.log("coordinator", "rebalance", number=number,
                       assignment={t: sorted(tasks) for t, tasks in sorted(assignment.items())})  # fmt: skip
        for thread in ("A", "B"):
            self.on_revoked(thread)
        order = self.world.source.choose(f"rebalance{number}.first", ["A", "B"])
        for thread in [order, "B" if order == "A" else "A"]:
            self.on_assigned(thread, assignment[thread])
            yield self.world.sleep(self.config.handler_gap_ms)

    def promote_and_restore(self) -> None:
        """The task becomes active here: it loads the directory's checkpoint and restores."""
        actor = "active"
        for thread in ("A", "B"):
            if TASK in self.standbys[thread]:
                self.close_standby(thread, TASK)
        lock = self.lock(TASK)
        assert lock.try_acquire(actor), f"the lock is still held by {lock.owner}"
        self._ensure_dir(actor, TASK)
        checkpoint = self._read_checkpoint(TASK)
        start = checkpoint or 0
        self.world.log(actor, "seek", task=TASK, offset=start, loaded_generation=self.fs.generation(task_dir(TASK)),
                       generation=self.fs.generation(task_dir(TASK)), **self._store_fields(TASK))  # fmt: skip
        restorer = StandbyTask(TASK, actor, start, self.fs.generation(task_dir(TASK)), True, start)
        self.consume(restorer)
        store = self._store(TASK)
        self.world.log(actor, "restore.done", task=TASK, end_offset=self.changelog.end,
                       checkpoint=checkpoint, keys=store["keys"])  # fmt: skip

    def scenario(self) -> Gen:
        """The workload: A holds the standby; two rebalances; promotion; the end."""
        config, choose = self.config, self.world.source.choose
        yield self.world.sleep(choose("rebalance1.at", config.first_rebalance_ms))
        yield from self.rebalance(1, {"A": set(), "B": {TASK}})
        yield self.world.sleep(choose("rebalance2.after", config.second_rebalance_after_ms))
        second = choose("rebalance2.standby", config.second_assignment)
        yield from self.rebalance(
            2, {"A": {TASK} if second == "A" else set(), "B": {TASK} if second == "B" else set()}
        )
        yield self.world.sleep(config.promote_after_ms)
        self.promote_and_restore()
        self.world.finish()


def build(world: World, variant: str, config: StreamsConfig) -> None:
    instance = Instance(world, variant, config)
    instance.create_standby("A", TASK)
    assert instance.try_initialize(instance.standbys["A"][TASK])
    world.spawn("thread-A", instance.thread_loop("A", 0))
    world.spawn("thread-B", instance.thread_loop("B", config.thread_b_phase_ms))
    world.spawn("cleaner", instance.cleaner())
    world.spawn("changelog", instance.producer())
    world.spawn("workload", instance.scenario())
