"""The operation table: every public operation of every kernel primitive and tracked container (issue 44 item 2).

The soundness generator used to draw from families of a few ops each, and the
four shapes of issue 44 were operations it never drew (a key ``1.0`` beside
``1``, a recursive watch, a session's end beside a child list, a timer's cancel
at its own firing). Here the table is the API: ``CLASSES`` are the primitives a
model gets from ``import raceproof`` (``docs/reference/api.md``) and the
containers ``world.shared`` makes, and ``public_operations`` lists a class's
public methods and properties by introspection (with the container protocol it
implements: ``d[k]``, ``k in s``, ``len(q)``, a record's fields);
``property_tests/search_and_proof/test_soundness_pairs.py`` fails when one is
missing from ``TABLE``. Two pseudo-operations stand for what no method names:
a timer's and a debounce's own firing.

Each entry is ``"Class.member": (aim, apply)`` as in ``soundness_ops_zk.py``.
``GROUPS`` says which classes act on the same objects, ``CROSS`` which pairs of
classes are related across groups (a node and its clients, its executor);
``PAIRS`` is every pair of operations of a group or a cross relation, the
coverage ``make soundness`` counts.
"""

from __future__ import annotations

import inspect
from typing import Any

from property_tests.soundness_objects import FIELDS, PAUSES_MS, Objects
from property_tests.soundness_ops_zk import ZOOKEEPER, Entry
from raceproof.sim import (
    Actor,
    Debounce,
    EventQueue,
    Executor,
    FileSystem,
    LaggingCache,
    Lock,
    Nemesis,
    Network,
    Node,
    SimRuntime,
    Timer,
    Transaction,
    VersionedStore,
    ZkClient,
)
from raceproof.sim.shared import Counter, Record, TrackedDict, TrackedSet

FIRING = "(firing)"  # a timer's or a debounce's own firing: no actor runs it


def _child(o: Objects, me: int) -> Any:
    def child() -> Any:
        yield o.world.sleep(0)
        o.world.log(f"c{me}", "child")

    return child()


SHARED: dict[str, Entry] = {
    "TrackedDict.__getitem__": ("key", lambda o, me, t: o.d[t.key]),
    "TrackedDict.__setitem__": ("key", lambda o, me, t: o.d.__setitem__(t.key, f"a{me}")),
    "TrackedDict.__delitem__": ("key", lambda o, me, t: o.d.__delitem__(t.key)),
    "TrackedDict.__contains__": ("key", lambda o, me, t: t.key in o.d),
    "TrackedDict.__iter__": ("key", lambda o, me, t: list(o.d)),
    "TrackedDict.__len__": ("key", lambda o, me, t: len(o.d)),
    "TrackedDict.get": ("key", lambda o, me, t: o.d.get(t.key)),
    "TrackedDict.pop": ("key", lambda o, me, t: o.d.pop(t.key, None)),
    "TrackedDict.popitem": ("key", lambda o, me, t: o.d.popitem()),
    "TrackedDict.setdefault": ("key", lambda o, me, t: o.d.setdefault(t.key, f"a{me}")),
    "TrackedDict.update": ("key", lambda o, me, t: o.d.update({t.key: f"a{me}"})),
    "TrackedDict.clear": ("key", lambda o, me, t: o.d.clear()),
    "TrackedDict.keys": ("key", lambda o, me, t: list(o.d.keys())),
    "TrackedDict.items": ("key", lambda o, me, t: list(o.d.items())),
    "TrackedDict.values": ("key", lambda o, me, t: list(o.d.values())),
    "TrackedSet.__contains__": ("key", lambda o, me, t: t.key in o.s),
    "TrackedSet.__iter__": ("key", lambda o, me, t: list(o.s)),
    "TrackedSet.__len__": ("key", lambda o, me, t: len(o.s)),
    "TrackedSet.add": ("key", lambda o, me, t: o.s.add(t.key)),
    "TrackedSet.discard": ("key", lambda o, me, t: o.s.discard(t.key)),
    "TrackedSet.remove": ("key", lambda o, me, t: o.s.remove(t.key)),
    "TrackedSet.pop": ("key", lambda o, me, t: o.s.pop()),
    "TrackedSet.clear": ("key", lambda o, me, t: o.s.clear()),
    "TrackedSet.isdisjoint": ("key", lambda o, me, t: o.s.isdisjoint({t.key})),
    "Counter.value": ("counter", lambda o, me, t: o.c.value),
    "Counter.add": ("counter", lambda o, me, t: o.c.add(1 + t.variant)),
    "Counter.set": ("counter", lambda o, me, t: o.c.set(me + 5)),
    "Record.__getattr__": ("field", lambda o, me, t: getattr(o.r, FIELDS[0])),
    "Record.__setattr__": ("field", lambda o, me, t: setattr(o.r, FIELDS[0], f"a{me}")),
}

