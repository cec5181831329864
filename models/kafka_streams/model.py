"""Kafka Streams 2.1.1 across rebalances: the window in which a checkpoint outlives its directory.

Two StreamThreads of one instance share a ``StateDirectory`` (``state_dir.py``).
The facts, each cited with file and lines in ``docs/models/kafka_streams.md``:

1. A task is *constructed* in ``onPartitionsAssigned``: its state manager gets
   (or creates) the task directory and reads ``.checkpoint`` into memory,
   without the lock (ProcessorStateManager constructor).
2. The lock is taken when stores are registered, in ``runOnce`` and only while
   the thread is PARTITIONS_ASSIGNED; a failure leaves the task *created*.
   Before PR #6818 the thread goes RUNNING once its active tasks run; after
   it, only once its standbys run too (TaskManager.updateNewAndRestoringTasks).
3. A standby seeks to the offsets captured when it initialized; it applies
   records only while RUNNING and checkpoints at a commit only if it applied
   some (StandbyTask, AssignedTasks.commit).
4. At revocation running tasks are suspended (checkpoint written, lock kept)
   and *created* tasks are closed and dropped; closing a never-initialized
   standby returns at once: no checkpoint, no unlock (AssignedTasks.suspend,
   StandbyTask.close). At assignment, suspended tasks not reassigned are
   closed (checkpoint, unlock); reassigned ones resume.
5. The instance is REBALANCING from any thread's revocation until every thread
   is RUNNING; the cleaner only starts a pass while it is RUNNING.

The race these facts leave (not the JIRA's write-back, which the code does
not have): a task constructed while a cleaner pass that began before the
rebalance is still running reads ``.checkpoint`` = X from a directory the
pass then deletes; its ``lock`` re-creates the directory empty; it seeks to
X over an empty store and checkpoints past X there; promoted, it restores
from that checkpoint and lacks every record below X.

Footprints (``World.declare_footprints``): the file system and the monitor
record their own; the Python state the actors share is named with
``world.touch`` where it is read or written: ``streams:changelog``,
``streams:threads`` (each thread's state, read by the cleaner through
``instance_running``), ``streams:tasks`` (the task maps and every
``StandbyTask`` in them) and ``streams:locks`` (``StateDirectory.locks``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raceproof.models.kafka_streams.state_dir import LOCKS, Gen, StateDirectory
from raceproof.sim import World, require

CHANGELOG, TASKS = "streams:changelog", "streams:tasks"

VARIANTS = {
    "buggy": "2.1.1: a thread goes RUNNING once its active tasks run; checkpoints are loaded "
    "when a task is constructed, before the lock",
    "fix-standby-running": "PR #6818 (first shipped in 2.2.2 and 2.3.0): a thread is RUNNING "
    "only once its standby tasks run too, so it keeps retrying the lock",
    "fix-checkpoint-under-lock": "the JIRA's proposal 2: write a checkpoint only while holding "
    "the task's lock",
    "fix-load-after-lock": "KAFKA-9113 (PR #7997, 2.6.0): checkpoints are read only after the "
    "lock is taken and the stores registered",
}
TASK = "1_0"  # the standby of the JIRA
OTHER = "0_0"  # a second standby of thread A that leaves the instance at the first rebalance
RUNNING, REVOKED, ASSIGNED = "RUNNING", "PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED"
THREADS = ("A", "B")


@dataclass(frozen=True)
class StreamsConfig:
    """Workload and timing; tuples are the options a run chooses among (first = boring)."""

    cleanup_delay_ms: int = 600_000  # state.cleanup.delay.ms
    poll_ms: int = 100
    commit_interval_ms: int = 30_000
    record_interval_ms: int = 60_000  # the active task elsewhere appends a changelog record
    first_record_ms: int = 7_000
    join_ms: int = 500  # a thread's revocation to its assignment (JoinGroup + SyncGroup)
    handler_gap_ms: int = 50  # between the two threads handling their assignment
    # Where each thread's commit timer starts (threads are not in lockstep with each other,
    # nor with the cleaner's timer).
    thread_a_phase_ms: int = 1_000
    thread_b_phase_ms: int = 10_000
    first_rebalance_ms: tuple[int, ...] = (120_000, 45_000)
    # Where standby 1_0 goes at the first rebalance: thread B, or another instance.
    first_assignment: tuple[str, ...] = ("B", "away")
    # The second rebalance: before the cleaner may delete; well after it deleted; or 300 ms
    # after the cleaner's run at 20 min started (the first run at which a directory last
    # touched at the first rebalance is older than the delay).
    second_rebalance_at_ms: tuple[int, ...] = (420_000, 1_500_000, 1_200_300)
    # Where standby 1_0 goes at the second rebalance (back to this instance in both cases).
    second_assignment: tuple[str, ...] = ("B", "A")
    # How long deleting one task directory takes the cleaner (a small store, a large one).
    delete_ms: tuple[int, ...] = (100, 5_000)
    promote_after_ms: int = 120_000  # after the second rebalance, the task turns active here

    def __post_init__(self) -> None:
        for name in ("cleanup_delay_ms", "poll_ms", "commit_interval_ms"):
            require(getattr(self, name) > 0, f"{name} must be > 0")
        require(
            set(self.first_assignment) <= {"B", "away"},
            "first_assignment: 1_0 goes to thread B or away",
        )
        require(
            set(self.second_assignment) <= {"A", "B"},
            "second_assignment: 1_0 comes back to thread A or B",
        )
        require(
            min(self.second_rebalance_at_ms) > max(self.first_rebalance_ms) + self.join_ms,
            "second_rebalance_at_ms must come after first_rebalance_ms + join_ms",
        )
        require(all(ms > 0 for ms in self.delete_ms), "delete_ms needs delays > 0")


@dataclass
class StandbyTask:
    """One StandbyTask object: created, running or suspended, on one thread."""

    task: str
    thread: str
    state: str = "created"  # created | running | suspended
    initialized: bool = False  # taskInitialized
    loaded_offset: int | None = None  # checkpointableOffsets as read from .checkpoint
    loaded_generation: int | None = None  # the directory generation it was read from
    checkpointed: int | None = None  # checkpointedOffsets, captured at initialization
    position: int = 0  # the restore consumer's position
    commit_needed: bool = False


class Instance:
    """One Kafka Streams instance: threads A and B, their tasks, the state directory."""

    def __init__(self, world: World, variant: str, config: StreamsConfig) -> None:
        require(variant in VARIANTS, f"unknown variant {variant}")
        self.world, self.variant, self.config = world, variant, config
        self.dirs = StateDirectory(world, config.cleanup_delay_ms, config.delete_ms)
        self.changelog: list[str] = []
        # Each thread's state, tracked: a read or write of one thread's state is its footprint.
        self.state = world.shared.dict("thread-states", {thread: RUNNING for thread in THREADS})
        self.tasks: dict[str, dict[str, StandbyTask]] = {thread: {} for thread in THREADS}
        self.dirs.unlocked_holder = self.created_holder

    def created_holder(self, task: str) -> bool:
        """A thread holds a task object of ``task`` that is created and not initialized (locked)."""
        self.world.touch(TASKS, write=False)
        return any(task in tasks and not tasks[task].initialized for tasks in self.tasks.values())

    def instance_running(self) -> bool:
        """KafkaStreams.state == RUNNING: every thread RUNNING (StreamStateListener)."""
        return all(state == RUNNING for state in self.state.values())

    def running(self, thread: str, state: str = RUNNING) -> bool:
        """Is ``thread`` in ``state`` now."""
        return self.state[thread] == state

    def set_state(self, thread: str, state: str) -> None:
        self.state[thread] = state
        self.world.log(thread, "thread.state", state=state)

    # -- one task's life ---------------------------------------------------------------
    def construct(self, thread: str, task: str) -> StandbyTask:
        """new StandbyTask: the state manager gets the directory and reads .checkpoint."""
        standby = StandbyTask(task, thread)
        self.world.touch(TASKS)
        self.tasks[thread][task] = standby
        generation = self.dirs.directory_for_task(thread, task)
        if self.variant != "fix-load-after-lock":
            self._load(standby, generation)
        self.world.log(thread, "standby.create", task=task, loaded=standby.loaded_offset)
        return standby

    def _load(self, standby: StandbyTask, generation: int | None) -> None:
        self.world.touch(TASKS)
        standby.loaded_offset = self.dirs.read_checkpoint(standby.task)
        standby.loaded_generation = generation
        self.world.log(
            standby.thread,
            "checkpoint.load",
            task=standby.task,
            offset=standby.loaded_offset,
            generation=generation,
        )

    def initialize(self, standby: StandbyTask) -> Gen:
        """initializeStateStores: lock (or stay created), open the store, capture the offsets."""
        locked = yield from self.dirs.lock(standby.thread, standby.task)
        self.world.touch(TASKS)  # the standby's fields, in this step
        if not locked:
            self.world.touch(LOCKS, write=False)
            self.world.log(
                standby.thread,
                "lock.fail",
                task=standby.task,
                owner=self.dirs.locks.get(standby.task),
            )
            return False
        generation = self.dirs.directory_for_task(standby.thread, standby.task)  # the store's open
        if self.variant == "fix-load-after-lock":
            self._load(standby, generation)
        standby.checkpointed = standby.loaded_offset
        standby.initialized, standby.state = True, "running"
        self.world.log(standby.thread, "standby.init", task=standby.task, generation=generation)
        return True

    def seek(self, standby: StandbyTask) -> None:
        """assignStandbyPartitions: seek to the offsets captured at initialization (or the start)."""
        self.world.touch(TASKS)
        standby.position = standby.checkpointed or 0
        self.world.log(
            standby.thread,
            "seek",
            task=standby.task,
            offset=standby.position,
            loaded_generation=standby.loaded_generation,
            generation=self.dirs.generation(standby.task),
            **self.dirs.store_fields(standby.task),
        )

    def apply(self, standby: StandbyTask) -> None:
        """maybeUpdateStandbyTasks: apply the changelog from the position into the store."""
        self.world.touch(TASKS)
        self.world.touch(CHANGELOG, write=False)
        end = len(self.changelog)
        if standby.state != "running" or standby.position >= end:
            return
        store = self.dirs.store(standby.task)
        keys = set(store["keys"]) | set(self.changelog[standby.position : end])
        low = (
            standby.position if store["from"] is None else min(int(store["from"]), standby.position)
        )
        self.dirs.write_store(
            standby.task,
            {
                "from": low,
                "to": max(end, int(store["to"])),
                "keys": sorted(keys, key=lambda k: int(k[1:])),
            },
        )
        self.world.log(
            standby.thread, "store.apply", task=standby.task, offsets=[standby.position, end]
        )
        standby.position, standby.commit_needed = end, True

    def checkpoint(self, standby: StandbyTask) -> None:
        """ProcessorStateManager.checkpoint: the offsets in memory, written if there are any."""
        self.world.touch(TASKS)
        self.world.touch(LOCKS, write=False)
        holds_lock = self.dirs.locks.get(standby.task) == standby.thread
        if self.variant == "fix-checkpoint-under-lock" and not holds_lock:
            self.world.log(standby.thread, "checkpoint.skip", task=standby.task, reason="no lock")
            return
        offset = standby.position if standby.initialized else standby.loaded_offset
        if offset is None or (offset == 0 and standby.loaded_offset is None):
            return  # OffsetCheckpoint.write skips an empty map
        self.dirs.write_checkpoint(
            standby.thread,
            standby.task,
            offset,
            holds_lock=holds_lock,
            loaded_generation=standby.loaded_generation,
        )
        standby.commit_needed = False

    def close(self, standby: StandbyTask) -> Gen:
        """StandbyTask.close: nothing at all unless initialized; else commit, close, unlock."""
        self.world.touch(TASKS)
        del self.tasks[standby.thread][standby.task]
        if not standby.initialized:
            self.world.log(
                standby.thread,
                "standby.close",
                task=standby.task,
                initialized=False,
                wrote_checkpoint=False,
            )
            return
        self.apply(standby)
        self.checkpoint(standby)
        yield from self.dirs.unlock(standby.thread, standby.task)
        self.world.log(standby.thread, "standby.close", task=standby.task, initialized=True)

    # -- a thread across a rebalance ---------------------------------------------------
    def on_revoked(self, thread: str) -> None:
        """onPartitionsRevoked: suspend running tasks, close and drop created ones."""
        self.set_state(thread, REVOKED)
        self.world.touch(TASKS)
        for standby in list(self.tasks[thread].values()):
            if standby.state == "running":
                self.apply(standby)
                self.checkpoint(standby)  # StandbyTask.suspend: flush and checkpoint; lock kept
                standby.state = "suspended"
                self.world.log(thread, "standby.suspend", task=standby.task)
            elif standby.state == "created":  # closeNonRunningTasks(created); created.clear()
                del self.tasks[thread][standby.task]
                self.world.log(
                    thread,
                    "standby.close",
                    task=standby.task,
                    initialized=False,
                    wrote_checkpoint=False,
                )

    def on_assigned(self, thread: str, assigned: set[str]) -> Gen:
        """onPartitionsAssigned (createTasks), then runOnce's lock attempts while ASSIGNED."""
        self.set_state(thread, ASSIGNED)
        self.world.touch(TASKS)
        for standby in list(self.tasks[thread].values()):
            self.world.touch(TASKS, write=False)  # after a close, a later step
            if standby.state == "suspended" and standby.task not in assigned:
                yield from self.close(standby)
        self.world.touch(TASKS)
        for task in sorted(assigned):
            existing = self.tasks[thread].get(task)
            if existing is not None and existing.state == "suspended":
                existing.state = "running"  # maybeResumeSuspendedTask: the lock is still held
                self.world.log(thread, "standby.resume", task=task)
            elif existing is None:
                self.construct(thread, task)
        while self.running(thread, ASSIGNED):
            yield from self.update_new_and_restoring(thread)
            if self.running(thread, ASSIGNED):
                yield self.world.sleep(self.config.poll_ms)

    def update_new_and_restoring(self, thread: str) -> Gen:
        """TaskManager.updateNewAndRestoringTasks, with no active tasks on these threads."""
        self.world.touch(TASKS, write=False)
        for standby in sorted(self.tasks[thread].values(), key=lambda s: s.task):
            self.world.touch(TASKS, write=False)  # after an initialize, a later step
            if standby.state == "created":
                yield from self.initialize(standby)
        self.world.touch(TASKS, write=False)
        for standby in sorted(self.tasks[thread].values(), key=lambda s: s.task):
            if standby.state == "running":
                self.seek(standby)
        waiting = any(s.state == "created" for s in self.tasks[thread].values())
        if self.variant == "fix-standby-running" and waiting:
            return
        self.set_state(thread, RUNNING)

    def thread_loop(self, thread: str, phase_ms: int) -> Gen:
        """RUNNING: apply standby records, and commit (checkpoint) every commit interval."""
        yield self.world.sleep(phase_ms)
        while True:
            yield self.world.sleep(self.config.commit_interval_ms)
            if not self.running(thread):
                continue
            self.world.touch(TASKS)
            for standby in sorted(self.tasks[thread].values(), key=lambda s: s.task):
                self.apply(standby)
                if standby.state == "running" and standby.commit_needed:
                    self.checkpoint(standby)

    # -- the workload --------------------------------------------------------------------
    def producer(self) -> Gen:
        yield self.world.sleep(self.config.first_record_ms)
        while True:
            self.world.touch(CHANGELOG)
            key = f"r{len(self.changelog)}"
            self.changelog.append(key)
            self.world.log(
                "changelog", "changelog.append", task=TASK, offset=len(self.changelog) - 1, key=key
            )
            yield self.world.sleep(self.config.record_interval_ms)

    def rebalance(self, number: int, assignment: dict[str, set[str]]) -> Gen:
        self.world.log(
            "coordinator",
            "rebalance",
            number=number,
            assignment={t: sorted(tasks) for t, tasks in sorted(assignment.items())},
        )
        for thread in THREADS:
            self.on_revoked(thread)
        yield self.world.sleep(self.config.join_ms)
        first = self.world.source.choose(f"rebalance{number}.first", list(THREADS))
        for i, thread in enumerate([first, "B" if first == "A" else "A"]):
            delay = i * self.config.handler_gap_ms
            self.world.spawn(
                f"assign{number}-{thread}", self._assign_after(delay, thread, assignment[thread])
            )

    def _assign_after(self, delay_ms: int, thread: str, assigned: set[str]) -> Gen:
        yield self.world.sleep(delay_ms)
        yield from self.on_assigned(thread, assigned)

    def promote_and_restore(self) -> Gen:
        """The task turns active here: its standby closes, the active task reads and restores."""
        actor = "active"
        for thread in THREADS:
            self.world.touch(TASKS, write=False)
            if TASK in self.tasks[thread]:
                yield from self.close(self.tasks[thread][TASK])
        generation = self.dirs.directory_for_task(actor, TASK)
        checkpoint = self.dirs.read_checkpoint(TASK)
        locked = yield from self.dirs.lock(actor, TASK)
        if not locked:
            self.world.touch(LOCKS, write=False)
            raise AssertionError(f"the lock is still held by {self.dirs.locks.get(TASK)}")
        restorer = StandbyTask(
            task=TASK,
            thread=actor,
            state="running",
            initialized=True,
            loaded_offset=checkpoint,
            loaded_generation=generation,
            checkpointed=checkpoint,
        )
        self.seek(restorer)
        self.apply(restorer)
        self.world.log(
            actor,
            "restore.done",
            task=TASK,
            end_offset=len(self.changelog),
            checkpoint=checkpoint,
            keys=self.dirs.store(TASK)["keys"],
        )

    def scenario(self) -> Gen:
        """A holds standbys 0_0 and 1_0; two rebalances; 1_0 promoted here; the end."""
        config, choose = self.config, self.world.source.choose
        yield self.world.sleep(choose("rebalance1.at", config.first_rebalance_ms))
        first = choose("rebalance1.standby", config.first_assignment)
        yield from self.rebalance(1, {"A": set(), "B": {TASK} if first == "B" else set()})
        second_at = choose("rebalance2.at", config.second_rebalance_at_ms)
        yield self.world.sleep(second_at - self.world.now_ms)
        second = choose("rebalance2.standby", config.second_assignment)
        yield from self.rebalance(
            2, {thread: {TASK} if thread == second else set() for thread in THREADS}
        )
        yield self.world.sleep(config.promote_after_ms)
        yield from self.promote_and_restore()
        self.world.finish()

    def start(self) -> Gen:
        """Thread A constructs and initializes both standbys before the threads run."""
        for task in (OTHER, TASK):
            standby = self.construct("A", task)
            locked = yield from self.initialize(standby)
            if not locked:  # the model's own check, kept under python -O
                raise AssertionError("nothing else holds a lock at start")
            self.seek(standby)
        self.world.spawn("thread-A", self.thread_loop("A", self.config.thread_a_phase_ms))
        self.world.spawn("thread-B", self.thread_loop("B", self.config.thread_b_phase_ms))
        self.world.spawn("cleaner", self.dirs.cleaner(self.instance_running))
        self.world.spawn("changelog", self.producer())
        self.world.spawn("workload", self.scenario())


def build(world: World, variant: str, config: StreamsConfig) -> None:
    instance = Instance(world, variant, config)
    world.spawn("startup", instance.start())
