"""The soundness generator: small random models from every primitive a user has (issue 33 item 2).

A proof's shortcuts (the partial-order reduction, the state cache, the split
over ``-j`` workers) each claim to change no verdict. ``spec_strategy`` draws a
``Spec``: two or three actors, each a short script of ops over tracked state
of every kind (a dict, a set, a counter, a record), a lock, a queue taken with
``get`` and ``get_nowait``, per-actor timers armed and cancelled, ZooKeeper
(a session-bound client per actor: ephemeral creates, sets, watches, multi-
ops, expiries), node faults (pauses, crashes, clock jumps and clock reads),
model-level draws, probes reached from a step and from an ``after_step`` hook,
an ``always()`` invariant, a checker that reads the order of ops
(``reads_op_order``) and a checker of the final state. ``build`` interprets a
spec as a model; ``property_tests/soundness_walks.py`` walks one in full and
with each shortcut and returns what differs, which ``property_tests/search_and_proof/test_soundness.py`` asserts is
nothing, and uses to show that every planted slip is found.

A spec with ``untracked`` also shares a plain dict its footprints never
record (the model's own footprint slip, as a user makes it): there the
reduction may be wrong, and the claim is the checkers' instead: whenever the
reduced walk misses a final state or a verdict of the full walk,
``prove --check-footprints`` and ``--cross-check`` must say so.

A model ends when its observer logs the final state (every tracked object
read) at ``END_MS`` and finishes the run, so an actor blocked on an empty
queue ends nothing early. A run's *ending* is ``state_cache.ending``: its
status, each checker's verdict and the ops it logged, up to their order.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hypothesis import strategies as st

from property_tests.soundness_objects import deep_state
from raceproof.sim import (
    Bounds,
    CheckerResult,
    ChoiceSource,
    EventQueue,
    History,
    Lock,
    QueueEmpty,
    RunOutcome,
    Timer,
    VersionedStore,
    World,
    ZkClient,
    always,
    checker,
    execute,
    invariant_checker,
    reads_op_order,
    violated,
)
from raceproof.sim.outcome import Runner
from raceproof.sim.store import StoreError, TransactionFailed
from raceproof.sim.world import ProcessGenerator

# Ops an actor's script is made of; each is one step, after a scheduling point of its own.
TRACKED = (
    "dict.set",
    "dict.get",
    "dict.del",
    "dict.len",
    "set.add",
    "set.discard",
    "set.has",
    "set.len",
    "counter.add",
    "counter.read",
    "record.toggle",
    "record.get",
    "touch.write",
    "touch.read",
)
PRIMITIVES = (
    "lock.try",
    "lock.release",
    "queue.put",
    "queue.get",
    "queue.get_nowait",
    "timer.start",
    "timer.cancel",
)
ZOOKEEPER = ("zk.create", "zk.set", "zk.get-watch", "zk.multi", "zk.expire")
FAULTS = ("node.pause", "node.crash", "node.jump", "node.clock", "draw", "probe", "late")
UNTRACKED = ("plain.write", "plain.read", "plain.raise", "plain.branch", "plain.choose")
OPS = TRACKED + PRIMITIVES + ZOOKEEPER + FAULTS

INVARIANTS = ("record-not-both", "counter-below-2", "set-below-2", "dict-not-both")
END_MS = 20
BOUNDS = Bounds(max_time_ms=1_000, max_steps=400)


@dataclass(frozen=True)
class Op:
    kind: str
    key: int  # 0 or 1: which element, field, path or delay


@dataclass(frozen=True)
class Spec:
    actors: tuple[tuple[Op, ...], ...]
    invariant: str | None = None
    order_checker: bool = False  # a checker that reads which actor logged first
    probe_hook: bool = False  # a probe reached from an after_step hook
    untracked: bool = False  # ops may share a plain dict no footprint records
    state: bool = False  # the model declares its state (for the state cache)
    final_checker: bool = True  # a third of the final states violate (``final_state``)
    max_steps: int | None = None  # a step bound some runs may hit (None: ``BOUNDS``')
    # Every actor runs the first one's script, and the model declares them interchangeable
    # (``World.declare_symmetric``): the state cache counts a state and its images once.
    symmetric: bool = False

    def __str__(self) -> str:
        scripts = " | ".join(" ".join(f"{op.kind}:{op.key}" for op in ops) for ops in self.actors)
        flags = [
            name
            for name, on in (
                ("order", self.order_checker),
                ("hook", self.probe_hook),
                ("untracked", self.untracked),
                ("state", self.state),
                ("final", self.final_checker),
                ("symmetric", self.symmetric),
            )
            if on
        ]
        bound = "" if self.max_steps is None else f" max_steps={self.max_steps}"
        return f"[{scripts}] invariant={self.invariant} {' '.join(flags)}{bound}"


FAMILIES: dict[str, tuple[str, ...]] = {
    "dict": TRACKED[0:4],
    "set": TRACKED[4:8],
    "counter": TRACKED[8:10],
    "record": TRACKED[10:12],
    "touch": TRACKED[12:14],
    "lock": PRIMITIVES[0:2],
    "queue": PRIMITIVES[2:5],
    "timer": (*PRIMITIVES[5:7], "counter.read"),
    "zk": ZOOKEEPER,
    "node": ("node.pause", "node.crash", "node.jump", "node.clock"),
    "misc": ("draw", "probe", "late"),
    # Untracked control flow (models whose runs diverge when reordered): drawn only
    # when a slip's hunt names it, beside the untracked ops every untracked spec has.
    "diverge": ("plain.choose", "plain.write"),
    # Blind writes of the untracked object beside reads of tracked state: its value
    # differs between orders and converges again when the last write is the same.
    "blind": ("plain.write", "counter.read"),
    # Runs of different lengths (``stall`` where a probe would fire), for a spec with a
    # step bound (``spec_strategy(bounded=True)``): some of its runs hit the bound.
    "bounds": ("stall", "probe", "counter.add", "set.add", "set.discard"),
    # A read guarded by another object (the record's field read only while the counter is
    # 0): what it touches depends on the order, so an order the state cache's covering
    # subtree runs may race where the covered run's did not (``sim/cover_races.py``).
    "guard": ("record.guarded", "record.toggle", "counter.add"),
}
HUNT_ONLY = ("diverge", "bounds", "blind")  # families a spec draws only when a hunt names them
# The invariant that reads each family's object (the others get one at random).
WATCHES = {
    "record": "record-not-both",
    "counter": "counter-below-2",
    "timer": "counter-below-2",
    "set": "set-below-2",
    "dict": "dict-not-both",
}


def strata(*, untracked: bool = False, bounded: bool = False) -> tuple[str, ...]:
    """The strata of an unfocused hunt: each family it gives an equal share of its examples.

    Every family a spec of this kind may draw: the hunt-only families where the
    spec can use them (``diverge`` and ``blind`` write the untracked object, so only
    an ``untracked`` spec; ``bounds`` stalls toward a step bound, so only a
    ``bounded`` one), and for an untracked spec ``plain``, its untracked ops alone.
    """
    extra = {"diverge": untracked, "blind": untracked, "bounds": bounded}
    names = [f for f in FAMILIES if f not in HUNT_ONLY or extra[f]]
    return tuple(sorted([*names, "plain"] if untracked else names))


@st.composite
def spec_strategy(
    draw: st.DrawFn,
    *,
    untracked: bool = False,
    max_ops: int = 5,
    families: tuple[str, ...] = (),
    state: bool | None = None,
    bounded: bool = False,
    symmetric: bool = False,
) -> Spec:
    """Two or three actors of one to three ops, at most ``max_ops`` in all.

    A spec focuses on one or two families of primitives (so its actors meet on the
    same objects, where a slip shows), with an op of any family now and then; its
    invariant, when it has one, mostly watches a focused family's object. With
    ``untracked`` the model's own unrecorded dict is always one of the families
    (``families=("plain",)``: the only one); ``families`` narrows the focus (a
    slip's hunt), ``state`` fixes whether the model declares its state. ``bounded``:
    the spec also has a step bound near its runs' lengths, which some runs may hit.
    ``symmetric``: every actor runs the first one's script (``symmetric_spec``).
    """
    pool = sorted(families or (f for f in FAMILIES if f not in HUNT_ONLY))
    focus = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
    kinds = [kind for family in focus for kind in FAMILIES.get(family, ())]
    if untracked and not any(kind in UNTRACKED for kind in kinds):
        kinds += list(UNTRACKED)  # unless the focus names its own untracked ops
    op = st.builds(
        Op,
        st.one_of(st.sampled_from(kinds), st.sampled_from(kinds), st.sampled_from(OPS)),
        st.integers(0, 1),
    )
    actors = 3 if symmetric else draw(st.integers(2, 3))  # three meet again more often
    scripts: list[tuple[Op, ...]] = []
    for index in range(actors):
        room = max_ops - sum(len(s) for s in scripts) - (actors - index - 1)
        length = draw(st.integers(1, max(1, min(3, room))))
        scripts.append(tuple(draw(op) for _ in range(length)))
    watched = [WATCHES[f] for f in focus if f in WATCHES]
    invariant = draw(
        st.one_of(st.none(), st.sampled_from(watched or INVARIANTS), st.sampled_from(INVARIANTS))
    )
    rare = st.sampled_from((False, False, False, True))
    if symmetric:
        return symmetric_spec(tuple(scripts), invariant, draw(rare), draw(st.booleans()))
    return Spec(
        actors=tuple(scripts),
        invariant=None if untracked else invariant,
        order_checker=draw(rare),
        probe_hook=draw(rare),
        untracked=untracked,
        state=draw(st.booleans()) if state is None else state,
        # An untracked model's verdicts come from its own errors (``plain.raise``): its
        # checkers' claims are about endings, and a final-state violation would stop the
        # stopping proofs before the error a slip hides.
        final_checker=False if untracked else draw(st.booleans()),
        max_steps=draw(st.integers(10, 20)) if bounded else None,
    )


# Ops that name another actor by its index (the next one): under a permutation of three
# actors that is not the same relation, so a symmetric spec of three has none of them.
NEIGHBOUR = ("node.pause", "node.crash", "node.jump", "timer.cancel")


def symmetric_spec(
    scripts: tuple[tuple[Op, ...], ...], invariant: str | None, hook: bool, final: bool
) -> Spec:
    """A spec of identical actors declared interchangeable, its state declared.

    The actors run the first one's script (the others are kept: a planted slip runs them,
    ``soundness_slips``); three actors only when it names no neighbour (``NEIGHBOUR``), and
    then two ops of it. No checker of op order (it tells a0 from a1).
    """
    first = scripts[0]
    if len(scripts) == 3 and any(op.kind in NEIGHBOUR for op in first):
        scripts = scripts[:2]
    elif len(scripts) == 3:
        scripts = (first[:2], *scripts[1:])
    return Spec(
        actors=scripts,
        invariant=invariant,
        probe_hook=hook,
        state=True,
        final_checker=final,
        symmetric=True,
    )


def script_of(spec: Spec, index: int) -> tuple[Op, ...]:
    """What actor ``index`` runs: its own script, or the first actor's in a symmetric spec."""
    return spec.actors[0] if spec.symmetric else spec.actors[index]


