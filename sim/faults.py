"""Faults, kept apart from checkers: every fault fires through a draw, so it shrinks.

A ``FaultPlan`` says which kinds of fault a scenario allows and how many at
most; the ``Nemesis`` asks the choice source, at each place a fault could
strike, whether it does (choice 0: it does not). Faults are logged as history
ops (``fault.<kind>``) so a counterexample shows them on its timeline.

Kinds: ``crash`` (an actor dies and restarts after a drawn delay), ``pause``
(an actor stops for a drawn while, then goes on), ``drop`` / ``duplicate`` /
``delay`` of a message delivery, ``session-expiry`` (of a store session), and
``disk-write`` (see ``FileSystem(fail_writes=True)``). ``pause_with_session``
pauses an actor together with its ZooKeeper client, so a drawn pause longer
than the session timeout expires the session.

No plain ``assert``: a ``FaultPlan`` refuses bad values with ``require`` (bad
input, exit 2); a live actor without its process is a ``KernelError``; an
unknown fault kind or interrupt is a ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import simpy
from simpy.events import Event, Process

from raceproof.sim.configs import require
from raceproof.sim.errors import KernelError
from raceproof.sim.session import ZkClient
from raceproof.sim.world import ProcessGenerator, World

FAULT_KINDS = ("crash", "pause", "drop", "duplicate", "delay", "session-expiry", "disk-write")


@dataclass(frozen=True)
class FaultPlan:
    """Which faults may fire, how likely under random search, and how many at most."""

    kinds: frozenset[str] = frozenset()
    max_faults: int = 2
    p: float = 0.05
    delay_ms: tuple[int, ...] = (0, 100, 1000)
    restart_ms: tuple[int, ...] = (100, 5000)

    def __post_init__(self) -> None:
        unknown = sorted(self.kinds - set(FAULT_KINDS))
        require(not unknown, f"unknown fault kinds {unknown}; known: {FAULT_KINDS}")
        require(self.max_faults >= 0, f"max_faults must be >= 0, got {self.max_faults}")
        require(0.0 <= self.p <= 1.0, f"p must be a probability, got {self.p}")

    def to_json(self) -> dict[str, Any]:
        return {"kinds": sorted(self.kinds), "max_faults": self.max_faults, "p": self.p}


@dataclass
class Nemesis:
    """Decides, by draws, whether a fault strikes at each point the model offers one."""

    world: World
    plan: FaultPlan = field(default_factory=FaultPlan)
    fired: int = 0

    def strikes(self, kind: str, target: str) -> bool:
        """True if a ``kind`` fault strikes ``target`` now. No draw if it cannot."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"Nemesis.strikes: unknown fault kind {kind}")
        if kind not in self.plan.kinds:
            return False
        self.world.touch("nemesis")  # the count of faults fired is shared by every actor
        if self.fired >= self.plan.max_faults:
            return False
        if not self.world.source.draw_bool(f"fault.{kind}.{target}", self.plan.p):
            return False
        self.fired += 1
        self.world.log("nemesis", f"fault.{kind}", target=target)
        return True


class Crash(Exception):
    """Raised into an actor's generator when it crashes."""


