"""The locality claim of the soundness generator: a fault of one node delays no effect at another (issue 45 item 1).

A remote call takes effect at the receiver at the receiver's time
(``raceproof.sim.remote``); a pause, crash or clock jump of a node holds only
that node's own steps. ``locality_spec(seed)`` draws a random model: two or
three nodes, each with one actor and a session-bound ``ZkClient`` on it, each
actor making one to three remote calls (``ZkClient.request``,
``ZkClient.retrying`` or the plain ``remote.call``) to a store on no node, a
few ms apart, each call's operation logging ``applied`` when the store applies
it; and one fault (``pause``, ``crash`` or ``jump`` of the clock) of one node at
a drawn instant. ``locality_problems`` runs the model with the fault and without
it (every draw its choice 0, every tie FIFO) and compares: every call of
another node, and every call of the faulted node sent before the fault began,
applies at the same virtual time in both runs. ``COMBINATIONS`` are the (fault,
call) kinds; a combination counts as drawn once a call of that kind was on the
wire (sent, not yet applied) when a fault of that kind struck its own node.

On the kernel before remote calls had two halves (a182063), the operation ran
in the caller's step after the latency, so a pause of the caller's node held a
write the server had already received: ``property_tests/search_and_proof/
test_soundness_locality.py`` plants that (``applied_by_the_caller``) and the
claim fails.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from random import Random
from typing import Any

from raceproof.sim import Bounds, ReplaySource, VersionedStore, World, ZkClient, execute
from raceproof.sim import remote as remote_calls
from raceproof.sim.store import StoreError

FAULTS = ("pause", "crash", "jump")
CALLS = ("request", "retrying", "call")
COMBINATIONS = tuple((fault, call) for fault in FAULTS for call in CALLS)
END_MS = 60
BOUNDS = Bounds(max_time_ms=1_000, max_steps=2_000)


@dataclass(frozen=True)
class Call:
    kind: str  # one of CALLS
    delay_ms: int  # the actor's sleep before it
    path: int  # which of /k0, /k1, /k2 it sets


@dataclass(frozen=True)
class Fault:
    kind: str  # one of FAULTS
    node: int
    at_ms: int
    ms: int  # a pause's length, a clock jump


@dataclass(frozen=True)
class LocalitySpec:
    scripts: tuple[tuple[Call, ...], ...]  # one actor per node
    latencies: tuple[int, ...]  # each node's one-way latency
    fault: Fault

    def __str__(self) -> str:
        nodes = " | ".join(
            " ".join(f"{c.kind}+{c.delay_ms}>/k{c.path}" for c in calls) + f" (one way {lat} ms)"
            for calls, lat in zip(self.scripts, self.latencies, strict=True)
        )
        f = self.fault
        return f"[{nodes}] {f.kind} of n{f.node} at {f.at_ms} ms ({f.ms} ms)"


def locality_spec(seed: int) -> LocalitySpec:
    """A random model of nodes making remote calls, and one node fault (all from ``seed``)."""
    rng = Random(f"locality|{seed}")
    nodes = rng.choice((2, 2, 3))
    scripts = tuple(
        tuple(
            Call(kind=rng.choice(CALLS), delay_ms=rng.randrange(4), path=rng.randrange(3))
            for _ in range(rng.randrange(1, 4))
        )
        for _ in range(nodes)
    )
    fault = Fault(
        kind=rng.choice(FAULTS),
        node=rng.randrange(nodes),
        at_ms=rng.randrange(8),
        ms=rng.randrange(1, 12),
    )
    return LocalitySpec(
        scripts=scripts, latencies=tuple(rng.randrange(1, 4) for _ in range(nodes)), fault=fault
    )


def _remote(world: World, client: ZkClient, call: Call, operation: Any, one_way: int) -> Any:
    if call.kind == "request":
        return client.request(operation)
    if call.kind == "retrying":
        return client.retrying(2 * one_way, operation)
    return remote_calls.call(world, operation, one_way_ms=one_way)


def _actor(
    world: World, store: VersionedStore, client: ZkClient, node: int, spec: LocalitySpec
) -> Generator[Any, Any, None]:
    for j, call in enumerate(spec.scripts[node]):
        yield world.sleep(call.delay_ms)
        tag, path = f"{node}.{j}", f"/k{call.path}"

        def operation(tag: str = tag, path: str = path) -> int:
            world.log("server", "applied", call=tag)
            return store.set(path, tag)

        world.log(f"a{node}", "sent", call=tag)
        try:
            yield from _remote(world, client, call, operation, spec.latencies[node])
        except StoreError as error:
            world.log(f"a{node}", "failed", call=tag, error=type(error).__name__)
        world.log(f"a{node}", "reply", call=tag)


def build(world: World, spec: LocalitySpec, *, faulty: bool) -> None:
    store = VersionedStore(world, "zk")
    for k in range(3):
        store.create(f"/k{k}", "")
    for i in range(len(spec.scripts)):
        node = world.node(f"n{i}")
        one_way = spec.latencies[i]
        client = ZkClient(
            world, store, f"z{i}", session_timeout_ms=10_000, latency_ms=(one_way,), node=node
        )
        node.spawn(f"a{i}", _actor(world, store, client, i, spec))

    def nemesis() -> Any:
        fault = spec.fault
        yield world.sleep(fault.at_ms)
        world.log("nemesis", "fault", fault=fault.kind, node=fault.node)
        target = world.node(f"n{fault.node}")
        if fault.kind == "pause":
            target.pause(fault.ms)
        elif fault.kind == "crash":
            target.crash()
        else:
            target.jump_clock(fault.ms * 1000)

    def observer() -> Any:
        yield world.sleep(END_MS)
        world.finish()

    if faulty:
        world.spawn("nemesis", nemesis())
    world.spawn("observer", observer())


def _run(spec: LocalitySpec, *, faulty: bool) -> Any:
    source = ReplaySource([], strict=False)  # every draw its choice 0: FIFO ties, no fault drawn
    return execute(lambda world: build(world, spec, faulty=faulty), source, [], BOUNDS).history


def _applied(history: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for op in history.of_kind("applied"):
        found.setdefault(str(op.get("call")), op.time_ms)
    return found


@dataclass
class Judged:
    """What one spec showed: its problems and the combinations it exercised."""

    problems: list[str]
    exercised: set[tuple[str, str]]


def locality_problems(spec: LocalitySpec) -> Judged:
    """Every effect that the fault must not delay, with and without it: the same time."""
    faulted, clean = _run(spec, faulty=True), _run(spec, faulty=False)
    struck = next(op for op in faulted.of_kind("fault"))
    sent_before = {str(op.get("call")) for op in faulted.of_kind("sent") if op.index < struck.index}
    with_fault, without = _applied(faulted), _applied(clean)
    problems, exercised = [], set()
    for tag, at_ms in sorted(without.items()):
        node, j = (int(part) for part in tag.split("."))
        own = node == spec.fault.node
        if own and tag not in sent_before:
            continue  # not sent yet: the node's own work, which its fault may hold
        if own and at_ms >= struck.time_ms:  # on the wire when its node's fault struck
            exercised.add((spec.fault.kind, spec.scripts[node][j].kind))
        if with_fault.get(tag) != at_ms:
            whose = "its own node's" if own else f"n{spec.fault.node}'s"
            problems.append(
                f"call {tag} applied at {with_fault.get(tag)} ms with {whose} {spec.fault.kind} "
                f"at {struck.time_ms} ms, at {at_ms} ms without it"
            )
    return Judged(problems=problems, exercised=exercised)


def locality_cover(seeds: int) -> tuple[set[tuple[str, str]], list[str]]:
    """The combinations exercised over ``seeds`` random models, and every problem found."""
    exercised: set[tuple[str, str]] = set()
    problems: list[str] = []
    for seed in range(seeds):
        spec = locality_spec(seed)
        judged = locality_problems(spec)
        exercised |= judged.exercised
        problems += [f"locality: seed {seed} {spec}: {p}" for p in judged.problems]
    return exercised, problems
