"""Brooklin's leader coordinator stopping and resuming datastreams (PR #974, double-STOP).

The actors follow MODELS.md §1 and Brooklin's ``Coordinator``:

- REST ``stop`` / ``resume`` on any host read ZooKeeper, write the whole
  datastream object, and notify the leader by touching a znode; ``stop``
  then polls ZooKeeper every second until it sees STOPPED.
- The leader's event thread takes one event at a time from a queue that
  drops an event equal to one already queued. A notification enqueues
  HANDLE_ADD_OR_DELETE_DATASTREAM, which refreshes the datastream cache in
  full and enqueues LEADER_DO_ASSIGNMENT.
- LEADER_DO_ASSIGNMENT reads the STOPPING streams **from the cache, without
  refresh**, assigns only READY and PAUSED streams, and, with assignment
  tokens, issues tokens to the followers that held tasks of the stopping
  streams and submits an asynchronous stop task with that snapshot to a
  16-worker pool. Without tokens it marks the streams stopped inline.
- The stop task polls every 5 s (up to 60 s) for the tokens to be claimed,
  then every 10 s (up to 60 s) runs markDatastreamsStopped, which in the
  buggy code checks STOPPING against the cache and writes its snapshot
  object with STOPPED, unconditionally. The leader's own writes never
  update its cache.
- Followers stop the tasks of removed streams and claim their tokens
  (checking every 10 s, up to 60 s).

The actors run on the runtime port (``sim.runtime``) and a ZooKeeper-shaped
store, so the same code drives a real ZooKeeper through kazoo on threads.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from raceproof.sim import BadVersion, NoNode, Runtime, SimRuntime, VersionedStore, World, poll_until
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
    "buggy": "before PR #974: markDatastreamsStopped checks STOPPING in the stale cache "
    "and writes its snapshot object unconditionally",
    "fix-zk-lookup": "PR #974 as merged: read the stream from ZooKeeper, write STOPPED "
    "if it is STOPPING (read and write still separate, the write unconditional)",
    "fix-conditional-write": "write STOPPED with the version read (setData with expected "
    "version); on BadVersion read again and decide again",
    "fix-stop-dedupe": "the seed's long-term plan: each stop (stream, STOPPING version) is "
    "processed once; a failed one is re-triggered",
}

ROOT = "/brooklin"
DMS = f"{ROOT}/dms"
NOTIFY = f"{ROOT}/notify"
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
    tokens_enabled: bool = True
    stop_gap_ms: tuple[int, ...] = (10_000, 2_000, 30_000)  # between successive stop requests
    resume_think_ms: tuple[int, ...] = (0, 4_000, 8_000)  # caller's pause before resuming
    leader_notify_ms: tuple[int, ...] = (0, 3_000)  # watch delivery to the leader
    follower_notify_ms: tuple[int, ...] = (0, 1_000)  # watch delivery to a follower
    task_stop_ms: tuple[int, ...] = (500, 12_000)  # a follower stopping one task
    zk_write_ms: tuple[int, ...] = (5, 2_000)  # the leader's round trip for one write
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
        assert self.followers >= 1 and self.streams, "need followers and streams"
        assert set(self.resumed) <= set(self.streams), "resumed streams must be streams"
        for name in ("stop_gap_ms", "resume_think_ms", "leader_notify_ms", "follower_notify_ms",
                     "task_stop_ms", "zk_write_ms"):  # fmt: skip
            options = getattr(self, name)
            assert options and all(d >= 0 for d in options), f"{name} needs delays >= 0"


def stream_path(name: str) -> str:
    return f"{DMS}/{name}"


def write_status(
    rt: Runtime,
    zk: Store,
    actor: str,
    name: str,
    data: dict[str, JSONValue],
    *,
    version_read: int | None,
    expected_version: int = -1,
) -> int:
    """Write a whole datastream object and log the transition it really made."""
    before, _ = zk.get(stream_path(name))
    new_version = zk.set(stream_path(name), data, expected_version)
    rt.log(
        actor,
        "status.write",
        entity=name,
        to=data["status"],
        version_read=version_read,
        version_overwritten=new_version - 1,
        conditional=expected_version >= 0,
        **{"from": before["status"]},
    )
    return new_version


def notify_leader(zk: Store) -> None:
    count, _ = zk.get(NOTIFY)
    zk.set(NOTIFY, int(count) + 1)


class DatastreamCache:
    """The leader's cache: names fresh (a child watch), objects loaded lazily,
    refreshed only in full or invalidated; the leader's own writes are not seen."""

    def __init__(self, zk: Store) -> None:
        self.zk = zk
        self.objects: dict[str, tuple[dict[str, JSONValue], int]] = {}

    def refresh(self) -> None:
        self.objects = {}
        for name in self.zk.children(DMS):
            data, version = self.zk.get(stream_path(name))
            self.objects[name] = (data, version)

    def get(self, name: str) -> tuple[dict[str, JSONValue], int] | None:
        if name not in self.objects:
            try:
                data, version = self.zk.get(stream_path(name))
            except NoNode:
                return None
            self.objects[name] = (data, version)
        data, version = self.objects[name]
        return dict(data), version

    def with_status(self, *statuses: str) -> list[tuple[str, dict[str, JSONValue], int]]:
        found = []
        for name in self.zk.children(DMS):
            cached = self.get(name)
            if cached is not None and cached[0]["status"] in statuses:
                found.append((name, cached[0], cached[1]))
        return found


