"""Brooklin's leader coordinator stopping and resuming datastreams (PR #974, double-STOP).

This module holds the leader, its cache and the datastream writes; ``cluster.py``
the followers, the REST clients and ``build``; ``leader_jvm.py`` the leader's faults.

Pinned to linkedin/brooklin 5e20a9d9 (Releasing 5.5.0, the parent of the fix)
and 417d1f29 (PR #974 merged); ``docs/models/brooklin.md`` cites each fact.

- REST ``stop`` / ``resume`` (``DatastreamResources``) read the stream from
  ZooKeeper, write the whole object unconditionally and touch ``/dms`` to
  notify the leader. ``stop`` on a STOPPED stream returns at once; on a
  STOPPING stream it rewrites the object and notifies the leader again. It
  then polls ZooKeeper every second until it sees STOPPED.
- The leader's ZooKeeper event thread delivers the ``/dms`` change in order;
  the callback (``onDatastreamAddOrDrop``) queues HANDLE_ADD_OR_DELETE_DATASTREAM
  and then LEADER_DO_ASSIGNMENT on the event queue, which drops an event
  equal to one already queued.
- HANDLE_ADD_OR_DELETE_DATASTREAM re-reads every datastream into the cache
  (new objects). LEADER_DO_ASSIGNMENT reads the STOPPING streams from the
  cache and, with assignment tokens, submits a stop task holding those very
  cached objects to a 16-thread pool; without tokens it marks them inline.
- The cache (``CachedDatastreamReader``) hands out shared objects: the buggy
  ``markDatastreamsStopped`` calls ``setStatus(STOPPED)`` on its snapshot
  object, which *is* the cached object until a refresh replaces it; #974's
  ``getDatastream(name, true)`` reads ZooKeeper and puts the fresh object in
  the cache, and ``setStatus`` then changes that cached object.
- ``ZkAdapter.updateDatastream`` is ``exists`` and then
  ``updateDataSerialized(path, old -> data)``: a read and a setData with that
  read's version, retried on BadVersion, writing the same data whatever it
  read, so it overwrites anything written since the caller decided.
- Every ZooKeeper call costs a round trip (``zk_rtt_ms``). Long stalls are
  faults, drawn and logged where a stop task has decided and not yet
  written, acting where they act in reality (``leader_jvm``): a GC pause
  stops the whole leader JVM (the node ``leader-jvm``: event thread,
  ZooKeeper event thread, every stop task); a connection loss of the leader's
  client fails every call on the wire with ``ZkTimeout`` (Helix
  ``retryUntilConnected`` with the pinned retry timeout of -1: not made again),
  so the stop task whose write it cuts dies without writing, and holds the
  calls made during it until it reconnects inside the 30 s session.
- The stop task's token poll is one ``countChildren`` round trip per stream
  (``ZkAdapter.getNumUnclaimedTokensForDatastreams``).
- Followers stop the tasks of removed streams and claim their tokens
  (checking every 10 s, up to 60 s).

The actors run on the runtime port (``sim.runtime``) and a ZooKeeper-shaped
store, so the same code drives a real ZooKeeper through kazoo on threads.

Footprints (``World.declare_footprints``): besides the store, the queues and
the pool, which record their own, the actors share Python state, each piece
named with ``rt.touch`` where it is read or written: ``brooklin:datastreams``
(the leader's cache and every ``Datastream`` object it hands out, mutated by
``set_status`` and shared with stop tasks), ``brooklin:leader`` (busy,
running_tasks, the dedupe record, tasks_started), ``brooklin:deliveries``
(written by the watch callback and the event thread), ``brooklin:<follower>``
(its running, stopped and pending), ``brooklin:clients`` (clients done). The
observer reads them all to decide quiescence. The checkers read the order of
an entity's ``stop.request``, ``resume.ack``, ``stop.process``, ``stop.retry``
and ``status.write`` ops, so each step logging one writes ``brooklin:ops:<entity>``
(``entity_op``): such steps never commute, and their order is a real one.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from raceproof.models.brooklin.leader_jvm import (
    LeaderFaults,
    LeaderLink,
    ZkTimeout,
)
from raceproof.sim import (
    BadVersion,
    NoNode,
    Runtime,
)
from raceproof.sim.configs import require
from raceproof.sim.history import JSONValue
from raceproof.sim.store import Watcher

READY, PAUSED, STOPPING, STOPPED = "READY", "PAUSED", "STOPPING", "STOPPED"
LEGAL_TRANSITIONS = frozenset(
    {
        (READY, STOPPING),
        (PAUSED, STOPPING),
        (STOPPING, STOPPED),
        (STOPPED, READY),
        (PAUSED, READY),
        (READY, PAUSED),
    }
)
VARIANTS = {
    "buggy": "before PR #974 (5e20a9d9): markDatastreamsStopped checks STOPPING in the "
    "cache and writes its snapshot object unconditionally",
    "fix-zk-lookup": "PR #974 as merged (417d1f29): read the stream from ZooKeeper into the "
    "cache, write STOPPED if it is STOPPING (two calls; the write ignores what it finds)",
    "fix-conditional-write": "not in Brooklin: write STOPPED with the version read (setData "
    "with expected version); on BadVersion read again and decide again",
    "fix-stop-dedupe": "the seed's long-term plan (PR #974 text, not merged): each stop "
    "(stream, STOPPING version) is processed once; a failed one is re-triggered",
}

# The race windows' probes (issue 45: each where its window opens, not before). A lost resume
# needs a STOPPED write that lands on something its writer did not decide on, which opens one of
# two windows: before #974, a decision taken on a copy older than ZooKeeper's (the stale cache);
# under #974, a setData that met BadVersion, after which updateDataSerialized writes STOPPED over
# whatever it reads again (fix-conditional-write reads and decides again there instead). Both are
# brooklin-double-stop's declared probes. Neither opens under fix-stop-dedupe: each stop goes to
# one stop task, the only writer after the STOPPING it read.
STALE_MARK_WINDOW = "a stop task decided on a copy older than ZooKeeper's"
WRITE_CONFLICT_WINDOW = "a stop task's STOPPED write met BadVersion: a write landed after its read"
# The redundant stop: an assignment finds a STOPPING stream (at the version a stop task was
# already given) and would hand it to another stop task; fix-stop-dedupe's guard sits after it.
# It is brooklin-redundant-stop's window (that race is the second handing itself); for the lost
# resume it is only a precondition, long before the window (counted there, not declared).
STOP_AGAIN_WINDOW = "an assignment found a stop already handed to a stop task"
# The model's own shared state, as footprints for the proof's reduction (see above).
DATASTREAMS, LEADER, DELIVERIES, CLIENTS = (
    "brooklin:datastreams",
    "brooklin:leader",
    "brooklin:deliveries",
    "brooklin:clients",
)

ROOT = "/brooklin"
DMS = f"{ROOT}/dms"
NOTIFY = f"{ROOT}/notify"  # stands for the data of /dms, which a REST write touches
ASSIGN = f"{ROOT}/assign"
TOKENS = f"{ROOT}/tokens"
HANDLE_ADD_OR_DELETE = "HANDLE_ADD_OR_DELETE_DATASTREAM"
LEADER_DO_ASSIGNMENT = "LEADER_DO_ASSIGNMENT"
Gen = Generator[Any, Any, Any]


class Store(Protocol):
    """What the model needs of ZooKeeper (VersionedStore here, kazoo for real)."""

    def get(self, path: str) -> tuple[JSONValue, int]: ...
    def set(self, path: str, data: JSONValue, version: int = -1) -> int: ...
    def create(self, path: str, data: JSONValue = None) -> str: ...
    def delete(self, path: str, version: int = -1) -> None: ...
    def exists(self, path: str) -> bool: ...
    def children(self, path: str) -> list[str]: ...
    def ensure_path(self, path: str) -> None: ...
    def watch(self, path: str, callback: Watcher) -> None: ...


@dataclass(frozen=True)
class BrooklinConfig:
    """One cluster and workload; delays are the options a run chooses among (first = boring)."""

    followers: int = 2
    streams: tuple[str, ...] = ("A", "B")
    resumed: tuple[str, ...] = ("A",)  # streams the caller resumes once their stop returns
    restopped: tuple[str, ...] = ()  # streams a second caller stops again while STOPPING
    restop_after_ms: int = 3_000  # the second stop, after the first stop request
    tokens_enabled: bool = True
    force_stop_on_failure: bool = False  # forceStopStreamsOnFailure (default false)
    stop_gap_ms: tuple[int, ...] = (10_000, 2_000, 30_000)  # between successive stop requests
    resume_think_ms: tuple[int, ...] = (0, 4_000, 8_000)  # caller's pause before resuming
    leader_notify_ms: tuple[int, ...] = (0, 3_000)  # /dms change to the leader's event queue
    follower_notify_ms: tuple[int, ...] = (0, 1_000)  # assignment change to a follower
    task_stop_ms: tuple[int, ...] = (500, 12_000)  # a follower stopping one task
    zk_rtt_ms: int = 2  # one ZooKeeper request and its response
    gc_pause_ms: tuple[int, ...] = (0, 1_000)  # fault: the whole leader JVM paused mid-mark
    zk_connection_loss_ms: tuple[int, ...] = (0, 10_000)  # fault: the leader's client, < 30 s
    # Where a stop task has decided and not yet written, the faults above are drawn: at the
    # decision; after updateDataSerialized's first readData reply, before its setData; the same
    # after a BadVersion (fix-conditional-write writes right after deciding: "decided" only).
    fault_points: tuple[str, ...] = ("decided", "write", "retry")
    handler_ms: int = 5
    stop_poll_ms: int = 1_000
    stop_timeout_ms: int = 90_000
    token_poll_ms: int = 5_000
    token_timeout_ms: int = 60_000
    mark_retry_ms: int = 10_000
    mark_timeout_ms: int = 60_000
    follower_check_ms: int = 10_000
    follower_timeout_ms: int = 60_000
    executor_workers: int = 16
    settle_poll_ms: int = 1_000

    def __post_init__(self) -> None:
        require(self.followers >= 1, "followers must be >= 1")
        require(self.streams, "streams must name at least one stream")
        require(set(self.resumed) <= set(self.streams), "resumed streams must be streams")
        require(set(self.restopped) <= set(self.streams), "restopped streams must be streams")
        require(
            set(self.fault_points) <= {"decided", "write", "retry"},
            "fault_points are among decided, write, retry",
        )
        for name in (
            "stop_gap_ms",
            "resume_think_ms",
            "leader_notify_ms",
            "follower_notify_ms",
            "task_stop_ms",
            "gc_pause_ms",
            "zk_connection_loss_ms",
        ):
            options = getattr(self, name)
            require(options and all(d >= 0 for d in options), f"{name} needs delays >= 0")
        require(
            self.zk_rtt_ms >= 0 and self.zk_rtt_ms % 2 == 0,
            "zk_rtt_ms must be an even number >= 0 (a request's two one-way halves)",
        )


def entity_op(rt: Runtime, actor: str, kind: str, entities: Sequence[str], **fields: Any) -> None:
    """Log an op the checkers order per entity; the step writes each entity's op stream."""
    for entity in entities:
        rt.touch(f"brooklin:ops:{entity}")
    rt.log(actor, kind, **fields)


