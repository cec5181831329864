"""Small generated models for the proof's tests: actors that read and write store paths.

Each actor runs a script of steps at virtual time 0, one step per scheduling
point; a step reads or writes a path of the versioned store (so the
primitives record its footprint), and a write appends who wrote it and how
much the actor has read so far, so the order of dependent steps shows in the
final state. An observer logs the final state at 1 ms. A *planted* violation
is one exact final state: reachable only through the interleavings that
produce it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from raceproof.sim import (
    Bounds,
    Checker,
    CheckerResult,
    ChoiceSource,
    History,
    Runner,
    RunOutcome,
    VersionedStore,
    World,
    checker,
    execute,
    ok,
    unknown,
    violated,
)
from raceproof.sim.history import JSONValue
from raceproof.sim.session import ZkClient
from raceproof.sim.store import NodeExists, SessionExpired
from raceproof.sim.timers import Timer
from raceproof.sim.world import ProcessGenerator

Step = tuple[str, bool]  # (path, is_write); path "?" is drawn in the step: /a or /b
# With ``sessions``, a step may instead use the session and timer primitives (is_write
# ignored): "E" creates the ephemeral /e through the actor's ZkClient, "X" expires that
# client's session (its /e goes), "T" arms the actor's timer for this very instant (its
# firing, a step of its own, appends to /c), "K" cancels the next actor's timer.
SESSION_STEPS = ("E", "X", "T", "K")


@dataclass(frozen=True)
class Toy:
    scripts: tuple[tuple[Step, ...], ...]
    declared: bool = True  # the model declares its footprints
    planted: str | None = None  # canonical final state that counts as a violation
    spin_steps: int = 0  # one schedule loops this long (for the step bound)
    spin_sleep_ms: int = 0  # one schedule sleeps past the time bound
    drawn_delay: bool = False  # actor 0 draws a delay (a model-level draw)
    state: str | None = (
        None  # "right": declares its state for the state cache; "wrong": leaves data out
    )
    sessions: bool = False  # each actor has a ZkClient and a Timer (see SESSION_STEPS)


PATHS = ("/a", "/b", "/c")


def final_state(store: VersionedStore) -> str:
    state = ";".join(f"{p}={store.get(p)[0]}" for p in PATHS)
    if store.exists("/e"):
        state += f";/e={store.get('/e')[0]}"
    return state


def build(world: World, toy: Toy) -> None:
    # one function: the actors below close over this run's store and toggles
    if toy.declared:
        world.declare_footprints()
    store = VersionedStore(world)
    for path in PATHS:
        store.create(path, "")
    spin = bool(toy.spin_steps or toy.spin_sleep_ms)
    seen_by: dict[int, int] = {}
    if toy.state == "right":
        world.declare_state(lambda: f"{final_state(store)} {sorted(seen_by.items())}")
    elif toy.state == "wrong":  # what each actor read, but not what is in the store
        world.declare_state(lambda: f"{sorted(seen_by.items())}")

    def fire(index: int) -> None:
        data, _ = store.get("/c")
        store.set("/c", f"{data}t{index} ")

    actors = range(len(toy.scripts)) if toy.sessions else range(0)
    clients = [ZkClient(world, store, f"c{i}") for i in actors]
    timers = [
        Timer(world, f"t{i}", lambda i=i: fire(i), resource=f"t{i}")  # type: ignore[misc]
        for i in actors
    ]

    def session_step(index: int, step: str) -> None:
        if step == "E":
            with contextlib.suppress(NodeExists, SessionExpired):
                clients[index].create("/e", f"a{index}", ephemeral=True)
        elif step == "X":
            clients[index].expire()
        elif step == "T":
            timers[index].start(0)
        else:  # the next actor's timer: a cancel racing with another actor's firing
            timers[(index + 1) % len(timers)].cancel()

    def actor(index: int, script: Sequence[Step]) -> ProcessGenerator:
        me = f"a{index}"
        seen = 0
        if spin:
            yield world.sleep(0)
            if not store.exists("/z"):
                store.create("/z", me)
        if toy.drawn_delay and index == 0:
            yield world.sleep(world.source.choose("a0.delay", (0, 0)))
        for step_path, write in script:
            yield world.sleep(0)
            if step_path in SESSION_STEPS:
                session_step(index, step_path)
                world.log(me, "step", path=step_path, write=write)
                continue
            path = step_path
            if step_path == "?":  # a model-level draw inside the step picks the path
                path = world.source.choose(f"{me}.path", ("/a", "/b"))
            data, _ = store.get(path)
            if write:
                store.set(path, f"{data}{me}.{seen} ")
            else:
                seen += len(str(data))
                seen_by[index] = seen
            world.log(me, "step", path=path, write=write)
        if index == 0 and spin and store.get("/z")[0] == "a1":
            # Only when actor 1 won the race for /z: this run goes on past a bound.
            for _ in range(toy.spin_steps):
                yield world.sleep(0)
            yield world.sleep(toy.spin_sleep_ms)

    for index, script in enumerate(toy.scripts):
        world.spawn(f"a{index}", actor(index, script))

    def observer() -> ProcessGenerator:
        yield world.sleep(1)
        state: JSONValue = final_state(store)
        world.log("observer", "final", state=state)

    world.spawn("observer", observer())


def make_checker(planted: str | None) -> Checker:
    @checker("not-planted")
    def check(history: History) -> CheckerResult:
        finals = history.of_kind("final")
        if not finals:
            return unknown("not-planted", "no final state")
        if planted is not None and finals[-1].get("state") == planted:
            return violated("not-planted", finals[-1].index, "reached the planted state")
        return ok("not-planted")

    return check


TOY_BOUNDS = Bounds(max_time_ms=10_000, max_steps=300)


def runner(toy: Toy, bounds: Bounds = TOY_BOUNDS) -> Runner:
    check = make_checker(toy.planted)

    def run(source: ChoiceSource) -> RunOutcome:
        return execute(lambda world: build(world, toy), source, [check], bounds)

    return run


def final_of(outcome: RunOutcome) -> str:
    finals = outcome.history.of_kind("final")
    return str(finals[-1].get("state")) if finals else "?"


# Scripts small enough to count by hand (the walk's, the plan's and the state cache's tests).
ONE_PATH = ((("/a", True),), (("/a", True),))  # two writes of one path: two orders
TWO_PATHS = ((("/a", True),), (("/b", True),))  # two writes of two paths: one class
THREE = ((("/a", True),), (("/a", True),), (("/a", True),))
SAMPLE = (  # reads and writes of three paths: states repeat across orders
    (("/a", True), ("/b", False)),
    (("/b", True), ("/a", True)),
    (("/a", False), ("/c", True)),
)


def history_fingerprint(outcome: RunOutcome) -> tuple[tuple[object, ...], ...]:
    """The history up to the order of ops logged at the same instant (what commuting changes)."""
    return tuple(
        sorted(
            (op.time_ms, op.actor, op.kind, repr(sorted(op.fields.items())))
            for op in outcome.history.ops
        )
    )