@dataclass
class Leader:
    rt: Runtime
    zk: Store
    variant: str
    config: BrooklinConfig
    handled: set[tuple[str, int]] = field(default_factory=set)  # fix-stop-dedupe's record
    running_tasks: int = 0
    busy: bool = False
    tasks_started: int = 0

    def __post_init__(self) -> None:
        self.queue = self.rt.queue("leader-events", dedupe=True)
        self.cache = DatastreamCache(self.zk)
        self.pool = self.rt.executor("stop-pool", self.config.executor_workers)

    def start(self) -> None:
        self.zk.watch(NOTIFY, lambda _event: self.rt.spawn("leader-watch", self._deliver()))
        self.rt.spawn("leader", self.event_loop())

    def _deliver(self) -> Gen:
        yield self.rt.sleep(self.rt.choose("leader.notify-delay", self.config.leader_notify_ms))
        if not self.queue.put(HANDLE_ADD_OR_DELETE):
            self.rt.log("leader", "event.dropped", event=HANDLE_ADD_OR_DELETE)

    @property
    def idle(self) -> bool:
        return not self.busy and len(self.queue) == 0 and self.running_tasks == 0

    def event_loop(self) -> Gen:
        while True:
            event = yield self.queue.get()
            self.busy = True
            self.rt.log("leader", "event.handle", event=event)
            if event == HANDLE_ADD_OR_DELETE:
                self.rt.checkpoint("leader", "cache.refresh")
                self.cache.refresh()
                self.rt.log("leader", "cache.refresh", statuses={
                    name: data["status"] for name, (data, _) in sorted(self.cache.objects.items())
                })  # fmt: skip
                self.queue.put(LEADER_DO_ASSIGNMENT)
            else:
                yield from self.do_assignment()
            yield self.rt.sleep(self.config.handler_ms)
            self.busy = False

    def do_assignment(self) -> Gen:
        config = self.config
        stopping = self.cache.with_status(STOPPING)
        if self.variant == "fix-stop-dedupe":
            stopping = [s for s in stopping if (s[0], s[2]) not in self.handled]
            self.handled.update((name, version) for name, _, version in stopping)
        assignable = {name for name, _, _ in self.cache.with_status(READY, PAUSED)}
        previous = {f: self._assignment(f) for f in range(config.followers)}
        new = {
            f: [
                n
                for i, n in enumerate(config.streams)
                if n in assignable and i % config.followers == f
            ]
            for f in range(config.followers)
        }
        self.rt.log(
            "leader", "assign", stopping=[s[0] for s in stopping], assignable=sorted(assignable)
        )
        if config.tokens_enabled and stopping:
            for name, _, _ in stopping:
                for f in range(config.followers):
                    if name in previous[f] and not self.zk.exists(f"{TOKENS}/{name}/follower{f}"):
                        self.zk.ensure_path(f"{TOKENS}/{name}")
                        self.zk.create(f"{TOKENS}/{name}/follower{f}")
                        self.rt.log("leader", "token.issue", entity=name, follower=f"follower{f}")
            self._write_assignment(previous, new)
            self.running_tasks += 1
            self.tasks_started += 1
            actor = f"stop-task{self.tasks_started}"
            self.rt.log("leader", "stop-task.submit", task=actor, streams=[s[0] for s in stopping])
            self.pool.submit("stop", lambda: self.stop_task(actor, stopping))
        else:
            self._write_assignment(previous, new)
            if stopping:
                yield from self.mark_stopped("leader", stopping, set())

    def _assignment(self, follower: int) -> list[str]:
        data, _ = self.zk.get(f"{ASSIGN}/follower{follower}")
        return list(data)

    def _write_assignment(self, previous: dict[int, list[str]], new: dict[int, list[str]]) -> None:
        for f in sorted(new):
            if new[f] != previous[f]:
                self.zk.set(f"{ASSIGN}/follower{f}", new[f])
                self.rt.log("leader", "assignment.write", follower=f"follower{f}", tasks=new[f])

    def _unclaimed(self, names: Sequence[str]) -> list[str]:
        return [
            n
            for n in names
            if self.zk.exists(f"{TOKENS}/{n}") and self.zk.children(f"{TOKENS}/{n}")
        ]

    def stop_task(self, actor: str, snapshot: list[tuple[str, dict[str, JSONValue], int]]) -> Gen:
        """waitForStopToPropagateAndMarkDatastreamsStopped, on a pool thread."""
        config = self.config
        names = [s[0] for s in snapshot]
        failed: set[str] = set()
        if config.tokens_enabled:
            claimed = yield from poll_until(
                self.rt,
                lambda: not self._unclaimed(names),
                config.token_poll_ms,
                config.token_timeout_ms,
            )
            if not claimed:
                failed = set(self._unclaimed(names))
                for name in sorted(failed):
                    for token in self.zk.children(f"{TOKENS}/{name}"):
                        self.zk.delete(f"{TOKENS}/{name}/{token}")
                self.rt.log(actor, "tokens.unclaimed", streams=sorted(failed))
        start_ms = self.rt.now_ms()
        while True:
            done = yield from self.mark_stopped(actor, snapshot, failed)
            if done or self.rt.now_ms() - start_ms >= config.mark_timeout_ms:
                break
            yield self.rt.sleep(config.mark_retry_ms)
        self.rt.log(actor, "stop-task.done", streams=names)
        if self.variant == "fix-stop-dedupe" and failed:
            self.handled.difference_update((n, v) for n, _, v in snapshot if n in failed)
            self.queue.put(LEADER_DO_ASSIGNMENT)  # the seed's "on failure, call LDA again"
        self.running_tasks -= 1

    def mark_stopped(
        self, actor: str, snapshot: list[tuple[str, dict[str, JSONValue], int]], failed: set[str]
    ) -> Generator[Any, Any, bool]:
        if self.variant in ("buggy", "fix-stop-dedupe"):
            self.rt.checkpoint(actor, "mark.check")
            stopping_now = {name for name, _, _ in self.cache.with_status(STOPPING)}
            self.rt.log(actor, "cache.read", stopping=sorted(stopping_now))
            for name, data, version in snapshot:
                if name in stopping_now and name not in failed:
                    self.rt.checkpoint(actor, "mark.decided", entity=name)
                    yield self.rt.sleep(
                        self.rt.choose(f"{actor}.zk-write", self.config.zk_write_ms)
                    )
                    self.rt.checkpoint(actor, "mark.write", entity=name)
                    write_status(
                        self.rt,
                        self.zk,
                        actor,
                        name,
                        {**data, "status": STOPPED},
                        version_read=version,
                    )
            return True
        for name, _, _ in snapshot:
            if name in failed:
                continue
            while True:
                self.rt.checkpoint(actor, "mark.read", entity=name)
                fresh, version = self.zk.get(stream_path(name))
                self.rt.log(actor, "zk.read", entity=name, status=fresh["status"], version=version)
                if fresh["status"] != STOPPING:
                    break
                self.rt.checkpoint(actor, "mark.decided", entity=name)
                yield self.rt.sleep(self.rt.choose(f"{actor}.zk-write", self.config.zk_write_ms))
                self.rt.checkpoint(actor, "mark.write", entity=name)
                stopped = {**fresh, "status": STOPPED}
                if self.variant == "fix-zk-lookup":
                    write_status(self.rt, self.zk, actor, name, stopped, version_read=version)
                    break
                try:
                    write_status(self.rt, self.zk, actor, name, stopped, version_read=version,
                                 expected_version=version)  # fmt: skip
                    break
                except BadVersion:
                    self.rt.log(actor, "write.conflict", entity=name, expected_version=version)
        return True


