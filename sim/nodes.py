"""Nodes: a host or a JVM, the unit a GC pause, a crash and a clock jump really act on.

Why it exists: a fault strikes where it happens. A stop-the-world GC pause
stops every thread of a JVM at once, a crash kills all of them, and a clock
jump moves the wall clock every thread of the host reads. Modelling such a
fault as the stall of one simulated thread lets the process's other threads
run through the pause, which the real system cannot do, and a race "found"
that way is not a race of the real system.

A :class:`Node` groups the processes spawned on it (``world.spawn(...,
node=node)``, ``node.spawn(...)``, an ``Actor(node=...)``, an
``Executor(node=...)``, or a ``SimRuntime(world, node=node)`` whose every
spawn lands on the node):

- ``pause(duration_ms)``: from now until the pause ends, no process of the
  node takes a step. The kernel holds every event that would resume one of
  them (a timeout, a queue item, a lock, a process start) and delivers it when
  the pause ends; nothing is lost and nothing runs early. It works from
  inside a paused process too (that process stops at its next ``yield``),
  and a pause during a pause extends it to the later end.
- ``crash()`` / ``restart()``: every live process of the node ends at once
  (its generator gets an ``Interrupt`` that the node's guard absorbs; an
  ``Actor`` runs its ``on_crash``); ``restart`` runs the node's start hooks
  (``on_start``) again, as a fresh incarnation.
- ``jump_clock(delta_ms)``: the node's wall clock (``node.now_ms``, Java's
  ``System.currentTimeMillis``) moves; sleeps and timeouts stay on virtual
  time (the monotonic clock, ``System.nanoTime``), as in the JVM.

Each fault is logged (``node.paused``, ``node.crashed``, ``node.restarted``,
``node.clock-jump``). The drawn versions, which fire through the nemesis so
they replay and shrink, are in ``raceproof.sim.faults`` (``maybe_pause_node``,
``crash_and_restart_node``, ``maybe_jump_clock``).

Misuse (a negative pause, a node crashing itself, a restart of a node that
is up) raises ``ValueError`` / ``RuntimeError`` naming the call: it is the
model's error (the verdict ``error``), not the kernel's.

Footprints: the node's state is in cells (``raceproof.sim.cells``): its wall
clock's offset (``node:<name>``), its processes, its pause, its incarnation,
whether it is up and its hooks. A pause, a crash and a restart touch everything
besides (they change what other processes can wait on); a step whose event is
held, or could have been, reads the node's pause.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import NORMAL, Event, Process

from raceproof.sim.cells import Cell, Primitive

if TYPE_CHECKING:
    from raceproof.sim.world import World

NODE_CRASH = "node-crash"  # the cause of the Interrupt a node's crash throws into its processes


class Node(Primitive):
    """A host or a JVM: the processes on it pause, crash and read their clock together."""

    def __init__(self, world: World, name: str) -> None:
        if not (isinstance(name, str) and name):
            raise ValueError(f"a node needs a name, got {name!r}")
        self.world = world
        self.name = name
        self.resource = f"node:{name}"
        self._clock_offset_ms = Cell(world, self.resource, 0)  # the wall clock's jumps so far
        self._processes: Cell[tuple[Process, ...]] = Cell(world, f"{self.resource}.processes", ())
        self._paused_until_ms = Cell(world, f"{self.resource}.paused", 0)
        self._incarnation = Cell(world, f"{self.resource}.incarnation", 1)
        self._up = Cell(world, f"{self.resource}.up", True)
        self._start_hooks: Cell[tuple[Callable[[], None], ...]] = Cell(
            world, f"{self.resource}.on-start", ()
        )
        self._crash_hooks: Cell[tuple[Callable[[], None], ...]] = Cell(
            world, f"{self.resource}.on-crash", ()
        )
        self._pause_hooks: Cell[tuple[Callable[[int], None], ...]] = Cell(
            world, f"{self.resource}.on-pause", ()
        )
        self.freeze()

    def __repr__(self) -> str:
        return f"Node({self.name!r})"

    @property
    def processes(self) -> tuple[Process, ...]:
        """The processes spawned on the node since it last started (some may have ended)."""
        return self._processes.get()

    @property
    def paused_until_ms(self) -> int:
        return self._paused_until_ms.get()

    @property
    def clock_offset_ms(self) -> int:
        return self._clock_offset_ms.get()

    @property
    def incarnation(self) -> int:
        return self._incarnation.get()

    @property
    def up(self) -> bool:
        return self._up.get()

    # -- processes ---------------------------------------------------------------
    def spawn(
        self, actor: str, generator: Generator[Event, Any, Any], *, interleave: bool = False
    ) -> Process:
        """``world.spawn(actor, generator, node=self)``."""
        return self.world.spawn(actor, generator, interleave=interleave, node=self)

    def adopt(self, process: Process) -> None:
        """Record ``process`` as one of this node's (``World.spawn`` calls it)."""
        if not self._up.get():
            raise RuntimeError(f"spawn on node {self.name!r} while it is crashed: restart it first")
        process.rp_node = self  # type: ignore[attr-defined]
        # Every process since the node last started, ended ones too: which have ended is
        # read only by a crash (it touches everything), never by a spawn.
        self._processes.set((*self._processes.get(), process))

    def guard(self, generator: Generator[Event, Any, Any]) -> Generator[Event, Any, Any]:
        """Run ``generator`` so that the node's crash ends it quietly."""
        try:
            return (yield from generator)
        except simpy.Interrupt as interrupt:
            if interrupt.cause != NODE_CRASH:
                raise
            return None

    def on_start(self, hook: Callable[[], None]) -> None:
        """``hook()`` runs at every ``restart`` (start the node's processes again)."""
        self._start_hooks.set((*self._start_hooks.get(), hook))

    def on_crash(self, hook: Callable[[], None]) -> None:
        """``hook()`` runs at every ``crash`` (forget the node's in-memory state)."""
        self._crash_hooks.set((*self._crash_hooks.get(), hook))

    def on_pause(self, hook: Callable[[int], None]) -> None:
        """``hook(until_ms)`` runs at every ``pause``: what the node's threads stop doing stops.

        A session-bound client of the node (``ZkClient(..., node=node)``) uses
        it: its heartbeats stop with the JVM, so the connection drops until the
        pause ends and a pause past the session timeout expires the session.
        """
        self._pause_hooks.set((*self._pause_hooks.get(), hook))

    # -- faults ------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self._paused_until_ms.get() > self.world.now_ms

    def pause(self, duration_ms: int) -> None:
        """A stop-the-world pause: none of the node's processes steps for ``duration_ms``."""
        if not (isinstance(duration_ms, int) and duration_ms >= 0):
            raise ValueError(f"Node.pause({duration_ms!r}): a duration is an int >= 0 ms")
        self.world.touch_all(holds=True)  # it holds the node's steps: ``hold_paused``
        until_ms = self.world.now_ms + duration_ms
        paused_until_ms = self._paused_until_ms.get()
        self.world.log(
            self.name,
            "node.paused",
            duration_ms=duration_ms,
            until_ms=max(until_ms, paused_until_ms),
        )
        if until_ms > paused_until_ms and duration_ms > 0:  # pause(0) is no pause
            self._paused_until_ms.set(until_ms)
            if self not in self.world.paused_nodes:
                self.world.paused_nodes.append(self)
            for hook in self._pause_hooks.get():  # only a pause that ends later changes anything
                hook(until_ms)

    def crash(self) -> None:
        """Every live process of the node ends now; its in-memory state is gone."""
        world = self.world
        active = world.active_process
        if active is not None and getattr(active, "rp_node", None) is self:
            raise RuntimeError(
                f"Node.crash() of {self.name!r} called from its own process "
                f"{getattr(active, 'actor', active)!r}: crash a node from outside it "
                "(the nemesis, another node)"
            )
        world.touch_all()
        world.log(self.name, "node.crashed", incarnation=self._incarnation.get())
        self._up.set(False)
        self._paused_until_ms.set(0)
        processes = self._processes.get()
        self._processes.set(())
        for process in processes:
            if process.is_alive:
                process.interrupt(NODE_CRASH)
        for hook in self._crash_hooks.get():
            hook()

    def restart(self) -> None:
        """The node comes back as a new incarnation and runs its start hooks."""
        if self._up.get():
            raise RuntimeError(f"Node.restart() of {self.name!r}, which is up: crash it first")
        self.world.touch_all()
        self._up.set(True)
        incarnation = self._incarnation.get() + 1
        self._incarnation.set(incarnation)
        self.world.log(self.name, "node.restarted", incarnation=incarnation)
        for hook in self._start_hooks.get():
            hook()

    def jump_clock(self, delta_ms: int) -> None:
        """The node's wall clock moves by ``delta_ms`` (NTP step, VM migration); sleeps do not."""
        if not isinstance(delta_ms, int):
            raise ValueError(f"Node.jump_clock({delta_ms!r}): a jump is an int of ms")
        offset_ms = self._clock_offset_ms.get() + delta_ms
        self._clock_offset_ms.set(offset_ms)
        self.world.log(self.name, "node.clock-jump", delta_ms=delta_ms, offset_ms=offset_ms)

    @property
    def now_ms(self) -> int:
        """The node's wall clock: virtual time plus every jump so far."""
        return self.world.now_ms + self._clock_offset_ms.get()


