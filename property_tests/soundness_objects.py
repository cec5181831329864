"""The objects a generated pair of operations acts on, and what each operation is aimed at (issue 44 item 2).

``property_tests/soundness_pairs.py`` places two operations of the table
(``soundness_ops.py``) at the same instant on the same or related objects. The
objects of one run are here: one of every kernel primitive and tracked
container (a store with two session-bound clients and a lagging cache, a timer,
a debounce, a queue, a lock, an executor, a file system, the node ``n0`` with a
runtime on it, a tracked dict, set, counter and record), set up as the pair's
``Setup`` says (which znodes, ephemerals and watches exist, whether the timer is
armed to fire at the pair's instant, who holds the lock ...). A ``Target`` is
what one side of the pair acts on: a path, a session (a client), a key, a
variant of the call (a watch set or not, a recursive watch, a short or a long
pause). ``snapshot`` reads the final state; ``fingerprint`` is the model's state
for the state cache.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FunctionType, MethodType
from typing import Any

from simpy import Event

from raceproof.sim import (
    Actor,
    Debounce,
    EventQueue,
    Executor,
    FaultPlan,
    FileSystem,
    LaggingCache,
    Lock,
    Nemesis,
    Network,
    Node,
    SimRuntime,
    Timer,
    VersionedStore,
    World,
    ZkClient,
)
from raceproof.sim.cells import Cell, CellMap
from raceproof.sim.store import WatchEvent
from raceproof.sim.world import _step_key

INSTANT_MS = 1  # the pair's instant: both operations, and the timer's firing, are due then
END_MS = 20  # the observer reads the final state and ends the run
SESSION_TIMEOUT_MS = 4  # a pause of the long kind (6 ms) expires a session, the short (2 ms) not
PAUSES_MS = (2, 6)
# The znodes: a persistent chain /a, /a/b, /a/b/c (its first ``depth`` exist) and /a/e0, the
# ephemeral of client 0's session.
PATHS = ("/a", "/a/b", "/a/b/c", "/a/e0")
EPHEMERAL = "/a/e0"
FS_PATHS = ("/d", "/d/x")
# Keys of the tracked containers: equal, of different types (1 == 1.0 == True, one hash).
KEYS: tuple[Any, ...] = (1, 1.0, True)
FIELDS = ("x", "y")


@dataclass(frozen=True)
class Target:
    """What one side of a pair acts on."""

    path: str = "/a"  # a znode, or a file-system path
    client: int = 0  # the ZkClient it calls through or acts on (its session)
    key: Any = 1  # a tracked container's key or element
    variant: int = 0  # 0 or 1: a watch set or not, a recursive watch, the long pause ...

    def __str__(self) -> str:
        return f"{self.path} z{self.client} {self.key!r} v{self.variant}"


@dataclass(frozen=True)
class Setup:
    """The state at the pair's instant (made in ``build``, before any step)."""

    depth: int = 0  # how many of /a, /a/b, /a/b/c exist
    ephemeral: bool = False  # client 0's /a/e0 exists (needs /a)
    watches: bool = False  # each side's watches are set on its path (to be removed, to fire)
    recursive: bool = False  # those persistent watches are recursive
    cache: bool = False  # the lagging cache follows the store's changes (each one a step)
    armed: str | None = None  # "timer" or "debounce": due at the instant
    present: bool = False  # the container holds key 1 (and the record's field is set)
    queued: int = 0  # items in the queue
    holder: str | None = None  # who holds the lock: "a0", "a1", "h" (releases at the instant)
    worker: bool = False  # the worker actor is started (it wakes at the instant)
    busy: bool = False  # the executor's one worker runs a task ending at the instant
    files: int = 0  # 0: no /d; 1: the directory /d; 2: /d and the file /d/x (synced)
    late: bool = False  # the timer, the holder, the busy task are set after the actors start

    def __str__(self) -> str:
        default = Setup()
        return " ".join(f"{k}={v}" for k, v in vars(self).items() if v != getattr(default, k))


@dataclass
class Objects:
    """One run's objects (``make``)."""

    world: World
    store: VersionedStore
    clients: list[ZkClient]
    cache: LaggingCache
    timer: Timer
    debounce: Debounce
    queue: EventQueue
    lock: Lock
    executor: Executor
    fs: FileSystem
    node: Node
    runtime: SimRuntime
    d: Any
    s: Any
    c: Any
    r: Any
    worker: Actor  # an actor of its own (``Worker``), started by the setup
    nemesis: Nemesis
    network: Network
    # Per actor: the callbacks of the watches it sets (the same object, so it can remove them).
    client_watchers: list[Callable[[WatchEvent], None]] = field(default_factory=list)
    store_watchers: list[Callable[[WatchEvent], None]] = field(default_factory=list)


