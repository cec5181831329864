"""Samza's drain of a two-stage pipeline before an incompatible upgrade (SAMZA-2741, SEP-31).

The job: source partitions src/0, src/1 -> partitionBy -> intermediate
partitions int/0, int/1 -> a windowed aggregate -> sink. Container c<k> runs
one task, "Partition k" (Samza's default ``GroupByPartition`` grouper), whose
two SSPs are src/k and int/k; the model keeps each SSP's state in a ``Task``
record named ``src<k>`` or ``agg<k>`` (its queue, offsets, drain state and
checkpoint), and the task shuts down only when every SSP of it is drained.
``docs/models/samza.md`` cites each fact (apache/samza release-1.8.0-rc0):

- The controller writes DrainNotification{uuid, runId, mode} to the
  metadata store; each container's DrainMonitor drains at once if it finds
  one for the current runId at start, and otherwise polls (first poll at
  once, then every ``monitor_poll_ms``).
- On drain, consumers stop polling source systems (intermediate ones are
  still polled) and, for each source partition, a Watermark(+inf) and a
  DrainMessage(runId) are appended to its pending queue; if the consumers
  have not started, the injection waits for their start.
- The RunLoop discards a DrainMessage of another runId (without stalling
  the partition); a matching one puts the RunLoop in drain mode, turning
  async commit off, as soon as it is at the head of its queue (before it is
  processed). A source SSP, once drained, sends a DrainMessage (carrying
  its producer task) to one intermediate partition (``ControlMessageSender``,
  ``aggregate_partition``).
- That intermediate partition is drained only after DrainMessages from every
  upstream producer task; its task then re-broadcasts a DrainMessage to the
  other intermediate partitions, and the window operator fires every pane
  (the SEP; ``drain-1.8`` fires none).
- A drained task commits synchronously and shuts down once no commit is
  pending; the job coordinator deletes the run's notifications only if every
  container shut down cleanly.
- A container may be restarted mid-drain: it resumes from its last
  checkpoint, and its monitor finds the notification at start.

The intermediate partitions start with a stale DrainMessage of the previous
run (runId ``run0``), as a drained previous deployment leaves them.

Footprints (``World.declare_footprints``; the scenario declares them). The
actors (source, controller, per container c: start, monitor, consumer,
RunLoop, committer, and one process per async commit) share plain Python
state, so every read and write of it names its resource with ``world.touch``
(through ``Pipeline._reads`` / ``_writes``), in the step that does it:

- ``sourcing`` (the source's loop flag), ``notifications`` (the metadata
  store), ``topic:src/p`` and ``topic:int/p`` (each partition's log; an
  append is a write, a poll a read), ``panes:T`` (task T's window store,
  which outlives a restart); the checkpoints (task -> committed offset) are
  tracked state (``world.shared``), recorded per task by the dict itself;
- per container c: ``c<c>.incarnation``, ``c<c>.tasks`` (which Task objects
  it runs), ``c<c>.control`` (started, draining, deferred), ``c<c>.wake``
  (the RunLoop's wake-up event, a SimPy event two actors share);
- per task T (by name, so an old incarnation's Task shares them with the
  new): ``T.queue`` (pending messages and poll position), ``T.state``
  (processed offset, drain mode, drained, producers seen), ``T.commit``
  (committed offset, commit pending), ``T.shutdown``.

``Message`` objects are never changed once appended, and ``seq`` belongs to
the source alone. Reads are touched conservatively (a loop that may stop
early still touches what a full pass reads). The checkers keep the contract:
each scans for any op of a kind, and the one comparison of op order
(``drain-completeness``: a message processed after its drain marker) is
between a ``process`` op, whose step writes ``T.state``, and a
``drain.inject`` op, whose step reads it: dependent steps, never reordered.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from simpy.events import Event

from raceproof.sim import World, require

# The race windows' probes, each where its window opens (issue 45). A drain loses data only if
# data is on its way when it begins, in one of two places: in the shuffle (polled from a source,
# not yet through the intermediate stream: queued at a task or unprocessed in the intermediate
# log) when a task enters drain, or in a window pane still open when the aggregate's inputs are
# all drained (with a pane of window_size messages this is nearly every drain with data: the
# last pane is open). A third window: a commit falls due (the RunLoop's commit timer) while a
# task of the container is draining, where async commit must be off. The fourth: a container's
# monitor finds the drain request before its consumers have started (injection deferred).
DRAIN_WINDOW = "a task entered drain with data still in the intermediate stream"
PANE_WINDOW = "an aggregate's inputs were all drained with a window pane still open"
ASYNC_COMMIT_WINDOW = "a commit fell due while a task of the container was draining"
EARLY_DRAIN_WINDOW = "a drain was requested before a container's consumers started"
VARIANTS = {
    "kill": "the status quo: containers are stopped abruptly; in-flight intermediate data and "
    "window state are lost",
    "drain": "the design (SEP-31): on drain the window operator fires every pending pane",
    "drain-1.8": "as implemented in Samza 1.8 (release-1.8.0-rc0): WindowOperatorImpl has no drain "
    "override, so pending panes are not emitted",
    "no-shuffle-aggregation": "mistake: an intermediate partition counts as drained on its first "
    "DrainMessage",
    "accept-stale-run-id": "mistake: a DrainMessage (or notification) of another runId is obeyed",
    "async-commit-during-drain": "mistake: async commit stays on while draining",
    "stop-intermediate-consumers": "mistake: on drain, intermediate polling stops too",
    "drain-before-consumers-start-stuck": "mistake: a notification found before the consumers start "
    "is never injected",
}
RUN = "run1"
STALE_RUN = "run0"
WINDOW = "window"
Gen = Generator[Any, Any, Any]


@dataclass(frozen=True)
class SamzaConfig:
    containers: int = 2
    source_interval_ms: int = 4_000  # a new message in each source partition
    poll_ms: int = 1_000
    process_ms: int = 300
    window_size: int = 3  # stage-2 messages per pane (by sequence number)
    commit_ms: int = 60_000  # task.commit.ms
    commit_latency_ms: int = 400  # an async commit is pending this long
    monitor_poll_ms: int = 60_000
    container_start_ms: tuple[int, ...] = (0, 20_000)  # when a container's consumers start
    stop_at_ms: tuple[int, ...] = (30_000, 10_000, 95_000)  # when the controller drains (or kills)
    restart: tuple[bool, ...] = (False, True)  # a container restarts mid-drain
    restart_delay_ms: int = 5_000
    horizon_ms: int = 300_000  # the drain must finish by then
    container_phase_ms: int = 137  # container k polls k * this later in each second
    source_phase_ms: int = 53  # the source writes off the pollers' beat
    container_skew_ms: int = 11  # container k takes k * this longer per message
    # ControlMessageSender.send: a producer's DrainMessage goes to one partition of the
    # intermediate stream, stream.hashCode() % partitionCount; we fix which one.
    aggregate_partition: int = 0
    # Partitions of the intermediate stream (0: one per container). Partition p belongs to the
    # task of container p % containers, so with more partitions than containers one task owns
    # several partitions of the intermediate stream.
    intermediate_partitions: int = 0

    @property
    def int_partitions(self) -> int:
        return self.intermediate_partitions or self.containers

    def __post_init__(self) -> None:
        require(self.containers >= 1, "containers must be >= 1")
        require(self.window_size >= 1, "window_size must be >= 1")
        require(self.process_ms > 0, "process_ms must be > 0")


@dataclass
class Message:
    kind: str  # "data", "watermark", "drain"
    topic: str
    partition: int
    offset: int
    key: int = 0
    seq: int = 0
    run_id: str = ""
    producer: str = ""


@dataclass
class Task:
    name: str
    topic: str  # the stream it consumes ("src" or "int")
    partition: int
    position: int = 0  # next offset to poll
    processed: int = 0  # offset after the last processed message
    committed: int = 0
    pending: deque[Message] = field(default_factory=deque)
    draining: bool = False
    drained: bool = False
    shut_down: bool = False
    commit_pending: bool = False
    producers_seen: set[str] = field(default_factory=set)


class Pipeline:
    def __init__(self, world: World, variant: str, config: SamzaConfig) -> None:
        require(variant in VARIANTS, f"unknown variant {variant}")
        self.world = world
        self.variant = variant
        self.config = config
        n = config.containers
        self.topics: dict[str, list[list[Message]]] = {
            "src": [[] for _ in range(n)],
            "int": [[] for _ in range(config.int_partitions)],
        }
        for p in range(
            config.int_partitions
        ):  # what the previous, drained deployment left at the head
            self.topics["int"][p].append(
                Message(
                    kind="drain",
                    topic="int",
                    partition=p,
                    offset=0,
                    run_id=STALE_RUN,
                    producer="src0",
                )
            )
        self.notifications: dict[str, dict[str, str]] = {
            STALE_RUN: {"uuid": "u0", "mode": "DEFAULT"}
        }
        self.tasks: dict[int, list[Task]] = {}
        self.started: dict[int, bool] = {}
        self.draining: dict[int, bool] = {}
        self.deferred: dict[int, bool] = {}
        self.wakeups: dict[int, Event] = {}
        self.incarnation: dict[int, int] = {}
        # task -> committed offset (survives restarts); tracked: it records its own footprints.
        # Every task's key exists from the start (offset 0): inserting keys would write the
        # dict's key set, which makes two first commits of different tasks dependent.
        names = [f"src{c}" for c in range(config.containers)]
        names += [f"agg{p}" for p in range(config.int_partitions)]
        self.checkpoints = world.shared.dict("checkpoints", {name: 0 for name in names})
        self.panes: dict[
            str, dict[int, list[int]]
        ] = {}  # task -> window -> seqs (a changelog store)
        self.seq = 0
        self.sourcing = True

    # -- footprints ------------------------------------------------------------------
    def _reads(self, *resources: str) -> None:
        for resource in resources:
            self.world.touch(resource, write=False)

    def _writes(self, *resources: str) -> None:
        for resource in resources:
            self.world.touch(resource, write=True)

    def _tasks(self, c: int) -> list[Task]:
        """Container c's tasks (reading which they are)."""
        self._reads(f"c{c}.tasks")
        return self.tasks[c]

    def _current(self, c: int, incarnation: int) -> bool:
        self._reads(f"c{c}.incarnation")
        return self.incarnation[c] == incarnation

    def _all_shut_down(self, c: int) -> bool:
        tasks = self._tasks(c)
        self._reads(*(f"{t.name}.shutdown" for t in tasks))
        return all(t.shut_down for t in tasks)

    # -- streams -------------------------------------------------------------------
    def append(self, topic: str, partition: int, message: Message) -> None:
        self._writes(f"topic:{topic}/{partition}")
        message.offset = len(self.topics[topic][partition])
        self.topics[topic][partition].append(message)

    def source(self) -> Gen:
        yield self.world.sleep(self.config.source_phase_ms)
        while True:
            self._reads("sourcing")
            if not self.sourcing:
                return
            for p in range(self.config.containers):
                self.seq += 1
                self.append(
                    "src",
                    p,
                    Message(
                        kind="data",
                        topic="src",
                        partition=p,
                        offset=0,
                        key=self.seq % self.config.int_partitions,
                        seq=self.seq,
                    ),
                )
            yield self.world.sleep(self.config.source_interval_ms)

    # -- containers ----------------------------------------------------------------
    def start_container(self, c: int, delay_ms: int) -> Gen:
        self._writes(f"c{c}.incarnation", f"c{c}.tasks", f"c{c}.control", f"c{c}.wake")
        incarnation = self.incarnation.get(c, 0) + 1
        self.incarnation[c] = incarnation
        owned = range(c, self.config.int_partitions, self.config.containers)
        self.tasks[c] = [Task(f"src{c}", "src", c)] + [Task(f"agg{p}", "int", p) for p in owned]
        for task in self.tasks[c]:
            self._writes(
                *(f"{task.name}.{part}" for part in ("queue", "state", "commit", "shutdown"))
            )
            task.position = task.processed = task.committed = self.checkpoints.get(task.name, 0)
        self.started[c] = False
        self.draining[c] = False
        self.deferred[c] = False
        self.wakeups[c] = self.world.event()
        self.world.spawn(f"monitor{c}", self.monitor(c, incarnation))
        yield self.world.sleep(delay_ms)
        if not self._current(c, incarnation):
            return
        self._writes(f"c{c}.control")
        self.started[c] = True
        self.world.log(f"c{c}", "consumers.start", incarnation=incarnation)
        if self.deferred[c]:
            if self.variant == "drain-before-consumers-start-stuck":
                self.world.log(f"c{c}", "drain.injection-lost")
            else:
                self.inject(c)
        self.world.spawn(f"c{c}-consumer", self.consumer(c, incarnation))
        self.world.spawn(f"c{c}-runloop", self.run_loop(c, incarnation))
        self.world.spawn(f"c{c}-committer", self.committer(c, incarnation))

    def monitor(self, c: int, incarnation: int) -> Gen:
        first = True
        while True:
            if not first:
                yield self.world.sleep(
                    self.config.monitor_poll_ms + c * self.config.container_phase_ms
                )
            first = False
            self._reads(f"c{c}.control")
            if not self._current(c, incarnation) or self.draining[c]:
                return  # a monitor of a stopped container, or the drain has begun
            self._reads("notifications")
            for run_id, notification in sorted(self.notifications.items()):
                if run_id == RUN or self.variant == "accept-stale-run-id":
                    self.world.log(
                        f"monitor{c}", "drain.notified", run_id=run_id, uuid=notification["uuid"]
                    )
                    self.begin_drain(c)
                    break
            if self.draining[c]:
                return

    def begin_drain(self, c: int) -> None:
        self._writes(f"c{c}.control")
        self.draining[c] = True
        if not self.started[c]:
            self.world.reach(EARLY_DRAIN_WINDOW)
            self.deferred[c] = True
            self.world.log(f"c{c}", "drain.deferred", reason="consumers not started")
            return
        self.inject(c)

    def inject(self, c: int) -> None:
        for task in self._tasks(c):
            if task.topic != "src":
                continue
            # Reading T.state orders this op after or before the task's ``process`` ops
            # (drain-completeness compares their places in the history).
            self._writes(f"{task.name}.queue")
            self._reads(f"{task.name}.state")
            # After everything polled so far: the drain covers exactly what is pending.
            end = task.position
            task.pending.append(
                Message(kind="watermark", topic="src", partition=task.partition, offset=end)
            )
            task.pending.append(
                Message(kind="drain", topic="src", partition=task.partition, offset=end, run_id=RUN)
            )
            self.world.log(f"c{c}", "drain.inject", ssp=f"src/{task.partition}", marker_offset=end)
        self._wake(c)

    def consumer(self, c: int, incarnation: int) -> Gen:
        yield self.world.sleep(c * self.config.container_phase_ms)  # containers are not in lockstep
        while self._current(c, incarnation) and not self._all_shut_down(c):
            self._reads(f"c{c}.control")
            for task in self._tasks(c):
                if task.shut_down:
                    continue
                polls_source = task.topic == "src" and not self.draining[c]
                polls_intermediate = task.topic == "int" and not (
                    self.draining[c] and self.variant == "stop-intermediate-consumers"
                )
                if polls_source or polls_intermediate:
                    self._reads(f"topic:{task.topic}/{task.partition}")
                    self._writes(f"{task.name}.queue")
                    log = self.topics[task.topic][task.partition]
                    task.pending.extend(log[task.position :])
                    task.position = len(log)
            self._wake(c)
            yield self.world.sleep(self.config.poll_ms)

    def _wake(self, c: int) -> None:
        self._writes(f"c{c}.wake")
        if not self.wakeups[c].triggered:
            self.wakeups[c].succeed()

    def run_loop(self, c: int, incarnation: int) -> Gen:
        while self._current(c, incarnation):
            tasks = self._tasks(c)
            self._reads(*(f"{t.name}.{part}" for t in tasks for part in ("queue", "shutdown")))
            ready = [t for t in tasks if t.pending and not t.shut_down]
            self._enter_drain_mode(ready)
            if not ready:
                if self._all_shut_down(c):
                    self.world.log(f"c{c}", "container.shutdown", clean=True)
                    return
                self._writes(f"c{c}.wake")
                self.wakeups[c] = self.world.event()
                yield self.wakeups[c]
                continue
            task = self.world.source.choose(f"c{c}.next", ready)
            self._writes(f"{task.name}.queue")
            message = task.pending.popleft()
            yield self.world.sleep(self.config.process_ms + c * self.config.container_skew_ms)
            if not self._current(c, incarnation):
                return
            yield from self.process(c, task, message)

    def _shuffle_in_flight(self) -> bool:
        """Data polled from a source and not yet through the intermediate stream: queued at a
        task, or unprocessed in an intermediate log (the probe's view; every piece it may read
        is touched first)."""
        tasks = [t for c in sorted(self.tasks) for t in self._tasks(c)]
        self._reads(*(f"{t.name}.queue" for t in tasks), *(f"{t.name}.state" for t in tasks))
        self._reads(*(f"topic:int/{p}" for p in range(len(self.topics["int"]))))
        if any(m.kind == "data" for t in tasks for m in t.pending):
            return True
        for p, log in enumerate(self.topics["int"]):
            done = max(
                (t.processed for t in tasks if t.topic == "int" and t.partition == p), default=0
            )
            if any(m.kind == "data" for m in log[done:]):
                return True
        return False

    def _obeyed(self, message: Message) -> bool:
        """A DrainMessage this run obeys: the current runId's (any, for the stale-run mistake)."""
        return message.kind == "drain" and (
            message.run_id == RUN or self.variant == "accept-stale-run-id"
        )

    def _enter_drain_mode(self, ready: list[Task]) -> None:
        """``RunLoop.AsyncTaskWorker.isReady`` -> ``shouldDrain``: drain mode once a DrainMessage
        of the current run is at the head of a pending queue, before it is processed (1.8.0-rc0
        ``RunLoop.java`` 885-906, 929-936); that turns async commit off at once."""
        for task in ready:
            if self._obeyed(task.pending[0]) and not task.draining:
                self._writes(f"{task.name}.state")
                task.draining = True
                self.world.log(task.name, "drain.mode", ssp=f"{task.topic}/{task.partition}")

    def process(self, c: int, task: Task, message: Message) -> Gen:
        actor = task.name
        self._writes(f"{task.name}.state")
        if message.kind == "data":
            task.processed = message.offset + 1
            ssp = f"{task.topic}/{task.partition}"
            self.world.log(actor, "process", ssp=ssp, offset=message.offset, seq=message.seq)
            if task.topic == "src":
                self.append(
                    "int",
                    message.key,
                    Message(
                        kind="data",
                        topic="int",
                        partition=message.key,
                        offset=0,
                        key=message.key,
                        seq=message.seq,
                    ),
                )
            else:
                window = message.seq // self.config.window_size
                self._writes(f"panes:{task.name}")
                panes = self.panes.setdefault(task.name, {})
                panes.setdefault(window, []).append(message.seq)
                for old in sorted(w for w in panes if w < window):  # the watermark passed them
                    self.fire(task, old)
            return
        if message.kind == "watermark":
            return
        yield from self._on_drain_message(c, task, message)

    def _on_drain_message(self, c: int, task: Task, message: Message) -> Gen:
        """A DrainMessage at the head of ``task``'s queue, processed (``process``'s third kind)."""
        actor = task.name
        if not self._obeyed(message):
            task.processed = message.offset + 1 if message.topic == "int" else task.processed
            self.world.log(
                actor,
                "drain.discard",
                ssp=f"{message.topic}/{task.partition}",
                run_id=message.run_id,
            )
            return
        if message.topic == "int":
            task.processed = message.offset + 1
        task.draining = True
        self.world.log(
            actor,
            "drain.enter",
            ssp=f"{message.topic}/{task.partition}",
            run_id=message.run_id,
            producer=message.producer or None,
        )
        if self._shuffle_in_flight():
            self.world.reach(DRAIN_WINDOW)
        if task.topic == "src":
            # PartitionByOperatorImpl.handleDrain -> ControlMessageSender.send: one partition.
            p = self.config.aggregate_partition
            self.append(
                "int",
                p,
                Message(
                    kind="drain",
                    topic="int",
                    partition=p,
                    offset=0,
                    run_id=message.run_id,
                    producer=f"t{task.partition}",
                ),
            )
            yield from self.finish_task(c, task, expected=None)
            return
        if not message.producer:  # the aggregating task's re-broadcast: drained at once
            yield from self.drain_window(c, task, expected=None)
            return
        yield from self._aggregate_drain(c, task, message)

    def _aggregate_drain(self, c: int, task: Task, message: Message) -> Gen:
        """An int task counts the producers' drains; complete, it re-broadcasts and drains."""
        task.producers_seen.add(message.producer)
        needed = 1 if self.variant == "no-shuffle-aggregation" else self.config.containers
        if len(task.producers_seen) >= needed:
            task.drained = True  # DrainStates: this SSP's count is complete
            others = [t for t in self._tasks(c) if t.topic == "int" and t is not task]
            self._reads(*(f"{t.name}.state" for t in others))
            if self.variant == "drain-1.8" and not all(t.drained for t in others):
                # OperatorImpl.aggregateDrainMessages re-broadcasts only once isDrained(stream):
                # every SSP of the stream in this task. The others wait for this very broadcast.
                self.world.log(
                    task.name,
                    "drain.rebroadcast-withheld",
                    ssp=f"int/{task.partition}",
                    waiting_for=[f"int/{t.partition}" for t in others if not t.drained],
                )
                return
            # OperatorImpl.aggregateDrainMessages: broadcast to the other partitions.
            for p in range(self.config.int_partitions):
                if p != task.partition:
                    self.append(
                        "int",
                        p,
                        Message(
                            kind="drain", topic="int", partition=p, offset=0, run_id=message.run_id
                        ),
                    )
            self.world.log(task.name, "drain.rebroadcast", ssp=f"int/{task.partition}")
            yield from self.drain_window(c, task, expected=self.config.containers)

    def drain_window(self, c: int, task: Task, expected: int | None) -> Gen:
        """All of the window's inputs are drained: the SEP fires every pane; 1.8 fires none."""
        self._reads(f"panes:{task.name}")
        if any(self.panes.get(task.name, {}).values()):
            self.world.reach(PANE_WINDOW)
        if self.variant != "drain-1.8":
            self._writes(f"panes:{task.name}")
            for window in sorted(self.panes.get(task.name, {})):
                self.fire(task, window)
        yield from self.finish_task(c, task, expected=expected)

    def fire(self, task: Task, window: int) -> None:
        self._writes(f"panes:{task.name}")
        seqs = self.panes[task.name].pop(window)
        self.world.log(task.name, "pane.fire", window=window, seqs=seqs)

    def finish_task(self, c: int, task: Task, expected: int | None) -> Gen:
        """An SSP is drained; the task (both SSPs of container c) shuts down only when all are
        (DrainStates.areAllStreamsDrained): commit, then shutdown(CURRENT_TASK)."""
        self._writes(f"{task.name}.state")
        task.drained = True
        self.world.log(
            task.name,
            "ssp.drained",
            ssp=f"{task.topic}/{task.partition}",
            producers=sorted(task.producers_seen),
            expected=expected,
        )
        tasks = self._tasks(c)
        self._reads(*(f"{t.name}.state" for t in tasks))
        if not all(t.drained for t in tasks):
            return
        for ssp in tasks:
            if self.variant == "async-commit-during-drain":
                self.commit_async(ssp, draining=True)
            else:
                yield from self.commit_sync(ssp)
        for ssp in self._tasks(c):  # read again: a restart may have replaced them meanwhile
            self._writes(f"{ssp.name}.shutdown")
            self._reads(f"{ssp.name}.commit")
            ssp.shut_down = True
            self.world.log(
                ssp.name,
                "task.shutdown",
                commit_pending=ssp.commit_pending,
                committed=ssp.committed,
            )

    def commit_sync(self, task: Task) -> Gen:
        yield self.world.sleep(self.config.commit_latency_ms)
        self._reads(f"{task.name}.state")
        self._writes(f"{task.name}.commit")
        task.committed = task.processed
        self.checkpoints[task.name] = task.committed
        self.world.log(task.name, "commit", mode="sync", offset=task.committed)

    def commit_async(self, task: Task, draining: bool = False) -> None:
        self._reads(f"{task.name}.state")
        self._writes(f"{task.name}.commit")
        task.commit_pending = True
        offset = task.processed
        self.world.log(
            task.name, "commit", mode="async", offset=offset, draining=draining or task.draining
        )

        def complete() -> Gen:
            yield self.world.sleep(self.config.commit_latency_ms)
            self._writes(f"{task.name}.commit")
            task.committed = max(task.committed, offset)
            self.checkpoints[task.name] = max(self.checkpoints.get(task.name, 0), offset)
            task.commit_pending = False

        self.world.spawn(f"{task.name}-commit", complete())

    def committer(self, c: int, incarnation: int) -> Gen:
        yield self.world.sleep(c * self.config.container_phase_ms + self.config.source_phase_ms)
        while self._current(c, incarnation):
            yield self.world.sleep(self.config.commit_ms)
            # RunLoop.drain(): drain mode (async commit off) is the whole RunLoop's, entered
            # when a task's queue head is a DrainMessage of the current run.
            tasks = self._tasks(c)
            self._reads(*(f"{t.name}.{part}" for t in tasks for part in ("state", "shutdown")))
            draining = any(t.draining for t in tasks)
            if draining and not all(t.shut_down for t in tasks):
                self.world.reach(ASYNC_COMMIT_WINDOW)
            for task in tasks:
                if not task.shut_down and (
                    not draining or self.variant == "async-commit-during-drain"
                ):
                    self.commit_async(task, draining=draining)

    # -- the controller and the end ------------------------------------------------------
    def controller(self) -> Gen:
        config, choose = self.config, self.world.source.choose
        stop_ms = choose("controller.stop-at", config.stop_at_ms)
        yield self.world.sleep(stop_ms)
        if self.variant == "kill":
            for c in range(config.containers):
                self._writes(f"c{c}.incarnation")
                self.incarnation[c] += 1  # every process of the old incarnation stops
            self.world.log("controller", "kill")
            self._writes("sourcing")
            self.sourcing = False
            yield from self.upgrade()
            return
        self._writes("notifications")
        self.notifications[RUN] = {"uuid": "u1", "mode": "DEFAULT"}
        self.world.log("controller", "drain.request", run_id=RUN, uuid="u1")
        if choose("fault.restart", config.restart):
            yield self.world.sleep(choose("restart.at", (1_000, 3_000)))
            c = 0
            self.world.log("nemesis", "container.restart", container=f"c{c}")
            self._writes(f"c{c}.incarnation")
            self.incarnation[c] += 1
            self.world.spawn(f"c{c}-start", self.start_container(c, config.restart_delay_ms))
        yield self.world.sleep(
            config.poll_ms // 2 + 1
        )  # the controller only watches: off every beat
        while not all([self._all_shut_down(c) for c in range(config.containers)]):
            if self.world.now_ms >= config.horizon_ms:
                stuck = sorted(
                    t.name
                    for c in range(config.containers)
                    for t in self.tasks[c]
                    if not t.shut_down
                )
                self.world.log(
                    "controller", "drain.timeout", after_ms=config.horizon_ms, tasks_running=stuck
                )
                self.world.finish()
                return
            yield self.world.sleep(config.poll_ms)
        self._writes("sourcing", "notifications")
        self.sourcing = False
        self.notifications.pop(RUN)
        self.world.log("job-coordinator", "notifications.delete", run_id=RUN)
        yield from self.upgrade()

    def upgrade(self) -> Gen:
        """The new deployment reads the intermediate stream from the last checkpoints."""
        self.world.touch_all()  # it reads every log, checkpoint and window store
        left = {}
        for p in range(self.config.int_partitions):
            committed = self.checkpoints.get(f"agg{p}", 0)
            data = [m.seq for m in self.topics["int"][p][committed:] if m.kind == "data"]
            left[f"int/{p}"] = data
        sources = {
            f"src/{c}": self.checkpoints.get(f"src{c}", 0) for c in range(self.config.containers)
        }
        unfired = sorted(
            {seq for panes in self.panes.values() for seqs in panes.values() for seq in seqs}
        )
        self.world.log(
            "upgrade",
            "final",
            run_id="run2",
            intermediate_left=left,
            source_committed=sources,
            unfired_pane_seqs=unfired,
        )
        self.world.finish()
        yield self.world.sleep(0)


def build(world: World, variant: str, config: SamzaConfig) -> None:
    pipeline = Pipeline(world, variant, config)
    world.spawn("source", pipeline.source())
    for c in range(config.containers):
        delay = world.source.choose(f"c{c}.start", config.container_start_ms)
        world.spawn(f"c{c}-start", pipeline.start_container(c, delay))
    world.spawn("controller", pipeline.controller())
