"""The runtime port: what model actors may do, so one model runs simulated or for real.

A model whose actors only ``yield rt.sleep(ms)``, ``item = yield queue.get()``,
submit to ``rt.executor(...)``, draw through ``rt.choose`` and log through
``rt.log`` can be driven by two runtimes: ``SimRuntime`` here (SimPy events on
the World, every decision a recorded choice) and a thread runtime outside the
kernel (real sleeps, real threads, a real ZooKeeper), where each yielded value
is already done and is simply sent back.

``rt.touch(resource, write)`` names the model's own shared Python state a step
reads or writes, for the proof's reduction (a no-op outside simulation).

``rt.checkpoint(actor, point)`` names a place where the real runtime may hold a
thread to force an interleaving found in simulation; in simulation it is only
recorded (an op of kind ``checkpoint``), so it never changes a schedule, and
the recorded order is the order a real run is forced into.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol, TypeVar

from raceproof.sim.cells import record
from raceproof.sim.history import JSONValue
from raceproof.sim.nodes import Node
from raceproof.sim.primitives import EventQueue, Executor
from raceproof.sim.world import ProcessGenerator, World

T = TypeVar("T")


class QueuePort(Protocol):
    def put(self, item: Any) -> bool: ...
    def put_front(self, item: Any) -> None: ...
    def get(self) -> Any: ...
    def __len__(self) -> int: ...


class ExecutorPort(Protocol):
    def submit(self, task: str, body: Callable[[], ProcessGenerator]) -> Any: ...


class Runtime(Protocol):
    def now_ms(self) -> int: ...
    def sleep(self, delay_ms: int) -> Any: ...
    def spawn(self, actor: str, body: ProcessGenerator) -> None: ...
    def log(self, actor: str, kind: str, **fields: JSONValue) -> None: ...
    def choose(self, label: str, options: Sequence[T]) -> T: ...
    def queue(self, name: str, *, dedupe: bool = False) -> QueuePort: ...
    def executor(self, name: str, workers: int) -> ExecutorPort: ...
    def checkpoint(self, actor: str, point: str, **fields: JSONValue) -> None: ...
    def touch(self, resource: str, write: bool = True) -> None: ...
    def reach(self, probe: str) -> None: ...
    def finish(self) -> None: ...


class SimRuntime:
    """The runtime port on a World; with a ``node``, everything it spawns runs on that node."""

    def __init__(self, world: World, node: Node | None = None) -> None:
        self.world = world
        self.node = node

    def now_ms(self) -> int:
        return self.world.now_ms

    def sleep(self, delay_ms: int) -> Any:
        return self.world.sleep(delay_ms)

    def spawn(self, actor: str, body: ProcessGenerator) -> None:
        self.world.spawn(actor, body, node=self.node)

    def log(self, actor: str, kind: str, **fields: JSONValue) -> None:
        self.world.log(actor, kind, **fields)

    def choose(self, label: str, options: Sequence[T]) -> T:
        return self.world.source.choose(label, options)

    def queue(self, name: str, *, dedupe: bool = False) -> EventQueue:
        return EventQueue(self.world, name, dedupe=dedupe)

    def executor(self, name: str, workers: int) -> Executor:
        return Executor(self.world, name, workers, node=self.node)

    def checkpoint(self, actor: str, point: str, **fields: JSONValue) -> None:
        """A named place a real run can be held at: recorded, never a scheduling point."""
        self.world.log(actor, "checkpoint", point=point, **fields)

    def touch(self, resource: str, write: bool = True) -> None:
        """Name the model's own shared state this step reads or writes (``World.touch``).

        The model's footprint, recorded through the one mechanism (``cells.record``).
        """
        record(self.world, resource, write=write)

    def reach(self, probe: str) -> None:
        """A race-window probe (``World.reach``): counted beside the history, no op."""
        self.world.reach(probe)

    def finish(self) -> None:
        self.world.finish()


def poll_until(
    rt: Runtime, ready: Callable[[], bool], interval_ms: int, timeout_ms: int
) -> Generator[Any, Any, bool]:
    """Check ``ready()`` now and every ``interval_ms``; False once ``timeout_ms`` passed.

    Use as ``ok = yield from poll_until(rt, ready, 1000, 90000)``.
    """
    if not (interval_ms > 0 and timeout_ms >= 0):
        raise ValueError(
            f"poll_until: interval_ms {interval_ms} must be > 0, timeout_ms {timeout_ms} >= 0"
        )
    start_ms = rt.now_ms()
    while True:
        if ready():
            return True
        if rt.now_ms() - start_ms >= timeout_ms:
            return False
        yield rt.sleep(interval_ms)
