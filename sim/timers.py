"""Cancellable timers and a debounce, for models whose code arms, re-arms and cancels timeouts.

``every`` (``primitives.py``) is a loop; a lease, a retry back-off, a session
timeout or a "wait for things to settle" is a single deadline that the model
moves or cancels. A ``Timer`` is one scheduled World event: cancelling it
takes the event out of the schedule (``World.unschedule``), so a cancelled
timer leaves no step, no tie and no late end of the run behind. When it
fires, its callback runs as a step of the timer's actor, so its instant ties
with the other events due then are drawn like any other.

Lateness is a choice: ``late_ms`` options (0 first, the boring one) are drawn
each time the timer is armed, for timers that a loaded machine runs late.

Footprints (for the proof's reduction) are what a step read and wrote of the
timer's cells (``raceproof.sim.cells``): its armed deadline, ``timer:<resource>``
(default ``timer:<actor>``; timers sharing a name are dependent, which is safe),
and its count of firings, ``timer:<resource>.fired``; a debounce adds its count
of triggers and the start of its burst. Arming, a cancel of an armed timer and
its firing write the deadline; ``active``/``due_ms`` and a cancel of an idle timer
read it. Cancelling takes the event out of the schedule with ``World.unschedule``,
whose rule makes the cancel dependent with the firing it removed, which never
runs in that order (``World._disables``). What the callback spawns is named after
the timer and its firing count (``World.spawning_as``), so process names do not
depend on the order of the steps of that instant. The firing itself is named by
the timer's resource and the count of its arms (``World.arm_key``): the reduction
can put it to sleep and the footprint check can follow it, as it does a process's
step. Every arm writes the deadline, so the arms of one resource keep their order.

One plain ``assert`` stays (a fresh timeout has its callbacks list: it only
narrows the type, losing it changes no verdict); bad lateness, delays and
quiet periods are ``ValueError`` errors.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

from simpy.events import Event

from raceproof.sim.cells import Cell, Primitive
from raceproof.sim.world import World

Callback = Callable[[], Any]


class Timer(Primitive):
    """A one-shot deadline that can be started, re-armed (``start`` again) and cancelled.

    ``callback()`` runs at the deadline; if it returns a generator, that runs
    as a process of ``actor`` (so the callback can wait). ``fired`` counts
    firings, ``due_ms`` is the armed deadline (None when idle). ``resource``
    names the timer's footprint (unique names let unrelated timers commute).
    """

    def __init__(
        self,
        world: World,
        actor: str,
        callback: Callback,
        *,
        late_ms: Sequence[int] = (0,),
        resource: str | None = None,
    ) -> None:
        if not (late_ms and all(isinstance(v, int) and v >= 0 for v in late_ms)):
            raise ValueError(f"Timer {actor!r}: late_ms needs integer delays >= 0, got {late_ms!r}")
        self.world = world
        self.actor = actor  # read by World._actor_of: the firing is this actor's step
        self.callback = callback
        self.late_ms = tuple(late_ms)
        self.resource = f"timer:{resource or actor}"
        # The armed deadline: its event and when it is due (None when idle).
        self._armed: Cell[tuple[Event, int] | None] = Cell(world, self.resource, None)
        self._fired = Cell(world, f"{self.resource}.fired", 0)
        self.freeze()

    @property
    def active(self) -> bool:
        return self._armed.get() is not None

    @property
    def fired(self) -> int:
        return self._fired.get()

    @property
    def due_ms(self) -> int | None:
        armed = self._armed.get()
        return None if armed is None else armed[1]

    def start(self, delay_ms: int) -> None:
        """Arm the timer ``delay_ms`` from now, replacing any deadline it had."""
        if not (isinstance(delay_ms, int) and delay_ms >= 0):
            raise ValueError(f"delay_ms must be >= 0, got {delay_ms}")
        self.cancel()
        late_ms = self.world.source.choose(f"timer.{self.actor}.late", self.late_ms)
        event = self.world.timeout(delay_ms + late_ms)
        assert event.callbacks is not None
        event.callbacks.append(self._fire)
        event.rp_key = self.world.arm_key(self.resource)  # type: ignore[attr-defined]
        self._armed.set((event, self.world.now_ms + delay_ms + late_ms))

    def cancel(self) -> bool:
        """Disarm; True if a deadline was pending. A cancelled timer never fires."""
        armed = self._armed.get()
        if armed is None:
            return False
        self._armed.set(None)
        self.world.unschedule(armed[0])
        return True

    def _fire(self, event: Event) -> None:
        armed = self._armed.get()
        if armed is None or event is not armed[0]:
            return
        self._armed.set(None)
        fired = self._fired.get() + 1
        self._fired.set(fired)
        previous = self.world.spawning_as(f"{self.resource}#{fired}")
        try:
            result = self.callback()
            if isinstance(result, Generator):
                self.world.spawn(self.actor, result)
        finally:
            self.world.spawning_as(previous)


class Debounce(Primitive):
    """Runs ``callback`` once ``quiet_ms`` after the last ``trigger()`` of a burst.

    Each trigger restarts the quiet period, so a burst of triggers closer than
    ``quiet_ms`` to each other fires once, ``quiet_ms`` after the last one.
    ``max_wait_ms`` (optional) bounds how long a steady stream of triggers can
    put it off, as lodash's ``maxWait`` does.
    """

    def __init__(
        self,
        world: World,
        actor: str,
        quiet_ms: int,
        callback: Callback,
        *,
        max_wait_ms: int | None = None,
        late_ms: Sequence[int] = (0,),
        resource: str | None = None,
    ) -> None:
        if not quiet_ms > 0:
            raise ValueError("quiet_ms must be > 0")
        if not (max_wait_ms is None or max_wait_ms >= quiet_ms):
            raise ValueError("max_wait_ms must be >= quiet_ms")
        self.world = world
        self.quiet_ms = quiet_ms
        self.max_wait_ms = max_wait_ms
        self.callback = callback
        self.timer = Timer(world, actor, self._fire, late_ms=late_ms, resource=resource)
        self._triggers = Cell(world, f"{self.timer.resource}.triggers", 0)
        # When the current burst's first trigger came (None between bursts).
        self._burst_started_ms: Cell[int | None] = Cell(world, f"{self.timer.resource}.burst", None)
        self.freeze()

    @property
    def pending(self) -> bool:
        return self.timer.active

    @property
    def fired(self) -> int:
        return self.timer.fired

    @property
    def triggers(self) -> int:
        return self._triggers.get()

    def trigger(self) -> None:
        """Something changed: (re)start the quiet period."""
        self._triggers.set(self._triggers.get() + 1)
        now_ms = self.world.now_ms
        started_ms = self._burst_started_ms.get()
        if started_ms is None:
            started_ms = now_ms
            self._burst_started_ms.set(started_ms)
        delay_ms = self.quiet_ms
        if self.max_wait_ms is not None:
            delay_ms = min(delay_ms, started_ms + self.max_wait_ms - now_ms)
        self.timer.start(max(delay_ms, 0))

    def cancel(self) -> bool:
        self._burst_started_ms.set(None)
        return self.timer.cancel()

    def _fire(self) -> Any:
        self._burst_started_ms.set(None)
        return self.callback()