def actor_names(index: int) -> tuple[str, ...]:
    """Actor ``index``'s names: itself, its node, its session client, its timer, its watcher."""
    return (f"a{index}", f"node{index}", f"z{index}", f"t{index}", f"w{index}")


@dataclass
class _Parts:
    """A run's objects, for the ops, the observers and the state fingerprint."""

    world: World
    d: Any
    s: Any
    c: Any
    r: Any
    lock: Lock
    queue: EventQueue
    store: VersionedStore
    clients: list[ZkClient]
    timers: list[Timer]
    plain: dict[str, Any]
    touched: dict[str, Any]  # the model's own object, named with world.touch("model:m")


class Drawn(Protocol):
    """A spec of another generator (``soundness_pairs.PairSpec``): it builds and judges itself."""

    state: bool
    untracked: bool

    def build(self, world: World) -> None: ...

    def checkers(self) -> list[Callable[[History], CheckerResult]]: ...

    def bounds(self) -> Bounds: ...


AnySpec = Spec | Drawn  # what ``soundness_walks`` walks


def build(world: World, spec: AnySpec) -> None:
    """The model a spec describes (its footprints declared by the tracked state)."""
    if not isinstance(spec, Spec):
        spec.build(world)
        return
    n = len(spec.actors)
    store = VersionedStore(world, "zk")
    for path in ("/n0", "/n1"):
        store.create(path, "")
    parts = _Parts(
        world=world,
        d=world.shared.dict("d"),
        s=world.shared.set("s"),
        c=world.shared.counter("c"),
        r=world.shared.record("r", x=None, y=None),
        lock=Lock(world, "lock"),
        queue=EventQueue(world, "q"),
        store=store,
        clients=[ZkClient(world, store, f"z{i}") for i in range(n)] if _sessions(spec) else [],
        timers=[],
        plain={"v": None},
        touched={"v": None},
    )

    def fire(name: str) -> None:
        parts.c.add(1)
        world.log(name, "fired")

    parts.timers = [  # each fires by its name (what a symmetric spec renames), not an index
        Timer(world, f"t{i}", lambda name=f"t{i}": fire(name), resource=f"t{i}")  # type: ignore[misc]
        for i in range(n)
    ]
    if spec.invariant is not None:
        always(world, spec.invariant, _predicate(parts, spec.invariant))
    if spec.probe_hook:
        world.after_step.append(lambda: world.reach("hook") if parts.c.value == 1 else None)
    if spec.state:
        world.declare_state(lambda: fingerprint(parts, spec))
    if spec.symmetric:
        world.declare_symmetric(*(actor_names(i) for i in range(n)))
    for index in range(n):
        node = world.node(f"node{index}")
        body = _actor(parts, index, script_of(spec, index))
        world.spawn(f"a{index}", body, interleave=True, node=node)

    def observer() -> ProcessGenerator:
        yield world.sleep(END_MS)
        # A symmetric spec's final state up to a permutation: its checkers see no names.
        state = orbit_min(snapshot_entries(parts), n) if spec.symmetric else snapshot(parts)
        world.log("observer", "final", state=state)
        world.finish()

    world.spawn("observer", observer())