def _watcher(world: World, name: str) -> Callable[[WatchEvent], None]:
    def notified(event: WatchEvent) -> None:
        world.log(name, "watch", path=event.path, event=event.kind)

    return notified


def _fired(world: World, name: str) -> Callable[[], None]:
    return lambda: world.log(name, "fired")


class Worker(Actor):
    """An actor that waits for the instant, then logs: what ``Actor``'s operations act on."""

    def main(self) -> Any:
        yield from self.wait(self.world.sleep(INSTANT_MS))
        self.world.log(self.name, "woke")

    def on_crash(self) -> None:
        self.world.log(self.name, "forgot")


def make(world: World, setup: Setup) -> Objects:
    """Every primitive and container, in the state ``setup`` describes."""
    node = world.node("n0")
    store = VersionedStore(world, "zk")
    clients = [
        ZkClient(world, store, f"z{i}", session_timeout_ms=SESSION_TIMEOUT_MS, node=n)
        for i, n in enumerate((node, None))
    ]
    shared = world.shared
    nemesis = Nemesis(world, FaultPlan(kinds=frozenset({"drop", "delay"}), max_faults=1))
    objects = Objects(
        world=world,
        store=store,
        clients=clients,
        cache=LaggingCache(world, store, "/a", auto_refresh=setup.cache),
        timer=Timer(world, "timer", _fired(world, "timer"), resource="t"),
        debounce=Debounce(
            world, "debounce", quiet_ms=INSTANT_MS, callback=_fired(world, "debounce")
        ),
        queue=EventQueue(world, "q"),
        lock=Lock(world, "lock"),
        executor=Executor(world, "pool", 1, node=node),
        fs=FileSystem(world, "fs"),
        node=node,
        runtime=SimRuntime(world, node=node),
        d=shared.dict("d", {1: "init"} if setup.present else {}),
        s=shared.set("s", {1} if setup.present else ()),
        c=shared.counter("c"),
        r=shared.record("r", x="init" if setup.present else None, y=None),
        worker=Worker(world, "worker"),
        nemesis=nemesis,
        network=Network(world, nemesis, latency_ms=(0,)),
        client_watchers=[_watcher(world, f"w{i}") for i in range(2)],
        store_watchers=[_watcher(world, f"v{i}") for i in range(2)],
    )
    _set_up_zookeeper(objects, setup)
    _set_up_the_rest(objects, setup)
    return objects


def arm(o: Objects, setup: Setup) -> None:
    """What is due at the instant besides the pair: the timer or debounce, the holder, the task.

    Called by ``build`` before the actors start, or (``setup.late``) by a step after
    their first: which of the events due at the instant FIFO runs first.
    """
    _set_up_timed(o, setup)


def _set_up_zookeeper(o: Objects, setup: Setup) -> None:
    for path in PATHS[: setup.depth]:
        o.store.create(path, "init")
    if setup.ephemeral and setup.depth:
        o.clients[0].create(EPHEMERAL, "mine", ephemeral=True)


def set_watches(o: Objects, setup: Setup, sides: tuple[tuple[str, str], tuple[str, str]]) -> None:
    """Each side's persistent watch on its path: through its client for a client's operation
    (``ZkClient``, ``Transaction``), else on the store, so that each can remove its own."""
    if not setup.watches:
        return
    for me, (op, path) in enumerate(sides):
        if op.startswith(("ZkClient.", "Transaction.")):
            o.clients[me].add_watch(path, o.client_watchers[me], recursive=setup.recursive)
        else:
            o.store.add_watch(path, o.store_watchers[me], recursive=setup.recursive)


def _set_up_the_rest(o: Objects, setup: Setup) -> None:
    for i in range(setup.queued):
        o.queue.put(f"item{i}")
    if setup.holder is not None:
        o.lock.try_acquire(setup.holder)
    if setup.files:
        o.fs.mkdir("/d")
    if setup.files == 2:
        o.fs.write("/d/x", "init", sync=True)


def _set_up_timed(o: Objects, setup: Setup) -> None:
    world = o.world
    if setup.armed == "timer":
        o.timer.start(INSTANT_MS)
    elif setup.armed == "debounce":
        o.debounce.trigger()
    if setup.worker:
        o.worker.start()
    if setup.holder == "h":

        def holder() -> Any:
            yield world.sleep(INSTANT_MS)
            o.lock.release("h")
            world.log("h", "released")

        world.spawn("h", holder())
    if setup.busy:

        def task() -> Any:
            yield world.sleep(INSTANT_MS)
            world.log("task", "done")

        o.executor.submit("busy", task)


