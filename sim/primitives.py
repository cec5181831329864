"""Small concurrency primitives on the World: event queue, lock, executor, timers.

Each is the least a model needs to say what the real system does (a Brooklin
event queue that drops duplicates, a Streams lock file owner, a 16-thread
stop pool) without hiding a decision: whatever could happen in another order
happens through World events, whose ties are choices.

No plain ``assert``: a lock released by another owner, a nameless owner, no
workers or a period of 0 are ``ValueError`` errors, kept under ``python -O``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simpy.events import Event, Process

from raceproof.sim.cells import Cell, Primitive
from raceproof.sim.nodes import Node
from raceproof.sim.world import ProcessGenerator, World


class QueueEmpty(Exception):
    """``EventQueue.get_nowait`` on an empty queue (as ``asyncio.QueueEmpty``)."""


class EventQueue(Primitive):
    """A FIFO of items with blocking ``get`` and non-suspending ``get_nowait``.

    ``dedupe``: ``put`` drops an item equal to one already queued (Brooklin's
    leader queue). ``put_front`` puts a retry ahead of everything queued.

    Which take to use: ``yield queue.get()`` always suspends, so taking an item
    already queued is a scheduling point of its own (other steps of the
    instant may run first). ``queue.get_nowait()`` takes an item already there
    within the current step, as ``asyncio.Queue.get`` does when it need not
    wait, and raises ``QueueEmpty`` otherwise: fewer scheduling points, smaller
    proofs. Model the real code: a consumer that awaits only when the queue is
    empty is ``get_nowait`` first, then ``get``.

    Its cells: the items (``queue:<name>``), the takers waiting (``.getters``) and
    the count of duplicates dropped (``.dropped``).
    """

    def __init__(self, world: World, name: str, *, dedupe: bool = False) -> None:
        self.world = world
        self.name = name
        self.dedupe = dedupe
        resource = f"queue:{name}"
        self._items: Cell[tuple[Any, ...]] = Cell(world, resource, ())
        self._getters: Cell[tuple[Event, ...]] = Cell(world, f"{resource}.getters", ())
        self._dropped = Cell(world, f"{resource}.dropped", 0)
        self.freeze()

    @property
    def items(self) -> tuple[Any, ...]:
        """The items queued, first first."""
        return self._items.get()

    @property
    def getters(self) -> tuple[Event, ...]:
        """The takers waiting (``get`` events not yet given an item), first first."""
        return self._getters.get()

    @property
    def dropped(self) -> int:
        """How many ``put`` calls ``dedupe`` dropped."""
        return self._dropped.get()

    def put(self, item: Any) -> bool:
        """Queue ``item``; False when it was dropped as a duplicate."""
        items = self._items.get()
        if self.dedupe and item in items:
            self._dropped.set(self._dropped.get() + 1)
            return False
        self._items.set((*items, item))
        self._dispatch()
        return True

    def put_front(self, item: Any) -> None:
        self._items.set((item, *self._items.get()))
        self._dispatch()

    def get(self) -> Event:
        """An event whose value is the next item."""
        event = self.world.event()
        self._getters.set((*self._getters.get(), event))
        self._dispatch()
        return event

    def get_nowait(self) -> Any:
        """The next item, taken in this step without suspending; ``QueueEmpty`` if none."""
        items = self._items.get()
        if not items:
            raise QueueEmpty(f"queue {self.name} is empty")
        self._items.set(items[1:])
        return items[0]

    def _dispatch(self) -> None:
        """Hand queued items to waiting takers, first to first."""
        items, getters = self._items.get(), self._getters.get()
        served = min(len(items), len(getters))
        if not served:
            return
        self._items.set(items[served:])
        self._getters.set(getters[served:])
        for getter, item in zip(getters[:served], items[:served], strict=True):
            getter.succeed(item)

    def __len__(self) -> int:
        return len(self._items.get())


class Lock(Primitive):
    """A mutual-exclusion lock that knows its owner (a lock file, a partition lock).

    Its cells: the owner (``lock:<name>``) and the owners waiting, with their events
    (``.waiters``).
    """

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name
        self._owner: Cell[str | None] = Cell(world, f"lock:{name}", None)
        self._waiters: Cell[tuple[tuple[str, Event], ...]] = Cell(world, f"lock:{name}.waiters", ())
        self.freeze()

    @property
    def owner(self) -> str | None:
        return self._owner.get()

    @property
    def waiters(self) -> tuple[tuple[str, Event], ...]:
        return self._waiters.get()

    def try_acquire(self, owner: str) -> bool:
        if not owner:
            raise ValueError("a lock owner needs a name")
        held = self._owner.get()
        if held is None:
            self._owner.set(owner)
            return True
        return held == owner

    def acquire(self, owner: str) -> Event:
        """An event that fires once ``owner`` holds the lock."""
        event = self.world.event()
        if self.try_acquire(owner):
            event.succeed(owner)
        else:
            self._waiters.set((*self._waiters.get(), (owner, event)))
        return event

    def release(self, owner: str) -> None:
        held = self._owner.get()
        if held != owner:  # a verdict depends on it: kept under python -O
            raise ValueError(f"{owner} releases {self.name} held by {held}")
        waiters = self._waiters.get()
        if not waiters:
            self._owner.set(None)
            return
        (next_owner, event), rest = waiters[0], waiters[1:]
        self._waiters.set(rest)
        self._owner.set(next_owner)
        event.succeed(next_owner)

    @property
    def locked(self) -> bool:
        return self._owner.get() is not None


class Executor(Primitive):
    """A pool of ``workers`` threads: tasks beyond the pool size wait in FIFO order.

    On a ``node``, its threads pause and crash with that node. Its cells: the tasks
    waiting for a thread (``executor:<name>``), the threads busy (``.busy``) and the
    count of tasks submitted (``.submitted``, which names each task's process).
    """

    def __init__(self, world: World, name: str, workers: int, *, node: Node | None = None) -> None:
        if workers < 1:
            raise ValueError(f"Executor {name!r}: workers must be >= 1, got {workers}")
        self.world = world
        self.node = node
        self.name = name
        self.workers = workers
        resource = f"executor:{name}"
        self._backlog: Cell[tuple[tuple[str, Callable[[], ProcessGenerator], Event], ...]] = Cell(
            world, resource, ()
        )
        self._busy = Cell(world, f"{resource}.busy", 0)
        self._submitted = Cell(world, f"{resource}.submitted", 0)
        self.freeze()

    @property
    def busy(self) -> int:
        return self._busy.get()

    @property
    def submitted(self) -> int:
        return self._submitted.get()

    def submit(self, task: str, body: Callable[[], ProcessGenerator]) -> Event:
        """Run ``body()`` on a worker; the returned event fires with its result."""
        done = self.world.event()
        submitted = self._submitted.get() + 1
        self._submitted.set(submitted)
        actor = f"{self.name}/{task}#{submitted}"
        self._backlog.set((*self._backlog.get(), (actor, body, done)))
        self._start_waiting()
        return done

    def _start_waiting(self) -> None:
        backlog, busy = self._backlog.get(), self._busy.get()
        started = min(len(backlog), max(self.workers - busy, 0))
        if not started:
            return
        self._backlog.set(backlog[started:])
        self._busy.set(busy + started)
        for actor, body, done in backlog[:started]:
            self.world.spawn(actor, self._run(body, done), node=self.node)

    def _run(self, body: Callable[[], ProcessGenerator], done: Event) -> ProcessGenerator:
        try:
            result = yield from body()
        finally:
            self._busy.set(self._busy.get() - 1)
            self._start_waiting()
        done.succeed(result)


def every(
    world: World,
    actor: str,
    period_ms: int,
    tick: Callable[[], bool | None],
    *,
    first_delay_ms: int | None = None,
) -> Process:
    """Call ``tick()`` every ``period_ms`` until it returns False or the run finishes."""
    if not period_ms > 0:
        raise ValueError(f"every: period_ms must be > 0, got {period_ms}")

    def loop() -> ProcessGenerator:
        yield world.sleep(period_ms if first_delay_ms is None else first_delay_ms)
        while world.finished is None:
            if tick() is False:
                return
            yield world.sleep(period_ms)

    return world.spawn(actor, loop())