def _sessions(spec: Spec) -> bool:
    """Whether the model opens a session per actor: a symmetric spec only if it uses them (the
    store numbers sessions in order, which tells the actors apart: no image would meet)."""
    return not spec.symmetric or any(op.kind in ZOOKEEPER for ops in spec.actors for op in ops)


def _predicate(parts: _Parts, name: str) -> Callable[[], bool]:
    if name == "record-not-both":
        return lambda: not (parts.r.x is not None and parts.r.y is not None)
    if name == "counter-below-2":
        return lambda: parts.c.value < 2
    if name == "set-below-2":
        return lambda: len(parts.s) < 2
    return lambda: not (0 in parts.d and 1 in parts.d)


def _actor(parts: _Parts, index: int, script: tuple[Op, ...]) -> Callable[[], ProcessGenerator]:
    def body() -> ProcessGenerator:
        for op in script:
            yield parts.world.sleep(0)
            if op.kind == "queue.get":
                item = yield parts.queue.get()
                parts.world.log(f"a{index}", "op", k=op.kind, saw=item)
            elif op.kind == "plain.choose":  # untracked state decides whether the actor draws
                seen = parts.plain["v"]
                pick = None if seen is None else parts.world.source.choose(f"a{index}.pick", (0, 1))
                parts.world.log(f"a{index}", "op", k=op.kind, saw=(seen, pick))
            elif op.kind == "plain.branch":  # control flow on untracked state: a divergence
                if parts.plain["v"] is not None:
                    yield parts.world.sleep(1)
                parts.world.log(f"a{index}", "op", k=op.kind, saw=None)
            elif op.kind == "stall":  # three more steps, 1 ms apart, where a probe would fire
                if parts.c.value > 0 or op.key in parts.s:
                    for _ in range(3):
                        yield parts.world.sleep(1)
                parts.world.log(f"a{index}", "op", k=op.kind, saw=None)
            elif op.kind == "late":  # a step at the instant the observer finishes the run
                yield parts.world.sleep(max(0, END_MS - parts.world.now_ms))
                parts.world.log(f"a{index}", "op", k=op.kind, saw=None)
            elif op.kind == "draw":
                delay_ms = parts.world.source.choose(f"a{index}.delay", (0, 1 + op.key))
                yield parts.world.sleep(delay_ms)
                parts.world.log(f"a{index}", "op", k=op.kind, saw=delay_ms)
            else:
                saw = _apply(parts, index, op)
                parts.world.log(f"a{index}", "op", k=op.kind, saw=saw)

    return body