def stream_path(name: str) -> str:
    return f"{DMS}/{name}"


@dataclass(eq=False)
class Datastream:
    """One deserialized datastream object. The cache hands out this very instance."""

    name: str
    data: dict[str, JSONValue]
    version: int  # the znode version it was read at

    @property
    def status(self) -> str:
        return str(self.data["status"])

    def set_status(self, status: str) -> None:
        """``Datastream.setStatus``: changes the object every holder shares."""
        self.data["status"] = status


Snapshot = list[Datastream]


def write_status(
    rt: Runtime,
    zk: Store,
    link: LeaderLink,
    actor: str,
    name: str,
    data: dict[str, JSONValue],
    *,
    version_read: int | None,
    expected_version: int = -1,
    conditional: bool | None = None,
) -> Generator[Any, Any, int]:
    """One setData of a whole datastream object; logs the transition it really made.

    The op is logged where the write takes effect: at the server, when the
    request arrives (``link.call``), with the writer as its actor.
    ``version_read`` is the version the writer decided on; ``conditional`` says
    whether the write was conditional on that decision (default: a version given).
    """

    payload = dict(data)  # serialized when the request leaves

    def at_server() -> int:
        before, _ = zk.get(stream_path(name))
        new_version = zk.set(stream_path(name), dict(payload), expected_version)
        entity_op(
            rt,
            actor,
            "status.write",
            [name],
            entity=name,
            to=payload["status"],
            version_read=version_read,
            version_overwritten=new_version - 1,
            conditional=expected_version >= 0 if conditional is None else conditional,
            **{"from": before["status"]},
        )
        return new_version

    return (yield from link.call(at_server))


