"""Brooklin's cluster: followers, the REST clients, and ``build``, which wires the leader to them.

Split from ``model.py`` (the leader, its cache and the datastream writes) so each
module stays readable; ``model.py``'s docstring cites the facts both follow
(linkedin/brooklin 5e20a9d9 and 417d1f29, ``docs/models/brooklin.md``). The
followers stop the tasks of removed streams and claim their tokens; the REST
``stop`` and ``resume`` read, write and notify as ``DatastreamResources`` does.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from raceproof.models.brooklin.leader_jvm import (
    LEADER_CLIENT,
    LEADER_NODE,
    RECONNECT_ATTEMPT_MS,
    SESSION_TIMEOUT_MS,
    ClientLink,
    JvmFaults,
    LeaderFaults,
    LeaderLink,
    NoLeaderFaults,
    PlainLink,
    ServerLink,
)
from raceproof.models.brooklin.model import (
    ASSIGN,
    CLIENTS,
    DMS,
    NOTIFY,
    PAUSED,
    READY,
    STOPPED,
    STOPPING,
    TOKENS,
    VARIANTS,
    BrooklinConfig,
    Gen,
    Leader,
    Store,
    entity_op,
    store_update,
    stream_path,
)
from raceproof.sim import (
    Runtime,
    SimRuntime,
    VersionedStore,
    World,
    ZkClient,
    poll_until,
)
from raceproof.sim.configs import require


@dataclass
class Follower:
    rt: Runtime
    zk: Store
    link: LeaderLink
    index: int
    config: BrooklinConfig
    running: set[str] = field(default_factory=set)
    stopped: dict[str, bool] = field(default_factory=dict)
    pending: int = 0  # deliveries, task stops and claim loops under way

    @property
    def name(self) -> str:
        return f"follower{self.index}"

    @property
    def idle(self) -> bool:
        self.rt.touch(self.resource, write=False)
        return self.pending == 0

    @property
    def resource(self) -> str:
        return f"brooklin:{self.name}"

    def start(self) -> None:
        data, _ = self.zk.get(f"{ASSIGN}/{self.name}")
        self.rt.touch(self.resource)
        self.running = set(data)
        self.zk.watch(
            f"{ASSIGN}/{self.name}",
            lambda _event: self._spawn(f"{self.name}-watch", self._on_change()),
        )

    def _spawn(self, actor: str, body: Gen) -> None:
        self.rt.touch(self.resource)
        self.pending += 1
        self.rt.spawn(actor, self._counted(body))

    def _counted(self, body: Gen) -> Gen:
        try:
            yield from body
        finally:
            self.rt.touch(self.resource)
            self.pending -= 1

    def _on_change(self) -> Gen:
        yield self.rt.sleep(
            self.rt.choose(f"{self.name}.notify-delay", self.config.follower_notify_ms)
        )
        data, _ = yield from self.link.call(lambda: self.zk.get(f"{ASSIGN}/{self.name}"))
        assigned = set(data)
        self.rt.touch(self.resource)
        removed = sorted(self.running - assigned)
        self.running = assigned
        for name in removed:
            self.stopped[name] = False
            self._spawn(f"{self.name}/stop-{name}", self._stop_task(name))
        if removed:
            self._spawn(f"{self.name}/claim", self._claim(removed))

    def _stop_task(self, name: str) -> Gen:
        yield self.rt.sleep(self.rt.choose(f"{self.name}.task-stop", self.config.task_stop_ms))
        self.rt.touch(self.resource)
        self.stopped[name] = True
        self.rt.log(self.name, "task.stopped", entity=name)

    def _claim(self, removed: list[str]) -> Gen:
        config = self.config

        def all_stopped() -> bool:
            self.rt.touch(self.resource, write=False)
            return all(self.stopped[n] for n in removed)

        done = yield from poll_until(
            self.rt, all_stopped, config.follower_check_ms, config.follower_timeout_ms
        )
        if not done:
            self.rt.log(self.name, "claim.timeout", streams=removed)
            return
        for name in removed:
            yield from self.link.call(partial(self._claim_at_server, name))

    def _claim_at_server(self, name: str) -> None:
        """``claimAssignmentTokensForDatastreams``: delete this follower's token, if issued."""
        token = f"{TOKENS}/{name}/{self.name}"
        if self.zk.exists(token):
            self.zk.delete(token)
            self.rt.log(self.name, "token.claim", entity=name)


def rest_stop(
    rt: Runtime, zk: Store, link: LeaderLink, host: str, name: str, config: BrooklinConfig
) -> Generator[Any, Any, bool]:
    """``DatastreamResources.stop`` (force=false)."""
    data, version = yield from link.call(lambda: zk.get(stream_path(name)))
    status = data["status"]
    entity_op(rt, host, "stop.request", [name], entity=name, status=status)
    if status == STOPPED:
        rt.log(host, "stop.ack", entity=name)  # "already in STOPPED state"
        return True
    if status in (READY, PAUSED):
        yield from store_update(rt, zk, link, host, name, {**data, "status": STOPPING}, version)
    elif status == STOPPING:  # rewrite it as it is and notify the leader again
        rt.log(host, "stop.renotify", entity=name)
        yield from store_update(rt, zk, link, host, name, dict(data), version)
    else:
        rt.log(host, "stop.rejected", entity=name, status=status)
        return False
    stopped = yield from poll_status(rt, zk, link, name, config)
    rt.log(host, "stop.ack" if stopped else "stop.timeout", entity=name)
    return stopped