def _apply(parts: _Parts, index: int, op: Op) -> Any:
    """One op of actor ``index`` within its step; what it saw (logged, so order shows)."""
    me, key = f"a{index}", op.key
    family = op.kind.split(".", 1)[0]
    if family == "touch":
        parts.world.touch("model:m", write=op.kind == "touch.write")
        if op.kind == "touch.write":
            parts.touched["v"] = f"{me}.{key}"
        return parts.touched["v"]
    if family in ("dict", "set", "counter", "record"):
        return _tracked(parts, me, op)
    if family in ("lock", "queue", "timer"):
        return _primitive(parts, index, op)
    if family == "zk":
        return _zookeeper(parts, index, op)
    if family == "plain":
        if op.kind == "plain.write":
            parts.plain["v"] = f"{me}.{key}"
        elif op.kind == "plain.raise" and parts.plain["v"] == f"a{1 - index % 2}.{key}":
            raise ValueError(f"{me} met {parts.plain['v']}")
        return parts.plain["v"]
    other = parts.world.node(f"node{(index + 1) % len(parts.timers)}")
    if op.kind == "node.pause":
        other.pause(1 + key)
    elif op.kind == "node.crash":
        if other.up:
            other.crash()
    elif op.kind == "node.jump":
        other.jump_clock(5 + key)
    elif op.kind == "node.clock":
        return parts.world.node(f"node{index}").now_ms
    elif op.kind == "probe" and (parts.c.value > 0 or key in parts.s):
        parts.world.reach("window")
    return None