@dataclass
class Follower:
    rt: Runtime
    zk: Store
    index: int
    config: BrooklinConfig
    running: set[str] = field(default_factory=set)
    stopped: dict[str, bool] = field(default_factory=dict)
    pending: int = 0  # deliveries, task stops and claim loops under way

    @property
    def name(self) -> str:
        return f"follower{self.index}"

    def start(self) -> None:
        data, _ = self.zk.get(f"{ASSIGN}/{self.name}")
        self.running = set(data)
        self.zk.watch(
            f"{ASSIGN}/{self.name}",
            lambda _event: self._spawn(f"{self.name}-watch", self._on_change()),
        )

    def _spawn(self, actor: str, body: Gen) -> None:
        self.pending += 1
        self.rt.spawn(actor, self._counted(body))

    def _counted(self, body: Gen) -> Gen:
        try:
            yield from body
        finally:
            self.pending -= 1

    def _on_change(self) -> Gen:
        yield self.rt.sleep(
            self.rt.choose(f"{self.name}.notify-delay", self.config.follower_notify_ms)
        )
        data, _ = self.zk.get(f"{ASSIGN}/{self.name}")
        assigned = set(data)
        removed = sorted(self.running - assigned)
        self.running = assigned
        for name in removed:
            self.stopped[name] = False
            self._spawn(f"{self.name}/stop-{name}", self._stop_task(name))
        if removed:
            self._spawn(f"{self.name}/claim", self._claim(removed))

    def _stop_task(self, name: str) -> Gen:
        yield self.rt.sleep(self.rt.choose(f"{self.name}.task-stop", self.config.task_stop_ms))
        self.stopped[name] = True
        self.rt.log(self.name, "task.stopped", entity=name)

    def _claim(self, removed: list[str]) -> Gen:
        config = self.config
        done = yield from poll_until(
            self.rt, lambda: all(self.stopped[n] for n in removed), config.follower_check_ms,
            config.follower_timeout_ms,
        )  # fmt: skip
        if not done:
            self.rt.log(self.name, "claim.timeout", streams=removed)
            return
        for name in removed:
            token = f"{TOKENS}/{name}/{self.name}"
            if self.zk.exists(token):
                self.zk.delete(token)
                self.rt.log(self.name, "token.claim", entity=name)


