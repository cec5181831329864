"""The Kafka group coordinator runtime when an append it assumed synchronous is not (PR #14705).

Pinned to apache/kafka at a8203f9c7a2 (PR #15142, "KAFKA-14505; [4/N] Wire
transaction verification", merged 2024-01-11, first released in 3.8.0); the
facts and their line ranges are in docs/models/group_coordinator.md.

- An accumulator with a FIFO per partition; a partition is in flight from
  poll to done (at most one event per partition at a time); among the
  available partitions the next is a draw (``EventAccumulator.randomKey``).
- ``threads`` event-processor threads poll it (``group.coordinator.threads``,
  default 1). Request handlers enqueue write events (offset commits, plain or
  transactional). Every enqueue goes to the *back* of the partition's queue,
  the high-watermark event included (``scheduleInternalOperation``; the
  front-of-queue priority came later, KAFKA-16374, #15534).
- A write event, under the partition: generate the batch, **replay it into
  the state before the append**, append (acks=1, one batch per write event:
  no batching at this version; expected to complete at once: if no result is
  there, the write fails and the state reverts to the snapshot), update
  lastWrittenOffset, start the write timer, and complete only when the high
  watermark reaches the batch's offset.
- The replica manager replicates and advances the HWM after a drawn delay;
  the HWM listener enqueues a HighWatermarkUpdated event, which acknowledges
  the deferred writes below the HWM.
- The write timer (``offsets.commit.timeout.ms``, 5,000 ms) starts at the
  append; on expiry it enqueues a WriteTimeout event that fails the write if
  it is still not done. Time spent waiting in the queue is not covered.
- Transaction verification takes ``verification_ms`` (a round trip to the
  transaction coordinator); each transactional commit is the first write of
  its transaction to the partition, so it always needs one.

Variants: ``sync-assumption`` is the *hypothetical* design PR #14705 argued
about, never shipped: verification moved under the append while the runtime
keeps assuming the append completes synchronously (at the time transactional
offset commits were not implemented in the new coordinator; at #15142's parent
the coordinator's append passes no transactional id, so nothing verifies under
it). ``block-event-loop`` is PR #14705 (closed, not merged): the event thread
waits for the append while holding its partition and itself.
``verify-then-write`` is PR #15142 (merged): verify first, enqueue the write
only once verification is done; the append stays synchronous.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from simpy.events import Event

from raceproof.sim import World, require

# The race window's probe: a transactional write that needs verification before its append.
VERIFY_WINDOW = "a transactional write awaits verification"
VARIANTS = {
    "sync-assumption": "hypothetical design argued in PR #14705 (never shipped): verification "
    "under the append, which then completes later on another thread; the runtime sees no result "
    "and reverts",
    "block-event-loop": "PR #14705 (closed unmerged): the event thread waits for the append (runAsync().get()), "
    "holding its partition and itself",
    "verify-then-write": "PR #15142 (merged): verify first, enqueue the write event when "
    "verification completes; the append stays synchronous",
}
# Footprints (World.declare_footprints): the actors share only this model's Python
# state, named with world.touch where it is read or written: each partition (its
# queue, in-flight flag, state, log, HWM, deferred writes and the WriteEvents bound
# for it) is "coordinator:p<i>"; the wakeup event and the request/ack counters are
# "coordinator:runtime". Polling writes every partition (it reads them all).
RUNTIME = "coordinator:runtime"
Gen = Generator[Any, Any, Any]


@dataclass(frozen=True)
class CoordinatorConfig:
    """A workload and the runtime's parameters; tuples are options a run chooses among."""

    threads: int = 1  # group.coordinator.threads, default 1 at a8203f9c7a2
    partitions: int = 2
    writes: int = 4  # commit requests (correctness workloads)
    arrival_gap_ms: tuple[int, ...] = (3, 0)  # between two requests
    transactional: tuple[bool, ...] = (False, True)  # is a request a transactional commit
    verification_ms: tuple[int, ...] = (5,)  # verification round trip
    replication_ms: tuple[int, ...] = (2, 10)  # append to HWM advance
    write_cost_ms: int = 1  # the event thread's work on one write
    write_timeout_ms: int = 5_000  # offsets.commit.timeout.ms default
    # Open-loop load for `raceproof compare`: when rate_per_s > 0, requests arrive at this
    # total rate for duration_ms, each to a drawn partition and transactional with
    # probability transactional_per_mille / 1000.
    rate_per_s: int = 0
    transactional_per_mille: int = 1000
    # Virtual clock units per second. 1000: every ``_ms`` field is in ms. `raceproof compare`
    # runs at 10_000 to express sub-millisecond write costs on the integer clock; then every
    # ``_ms`` field (and duration_ms) counts tenths of a millisecond.
    clock_units_per_s: int = 1000
    duration_ms: int = 10_000
    quiet_log: bool = False  # performance runs keep only what the figures need

    def __post_init__(self) -> None:
        require(self.threads >= 1, "threads must be >= 1")
        require(self.partitions >= 1, "partitions must be >= 1")
        require(self.writes >= 0, "writes must be >= 0")
        for name in ("arrival_gap_ms", "transactional", "verification_ms", "replication_ms"):
            require(getattr(self, name), f"{name} needs at least one option")