def hold_paused(world: World, event: Event, callbacks: list[Any]) -> list[Any]:
    """The callbacks of ``event`` to run now; those resuming a paused node's process wait.

    Each held callback moves to a copy of ``event`` (same value, same
    success) scheduled when its node's pause ends; the process's target
    becomes the copy, so an interrupt (a crash) still finds it. The held
    process's step count moves all the same (the step ran, with its key), so
    each hold is counted too (``rp_held``): its steps minus its holds say how
    far its code went.
    """
    if not callbacks:  # it resumes nothing: nothing to hold, and no pause read
        return callbacks
    now = world.now_ms
    paused = [node for node in world.paused_nodes if node.paused]
    world.paused_nodes[:] = paused
    if not paused:
        return callbacks
    kept: list[Any] = []
    held: dict[Node, list[Any]] = {}
    for callback in callbacks:
        owner = getattr(callback, "__self__", None)
        process = owner if isinstance(owner, Process) else None
        node = getattr(process, "rp_node", None)
        if process is not None and node is not None and node.paused:  # a read of its pause
            held.setdefault(node, []).append(callback)
            # The step counts as the process's (its key names it), yet the process has not
            # moved: a declared state's pending entries tell the two apart by this count.
            process.rp_held = getattr(process, "rp_held", 0) + 1  # type: ignore[attr-defined]
        else:
            kept.append(callback)
    for node, waiting in held.items():
        copy = Event(world)
        copy._ok = event._ok
        copy._value = event._value
        copy.callbacks = waiting
        if not event._ok:
            event._defused = True  # the copy carries the failure
        for callback in waiting:
            callback.__self__._target = copy
        world.schedule(copy, NORMAL, node._paused_until_ms.get() - now)
    return kept
