"""Every pair of operations, generated: two operations of the table at one instant on related objects (issue 44 item 2).

``soundness_ops.PAIRS`` is every pair of operations of the table
(``soundness_ops.py``) that act on the same objects. ``place(pair, seed)``
draws, from ``seed``, where the pair meets: the relation of its two targets
(the same key or equal keys of different types, the same path or a path and
its ancestor, a session and its ephemeral or its parent's child list, a timer
and its own firing, a node and its processes or clients, a lock and its
waiters) and the state at the instant (``Setup``: which znodes, ephemerals and
watches exist, whether the timer is due then, who holds the lock ...). The
model: actor ``a0`` runs the first operation and ``a1`` the second, both at
``INSTANT_MS`` (their starts a tie), each logs what it saw; an observer logs the
final state at ``END_MS`` and ends the run; a third of the final states violate
(``soundness_models.final_state``), so the verdict follows the state.

A ``PairSpec`` walks as a generated ``Spec`` does (``soundness_walks.MODES``:
the reduction, the state cache, ``prove -j 2``, the footprint checkers), and
``judge`` runs every claim on it. ``python -m property_tests.soundness_pairs``
(``make soundness``) draws every pair of the table once, each placed from its
own seed, prints the pair-coverage table (pairs judged / pairs in the table, per
claim) and the problems, and exits 1 below 100 % or on a problem.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from random import Random
from typing import Any

from simpy import Event

from property_tests.soundness_models import final_state
from property_tests.soundness_objects import (
    END_MS,
    EPHEMERAL,
    FS_PATHS,
    INSTANT_MS,
    KEYS,
    PATHS,
    Objects,
    Setup,
    Target,
    arm,
    fingerprint,
    make,
    set_watches,
    snapshot,
)
from property_tests.soundness_ops import FIRING, PAIRS, TABLE
from raceproof.sim import BadArguments, Bounds, CheckerResult, FsError, History, QueueEmpty, World
from raceproof.sim.store import StoreError

BOUNDS = Bounds(max_time_ms=1_000, max_steps=400)
# What an operation may raise as its answer (logged by name): the API's own errors.
ANSWERS = (StoreError, BadArguments, FsError, QueueEmpty, KeyError, ValueError, RuntimeError)
# Groups with an event of the setup due at the instant (``Setup.late`` orders it after the pair).
TIMED = ("timer", "debounce", "lock", "executor", "node-executor", "actor")
# Paths related as ancestor and descendant (first, second).
ANCESTRY = (("/a", "/a/b"), ("/a", "/a/b/c"), ("/a/b", "/a/b/c"), ("/a", EPHEMERAL))


@dataclass(frozen=True)
class PairSpec:
    """One pair of operations placed at one instant: what ``soundness_walks`` walks."""

    group: str
    ops: tuple[str, str]
    relation: str
    targets: tuple[Target, Target]
    setup: Setup
    state: bool = False  # the model declares its state (for the state cache)
    untracked: bool = False  # never: every object of a pair records its footprints

    def __str__(self) -> str:
        sides = " | ".join(f"{op} @ {t}" for op, t in zip(self.ops, self.targets, strict=True))
        return f"<{self.group}: {sides}; {self.relation}; {self.setup}>"

    def build(self, world: World) -> None:
        build(world, self)

    def checkers(self) -> list[Callable[[History], CheckerResult]]:
        return [final_state]

    def bounds(self) -> Bounds:
        return BOUNDS


def plain(value: Any) -> Any:
    """What an actor saw, as a value a history can hold and compare (no object identities)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return type(value).__name__


def _side(world: World, o: Objects, me: int, op: str, target: Target) -> Generator[Any, Any, None]:
    _, apply = TABLE[op]
    yield world.sleep(INSTANT_MS)
    try:
        saw = apply(o, me, target)
        if isinstance(saw, Event):
            saw = yield saw
        elif isinstance(saw, Generator):
            saw = yield from saw
    except ANSWERS as error:
        saw = type(error).__name__
    world.log(f"a{me}", "op", op=op, saw=plain(saw))


def _node_of(world: World, spec: PairSpec, me: int) -> Any:
    """Where side ``me`` runs: a Node operation from outside the node, the rest on it."""
    if not spec.group.startswith("node"):
        return None
    if TABLE[spec.ops[me]][0] == "node":
        return world.node(f"n{me + 1}")
    return world.node("n0")


def build(world: World, spec: PairSpec) -> None:
    """The pair's model: its objects set up, a0 and a1 at the instant, the observer at the end."""
    o = make(world, spec.setup)
    sides = tuple((op, t.path) for op, t in zip(spec.ops, spec.targets, strict=True))
    set_watches(o, spec.setup, sides)  # type: ignore[arg-type]
    if spec.state:
        world.declare_state(lambda: fingerprint(o))
    if not spec.setup.late:
        arm(o, spec.setup)
    for me, (op, target) in enumerate(zip(spec.ops, spec.targets, strict=True)):
        if not op.endswith(FIRING):  # the firing is the timer's own step, armed by the setup
            process = _side(world, o, me, op, target)
            world.spawn(f"a{me}", process, node=_node_of(world, spec, me))
    if spec.setup.late:
        world.spawn("setup", lambda: arm(o, spec.setup))

    def observer() -> Any:
        yield world.sleep(END_MS)
        world.log("observer", "final", state=snapshot(o))
        world.finish()

    world.spawn("observer", observer())