TIMERS: dict[str, Entry] = {
    "Timer.active": ("timer", lambda o, me, t: o.timer.active),
    "Timer.fired": ("timer", lambda o, me, t: o.timer.fired),
    "Timer.due_ms": ("timer", lambda o, me, t: o.timer.due_ms),
    "Timer.start": ("timer", lambda o, me, t: o.timer.start(t.variant)),  # 0: due now again
    "Timer.cancel": ("timer", lambda o, me, t: o.timer.cancel()),
    f"Timer.{FIRING}": ("timer", lambda o, me, t: None),
    "Debounce.pending": ("timer", lambda o, me, t: o.debounce.pending),
    "Debounce.fired": ("timer", lambda o, me, t: o.debounce.fired),
    "Debounce.trigger": ("timer", lambda o, me, t: o.debounce.trigger()),
    "Debounce.triggers": ("timer", lambda o, me, t: o.debounce.triggers),
    "Debounce.cancel": ("timer", lambda o, me, t: o.debounce.cancel()),
    f"Debounce.{FIRING}": ("timer", lambda o, me, t: None),
}


def _task(o: Objects, me: int) -> Any:
    return o.executor.submit(f"a{me}", lambda: _child(o, me))


PRIMITIVES: dict[str, Entry] = {
    "EventQueue.put": ("queue", lambda o, me, t: o.queue.put(f"a{me}")),
    "EventQueue.put_front": ("queue", lambda o, me, t: o.queue.put_front(f"a{me}")),
    "EventQueue.get": ("queue", lambda o, me, t: o.queue.get()),
    "EventQueue.get_nowait": ("queue", lambda o, me, t: o.queue.get_nowait()),
    "EventQueue.__len__": ("queue", lambda o, me, t: len(o.queue)),
    "EventQueue.items": ("queue", lambda o, me, t: o.queue.items),
    "EventQueue.getters": ("queue", lambda o, me, t: len(o.queue.getters)),
    "EventQueue.dropped": ("queue", lambda o, me, t: o.queue.dropped),
    "Lock.try_acquire": ("lock", lambda o, me, t: o.lock.try_acquire(f"a{me}")),
    "Lock.acquire": ("lock", lambda o, me, t: o.lock.acquire(f"a{me}")),
    "Lock.release": ("lock", lambda o, me, t: o.lock.release(f"a{me}")),
    "Lock.locked": ("lock", lambda o, me, t: o.lock.locked),
    "Lock.owner": ("lock", lambda o, me, t: o.lock.owner),
    "Lock.waiters": ("lock", lambda o, me, t: [owner for owner, _ in o.lock.waiters]),
    "Executor.submit": ("executor", _task),
    "Executor.busy": ("executor", lambda o, me, t: o.executor.busy),
    "Executor.submitted": ("executor", lambda o, me, t: o.executor.submitted),
}

FILES: dict[str, Entry] = {
    "FileSystem.mkdir": ("fs", lambda o, me, t: o.fs.mkdir(t.path, parents=bool(t.variant))),
    "FileSystem.isdir": ("fs", lambda o, me, t: o.fs.isdir(t.path)),
    "FileSystem.generation": ("fs", lambda o, me, t: o.fs.generation(t.path)),
    "FileSystem.mtime_ms": ("fs", lambda o, me, t: o.fs.mtime_ms(t.path)),
    "FileSystem.listdir": ("fs", lambda o, me, t: o.fs.listdir(t.path)),
    "FileSystem.rmtree": ("fs", lambda o, me, t: o.fs.rmtree(t.path)),
    "FileSystem.write": (
        "fs",
        lambda o, me, t: o.fs.write(t.path, f"a{me}", sync=bool(t.variant)),
    ),
    "FileSystem.fsync": ("fs", lambda o, me, t: o.fs.fsync(t.path)),
    "FileSystem.read": ("fs", lambda o, me, t: o.fs.read(t.path)),
    "FileSystem.exists": ("fs", lambda o, me, t: o.fs.exists(t.path)),
    "FileSystem.remove": ("fs", lambda o, me, t: o.fs.remove(t.path)),
    "FileSystem.crash": ("fs", lambda o, me, t: o.fs.crash()),
}