def update_datastream(
    rt: Runtime,
    zk: Store,
    link: LeaderLink,
    actor: str,
    ds: Datastream,
    version_read: int,
    before_write: Callable[[bool], None],
) -> Generator[Any, Any, bool]:
    """``ZkAdapter.updateDatastream``: exists, then ``updateDataSerialized(path, old -> data)``.

    ``before_write(retry)`` runs after each readData reply and before its
    setData leaves (``retry``: after a BadVersion): where a fault drawn there acts.
    """
    path = stream_path(ds.name)
    if not (yield from link.call(lambda: zk.exists(path))):
        return False
    retry = False
    while True:
        _, version = yield from link.call(lambda: zk.get(path))
        before_write(retry)
        retry = True
        rt.touch(DATASTREAMS, write=False)  # ds.data, shared with the cache
        rt.checkpoint(actor, "mark.write", entity=ds.name)
        try:
            yield from write_status(
                rt,
                zk,
                link,
                actor,
                ds.name,
                ds.data,
                version_read=version_read,
                expected_version=version,
                conditional=False,
            )
            return True
        except BadVersion:  # the updater ignores the old data: the retry writes the same
            rt.reach(WRITE_CONFLICT_WINDOW)
            rt.log(actor, "write.retry", entity=ds.name, expected_version=version)