def _tracked(parts: _Parts, me: str, op: Op) -> Any:
    d, s, c, r, key = parts.d, parts.s, parts.c, parts.r, op.key
    if op.kind == "dict.set":
        d[key] = me
    elif op.kind == "dict.get":
        return d.get(key)
    elif op.kind == "dict.del":
        return d.pop(key, None)
    elif op.kind == "dict.len":
        return len(d)
    elif op.kind == "set.add":
        s.add(key)
    elif op.kind == "set.discard":
        s.discard(key)
    elif op.kind == "set.has":
        return key in s
    elif op.kind == "set.len":
        return len(s)
    elif op.kind == "counter.add":
        return c.add(1)
    elif op.kind == "counter.read":
        return c.value
    elif op.kind == "record.toggle":
        field = ("x", "y")[key]
        setattr(r, field, me if getattr(r, field) is None else None)
    elif op.kind == "record.guarded":  # read only while the counter is 0 (``guard``)
        return getattr(r, ("x", "y")[key]) if c.value == 0 else None
    else:
        return getattr(r, ("x", "y")[key])
    return None


def _primitive(parts: _Parts, index: int, op: Op) -> Any:
    me = f"a{index}"
    if op.kind == "lock.try":
        return parts.lock.try_acquire(me)
    if op.kind == "lock.release":
        if parts.lock.owner == me:  # the owner is the actor's own knowledge: it took it
            parts.lock.release(me)
            return True
        return False
    if op.kind == "queue.put":
        return parts.queue.put(f"{me}.{op.key}")
    if op.kind == "queue.get_nowait":
        try:
            return parts.queue.get_nowait()
        except QueueEmpty:
            return None
    if op.kind == "timer.start":
        parts.timers[index].start(op.key)
        return None
    return parts.timers[(index + 1) % len(parts.timers)].cancel()


