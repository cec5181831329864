"""The runtime port on real threads: the same actor generators, driven for real.

Each actor is a thread that drives its generator: every value it yields is
already done (a real sleep, a blocking queue get) and its result is sent back.
Model time is real time divided by ``scale`` (0.05: one model second is 50 ms),
so the model's 1 s, 5 s and 10 s polls keep their ratios.

Two things steer a real run onto a schedule found in simulation:
- ``script``: the simulated run's deviations, keyed by (label, occurrence),
  so a "slow write" or "late notification" is slow or late here too;
- ``Sequencer``: the simulated run's checkpoints in order; a thread reaching
  a scripted checkpoint waits until every earlier one has been passed.
  If the real run cannot follow (a thread waits past ``timeout_s``), the run
  is marked diverged rather than left to hang.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from raceproof.sim.history import History, JSONValue

T = TypeVar("T")
Checkpoint = tuple[str, str, JSONValue]  # actor, point, entity


class Done:
    """A yielded effect that already happened; ``value`` goes back into the generator."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value


class Stopped(Exception):
    """Raised in an actor blocked on a queue when the run is over."""


class Sequencer:
    """Lets scripted checkpoints pass only in the recorded order.

    An actor is sequential, so when it reaches a later checkpoint of the order
    (or its thread ends), its own earlier checkpoints that have not passed
    can no longer happen: they are skipped, as when a fix takes another path.
    Only a wait on another actor can time out and mark the run diverged.

    An actor whose part of the order is over did nothing more while the
    simulated run lasted, so a further checkpoint of its waits until the whole
    order has passed (say the leader's next cache refresh, which must not
    overtake a slow stop task still in the script). If that wait times out
    the checkpoint passes (``released``): a fix may need the step to go on.
    """

    def __init__(self, order: Sequence[Checkpoint], timeout_s: float) -> None:
        self.order = list(order)
        self.done = [False] * len(self.order)
        self.skipped = 0
        self.released = 0
        self.timeout_s = timeout_s
        self.cond = threading.Condition()
        self.diverged: str | None = None

    @property
    def passed(self) -> int:
        return sum(self.done) - self.skipped

    def _first_open(self) -> int:
        return next((i for i, done in enumerate(self.done) if not done), len(self.order))

    def _skip_own_before(self, actor: str, index: int) -> None:
        for i in range(index):
            if not self.done[i] and self.order[i][0] == actor:
                self.done[i] = True
                self.skipped += 1

    def arrive(self, key: Checkpoint) -> None:
        with self.cond:
            index = next(
                (i for i, done in enumerate(self.done) if not done and self.order[i] == key), None
            )
            if self.diverged is not None:
                return  # no longer followable: pass freely
            if index is None:
                self._hold_after_own_part(key[0])
                return
            self._skip_own_before(key[0], index)
            self.cond.notify_all()
            deadline = time.monotonic() + self.timeout_s
            while self.diverged is None and self._first_open() < index:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.diverged = (
                        f"{key} waited for {self.order[self._first_open()]} past {self.timeout_s}s"
                    )
                    self.cond.notify_all()
                    return
                self.cond.wait(remaining)
            self.done[index] = True
            self.cond.notify_all()

    def _hold_after_own_part(self, actor: str) -> None:
        """An unscripted checkpoint: wait for the order's end if the actor's part is over."""
        if any(
            not done and key[0] == actor for key, done in zip(self.order, self.done, strict=True)
        ):
            return  # the actor is still inside its part: an extra step on a fix's path
        if not self.cond.wait_for(
            lambda: self.complete or self.diverged is not None, self.timeout_s
        ):
            self.released += 1

    def actor_done(self, actor: str) -> None:
        with self.cond:
            self._skip_own_before(actor, len(self.order))
            self.cond.notify_all()

    @property
    def complete(self) -> bool:
        return all(self.done)