def store_update(
    rt: Runtime,
    zk: Store,
    link: LeaderLink,
    host: str,
    name: str,
    data: dict[str, JSONValue],
    version_read: int,
) -> Gen:
    """``ZookeeperBackedDatastreamStore.updateDatastream(key, ds, notifyLeader=true)``."""
    yield from link.call(lambda: zk.get(stream_path(name)))  # getDatastream: it must exist
    yield from write_status(rt, zk, link, host, name, data, version_read=version_read)  # -1
    count, _ = yield from link.call(lambda: zk.get(NOTIFY))  # notifyLeaderOfDataChange:
    yield from link.call(lambda: zk.set(NOTIFY, int(count) + 1))  # updateDataSerialized on /dms


class DatastreamCache:
    """``CachedDatastreamReader``: names fresh, objects loaded lazily, shared with callers.

    ``refresh`` (``getAllDatastreams(true)``) and ``get(name, flush=True)``
    put new objects in; a caller's ``set_status`` on an object still cached
    is what the cache shows from then on.
    """

    def __init__(self, rt: Runtime, zk: Store, link: LeaderLink, names: Sequence[str]) -> None:
        self.rt, self.zk, self.link = rt, zk, link
        self.names = sorted(names)  # the child watch's list: no stream is created or deleted
        self.objects: dict[str, Datastream] = {}

    def _read(self, name: str) -> Generator[Any, Any, Datastream | None]:
        """``getDatastreamFromZk``: exists, then readData."""
        path = stream_path(name)
        if not (yield from self.link.call(lambda: self.zk.exists(path))):
            return None
        try:
            data, version = yield from self.link.call(lambda: self.zk.get(path))
        except NoNode:
            return None
        return Datastream(name, dict(data), version)

    def get(self, name: str, flush: bool = False) -> Generator[Any, Any, Datastream | None]:
        """``getDatastream(name, flushCache)``."""
        self.rt.touch(DATASTREAMS, write=False)
        ds = self.objects.get(name)
        if ds is None or flush:
            ds = yield from self._read(name)
            self.rt.touch(DATASTREAMS)
            if ds is not None:
                self.objects[name] = ds
        return ds

    def refresh(self) -> Gen:
        for name in (yield from self.link.call(lambda: self.zk.children(DMS))):
            yield from self.get(name, flush=True)

    def with_status(self, *statuses: str) -> Generator[Any, Any, Snapshot]:
        """``fetchDatastreamGroupsWithStatus``: the cached objects (``getAllDatastreams(false)``)."""
        found = []
        for name in self.names:  # the child watch keeps the names fresh (no call)
            ds = yield from self.get(name)
            self.rt.touch(DATASTREAMS, write=False)
            if ds is not None and ds.status in statuses:
                found.append(ds)
        return found