def _zookeeper(parts: _Parts, index: int, op: Op) -> Any:
    client, world, key = parts.clients[index], parts.world, op.key
    try:
        if op.kind == "zk.create":
            return client.create(f"/e{key}", f"a{index}", ephemeral=True)
        if op.kind == "zk.set":
            return client.set(f"/n{key}", f"a{index}")
        if op.kind == "zk.get-watch":

            def notified(event: Any) -> None:
                world.log(f"w{index}", "watch", path=event.path, event=event.kind)
                if key == 1:  # a watcher with a bug: its delivery's process fails (an error)
                    raise ValueError(f"w{index} failed on {event.kind} {event.path}")

            return client.get(f"/n{key}", watch=notified)[1]
        if op.kind == "zk.multi":
            txn = client.transaction().check(f"/n{key}", 0).set_data(f"/n{1 - key}", f"a{index}")
            return txn.commit()
        client.expire()
        return None
    except TransactionFailed:
        return "failed"
    except StoreError as error:
        return type(error).__name__


def snapshot(parts: _Parts) -> str:
    """The final state, every object read (the observer's step)."""
    store = parts.store
    nodes = {p: store.get(p)[0] for p in ("/n0", "/n1", "/e0", "/e1") if store.exists(p)}
    return repr(
        (
            sorted(parts.d.items()),
            sorted(parts.s),
            parts.c.value,
            (parts.r.x, parts.r.y),
            parts.lock.locked,
            list(parts.queue.items),
            sorted(nodes.items()),
            [client.state for client in parts.clients],
            [timer.fired for timer in parts.timers],
            parts.plain["v"],
            parts.touched["v"],
        )
    )


def snapshot_entries(parts: _Parts) -> list[str]:
    """The final state as entries, each actor's own tagged with its name (symmetric specs)."""
    store = parts.store
    nodes = {p: store.get(p)[0] for p in ("/n0", "/n1", "/e0", "/e1") if store.exists(p)}
    entries = [
        f"d={sorted(parts.d.items())!r}",
        f"s={sorted(parts.s)!r}",
        f"c={parts.c.value!r}",
        f"r={(parts.r.x, parts.r.y)!r}",
        f"lock={parts.lock.locked!r}",
        f"queue={list(parts.queue.items)!r}",
        f"store={sorted(nodes.items())!r}",
        f"plain={parts.plain['v']!r} {parts.touched['v']!r}",
    ]
    entries += [f"client@a{i}={c.state!r}" for i, c in enumerate(parts.clients)]
    return entries + [f"timer@a{i}={t.fired!r}" for i, t in enumerate(parts.timers)]


_PREFIXES = ("a", "node", "z", "t", "w")  # of ``actor_names``
_TOKEN = re.compile(r"(?<![\w-])(?:a|node|z|t|w)\d(?![\w-])")


def orbit_min(entries: list[str], n: int) -> str:
    """The least text of the entries over every permutation of the ``n`` actors' names:
    one text for a state and each of its images (exact, unlike the kernel's sorting). It
    names the actors ``a_0``, ``node_1``...: no name of theirs, which the kernel would rename
    again in an ending (a text sorted by names is no function of the state up to a permutation).
    """
    texts = []
    for order in itertools.permutations(range(n)):
        table = {f"{p}{i}": f"{p}_{j}" for i, j in enumerate(order) for p in _PREFIXES}
        renamed = sorted(
            _TOKEN.sub(lambda m, t=table: t.get(m.group(0), m.group(0)), e) for e in entries
        )  # type: ignore[misc]
        texts.append("\n".join(renamed))
    return min(texts)


