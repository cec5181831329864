"""Does dropping the state cache's sleep-set condition lose a state? A census (issue 33 item 2).

The state cache (``raceproof.sim.state_cache``) cuts a run at a state seen
before only when the earlier visit's sleep set is a subset of the current one.
The planted slip "state cache: the sleep set ignored" (``soundness_slips.py``)
drops that condition; no hunt of the generator has found it, focused or not.
The theory says why (docs/explanation/proofs.md): the slip loses
*transitions* (a step asleep at the first visit and awake at the second is
taken from that state by neither), not *states*, and everything the cache's
claims compare (final states, statuses, probes) is a function of the state
its fingerprint covers. Godefroid's argument for it walks depth first; the
proof walk goes breadth first by deviations, where the branch that covers a
lost transition may not have been walked yet when the slip cuts, so this
census checks the claim by exhaustive enumeration.

It is a replica of the walk's algorithm, small enough to enumerate every model
of a shape: processes that each run a fixed script of ops over shared
variables (blind writes of 0 or 1, reads, increments, toggles: the writes that
reach one state in two orders, where the cache matters), all due at one
instant, so every interleaving is a schedule; footprints as the kernel's (a
variable read or written); the walk stateless and breadth first by
deviations, the default the first awake step, a branch's sleep set its draw's
plus the siblings explored before it, a step woken by any dependent step, the
cache looked up at every draw past the prefix (the instant-commutes shortcut
of ``SleepSetSource._close_instant`` is left out). For each model it compares
the full state space with the walk under the cache and under the slip: final
states, every state reached, and every (state, step) transition taken.

``python -m property_tests.sleep_cache_census`` (``make soundness``) runs the
whole census; ``property_tests/search_and_proof/test_sleep_cache_census.py``
runs a slice of it.
"""

from __future__ import annotations

import itertools
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

Op = tuple[str, int]  # (kind, variable): kind w0, w1, r, inc or tog
Script = tuple[Op, ...]
State = tuple[tuple[int, ...], tuple[int, ...]]  # (each process's next op, the variables)
Footprint = dict[int, bool]  # variable -> written
KINDS = ("w0", "w1", "r", "inc", "tog")


def apply(op: Op, process: int, values: tuple[int, ...]) -> tuple[tuple[int, ...], Footprint]:
    """The variables after ``op`` of ``process``, and the op's footprint."""
    kind, var = op
    if kind == "r":
        return values, {var: False}
    new = list(values)
    if kind == "inc":
        new[var] += 1
    elif kind == "tog":  # two toggles in either order leave it as it was
        new[var] = 0 if new[var] else 10 + process
    else:
        new[var] = int(kind[1])
    return tuple(new), {var: True}


def dependent(a: Footprint, b: Footprint) -> bool:
    return any(var in b and (write or b[var]) for var, write in a.items())


def space(scripts: list[Script], variables: int) -> tuple[set[State], set[tuple[int, ...]]]:
    """Every reachable state and every final state's variables (the full walk)."""
    start: State = ((0,) * len(scripts), (0,) * variables)
    seen, finals, stack = set(), set(), [start]
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        positions, values = state
        due = [p for p, script in enumerate(scripts) if positions[p] < len(script)]
        if not due:
            finals.add(values)
        for p in due:
            after, _ = apply(scripts[p][positions[p]], p, values)
            moved = tuple(n + (q == p) for q, n in enumerate(positions))
            stack.append((moved, after))
    return seen, finals


@dataclass
class Draw:
    position: int
    keys: list[tuple[int, int]]  # (process, its op index) of each due step
    value: int
    sleep: dict[tuple[int, int], Footprint]
    footprint: Footprint | None = None


@dataclass
class Node:
    prefix: tuple[int, ...]
    draw: Draw
    explored: dict[tuple[int, int], Footprint] = field(default_factory=dict)