def _adopt(o: Objects, me: int) -> None:
    o.node.adopt(o.world.spawn(f"c{me}", _child(o, me)))


def _hook(o: Objects, me: int, what: str) -> Any:
    return lambda *_: o.world.log(f"h{me}", what)


NODES: dict[str, Entry] = {
    "Node.spawn": ("node", lambda o, me, t: o.node.spawn(f"c{me}", _child(o, me)) and None),
    "Node.adopt": ("node", lambda o, me, t: _adopt(o, me)),
    "Node.guard": ("node", lambda o, me, t: o.node.guard(_child(o, me))),
    "Node.on_start": ("node", lambda o, me, t: o.node.on_start(_hook(o, me, "started"))),
    "Node.on_crash": ("node", lambda o, me, t: o.node.on_crash(_hook(o, me, "crashed"))),
    "Node.on_pause": ("node", lambda o, me, t: o.node.on_pause(_hook(o, me, "paused"))),
    "Node.paused": ("node", lambda o, me, t: o.node.paused),
    "Node.pause": ("node", lambda o, me, t: o.node.pause(PAUSES_MS[t.variant])),
    "Node.crash": ("node", lambda o, me, t: o.node.crash()),
    "Node.restart": ("node", lambda o, me, t: o.node.restart()),
    "Node.jump_clock": ("node", lambda o, me, t: o.node.jump_clock(5)),
    "Node.now_ms": ("node", lambda o, me, t: o.node.now_ms),
    "Node.processes": ("node", lambda o, me, t: len(o.node.processes)),
    "Node.up": ("node", lambda o, me, t: o.node.up),
    "Node.incarnation": ("node", lambda o, me, t: o.node.incarnation),
    "Node.paused_until_ms": ("node", lambda o, me, t: o.node.paused_until_ms),
    "Node.clock_offset_ms": ("node", lambda o, me, t: o.node.clock_offset_ms),
    "SimRuntime.now_ms": ("runtime", lambda o, me, t: o.runtime.now_ms()),
    "SimRuntime.sleep": ("runtime", lambda o, me, t: o.runtime.sleep(t.variant)),
    "SimRuntime.spawn": ("runtime", lambda o, me, t: o.runtime.spawn(f"c{me}", _child(o, me))),
    "SimRuntime.log": ("runtime", lambda o, me, t: o.runtime.log(f"r{me}", "said")),
    "SimRuntime.choose": ("runtime", lambda o, me, t: o.runtime.choose(f"a{me}.pick", (0, 1))),
    "SimRuntime.queue": ("runtime", lambda o, me, t: o.runtime.queue(f"q{me}").put(me)),
    "SimRuntime.executor": (
        "runtime",
        lambda o, me, t: o.runtime.executor(f"e{me}", 1).submit("t", lambda: _child(o, me)),
    ),
    "SimRuntime.checkpoint": ("runtime", lambda o, me, t: o.runtime.checkpoint(f"a{me}", "here")),
    "SimRuntime.touch": (
        "runtime",
        lambda o, me, t: o.runtime.touch("model:m", write=bool(t.variant)),
    ),
    "SimRuntime.reach": ("runtime", lambda o, me, t: o.runtime.reach("window")),
    "SimRuntime.finish": ("runtime", lambda o, me, t: o.runtime.finish()),
}


def _delivered(o: Objects, me: int) -> Any:
    return lambda message: o.world.log(f"n{me}", "delivered", message=message)


FAULTS: dict[str, Entry] = {
    "Actor.start": ("actor", lambda o, me, t: o.worker.start()),
    "Actor.alive": ("actor", lambda o, me, t: o.worker.alive),
    "Actor.wait": ("actor", lambda o, me, t: o.worker.wait(o.world.sleep(t.variant))),
    "Actor.main": ("actor", lambda o, me, t: o.worker.main()),
    "Actor.on_crash": ("actor", lambda o, me, t: o.worker.on_crash()),
    "Actor.crash": ("actor", lambda o, me, t: o.worker.crash()),
    "Actor.pause": ("actor", lambda o, me, t: o.worker.pause(PAUSES_MS[t.variant])),
    "Actor.stall_thread": ("actor", lambda o, me, t: o.worker.stall_thread(PAUSES_MS[t.variant])),
    "Actor.process": ("actor", lambda o, me, t: o.worker.process is None),
    "Actor.incarnation": ("actor", lambda o, me, t: o.worker.incarnation),
    "Actor.paused_until_ms": ("actor", lambda o, me, t: o.worker.paused_until_ms),
    "Nemesis.strikes": ("nemesis", lambda o, me, t: o.nemesis.strikes("drop", "a0->a1")),
    "Nemesis.fired": ("nemesis", lambda o, me, t: o.nemesis.fired),
    "Network.send": (
        "nemesis",
        lambda o, me, t: o.network.send(f"a{me}", "a1", f"m{me}", _delivered(o, me)),
    ),
}