def fingerprint(parts: _Parts, spec: Spec) -> str | tuple[str, ...]:
    """The model's state for the state cache: everything the future and the checkers read.

    Every object as ``soundness_objects.deep_state`` sees it (its cells, its waiting
    takers, sessions and watches, whatever a primitive keeps inside: it names none of
    their internals, which moved to cells one by one), the nodes, the time, the hooks
    still armed, the probes reached so far and which actor logged first (the order
    checker reads it). The kernel adds every pending event.
    """
    world = parts.world
    if spec.symmetric:
        return symmetric_fingerprint(parts)
    first = next((op.actor for op in world.history.ops if op.kind == "op"), None)
    inside = {name: deep_state(value) for name, value in vars(parts).items() if name != "world"}
    return repr(
        (
            inside,
            deep_state(dict(world.nodes)),
            world.now_ms,  # a node's pause is held until a time, a paused node reads it
            len(world.after_step),
            sorted(world.probes.items()),
            first if spec.order_checker else None,
        )
    )


def symmetric_fingerprint(parts: _Parts) -> tuple[str, ...]:
    """``fingerprint`` as entries, each actor's own tagged with its name: the kernel renames
    the declared actors and sorts the entries again, so a state and its images are one."""
    world = parts.world
    own = ("world", "clients", "timers")
    entries = [f"{k}={deep_state(v)!r}" for k, v in vars(parts).items() if k not in own]
    entries += [f"client@a{i}={deep_state(c)!r}" for i, c in enumerate(parts.clients)]
    entries += [f"timer@a{i}={_timer_state(t)!r}" for i, t in enumerate(parts.timers)]
    entries += [f"node@{name}={deep_state(node)!r}" for name, node in world.nodes.items()]
    entries += [f"now={world.now_ms}", f"hooks={len(world.after_step)}"]
    return (*entries, f"probes={sorted(world.probes.items())}")


def _timer_state(timer: Timer) -> Any:
    """A timer's state but its callback: the same ``fire`` of every timer, by the timer's name
    (its closure holds the whole model, where the timers' own places tell them apart)."""
    return deep_state({k: v for k, v in vars(timer).items() if k != "callback"})


# -- the checkers ---------------------------------------------------------------------
@checker("final-state")
def final_state(history: History) -> CheckerResult | None:
    """A fixed, arbitrary third of the final states violate: a verdict that follows the state."""
    finals = history.of_kind("final")
    if (
        finals
        and int(hashlib.sha256(str(finals[-1].get("state")).encode()).hexdigest(), 16) % 3 == 0
    ):
        return violated("the final state is one of the planted third", finals[-1].index)
    return None


@reads_op_order
@checker("a0-first")
def a0_first(history: History) -> CheckerResult | None:
    """Reads op order: a1's first op must not come before a0's first."""
    for op in history.of_kind("op"):
        if op.actor in ("a0", "a1"):
            return violated("a1 logged first", op.index) if op.actor == "a1" else None
    return None


def checkers(spec: AnySpec) -> list[Callable[[History], CheckerResult]]:
    if not isinstance(spec, Spec):
        return spec.checkers()
    found: list[Callable[[History], CheckerResult]] = [final_state] if spec.final_checker else []
    if spec.invariant is not None:
        found.append(invariant_checker(spec.invariant))
    if spec.order_checker:
        found.append(a0_first)
    return found


def bounds_of(spec: AnySpec) -> Bounds:
    """The spec's bounds: ``BOUNDS``, with its own step bound if it has one."""
    if not isinstance(spec, Spec):
        return spec.bounds()
    if spec.max_steps is None:
        return BOUNDS
    return Bounds(max_time_ms=BOUNDS.max_time_ms, max_steps=spec.max_steps)


def runner(spec: AnySpec) -> Runner:
    judged, bounds = checkers(spec), bounds_of(spec)

    def run(source: ChoiceSource) -> RunOutcome:
        return execute(lambda world: build(world, spec), source, judged, bounds)

    return run