def _znodes(o: Objects, path: str = "/") -> list[tuple[str, Any, int, bool]]:
    """Every znode below ``path``, with its data and its version."""
    found = []
    for name in o.store.children(path):
        child = f"{path.rstrip('/')}/{name}"
        data, version = o.store.get(child)
        found.append((child, data, version))
        found += _znodes(o, child)
    return found  # type: ignore[return-value]


def _files(o: Objects, path: str = "/") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name in o.fs.listdir(path):
        child = f"{path.rstrip('/')}/{name}"
        found.append((child, None if o.fs.isdir(child) else o.fs.read(child)))
        if o.fs.isdir(child):
            found += _files(o, child)
    return found


def snapshot(o: Objects) -> str:
    """The final state, every object read through its public operations (the observer's step)."""
    world = o.world
    return repr(
        (
            _znodes(o),
            [(c.state, c.live) for c in o.clients],
            [o.cache.get(p) for p in ("/a/b", "/a/e0")],
            (o.timer.fired, o.timer.due_ms, o.debounce.fired, o.debounce.pending),
            (o.queue.items, len(o.queue.getters), o.lock.owner, len(o.lock.waiters)),
            (o.executor.busy, o.executor.submitted),
            _files(o),
            (o.node.up, o.node.paused, o.node.now_ms - world.now_ms, o.worker.alive),
            sorted(((repr(k), v) for k, v in o.d.items())),
            sorted(map(repr, o.s)),
            o.c.value,
            (o.r.x, o.r.y),
        )
    )


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def deep_state(value: Any, seen: dict[int, str] | None = None, at: str = "") -> Any:
    """``value`` as plain data, whatever the primitive keeps inside (cells, lists, events).

    For a state fingerprint: finer than the state is safe (the cache prunes less),
    coarser is not. Cells by their values, events by the step they resume,
    processes by their identity, functions by name and what they closed over,
    bound methods by their object, other objects by their attributes; an object
    met again (a cycle, a shared reference) by where it was first met (``@at``),
    so two states differ whenever what they hold differs. The World is left out
    (the kernel adds its pending events itself).
    """
    seen = {} if seen is None else seen
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (World, type)):
        return type(value).__name__
    if isinstance(value, (Cell, CellMap)):
        return deep_state(value.peek(), seen, at)
    if isinstance(value, Event):
        return getattr(value, "rp_id", None) or _step_key(value) or type(value).__name__
    if isinstance(value, dict):
        pairs = [(deep_state(k, seen, f"{at}<{i}>"), v) for i, (k, v) in enumerate(value.items())]
        if all(_plain(k) for k in value):  # by key; else in insertion order (finer: safe)
            pairs.sort(key=lambda kv: repr(kv[0]))
        return [(repr(k), deep_state(v, seen, f"{at}[{k!r}]")) for k, v in pairs]
    if isinstance(value, (list, tuple, deque)):
        return [deep_state(v, seen, f"{at}.{i}") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return sorted(repr(deep_state(v, seen, f"{at}{{}}")) for v in value)
    if id(value) in seen:
        return f"@{seen[id(value)]}"
    seen[id(value)] = at
    if isinstance(value, FunctionType):
        closed = [c.cell_contents for c in value.__closure__ or () if c.cell_contents is not value]
        return (value.__qualname__, deep_state(closed, seen, f"{at}()"))
    if isinstance(value, MethodType):
        return (value.__func__.__qualname__, deep_state(value.__self__, seen, f"{at}.self"))
    slots = [n for k in type(value).__mro__ for n in getattr(k, "__slots__", ())]
    fields = {
        **{n: getattr(value, n) for n in slots if hasattr(value, n)},
        **getattr(value, "__dict__", {}),
    }
    return (type(value).__name__, deep_state(fields, seen, at))


def fingerprint(o: Objects) -> str:
    """The model's state for the state cache: every object's inside and the ops logged so far.

    The objects as ``deep_state`` sees them (so a primitive's internals may move
    to cells without this function knowing), and the ops logged so far as a
    multiset (the checkers read them; two orders of commuting steps log the same).
    The kernel adds every pending event.
    """
    logged = sorted(
        (op.time_ms, op.actor, op.kind, repr(sorted(op.fields.items())))
        for op in o.world.history.ops
    )
    inside = {name: deep_state(value) for name, value in vars(o).items() if name != "world"}
    return repr((inside, logged))
