"""Small concurrency primitives on the World: event queue, lock, executor, timers.

Each is the least a model needs to say what the real system does (a Brooklin
event queue that drops duplicates, a Streams lock file owner, a 16-thread
stop pool) without hiding a decision: whatever could happen in another order
happens through World events, whose ties are choices.

No plain ``assert``: a lock released by another owner, a nameless owner, no
workers or a period of 0 are ``ValueError`` errors, kept under ``python -O``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from simpy.events import Event, Process

from raceproof.sim.nodes import Node
from raceproof.sim.world import ProcessGenerator, World


class QueueEmpty(Exception):
    """``EventQueue.get_nowait`` on an empty queue (as ``asyncio.QueueEmpty``)."""


class EventQueue:
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
    """

    def __init__(self, world: World, name: str, *, dedupe: bool = False) -> None:
        self.world = world
        self.name = name
        self.dedupe = dedupe
        self.items: deque[Any] = deque()
        self.getters: deque[Event] = deque()
        self.dropped = 0

    def put(self, item: Any) -> bool:
        """Queue ``item``; False when it was dropped as a duplicate."""
        self.world.touch(f"queue:{self.name}")
        if self.dedupe and item in self.items:
            self.dropped += 1
            return False
        self.items.append(item)
        self._dispatch()
        return True

    def put_front(self, item: Any) -> None:
        self.world.touch(f"queue:{self.name}")
        self.items.appendleft(item)
        self._dispatch()

    def get(self) -> Event:
        """An event whose value is the next item."""
        self.world.touch(f"queue:{self.name}")
        event = self.world.event()
        self.getters.append(event)
        self._dispatch()
        return event

    def get_nowait(self) -> Any:
        """The next item, taken in this step without suspending; ``QueueEmpty`` if none."""
        self.world.touch(f"queue:{self.name}")
        if not self.items:
            raise QueueEmpty(f"queue {self.name} is empty")
        return self.items.popleft()

    def _dispatch(self) -> None:
        while self.items and self.getters:
            self.getters.popleft().succeed(self.items.popleft())

    def __len__(self) -> int:
        self.world.touch(f"queue:{self.name}", write=False)
        return len(self.items)


class Lock:
    """A mutual-exclusion lock that knows its owner (a lock file, a partition lock)."""

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name
        self.owner: str | None = None
        self.waiters: deque[tuple[str, Event]] = deque()

    def try_acquire(self, owner: str) -> bool:
        if not owner:
            raise ValueError("a lock owner needs a name")
        self.world.touch(f"lock:{self.name}")
        if self.owner is None:
            self.owner = owner
            return True
        return self.owner == owner

    def acquire(self, owner: str) -> Event:
        """An event that fires once ``owner`` holds the lock."""
        event = self.world.event()
        if self.try_acquire(owner):
            event.succeed(owner)
        else:
            self.waiters.append((owner, event))
        return event

    def release(self, owner: str) -> None:
        self.world.touch(f"lock:{self.name}")
        if self.owner != owner:  # a verdict depends on it: kept under python -O
            raise ValueError(f"{owner} releases {self.name} held by {self.owner}")
        self.owner = None
        if self.waiters:
            next_owner, event = self.waiters.popleft()
            self.owner = next_owner
            event.succeed(next_owner)

    @property
    def locked(self) -> bool:
        self.world.touch(f"lock:{self.name}", write=False)
        return self.owner is not None


class Executor:
    """A pool of ``workers`` threads: tasks beyond the pool size wait in FIFO order.

    On a ``node``, its threads pause and crash with that node.
    """

    def __init__(self, world: World, name: str, workers: int, *, node: Node | None = None) -> None:
        if workers < 1:
            raise ValueError(f"Executor {name!r}: workers must be >= 1, got {workers}")
        self.world = world
        self.node = node
        self.name = name
        self.workers = workers
        self.busy = 0
        self.backlog: deque[tuple[str, Callable[[], ProcessGenerator], Event]] = deque()
        self.submitted = 0

    def submit(self, task: str, body: Callable[[], ProcessGenerator]) -> Event:
        """Run ``body()`` on a worker; the returned event fires with its result."""
        done = self.world.event()
        self.submitted += 1
        self.backlog.append((f"{self.name}/{task}#{self.submitted}", body, done))
        self._start_waiting()
        return done

    def _start_waiting(self) -> None:
        self.world.touch(f"executor:{self.name}")
        while self.backlog and self.busy < self.workers:
            actor, body, done = self.backlog.popleft()
            self.busy += 1
            self.world.spawn(actor, self._run(body, done), node=self.node)

    def _run(self, body: Callable[[], ProcessGenerator], done: Event) -> ProcessGenerator:
        try:
            result = yield from body()
        finally:
            self.busy -= 1
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