def rest_stop(
    rt: Runtime, zk: Store, host: str, name: str, config: BrooklinConfig
) -> Generator[Any, Any, bool]:
    data, version = zk.get(stream_path(name))
    rt.log(host, "stop.request", entity=name, status=data["status"])
    if data["status"] in (READY, PAUSED):
        write_status(rt, zk, host, name, {**data, "status": STOPPING}, version_read=version)
        notify_leader(zk)
    stopped = yield from poll_until(
        rt, lambda: zk.get(stream_path(name))[0]["status"] == STOPPED,
        config.stop_poll_ms, config.stop_timeout_ms,
    )  # fmt: skip
    rt.log(host, "stop.ack" if stopped else "stop.timeout", entity=name)
    return stopped


def rest_resume(rt: Runtime, zk: Store, host: str, name: str) -> bool:
    data, version = zk.get(stream_path(name))
    if data["status"] not in (STOPPED, PAUSED):
        rt.log(host, "resume.rejected", entity=name, status=data["status"])
        return False
    rt.checkpoint(host, "resume.decided", entity=name)
    write_status(rt, zk, host, name, {**data, "status": READY}, version_read=version)
    rt.checkpoint(host, "resume.written", entity=name)
    notify_leader(zk)
    rt.log(host, "resume.ack", entity=name)
    return True