class ThreadRuntime:
    def __init__(
        self,
        history: History,
        *,
        scale: float,
        script: dict[tuple[str, int], int],
        sequencer: Sequencer,
    ) -> None:
        assert scale > 0
        self.history = history
        self.scale = scale
        self.script = script
        self.sequencer = sequencer
        self.lock = threading.RLock()
        self.finished = threading.Event()
        self.seen: dict[str, int] = {}
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.probes: dict[str, int] = {}  # race-window probe -> times reached
        self.queues: list[ThreadQueue] = []
        self.started = time.monotonic()

    def now_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000 / self.scale)

    def sleep(self, delay_ms: int) -> Done:
        if delay_ms:
            self.finished.wait(delay_ms * self.scale / 1000)
        return Done()

    def spawn(self, actor: str, body: Any) -> None:
        thread = threading.Thread(target=self._drive, args=(actor, body), name=actor, daemon=True)
        with self.lock:
            self.threads.append(thread)
        thread.start()

    def _drive(self, actor: str, body: Any) -> None:
        value = None
        try:
            while not self.finished.is_set():
                effect = body.send(value)
                value = effect.value if isinstance(effect, Done) else None
        except (StopIteration, Stopped):
            pass
        except Exception as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            error = f"{type(exc).__name__}: {exc}"
            self.errors.append(f"{actor}: {error}")
            self.log("kernel", "model.crash", error=error, at=f"{where.name}:{where.lineno}")
        finally:
            self.sequencer.actor_done(actor)

    def log(self, actor: str, kind: str, **fields: JSONValue) -> None:
        with self.lock:
            last = self.history.ops[-1].time_ms if self.history.ops else 0
            self.history.append(max(last, self.now_ms()), actor, kind, **fields)

    def choose(self, label: str, options: Sequence[T]) -> T:
        with self.lock:
            occurrence = self.seen.get(label, 0)
            self.seen[label] = occurrence + 1
        value = self.script.get((label, occurrence), 0)
        return options[value if value < len(options) else 0]

    def queue(self, name: str, *, dedupe: bool = False) -> ThreadQueue:
        queue = ThreadQueue(self, dedupe)
        self.queues.append(queue)
        return queue

    def executor(self, name: str, workers: int) -> ThreadExecutor:
        return ThreadExecutor(self, name, workers)

    def reach(self, probe: str) -> None:
        """A race-window probe: counted beside the history, as the simulation counts it."""
        if not (isinstance(probe, str) and probe):
            raise TypeError(f"reach: a probe is named by a non-empty string, got {probe!r}")
        with self.lock:
            self.probes[probe] = self.probes.get(probe, 0) + 1

    def checkpoint(self, actor: str, point: str, **fields: JSONValue) -> None:
        self.sequencer.arrive((actor, point, fields.get("entity")))
        self.log(actor, "checkpoint", point=point, **fields)

    def touch(self, resource: str, write: bool = True) -> None:
        """The proof's footprints mean nothing on real threads."""

    def finish(self) -> None:
        self.finished.set()
        for queue in self.queues:
            queue.wake()

    def join(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for thread in list(self.threads):
            thread.join(max(0.0, deadline - time.monotonic()))


class ThreadQueue:
    """The event queue port: FIFO, drop-if-equal-pending, put-front, blocking get."""

    def __init__(self, runtime: ThreadRuntime, dedupe: bool) -> None:
        self.runtime = runtime
        self.dedupe = dedupe
        self.items: deque[Any] = deque()
        self.cond = threading.Condition()

    def put(self, item: Any) -> bool:
        with self.cond:
            if self.dedupe and item in self.items:
                return False
            self.items.append(item)
            self.cond.notify_all()
            return True

    def put_front(self, item: Any) -> None:
        with self.cond:
            self.items.appendleft(item)
            self.cond.notify_all()

    def get(self) -> Done:
        with self.cond:
            while not self.items:
                if self.runtime.finished.is_set():
                    raise Stopped
                self.cond.wait(0.5)
            return Done(self.items.popleft())

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def __len__(self) -> int:
        with self.cond:
            return len(self.items)


class ThreadExecutor:
    """A pool of ``workers`` threads: a task runs once a worker slot is free."""

    def __init__(self, runtime: ThreadRuntime, name: str, workers: int) -> None:
        self.runtime = runtime
        self.name = name
        self.slots = threading.Semaphore(workers)
        self.submitted = 0

    def submit(self, task: str, body: Callable[[], Any]) -> None:
        self.submitted += 1

        def run() -> Any:
            with self.slots:
                yield from body()

        self.runtime.spawn(f"{self.name}/{task}#{self.submitted}", run())