@dataclass
class Walk:
    """One reduced walk with the state cache: what it reached."""

    scripts: list[Script]
    variables: int
    slip: bool  # the cache ignores the sleep sets
    visits: dict[State, list[frozenset[tuple[int, int]]]] = field(default_factory=dict)
    states: set[State] = field(default_factory=set)
    transitions: set[tuple[State, int]] = field(default_factory=set)
    finals: set[tuple[int, ...]] = field(default_factory=set)
    runs: int = 0

    def covered(self, state: State, sleep: frozenset[tuple[int, int]]) -> bool:
        """The cache's look-up: True cuts the run; else this visit is remembered."""
        earlier = self.visits.setdefault(state, [])
        if any(self.slip or visit <= sleep for visit in earlier):
            return True
        earlier.append(sleep)
        return False

    def run(
        self, prefix: tuple[int, ...], start_sleep: dict[tuple[int, int], Footprint]
    ) -> list[Draw]:
        """One run: replay ``prefix``, then the first awake step; its draws from the prefix's last."""
        self.runs += 1
        positions, values = [0] * len(self.scripts), (0,) * self.variables
        sleep: dict[tuple[int, int], Footprint] = {}
        draws: list[Draw] = []
        for index in itertools.count():
            state: State = (tuple(positions), values)
            self.states.add(state)
            due = [p for p, script in enumerate(self.scripts) if positions[p] < len(script)]
            if not due:
                self.finals.add(values)
                return draws
            keys = [(p, positions[p]) for p in due]
            if index < len(prefix):
                value = prefix[index]
                if index == len(prefix) - 1:
                    sleep = dict(start_sleep)
            else:
                awake = [i for i, key in enumerate(keys) if key not in sleep]
                if self.covered(state, frozenset(sleep)) or not awake:
                    return draws
                value = awake[0]
            tracking = index >= len(prefix) - 1
            if tracking and keys[value] in sleep:
                return draws
            process = due[value]
            self.transitions.add((state, process))
            values, footprint = apply(self.scripts[process][positions[process]], process, values)
            positions[process] += 1
            if tracking:
                draws.append(
                    Draw(
                        position=index,
                        keys=keys,
                        value=value,
                        sleep=dict(sleep),
                        footprint=footprint,
                    )
                )
                sleep = {k: f for k, f in sleep.items() if not dependent(f, footprint)}
        raise AssertionError("unreachable")

    def walk(self) -> Walk:
        """Breadth first by deviations, statelessly, as ``raceproof.sim.exhaustive`` walks."""
        queue: deque[tuple[Node, int]] = deque()
        self._branch((), self.run((), {}), None, queue)
        while queue:
            node, value = queue.popleft()
            sleep = {**node.draw.sleep, **node.explored}
            prefix = (*node.prefix, value)
            self._branch(prefix, self.run(prefix, sleep), node, queue)
        return self

    def _branch(
        self,
        prefix: tuple[int, ...],
        draws: list[Draw],
        parent: Node | None,
        queue: deque[tuple[Node, int]],
    ) -> None:
        if prefix and draws:
            first, draws = draws[0], draws[1:]
            if parent is not None and first.footprint is not None:
                parent.explored[first.keys[first.value]] = first.footprint
        recorded = list(prefix) + [d.value for d in draws]
        for draw in draws:
            node = Node(tuple(recorded[: draw.position]), draw)
            if draw.footprint is not None:
                node.explored[draw.keys[draw.value]] = draw.footprint
            queue.extend(
                (node, v)
                for v, key in enumerate(draw.keys)
                if v != draw.value and key not in draw.sleep
            )


@dataclass
class Census:
    models: int = 0
    changed: int = 0  # the slip changed the walk's run count
    lost_transitions: int = 0  # models where the slip took fewer (state, step) pairs
    lost_states: int = 0
    lost_finals: int = 0
    cache_wrong: int = 0  # the cache as it is lost a final state (never, or the replica is off)
    examples: list[str] = field(default_factory=list)

    def count(self, scripts: list[Script], variables: int) -> None:
        _, finals = space(scripts, variables)
        right = Walk(scripts, variables, slip=False).walk()
        slipped = Walk(scripts, variables, slip=True).walk()
        self.models += 1
        self.changed += right.runs != slipped.runs
        self.lost_transitions += bool(right.transitions - slipped.transitions)
        self.lost_states += bool(right.states - slipped.states)
        self.lost_finals += slipped.finals != finals
        self.cache_wrong += right.finals != finals
        if slipped.finals != finals and len(self.examples) < 5:
            self.examples.append(repr(scripts))

    def __str__(self) -> str:
        return (
            f"{self.models} models: the slip changed the walk on {self.changed}, lost transitions "
            f"on {self.lost_transitions}, states on {self.lost_states}, final states on "
            f"{self.lost_finals}; the cache as it is lost final states on {self.cache_wrong}"
            + (f"; e.g. {self.examples}" if self.examples else "")
        )


def models(processes: int, max_ops: int, variables: int = 2) -> Iterator[list[Script]]:
    """Every multiset of ``processes`` scripts of one or two ops, at most ``max_ops`` in all."""
    ops = [(kind, var) for kind in KINDS for var in range(variables)]
    scripts = [s for n in (1, 2) for s in itertools.product(ops, repeat=n)]
    for combo in itertools.combinations_with_replacement(range(len(scripts)), processes):
        chosen = [scripts[i] for i in combo]
        if sum(len(s) for s in chosen) <= max_ops:
            yield chosen


def census(shapes: Iterable[tuple[int, int]], variables: int = 2) -> Census:
    """The census over every model of each (processes, max_ops) shape."""
    tally = Census()
    for processes, max_ops in shapes:
        for scripts in models(processes, max_ops, variables):
            tally.count(scripts, variables)
    return tally


if __name__ == "__main__":
    # The table in docs/explanation/proofs.md, one shape at a time (or the one named).
    shapes = (
        [(3, 5), (4, 5), (5, 5)] if len(sys.argv) < 2 else [(int(sys.argv[1]), int(sys.argv[2]))]
    )
    for shape in shapes:
        print(f"(processes, max ops) {shape}: {census([shape])}", flush=True)