# -- placing a pair ---------------------------------------------------------------------
Targets = tuple[Target, Target]
RELATIONS = {
    "node-clients": "a node and its client",
    "node-executor": "a node and its executor",
    "node": "a node and its processes",
    "timer": "a timer and its firing",
    "debounce": "a debounce and its firing",
    "lock": "a lock and its waiters",
    "actor": "an actor and its wait",
}


def _paths(
    rng: Random, choices: tuple[str, ...], ancestry: tuple[tuple[str, str], ...]
) -> tuple[str, tuple[str, str]]:
    """The same path, or a path and its descendant (either side first)."""
    relation = rng.choice(("same path", "ancestor", "descendant"))
    if relation == "same path":
        path = rng.choice(choices)
        return relation, (path, path)
    up, down = rng.choice(ancestry)
    return relation, (up, down) if relation == "ancestor" else (down, up)


def _zookeeper_targets(
    aims: tuple[str, str], rng: Random, variants: tuple[int, int]
) -> tuple[str, Targets]:
    # Each actor calls through its own client, now and then through the other's.
    clients = [me if rng.random() < 0.75 else 1 - me for me in range(2)]
    if aims == ("path", "path"):
        relation, paths = _paths(rng, PATHS, ANCESTRY)
    elif aims == ("session", "session"):
        relation, paths, clients = "same session", ("/a", "/a"), [0, 0]
    else:  # a session and its ephemeral, or its ephemeral's parent (the child list)
        relation, other = "session and its ephemeral", rng.choice((EPHEMERAL, "/a"))
        paths = (other if aims[0] == "path" else "/a", other if aims[1] == "path" else "/a")
        clients = [0 if aim == "session" else c for aim, c in zip(aims, clients, strict=True)]
    first, second = (
        Target(path=paths[me], client=clients[me], variant=variants[me]) for me in range(2)
    )
    return relation, (first, second)


def _targets(group: str, aims: tuple[str, str], rng: Random) -> tuple[str, Targets]:
    variants = (rng.randrange(2), rng.randrange(2))
    if group == "zookeeper":
        return _zookeeper_targets(aims, rng, variants)
    if group in ("dict", "set"):
        relation = rng.choice(("same key", "equal keys"))
        first = rng.choice(KEYS)
        others = [k for k in KEYS if repr(k) != repr(first)]
        second = first if relation == "same key" else rng.choice(others)
        return relation, (
            Target(key=first, variant=variants[0]),
            Target(key=second, variant=variants[1]),
        )
    if group == "fs":
        relation, paths = _paths(rng, FS_PATHS, (FS_PATHS,))
        return relation, (
            Target(path=paths[0], variant=variants[0]),
            Target(path=paths[1], variant=variants[1]),
        )
    # Client 0 is the node's: "a node and its client".
    return RELATIONS.get(group, "the same object"), (
        Target(variant=variants[0]),
        Target(variant=variants[1]),
    )


def _setup(group: str, ops: tuple[str, str], rng: Random) -> Setup:
    """The state at the instant, of the pair's own objects only (every other object idle).

    Each event due at the instant is one more order to walk: a timer that is due,
    a lock holder releasing, a busy worker finishing are there only for a pair
    of their group (the timer's firing always for its pseudo-operation).
    """
    classes = {op.split(".", 1)[0] for op in ops}
    zookeeper = group in ("zookeeper", "node-clients")
    depth = rng.choice((1, 2, 2, 3, 0)) if zookeeper else 0
    firing = any(op.endswith(FIRING) for op in ops)
    armed = {"timer": "timer", "debounce": "debounce"}.get(group)
    return Setup(
        depth=depth,
        ephemeral=zookeeper and depth > 0 and rng.random() < 0.7,
        watches=zookeeper and rng.random() < 0.4,
        recursive=zookeeper and rng.random() < 0.5,
        cache="LaggingCache" in classes,
        armed=armed if armed and (firing or rng.random() < 0.7) else None,
        present=group in ("dict", "set", "record") and rng.random() < 0.5,
        queued=rng.randrange(2) if group == "queue" else 0,
        holder=rng.choice((None, "a0", "a1", "h")) if group == "lock" else None,
        busy=group in ("executor", "node-executor") and rng.random() < 0.5,
        files=rng.randrange(3) if group == "fs" else 0,
        worker=group == "actor" and rng.random() < 0.8,
        late=group in TIMED and rng.random() < 0.5,
    )


def place(pair: tuple[str, str, str], seed: int) -> PairSpec:
    """The pair at one instant, its relation and its setup drawn from ``seed``."""
    group, first, second = pair
    rng = Random(f"{group}|{first}|{second}|{seed}")
    ops = (first, second)
    if rng.random() < 0.5:  # which actor runs which side
        ops = (second, first)
    aims = (TABLE[ops[0]][0], TABLE[ops[1]][0])
    relation, targets = _targets(group, aims, rng)
    return PairSpec(
        group=group, ops=ops, relation=relation, targets=targets, setup=_setup(group, ops, rng)
    )


def drawn(seed: int, focus: Callable[[tuple[str, str, str]], bool] | None = None) -> PairSpec:
    """The generator's draw at ``seed``: a pair of the table (those ``focus`` keeps), placed."""
    rng = Random(seed)
    pool = [p for p in PAIRS if focus is None or focus(p)]
    return place(rng.choice(pool), seed)