@dataclass
class WriteEvent:
    batch: str
    partition: int
    transactional: bool
    arrived_ms: int
    verified: bool = False
    done: bool = False  # acknowledged, failed or timed out


@dataclass
class Partition:
    index: int
    queue: deque[Any] = field(default_factory=deque)
    in_flight: bool = False
    state: list[str] = field(default_factory=list)  # batches replayed and not reverted
    log: list[str] = field(default_factory=list)  # batches appended, in log order
    last_written: int = 0  # log end after our last append
    hwm: int = 0
    deferred: list[tuple[int, WriteEvent]] = field(default_factory=list)  # (offset, write)


HWM_EVENT = "HighWatermarkUpdated"


@dataclass(frozen=True)
class WriteTimeout:
    """The internal event a write's timer enqueues when it expires."""

    write: WriteEvent

    @property
    def batch(self) -> str:
        return f"timeout-{self.write.batch}"


class Coordinator:
    def __init__(self, world: World, variant: str, config: CoordinatorConfig) -> None:
        require(variant in VARIANTS, f"unknown variant {variant}")
        self.world = world
        self.variant = variant
        self.config = config
        self.partitions = [Partition(p) for p in range(config.partitions)]
        self.wakeup: Event = world.event()
        self.latencies_ms: list[int] = []
        self.ack_times_ms: list[int] = []
        self.acked = 0
        self.failed = 0
        self.requests = 0

    def touch(self, partition: int | None = None, *, runtime: bool = False) -> None:
        """This step reads or writes ``partition`` (None: every one), and with ``runtime`` the
        wakeup event and the counters."""
        if runtime:
            self.world.touch(RUNTIME)
        for p in range(self.config.partitions) if partition is None else (partition,):
            self.world.touch(f"coordinator:p{p}")

    def log(self, actor: str, kind: str, **fields: Any) -> None:
        if not self.config.quiet_log:
            self.world.log(actor, kind, **fields)

    # -- the accumulator ---------------------------------------------------------------
    def enqueue(self, partition: int, event: Any) -> None:
        """EventAccumulator.add: always the back of the partition's queue."""
        self.touch(partition, runtime=True)
        self.partitions[partition].queue.append(event)
        if not self.wakeup.triggered:
            self.wakeup.succeed()

    def _available(self) -> list[Partition]:
        return [p for p in self.partitions if p.queue and not p.in_flight]

    def poll(self) -> Gen:
        """Wait for an event of an available partition; which one is a draw."""
        while True:
            self.touch(runtime=True)
            available = self._available()
            if available:
                partition = self.world.source.choose("accumulator.next", available)
                partition.in_flight = True
                return partition, partition.queue.popleft()
            if self.wakeup.triggered:
                self.wakeup = self.world.event()
            yield self.wakeup

    def release(self, partition: Partition) -> None:
        self.touch(runtime=True)
        partition.in_flight = False
        self.log("runtime", "event.done", partition=partition.index)
        if self._available() and not self.wakeup.triggered:
            self.wakeup.succeed()

    # -- event processing ------------------------------------------------------------
    def processor(self, thread: int) -> Gen:
        actor = processors(self.config)[thread]
        del thread  # the event threads differ only by their names (the scenario's symmetry)
        while True:
            partition, event = yield from self.poll()
            self.touch(partition.index)
            self.log(
                actor,
                "event.poll",
                partition=partition.index,
                event=event if isinstance(event, str) else event.batch,
            )
            if event == HWM_EVENT:
                self.on_hwm(partition)
            elif isinstance(event, WriteTimeout):
                if not event.write.done:
                    self._finish(event.write, "write.timeout")
            else:
                yield from self.write(actor, partition, event)
            self.release(partition)

    def write(self, actor: str, partition: Partition, event: WriteEvent) -> Gen:
        if event.done:
            return
        yield self.world.sleep(self.config.write_cost_ms)
        self.touch(partition.index)
        snapshot = len(partition.state)
        partition.state.append(event.batch)
        self.log(actor, "replay", partition=partition.index, batch=event.batch)
        needs_verification = event.transactional and not event.verified
        if needs_verification and self.variant == "sync-assumption":
            # appendRecords returns before verification completes: no result is there.
            self.world.spawn(f"verifier-{event.batch}", self._late_append(partition, event))
            del partition.state[snapshot:]
            self.log(
                actor,
                "revert",
                partition=partition.index,
                batches=[event.batch],
                reason="append gave no result",
            )
            self._finish(event, "write.fail")
            return
        if (
            needs_verification
        ):  # block-event-loop: wait for it, holding the partition and the thread
            yield self.world.sleep(
                self.world.source.choose("verification", self.config.verification_ms)
            )
            self.touch(partition.index)
        self._append(partition, event)

    def _late_append(self, partition: Partition, event: WriteEvent) -> Gen:
        """The verified append lands later, on another thread, outside the partition."""
        yield self.world.sleep(
            self.world.source.choose("verification", self.config.verification_ms)
        )
        self.touch(partition.index)
        self._append(partition, event, deferred=False)

    def _append(self, partition: Partition, event: WriteEvent, deferred: bool = True) -> None:
        offset = len(partition.log)
        partition.log.append(event.batch)
        self.log(
            "replica-manager",
            "log.append",
            partition=partition.index,
            batch=event.batch,
            offset=offset,
        )
        if deferred:
            partition.last_written = offset + 1
            self.log(
                "runtime", "last-written", partition=partition.index, offset=partition.last_written
            )
            partition.deferred.append((offset, event))
            self.world.spawn(f"timer-{event.batch}", self.timer(event))
        self.world.spawn("replication", self._replicate(partition, offset + 1))

    def _replicate(self, partition: Partition, end: int) -> Gen:
        yield self.world.sleep(self.world.source.choose("replication", self.config.replication_ms))
        self.touch(partition.index)
        if end > partition.hwm:
            partition.hwm = end
            self.enqueue(partition.index, HWM_EVENT)  # the HWM listener, at the back

    def on_hwm(self, partition: Partition) -> None:
        still = []
        for offset, event in partition.deferred:
            if offset < partition.hwm:
                if not event.done:
                    self._finish(event, "write.ack", offset=offset, hwm=partition.hwm)
            else:
                still.append((offset, event))
        partition.deferred = still

    def _finish(self, event: WriteEvent, kind: str, **fields: Any) -> None:
        self.touch(event.partition, runtime=True)
        event.done = True
        if kind == "write.ack":
            self.acked += 1
            self.latencies_ms.append(self.world.now_ms - event.arrived_ms)
            self.ack_times_ms.append(self.world.now_ms)
        else:
            self.failed += 1
        self.log("runtime", kind, partition=event.partition, batch=event.batch, **fields)

    def timer(self, event: WriteEvent) -> Gen:
        """Started at the append; on expiry a WriteTimeout event goes to the back of the queue."""
        yield self.world.sleep(self.config.write_timeout_ms)
        self.touch(event.partition)
        if not event.done:
            self.enqueue(event.partition, WriteTimeout(event))

    # -- request handlers ----------------------------------------------------------------
    def submit(self, index: int, partition: int, transactional: bool) -> None:
        event = WriteEvent(
            batch=f"b{index}",
            partition=partition,
            transactional=transactional,
            arrived_ms=self.world.now_ms,
        )
        self.touch(partition, runtime=True)
        self.requests += 1
        self.log(
            "request-handler",
            "request",
            partition=partition,
            batch=event.batch,
            transactional=transactional,
        )
        if transactional:
            self.world.reach(VERIFY_WINDOW)
        if transactional and self.variant == "verify-then-write":
            self.world.spawn(f"verifier-{event.batch}", self._verify_then_enqueue(event))
        else:
            self.enqueue(partition, event)

    def _verify_then_enqueue(self, event: WriteEvent) -> Gen:
        yield self.world.sleep(
            self.world.source.choose("verification", self.config.verification_ms)
        )
        self.touch(event.partition)
        event.verified = True
        self.enqueue(event.partition, event)

    def workload(self) -> Gen:
        config, choose = self.config, self.world.source.choose
        if config.rate_per_s:
            # Request i arrives at floor(i * units / rate): the exact rate on the integer clock.
            units = config.clock_units_per_s
            for index in range(config.duration_ms * config.rate_per_s // units):
                yield self.world.sleep(index * units // config.rate_per_s - self.world.now_ms)
                partition = self.world.source.draw_int("partition", 0, config.partitions - 1)
                mix = self.world.source.draw_int("txn", 0, 999) < config.transactional_per_mille
                self.submit(index, partition, mix)
        else:
            for index in range(config.writes):
                if index:
                    yield self.world.sleep(choose("arrival-gap", config.arrival_gap_ms))
                self.submit(
                    index, index % config.partitions, choose(f"txn.b{index}", config.transactional)
                )
        yield self.world.sleep(config.write_timeout_ms + 1)
        self.touch(runtime=True)
        while self.acked + self.failed < self.requests:  # queue time is not timed: wait it out
            yield self.world.sleep(config.write_timeout_ms)
            self.touch(runtime=True)
        self.log(
            "observer",
            "final",
            partitions={
                str(p.index): {"state": p.state, "log": p.log, "hwm": p.hwm}
                for p in self.partitions
            },
        )
        self.world.finish()


def processors(config: CoordinatorConfig) -> list[str]:
    """The event threads' names: interchangeable (``Scenario(symmetric=...)``)."""
    return [f"processor{thread}" for thread in range(config.threads)]


def build(world: World, variant: str, config: CoordinatorConfig) -> Coordinator:
    coordinator = Coordinator(world, variant, config)
    for thread, name in enumerate(processors(config)):
        world.spawn(name, coordinator.processor(thread))
    world.spawn("request-handlers", coordinator.workload())
    return coordinator
