"""Faults, kept apart from checkers: every fault fires through a draw, so it shrinks.

A ``FaultPlan`` says which kinds of fault a scenario allows and how many at
most; the ``Nemesis`` asks the choice source, at each place a fault could
strike, whether it does (choice 0: it does not). Faults are logged as history
ops (``fault.<kind>``) so a counterexample shows them on its timeline.

Faults act at the level where they happen (``raceproof.sim.nodes``):

- on a **node** (a host, a JVM): ``node-pause`` (a stop-the-world GC pause:
  every process of the node stops together, ``maybe_pause_node``),
  ``node-crash`` (all of them die; the node restarts after a drawn delay,
  ``crash_and_restart_node``), ``clock-jump`` (the node's wall clock moves,
  ``maybe_jump_clock``);
- on a **ZooKeeper connection** (``ZkClient``): ``connection-loss`` blocks
  every actor that uses the client until it reconnects
  (``maybe_lose_connection``; calls made through ``client.retrying`` wait, as
  Helix's ``retryUntilConnected`` does), ``session-expiry``;
- on **one thread** (an ``Actor``), where that is real: ``pause`` is
  ``stall_thread`` (one thread blocked on I/O or descheduled while the rest of
  its process runs), ``crash`` (an actor dies and restarts after a drawn
  delay);
- on the **network** and the **disk**: ``drop`` / ``duplicate`` / ``delay`` of
  a message delivery, ``disk-write`` (see ``FileSystem(fail_writes=True)``).

``pause_with_session`` stalls an actor together with its ZooKeeper client,
so a drawn pause longer than the session timeout expires the session.

No plain ``assert``: a ``FaultPlan`` refuses bad values with ``require`` (bad
input, exit 2); a live actor without its process is a ``KernelError``; an
unknown interrupt, or a crash or pause called wrongly, raises an error naming
the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import simpy
from simpy.events import Event, Process

from raceproof.sim.cells import Cell, Primitive
from raceproof.sim.configs import require
from raceproof.sim.errors import KernelError
from raceproof.sim.nodes import NODE_CRASH, Node
from raceproof.sim.session import ZkClient
from raceproof.sim.world import ProcessGenerator, World

FAULT_KINDS = (
    "crash",
    "pause",
    "drop",
    "duplicate",
    "delay",
    "session-expiry",
    "disk-write",
    "node-pause",
    "node-crash",
    "clock-jump",
    "connection-loss",
)


@dataclass(frozen=True)
class FaultPlan:
    """Which faults may fire, how likely under random search, and how many at most."""

    kinds: frozenset[str] = frozenset()
    max_faults: int = 2
    p: float = 0.05
    delay_ms: tuple[int, ...] = (0, 100, 1000)
    restart_ms: tuple[int, ...] = (100, 5000)
    clock_jump_ms: tuple[int, ...] = (-60_000, 60_000)

    def __post_init__(self) -> None:
        unknown = sorted(self.kinds - set(FAULT_KINDS))
        require(not unknown, f"unknown fault kinds {unknown}; known: {FAULT_KINDS}")
        require(self.max_faults >= 0, f"max_faults must be >= 0, got {self.max_faults}")
        require(0.0 <= self.p <= 1.0, f"p must be a probability, got {self.p}")

    def to_json(self) -> dict[str, Any]:
        return {"kinds": sorted(self.kinds), "max_faults": self.max_faults, "p": self.p}


class Nemesis(Primitive):
    """Decides, by draws, whether a fault strikes at each point the model offers one.

    Its one cell, ``nemesis``, counts the faults fired so far: shared by every
    actor, since a fault that fires leaves one fewer for the others.
    """

    def __init__(self, world: World, plan: FaultPlan | None = None, fired: int = 0) -> None:
        self.world = world
        self.plan = FaultPlan() if plan is None else plan
        self._fired = Cell(world, "nemesis", fired)
        self.freeze()

    @property
    def fired(self) -> int:
        return self._fired.get()

    def strikes(self, kind: str, target: str) -> bool:
        """True if a ``kind`` fault strikes ``target`` now. No draw if it cannot."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"Nemesis.strikes: unknown fault kind {kind}")
        if kind not in self.plan.kinds:
            return False
        fired = self._fired.get()
        if fired >= self.plan.max_faults:
            return False
        if not self.world.source.draw_bool(f"fault.{kind}.{target}", self.plan.p):
            return False
        self._fired.set(fired + 1)
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
    On a ``node`` it pauses and crashes with that node.

    ``pause`` is a stall of this one thread (``stall_thread``). A pause that
    arrives while the actor sits out another extends it to the later end;
    a pause the actor calls on itself (from its own process) is taken at its
    next ``wait``.
    """

    def __init__(
        self, world: World, name: str, *, interleave: bool = False, node: Node | None = None
    ) -> None:
        self.world = world
        self.name = name
        self.interleave = interleave
        self.node = node
        # Its state, in cells (a subclass's own state is the model's: ``world.shared``).
        resource = f"actor:{name}"
        self._process: Cell[Process | None] = Cell(world, resource, None)
        self._incarnation = Cell(world, f"{resource}.incarnation", 0)
        self._paused_until_ms = Cell(world, f"{resource}.paused", 0)
        self._pausing = Cell(world, f"{resource}.pausing", False)  # sitting one out in ``wait``

    @property
    def process(self) -> Process | None:
        """The process of its current incarnation (None before the first ``start``)."""
        return self._process.get()

    @property
    def incarnation(self) -> int:
        return self._incarnation.get()

    @property
    def paused_until_ms(self) -> int:
        return self._paused_until_ms.get()

    def main(self) -> ProcessGenerator:
        raise NotImplementedError
        yield  # pragma: no cover

    def on_crash(self) -> None:
        """Forget in-memory state; overridden by actors that have some."""

    def start(self) -> None:
        self._incarnation.set(self._incarnation.get() + 1)
        self._paused_until_ms.set(0)
        self._process.set(
            self.world.spawn(self.name, self._guarded(), interleave=self.interleave, node=self.node)
        )

    def _guarded(self) -> ProcessGenerator:
        try:
            yield from self.main()
        except simpy.Interrupt as interrupt:
            if interrupt.cause not in ("crash", NODE_CRASH):
                raise RuntimeError(
                    f"unexpected interrupt {interrupt.cause!r} of actor {self.name!r}: only "
                    "a crash ends an actor; pauses are sat out in `yield from self.wait(event)`"
                ) from None
            self.world.log(self.name, "actor.crashed", incarnation=self._incarnation.get())
            self.on_crash()

    @property
    def alive(self) -> bool:
        process = self._process.get()
        return process is not None and self.world.alive(process)

    def wait(self, event: Event) -> ProcessGenerator:
        """Wait for ``event``, sitting out any pause that arrives meanwhile (or was taken)."""
        yield from self._sit_out_pause()
        while True:
            try:
                return (yield event)
            except simpy.Interrupt as interrupt:
                cause = interrupt.cause
                if not (isinstance(cause, tuple) and cause[0] == "pause"):
                    raise
                yield from self._sit_out_pause()

    def _sit_out_pause(self) -> ProcessGenerator:
        """Sleep until the pause ends; a pause arriving meanwhile only moves the end."""
        self._pausing.set(True)
        try:
            while self.world.now_ms < (until_ms := self._paused_until_ms.get()):
                try:
                    yield self.world.sleep(until_ms - self.world.now_ms)
                except simpy.Interrupt as interrupt:
                    cause = interrupt.cause
                    if not (isinstance(cause, tuple) and cause[0] == "pause"):
                        raise
        finally:
            self._pausing.set(False)

    def crash(self) -> None:
        if self.alive:
            process = self._process.get()
            if process is None:
                raise KernelError(f"{self.name} is alive without a process")
            if self.world.active_process is process:
                raise RuntimeError(
                    f"Actor.crash() of {self.name!r} called from its own process: crash an "
                    "actor from outside it (crash_and_restart from the nemesis)"
                )
            process.interrupt("crash")

    def pause(self, duration_ms: int) -> None:
        """Stall this one thread for ``duration_ms`` (see the class docstring)."""
        if not (isinstance(duration_ms, int) and duration_ms >= 0):
            raise ValueError(f"Actor.pause({duration_ms!r}) of {self.name!r}: an int >= 0 ms")
        if not self.alive:
            return
        process = self._process.get()
        if process is None:
            raise KernelError(f"{self.name} is alive without a process")
        self.world.log(self.name, "actor.paused", duration_ms=duration_ms)
        until_ms = max(self._paused_until_ms.get(), self.world.now_ms + duration_ms)
        self._paused_until_ms.set(until_ms)
        if self.world.active_process is process:
            return  # its own call: the pause is taken at its next ``wait``
        if not self._pausing.get():  # already sitting one out: the new end is enough
            process.interrupt(("pause", duration_ms))

    stall_thread = pause


def crash_and_restart(nemesis: Nemesis, actor: Actor) -> ProcessGenerator:
    """If a crash strikes ``actor``: kill it now and restart it after a drawn delay."""
    if not nemesis.strikes("crash", actor.name):
        return
    actor.crash()
    delay_ms = nemesis.world.source.choose(f"restart.{actor.name}", nemesis.plan.restart_ms)
    yield nemesis.world.sleep(delay_ms)
    actor.start()


def stall_thread(nemesis: Nemesis, actor: Actor) -> None:
    """If a ``pause`` strikes ``actor``: stall that one thread for a drawn while.

    Real only where one thread is held while the rest of its process runs
    (blocked on its own I/O, descheduled); a GC pause is ``maybe_pause_node``.
    """
    if nemesis.strikes("pause", actor.name):
        actor.pause(nemesis.world.source.choose(f"pause.{actor.name}", nemesis.plan.delay_ms))


maybe_pause = stall_thread  # the name it had before nodes existed


def maybe_pause_node(
    nemesis: Nemesis, node: Node, durations_ms: Sequence[int] | None = None
) -> int:
    """If a ``node-pause`` strikes ``node``: every process of it stops for a drawn while.

    A stop-the-world GC pause of a JVM. Returns the pause in ms (0 when none struck).
    """
    if not nemesis.strikes("node-pause", node.name):
        return 0
    options = tuple(durations_ms or nemesis.plan.delay_ms)
    duration_ms = int(nemesis.world.source.choose(f"node-pause.{node.name}", options))
    node.pause(duration_ms)
    return duration_ms


def crash_and_restart_node(nemesis: Nemesis, node: Node) -> ProcessGenerator:
    """If a ``node-crash`` strikes ``node``: all its processes die; it restarts after a drawn delay.

    Run it from a process that is not on ``node`` (the nemesis' own, or another node's).
    """
    if not nemesis.strikes("node-crash", node.name):
        return
    node.crash()
    delay_ms = nemesis.world.source.choose(f"restart.{node.name}", nemesis.plan.restart_ms)
    yield nemesis.world.sleep(delay_ms)
    node.restart()


def maybe_jump_clock(nemesis: Nemesis, node: Node, offsets_ms: Sequence[int] | None = None) -> int:
    """If a ``clock-jump`` strikes ``node``: its wall clock moves by a drawn offset (ms)."""
    if not nemesis.strikes("clock-jump", node.name):
        return 0
    options = tuple(offsets_ms or nemesis.plan.clock_jump_ms)
    delta_ms = int(nemesis.world.source.choose(f"clock-jump.{node.name}", options))
    node.jump_clock(delta_ms)
    return delta_ms


def maybe_lose_connection(
    nemesis: Nemesis, client: ZkClient, durations_ms: Sequence[int] | None = None
) -> int:
    """If a ``connection-loss`` strikes ``client``: it is disconnected for a drawn while.

    Every actor that uses ``client`` is blocked meanwhile (``ZkClient.retrying``);
    longer than the session timeout, the session expires. Returns the loss in ms.
    """
    if not nemesis.strikes("connection-loss", client.name):
        return 0
    options = tuple(durations_ms or nemesis.plan.delay_ms)
    duration_ms = int(nemesis.world.source.choose(f"connection-loss.{client.name}", options))
    client.lose_connection(duration_ms)
    return duration_ms


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