class Actor:
    """A process that can crash (losing its in-memory state), restart, and pause.

    Subclasses implement ``main()``; they wait on events with
    ``value = yield from self.wait(event)`` so a pause delays them without
    breaking the wait. ``on_crash`` drops the in-memory state. With
    ``interleave`` each (re)start is a drawn tie with the events of its
    instant (``World.spawn(interleave=True)``) instead of running at once.
    """

    def __init__(self, world: World, name: str, *, interleave: bool = False) -> None:
        self.world = world
        self.name = name
        self.interleave = interleave
        self.process: Process | None = None
        self.incarnation = 0

    def main(self) -> ProcessGenerator:
        raise NotImplementedError
        yield  # pragma: no cover

    def on_crash(self) -> None:
        """Forget in-memory state; overridden by actors that have some."""

    def start(self) -> None:
        self.world.touch(f"actor:{self.name}")
        self.incarnation += 1
        self.process = self.world.spawn(self.name, self._guarded(), interleave=self.interleave)

    def _guarded(self) -> ProcessGenerator:
        try:
            yield from self.main()
        except simpy.Interrupt as interrupt:
            if interrupt.cause != "crash":
                raise ValueError(f"unexpected interrupt {interrupt.cause!r}") from None
            self.world.log(self.name, "actor.crashed", incarnation=self.incarnation)
            self.on_crash()

    @property
    def alive(self) -> bool:
        self.world.touch(f"actor:{self.name}", write=False)
        return self.process is not None and self.world.alive(self.process)

    def wait(self, event: Event) -> ProcessGenerator:
        """Wait for ``event``, sitting out any pause that arrives meanwhile."""
        while True:
            try:
                return (yield event)
            except simpy.Interrupt as interrupt:
                cause = interrupt.cause
                if not (isinstance(cause, tuple) and cause[0] == "pause"):
                    raise
                yield self.world.sleep(int(cause[1]))

    def crash(self) -> None:
        if self.alive:
            if self.process is None:
                raise KernelError(f"{self.name} is alive without a process")
            self.process.interrupt("crash")

    def pause(self, duration_ms: int) -> None:
        if self.alive:
            if self.process is None:
                raise KernelError(f"{self.name} is alive without a process")
            self.world.log(self.name, "actor.paused", duration_ms=duration_ms)
            self.process.interrupt(("pause", duration_ms))


def crash_and_restart(nemesis: Nemesis, actor: Actor) -> ProcessGenerator:
    """If a crash strikes ``actor``: kill it now and restart it after a drawn delay."""
    if not nemesis.strikes("crash", actor.name):
        return
    actor.crash()
    delay_ms = nemesis.world.source.choose(f"restart.{actor.name}", nemesis.plan.restart_ms)
    yield nemesis.world.sleep(delay_ms)
    actor.start()


def maybe_pause(nemesis: Nemesis, actor: Actor) -> None:
    if nemesis.strikes("pause", actor.name):
        actor.pause(nemesis.world.source.choose(f"pause.{actor.name}", nemesis.plan.delay_ms))


def pause_with_session(
    nemesis: Nemesis,
    actor: Actor,
    client: ZkClient,
    durations_ms: Sequence[int] | None = None,
) -> int:
    """If a pause strikes ``actor``: pause it and its ZooKeeper client for a drawn while.

    The while is drawn from ``durations_ms`` (default: half the session
    timeout, then twice it: the first keeps the session, the second expires
    it). Returns the pause in ms (0 when none struck).
    """
    if not nemesis.strikes("pause", actor.name):
        return 0
    options = tuple(durations_ms or (client.session_timeout_ms // 2, client.session_timeout_ms * 2))
    duration_ms = nemesis.world.source.choose(f"pause.{actor.name}", options)
    actor.pause(duration_ms)
    client.pause(duration_ms)
    return int(duration_ms)


def maybe_expire_session(nemesis: Nemesis, client: ZkClient) -> bool:
    """If a ``session-expiry`` fault strikes ``client``: the server expires its session now."""
    if not nemesis.strikes("session-expiry", client.name):
        return False
    client.expire()
    return True


class Network:
    """Message delivery with latency and the drop / duplicate / delay faults."""

    def __init__(self, world: World, nemesis: Nemesis, latency_ms: Sequence[int] = (1,)) -> None:
        if not latency_ms:
            raise ValueError("Network: latency_ms needs at least one option")
        self.world = world
        self.nemesis = nemesis
        self.latency_ms = tuple(latency_ms)

    def send(self, src: str, dst: str, message: Any, deliver: Callable[[Any], None]) -> None:
        """Deliver ``message`` to ``deliver`` after the drawn latency (and faults)."""
        link = f"{src}->{dst}"
        if self.nemesis.strikes("drop", link):
            return
        copies = 2 if self.nemesis.strikes("duplicate", link) else 1
        for _ in range(copies):
            latency_ms = self.world.source.choose(f"latency.{link}", self.latency_ms)
            if self.nemesis.strikes("delay", link):
                latency_ms += self.world.source.choose(f"delay.{link}", self.nemesis.plan.delay_ms)
            self.world.spawn(f"net:{link}", self._later(latency_ms, message, deliver))

    def _later(
        self, latency_ms: int, message: Any, deliver: Callable[[Any], None]
    ) -> ProcessGenerator:
        yield self.world.sleep(latency_ms)
        deliver(message)