TABLE: dict[str, Entry] = {
    **ZOOKEEPER,
    **SHARED,
    **TIMERS,
    **PRIMITIVES,
    **FILES,
    **NODES,
    **FAULTS,
}

# The classes whose public operations the table must hold: the primitives of ``import
# raceproof`` and the containers of ``world.shared`` (by the name the table uses).
CLASSES: dict[str, type] = {
    "VersionedStore": VersionedStore,
    "Transaction": Transaction,
    "ZkClient": ZkClient,
    "LaggingCache": LaggingCache,
    "TrackedDict": TrackedDict,
    "TrackedSet": TrackedSet,
    "Counter": Counter,
    "Record": Record,
    "Timer": Timer,
    "Debounce": Debounce,
    "EventQueue": EventQueue,
    "Lock": Lock,
    "Executor": Executor,
    "FileSystem": FileSystem,
    "Node": Node,
    "SimRuntime": SimRuntime,
    "Actor": Actor,
    "Nemesis": Nemesis,
    "Network": Network,
}
# Groups of classes acting on the same objects: every pair of their operations is drawn.
GROUPS: dict[str, tuple[str, ...]] = {
    "zookeeper": ("VersionedStore", "Transaction", "ZkClient", "LaggingCache"),
    "dict": ("TrackedDict",),
    "set": ("TrackedSet",),
    "counter": ("Counter",),
    "record": ("Record",),
    "timer": ("Timer",),
    "debounce": ("Debounce",),
    "queue": ("EventQueue",),
    "lock": ("Lock",),
    "executor": ("Executor",),
    "fs": ("FileSystem",),
    "node": ("Node", "SimRuntime"),
    "actor": ("Actor",),
    "nemesis": ("Nemesis", "Network"),
}
# Related across groups: a node and its clients (a ZkClient on the node), and its executor.
CROSS: dict[str, tuple[str, str]] = {
    "node-clients": ("Node", "ZkClient"),
    "node-executor": ("Node", "Executor"),
}
# The container protocol a class may implement (each one an operation of the table).
PROTOCOL = (
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__contains__",
    "__iter__",
    "__len__",
    "__getattr__",
    "__setattr__",
)


def _owner(cls: type, name: str) -> type:
    return next(k for k in cls.__mro__ if name in vars(k))


# Bases whose members are construction, no operation: ``cells.Primitive``'s ``freeze()`` and
# the guard (``__setattr__``) that refuses plain state after it.
CONSTRUCTION = ("Primitive",)


def public_operations(cls: type) -> list[str]:
    """``cls``'s public methods and properties, and the container protocol it defines itself."""
    names = [
        n
        for n in dir(cls)
        if not n.startswith("_")
        and not hasattr(object, n)
        and (callable(getattr(cls, n)) or isinstance(inspect.getattr_static(cls, n), property))
    ]
    ours = [k for k in cls.__mro__ if k.__module__.startswith("raceproof")]
    own = [n for n in PROTOCOL if any(n in vars(k) for k in ours)]
    return sorted(n for n in names + own if _owner(cls, n).__name__ not in CONSTRUCTION)


def operations_of(cls_name: str) -> list[str]:
    """The table's operations of one class, in table order."""
    return [name for name in TABLE if name.split(".", 1)[0] == cls_name]


def _pairs_of(group: str, left: list[str], right: list[str] | None) -> list[tuple[str, str, str]]:
    if right is None:  # every unordered pair of the group, an operation with itself too
        return [(group, a, b) for i, a in enumerate(left) for b in left[i:]]
    return [(group, a, b) for a in left for b in right]


def all_pairs() -> list[tuple[str, str, str]]:
    """Every pair of the table: (group, first, second), in a fixed order."""
    found = []
    for group, classes in GROUPS.items():
        ops = [op for cls in classes for op in operations_of(cls)]
        found += _pairs_of(group, ops, None)
    for group, (left, right) in CROSS.items():
        found += _pairs_of(group, operations_of(left), operations_of(right))
    return found


PAIRS = all_pairs()