@dataclass
class Leader:
    rt: Runtime
    zk: Store
    variant: str
    config: BrooklinConfig
    link: LeaderLink
    faults: LeaderFaults
    handled: set[tuple[str, int]] = field(default_factory=set)  # fix-stop-dedupe's record
    # Probe bookkeeping, not Brooklin state, under ``brooklin:leader``: the (stream, version)
    # of every stop handed to a stop task.
    submitted: set[tuple[str, int]] = field(default_factory=set)
    # The probes read ZooKeeper's copy behind the leader's client (the harness looks, the
    # leader does not): the store itself, which records the read as a footprint.
    peek: Store | None = None
    running_tasks: int = 0
    busy: bool = False
    tasks_started: int = 0
    deliveries: int = 0

    def __post_init__(self) -> None:
        self.queue = self.rt.queue("leader-events", dedupe=True)
        self.zk_events = self.rt.queue("leader-zk-events")
        self.cache = DatastreamCache(
            rt=self.rt, zk=self.zk, link=self.link, names=self.config.streams
        )
        self.pool = self.rt.executor("stop-pool", self.config.executor_workers)

    def start(self) -> None:
        self.zk.watch(NOTIFY, self._on_dms_change)
        self.rt.spawn("leader-zk-events", self._deliver())
        self.rt.spawn("leader", self.event_loop())

    def _on_dms_change(self, _event: Any) -> None:
        self.rt.touch(DELIVERIES)
        self.deliveries += 1
        self.zk_events.put("dms-changed")

    def _deliver(self) -> Gen:
        """The ZooKeeper client's event thread: one notification at a time, in order."""
        while True:
            yield self.zk_events.get()
            yield self.rt.sleep(self.rt.choose("leader.notify-delay", self.config.leader_notify_ms))
            for event in (HANDLE_ADD_OR_DELETE, LEADER_DO_ASSIGNMENT):  # onDatastreamAddOrDrop
                if not self.queue.put(event):
                    self.rt.log("leader", "event.dropped", event=event)
            self.rt.touch(DELIVERIES)
            self.deliveries -= 1

    @property
    def idle(self) -> bool:
        self.rt.touch(LEADER, write=False)
        self.rt.touch(DELIVERIES, write=False)
        return (
            not self.busy
            and len(self.queue) == 0
            and self.running_tasks == 0
            and self.deliveries == 0
        )

    def event_loop(self) -> Gen:
        while True:
            event = yield self.queue.get()
            self.rt.touch(LEADER)
            self.busy = True
            self.rt.log("leader", "event.handle", event=event)
            try:
                yield from self.handle(event)
            except ZkTimeout as exc:  # Coordinator.handleEvent 1221-1224; LDA's own 1532-1535
                self.rt.log("leader", "event.failed", event=event, error=str(exc))
                if event == LEADER_DO_ASSIGNMENT:  # scheduleLeaderDoAssignmentRetry: putFirst
                    self.queue.put_front(LEADER_DO_ASSIGNMENT)
            yield self.rt.sleep(self.config.handler_ms)
            self.rt.touch(LEADER)
            self.busy = False

    def handle(self, event: str) -> Gen:
        """One event (417d1f29 ``Coordinator.handleEvent``); a ZooKeeper call may raise
        ``ZkTimeout``: the refresh is then left half done (no retry), the assignment is
        retried at the front of the queue (``handleLeaderDoAssignment`` 1552-1567)."""
        if event == HANDLE_ADD_OR_DELETE:
            self.rt.checkpoint("leader", "cache.refresh")
            yield from self.cache.refresh()
            self.rt.touch(DATASTREAMS, write=False)
            self.rt.log(
                "leader",
                "cache.refresh",
                statuses={name: ds.status for name, ds in sorted(self.cache.objects.items())},
            )
        else:
            yield from self.do_assignment()

    def do_assignment(self) -> Gen:
        config = self.config
        assignable = {ds.name for ds in (yield from self.cache.with_status(READY, PAUSED))}
        stopping = yield from self.cache.with_status(STOPPING)
        self.rt.touch(LEADER)  # handled, running_tasks, tasks_started (this step writes them)
        if any((ds.name, ds.version) in self.submitted for ds in stopping):
            self.rt.reach(STOP_AGAIN_WINDOW)
        if config.tokens_enabled:
            self.submitted.update((ds.name, ds.version) for ds in stopping)
        if self.variant == "fix-stop-dedupe":
            stopping = [ds for ds in stopping if (ds.name, ds.version) not in self.handled]
            self.handled.update((ds.name, ds.version) for ds in stopping)
        new = {
            f: [
                n
                for i, n in enumerate(config.streams)
                if n in assignable and i % config.followers == f
            ]
            for f in range(config.followers)
        }
        names = [ds.name for ds in stopping]
        self.rt.log("leader", "assign", stopping=names, assignable=sorted(assignable))
        tokens = names if config.tokens_enabled else []
        yield from self.link.call(lambda: self._assign_at_server(new, tokens))
        if tokens:
            self.rt.touch(LEADER)  # running_tasks, tasks_started
            self.running_tasks += 1
            self.tasks_started += 1
            actor = f"stop-task{self.tasks_started}"
            self.rt.log("leader", "stop-task.submit", task=actor, streams=names)
            entity_op(self.rt, actor, "stop.process", names, streams=names)
            self.pool.submit("stop", lambda: self.stop_task(actor, stopping))
        elif stopping:
            entity_op(self.rt, "leader", "stop.process", names, streams=names)
            yield from self.mark_stopped("leader", stopping, set())

    def _assign_at_server(self, new: dict[int, list[str]], tokens: Sequence[str]) -> None:
        """``updateAllAssignmentsAndIssueTokens`` (``ZkAdapter.java`` 752-816), applied at the server.

        It reads the current assignment, issues a token to each follower holding a
        task of a stopping stream and writes the new assignment: many calls in the
        code, one request here (so no leader fault splits them; they are not on
        the lost resume's path).
        """
        previous = {f: self._assignment(f) for f in sorted(new)}
        for name in tokens:
            for f in sorted(new):
                if name in previous[f] and not self.zk.exists(f"{TOKENS}/{name}/follower{f}"):
                    self.zk.ensure_path(f"{TOKENS}/{name}")
                    self.zk.create(f"{TOKENS}/{name}/follower{f}")
                    self.rt.log("leader", "token.issue", entity=name, follower=f"follower{f}")
        self._write_assignment(previous, new)

    def _assignment(self, follower: int) -> list[str]:
        data, _ = self.zk.get(f"{ASSIGN}/follower{follower}")
        return list(data)

    def _write_assignment(self, previous: dict[int, list[str]], new: dict[int, list[str]]) -> None:
        for f in sorted(new):
            if new[f] != previous[f]:
                self.zk.set(f"{ASSIGN}/follower{f}", new[f])
                self.rt.log("leader", "assignment.write", follower=f"follower{f}", tasks=new[f])

    def _revoke_at_server(self, names: Sequence[str]) -> list[str]:
        """The streams whose tokens are still unclaimed, their tokens deleted (revoked)."""
        failed = [
            n
            for n in sorted(names)
            if self.zk.exists(f"{TOKENS}/{n}") and self.zk.children(f"{TOKENS}/{n}")
        ]
        for name in failed:
            for token in self.zk.children(f"{TOKENS}/{name}"):
                self.zk.delete(f"{TOKENS}/{name}/{token}")
        return failed

    def _count_tokens(self, name: str) -> int:
        """``countChildren`` of the stream's token path (0 if it has none)."""
        path = f"{TOKENS}/{name}"
        return len(self.zk.children(path)) if self.zk.exists(path) else 0

    def stop_task(self, actor: str, snapshot: Snapshot) -> Gen:
        """waitForStopToPropagateAndMarkDatastreamsStopped, on a pool thread (1571-1609).

        A ``ZkTimeout`` escapes ``PollUtils.poll`` (it catches only
        InterruptedException, ``PollUtils.java`` 123-143) and ends the task; the
        future ``_tokenClaimExecutor.submit`` returned is never read
        (``Coordinator.java`` 1521-1522), so nothing hears of it: the streams the
        task had not marked stay STOPPING until a later LEADER_DO_ASSIGNMENT
        (any later REST write, a retried stop included) hands them to a new task.
        """
        names = [ds.name for ds in snapshot]
        try:
            failed = yield from self.await_tokens(actor, names)
            start_ms = self.rt.now_ms()
            while True:
                done = yield from self.mark_stopped(actor, snapshot, failed)
                if done or self.rt.now_ms() - start_ms >= self.config.mark_timeout_ms:
                    break
                yield self.rt.sleep(self.config.mark_retry_ms)
            self.rt.log(actor, "stop-task.done", streams=names)
        except ZkTimeout as exc:
            failed = set()
            self.rt.log(actor, "stop-task.died", streams=names, error=str(exc))
        self.rt.touch(LEADER)
        if self.variant == "fix-stop-dedupe" and failed:
            self.handled.difference_update(
                (ds.name, ds.version) for ds in snapshot if ds.name in failed
            )
            entity_op(self.rt, actor, "stop.retry", sorted(failed), streams=sorted(failed))
            self.queue.put(LEADER_DO_ASSIGNMENT)  # the seed's "on failure, call LDA again"
        self.running_tasks -= 1

    def await_tokens(self, actor: str, names: Sequence[str]) -> Generator[Any, Any, set[str]]:
        """The token poll: every 5 s up to 60 s, ``getNumUnclaimedTokensForDatastreams`` == 0.

        That is one ``countChildren`` per stream (417d1f29 ``ZkAdapter.java``
        848-855; Helix ``countChildren`` is a ``getChildren``, ``ZkClient.java``
        1085-1091), each a round trip through the leader's client. Returns the
        streams whose tokens were not claimed (revoked: those streams failed).
        """
        if not self.config.tokens_enabled:
            return set()
        start_ms = self.rt.now_ms()
        while True:
            unclaimed = 0
            for name in names:
                unclaimed += yield from self.link.call(partial(self._count_tokens, name))
            if not unclaimed or self.rt.now_ms() - start_ms >= self.config.token_timeout_ms:
                break
            yield self.rt.sleep(self.config.token_poll_ms)
        if not unclaimed:
            return set()
        failed = yield from self.link.call(lambda: self._revoke_at_server(names))
        self.rt.log(actor, "tokens.unclaimed", streams=failed)
        return set(failed)

    def stall_before_set(self, actor: str, name: str, retry: bool) -> None:
        """``updateDataSerialized``'s place: after a readData reply, before its setData leaves."""
        self.stall(actor, name, "retry" if retry else "write")

    def stall(self, actor: str, name: str, point: str = "decided") -> None:
        """The drawn faults, where a stop task has decided and not yet written (``leader_jvm``).

        Drawn at each of the configuration's ``fault_points``: at the decision
        (``decided``) and, in ``updateDataSerialized``, after its first readData
        reply and before that setData leaves (``write``), and the same after a
        BadVersion (``retry``); the labels end ``.<actor>``, ``.<actor>.write``,
        ``.<actor>.retry``. A GC pause stops the whole leader JVM from
        the task's next step: its next request waits for the pause's end, and
        requests other leader threads already sent are applied meanwhile. A
        connection loss drops the leader's client just after the task's next
        request leaves, which then fails with ``ZkTimeout`` (never applied), as
        does every leader request on the wire and every one made during the loss
        (failed at the next failed reconnect attempt).
        """
        if point not in self.config.fault_points:
            return
        suffix = "" if point == "decided" else f".{point}"
        for kind, options, act in (
            ("gc-pause", self.config.gc_pause_ms, self.faults.gc_pause),
            ("zk-connection-loss", self.config.zk_connection_loss_ms, self.faults.lose_connection),
        ):
            duration_ms = self.rt.choose(f"fault.{kind}.{actor}{suffix}", options)
            if duration_ms:
                self.rt.log(actor, f"fault.{kind}", entity=name, duration_ms=duration_ms)
                act(duration_ms)

    def decide(self, actor: str, name: str, version_read: int) -> None:
        """A decision to mark ``name`` STOPPED, taken on what was read at ``version_read``."""
        self.rt.checkpoint(actor, "mark.decided", entity=name)
        _, current = (self.peek or self.zk).get(stream_path(name))
        if current != version_read:
            self.rt.reach(STALE_MARK_WINDOW)

    def set_stopped(self, actor: str, ds: Datastream) -> None:
        """``datastream.setStatus(STOPPED)``, logging whether that object is the cached one."""
        self.rt.touch(DATASTREAMS)
        ds.set_status(STOPPED)
        self.rt.log(
            actor,
            "object.set-status",
            entity=ds.name,
            to=STOPPED,
            cached=self.cache.objects.get(ds.name) is ds,
        )

    def mark_stopped(self, actor: str, snapshot: Snapshot, failed: set[str]) -> Gen:
        """``markDatastreamsStopped``; True unless a stream's znode is gone."""
        success = True
        may_mark = [
            ds for ds in snapshot if self.config.force_stop_on_failure or ds.name not in failed
        ]
        if self.variant in ("buggy", "fix-stop-dedupe"):
            self.rt.checkpoint(actor, "mark.check")
            cached = {ds.name: ds for ds in (yield from self.cache.with_status(STOPPING))}
            self.rt.touch(DATASTREAMS, write=False)
            self.rt.log(actor, "cache.read", stopping=sorted(cached))
            for ds in may_mark:
                if ds.name not in cached:
                    continue
                self.decide(actor, ds.name, cached[ds.name].version)
                self.set_stopped(actor, ds)
                self.stall(actor, ds.name)
                success &= yield from update_datastream(
                    self.rt,
                    self.zk,
                    self.link,
                    actor,
                    ds,
                    cached[ds.name].version,
                    partial(self.stall_before_set, actor, ds.name),
                )
            return success
        for ds in may_mark:
            while True:
                self.rt.checkpoint(actor, "mark.read", entity=ds.name)
                fresh = yield from self.cache.get(ds.name, flush=True)
                self.rt.touch(DATASTREAMS, write=False)
                if fresh is None:
                    break
                self.rt.log(
                    actor, "zk.read", entity=ds.name, status=fresh.status, version=fresh.version
                )
                if fresh.status != STOPPING:
                    break
                self.decide(actor, ds.name, fresh.version)
                self.set_stopped(actor, fresh)
                self.stall(actor, ds.name)
                if self.variant == "fix-zk-lookup":
                    success &= yield from update_datastream(
                        self.rt,
                        self.zk,
                        self.link,
                        actor,
                        fresh,
                        fresh.version,
                        partial(self.stall_before_set, actor, ds.name),
                    )
                    break
                if (yield from self.write_conditional(actor, fresh)):
                    break
        return success

    def write_conditional(self, actor: str, fresh: Datastream) -> Generator[Any, Any, bool]:
        """fix-conditional-write: setData with the version read; False on BadVersion (read again)."""
        self.rt.touch(DATASTREAMS, write=False)  # fresh.data, shared with the cache
        self.rt.checkpoint(actor, "mark.write", entity=fresh.name)
        try:  # setData(path, data, version read)
            yield from write_status(
                self.rt,
                self.zk,
                self.link,
                actor,
                fresh.name,
                fresh.data,
                version_read=fresh.version,
                expected_version=fresh.version,
            )
            return True
        except BadVersion:  # it reads again and decides again
            self.rt.reach(WRITE_CONFLICT_WINDOW)
            self.rt.log(actor, "write.conflict", entity=fresh.name, expected_version=fresh.version)
            return False