def poll_status(
    rt: Runtime, zk: Store, link: LeaderLink, name: str, config: BrooklinConfig
) -> Generator[Any, Any, bool]:
    """``PollUtils.poll``: read ZooKeeper now and every second until STOPPED, up to 90 s."""
    start_ms = rt.now_ms()
    while True:
        data, _ = yield from link.call(lambda: zk.get(stream_path(name)))
        if data["status"] == STOPPED:
            return True
        if rt.now_ms() - start_ms >= config.stop_timeout_ms:
            return False
        yield rt.sleep(config.stop_poll_ms)


def rest_resume(
    rt: Runtime, zk: Store, link: LeaderLink, host: str, name: str
) -> Generator[Any, Any, bool]:
    """``DatastreamResources.resume`` (force=false)."""
    data, version = yield from link.call(lambda: zk.get(stream_path(name)))
    if data["status"] not in (STOPPED, PAUSED):
        rt.log(host, "resume.rejected", entity=name, status=data["status"])
        return False
    rt.checkpoint(host, "resume.decided", entity=name)
    yield from store_update(rt, zk, link, host, name, {**data, "status": READY}, version)
    rt.checkpoint(host, "resume.written", entity=name)
    entity_op(rt, host, "resume.ack", [name], entity=name)
    return True


@dataclass(frozen=True)
class LeaderSide:
    """The leader's own runtime, ZooKeeper client, link to it and faults (``leader_jvm``)."""

    rt: Runtime
    zk: Store
    link: LeaderLink
    faults: LeaderFaults


@dataclass
class Cluster:
    rt: Runtime
    zk: Store
    variant: str
    config: BrooklinConfig
    leader_side: LeaderSide | None = None  # default: the shared runtime and store, no faults
    link: LeaderLink | None = None  # the other hosts' calls (default: a sleep, then the call)
    leader: Leader = field(init=False)
    calls: LeaderLink = field(init=False)  # ``link``, or the plain one
    followers: list[Follower] = field(init=False)
    clients_done: int = 0

    def __post_init__(self) -> None:
        require(self.variant in VARIANTS, f"unknown variant {self.variant}")
        side = self.leader_side or LeaderSide(
            rt=self.rt,
            zk=self.zk,
            link=PlainLink(self.rt, self.config.zk_rtt_ms),
            faults=NoLeaderFaults(),
        )
        self.leader = Leader(
            rt=side.rt,
            zk=side.zk,
            variant=self.variant,
            config=self.config,
            link=side.link,
            faults=side.faults,
            peek=self.zk,
        )
        self.calls = self.link or PlainLink(self.rt, self.config.zk_rtt_ms)
        self.followers = [
            Follower(rt=self.rt, zk=self.zk, link=self.calls, index=f, config=self.config)
            for f in range(self.config.followers)
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
            if name in self.config.restopped:
                start_ms = i * gap_ms + self.config.restop_after_ms
                self.rt.spawn(f"client-{name}-again", self.second_stop(name, start_ms))
        self.rt.spawn("observer", self.observer())

    @property
    def clients(self) -> int:
        return len(self.config.streams) + len(self.config.restopped)

    def client(self, name: str, start_ms: int) -> Gen:
        """The caller's usual behaviour: stop, wait for it, then resume on another host."""
        yield self.rt.sleep(start_ms)
        stopped = yield from rest_stop(
            self.rt, self.zk, self.calls, "rest@host1", name, self.config
        )
        if stopped and name in self.config.resumed:
            yield self.rt.sleep(self.rt.choose(f"client-{name}.think", self.config.resume_think_ms))
            yield from rest_resume(self.rt, self.zk, self.calls, "rest@host2", name)
        self.rt.touch(CLIENTS)
        self.clients_done += 1

    def second_stop(self, name: str, start_ms: int) -> Gen:
        """Another caller stops the same stream again (a retry, or a second user)."""
        yield self.rt.sleep(start_ms)
        yield from rest_stop(self.rt, self.zk, self.calls, "rest@host3", name, self.config)
        self.rt.touch(CLIENTS)
        self.clients_done += 1

    @property
    def quiet(self) -> bool:
        self.rt.touch(CLIENTS, write=False)
        return (
            self.clients_done == self.clients
            and self.leader.idle
            and all(f.idle for f in self.followers)
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
    """Run the cluster simulated: a VersionedStore as ZooKeeper, SimPy processes as threads.

    The leader's threads run on the node ``leader-jvm`` and call ZooKeeper
    through one session-bound client, ``leader-zk`` (``leader_jvm``).
    """
    store = VersionedStore(world)
    jvm = world.node(LEADER_NODE)
    client = ZkClient(
        world,
        store,
        LEADER_CLIENT,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        latency_ms=(config.zk_rtt_ms // 2,),  # each way: half the (even) round trip
        reconnect_attempt_ms=RECONNECT_ATTEMPT_MS,
    )
    link = ClientLink(client)
    side = LeaderSide(
        rt=SimRuntime(world, node=jvm), zk=client, link=link, faults=JvmFaults(jvm, link)
    )
    cluster = Cluster(
        rt=SimRuntime(world),
        zk=store,
        variant=variant,
        config=config,
        leader_side=side,
        link=ServerLink(world, config.zk_rtt_ms),
    )
    cluster.install()
    cluster.start()