@dataclass
class Cluster:
    rt: Runtime
    zk: Store
    variant: str
    config: BrooklinConfig
    leader: Leader = field(init=False)
    followers: list[Follower] = field(init=False)
    clients_done: int = 0

    def __post_init__(self) -> None:
        assert self.variant in VARIANTS, f"unknown variant {self.variant}"
        self.leader = Leader(self.rt, self.zk, self.variant, self.config)
        self.followers = [
            Follower(self.rt, self.zk, f, self.config) for f in range(self.config.followers)
        ]

    def install(self) -> None:
        """Create the znodes: every stream READY, each with one task on one follower."""
        config = self.config
        for path in (DMS, ASSIGN, TOKENS):
            self.zk.ensure_path(path)
        if not self.zk.exists(NOTIFY):
            self.zk.create(NOTIFY, 0)
        for name in config.streams:
            self.zk.create(stream_path(name), {"name": name, "status": READY, "connector": "kafka"})
        for f in range(config.followers):
            tasks = [n for i, n in enumerate(config.streams) if i % config.followers == f]
            self.zk.create(f"{ASSIGN}/follower{f}", tasks)

    def start(self) -> None:
        self.leader.start()
        for follower in self.followers:
            follower.start()
        gap_ms = self.rt.choose("workload.stop-gap", self.config.stop_gap_ms)
        for i, name in enumerate(self.config.streams):
            self.rt.spawn(f"client-{name}", self.client(name, i * gap_ms))
        self.rt.spawn("observer", self.observer())

    def client(self, name: str, start_ms: int) -> Gen:
        """The caller's usual behaviour: stop, wait for it, then resume on another host."""
        yield self.rt.sleep(start_ms)
        stopped = yield from rest_stop(self.rt, self.zk, "rest@host1", name, self.config)
        if stopped and name in self.config.resumed:
            yield self.rt.sleep(self.rt.choose(f"client-{name}.think", self.config.resume_think_ms))
            rest_resume(self.rt, self.zk, "rest@host2", name)
        self.clients_done += 1

    @property
    def quiet(self) -> bool:
        return (
            self.clients_done == len(self.config.streams)
            and self.leader.idle
            and all(f.pending == 0 for f in self.followers)
        )

    def observer(self) -> Gen:
        """Waits for quiescence, then records every stream's final status."""
        yield self.rt.sleep(self.config.settle_poll_ms // 2 + 1)  # off the pollers' beat
        while not self.quiet:
            yield self.rt.sleep(self.config.settle_poll_ms)
        statuses = {n: self.zk.get(stream_path(n))[0]["status"] for n in self.config.streams}
        self.rt.log("observer", "final", statuses=statuses)
        self.rt.finish()


def build(world: World, variant: str, config: BrooklinConfig) -> None:
    """Run the cluster simulated: a VersionedStore as ZooKeeper, SimPy processes as threads."""
    cluster = Cluster(SimRuntime(world), VersionedStore(world), variant, config)
    cluster.install()
    cluster.start()
