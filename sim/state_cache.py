"""State caching for proofs: skip a subtree whose state the walk has already explored.

Optional per model, in the manner of TLC and stateright: the model gives a
canonical fingerprint of its state with ``World.declare_state(fn)``; the
kernel adds every pending event relative to now (its delay, its priority and
the step it will run: the process and how many steps that process has
taken). At each ``schedule`` draw past the replayed prefix the walk looks the
fingerprint up; if the state was reached before with a sleep set no larger
than the current one and with no more deviations spent, every continuation
from here was explored from there, and the run is cut (``state_cache`` in the
report's accounting).

Soundness condition, the model author's to keep: two states with the same
fingerprint have the same futures and the same verdicts on them. So the
fingerprint covers all state the actors and primitives hold that the future
reads (including each actor's position in its code, as far as the step
counts do not already tell it), and everything of the past the checkers still
judge (for instance "an increment was acknowledged", or the last status
written). A fingerprint that leaves something out can hide a violation; the
debug mode (``check``) catches that: it cuts nothing, and when the walk
leaves a subtree it would have cut, the set of its runs' endings (verdicts,
and the ops logged from that state on, up to their order) must equal the
first visit's (compared when both had the same sleep set), else
``StateCacheMismatch`` names the fingerprint. The cache is per walk (per
shard under ``prove -j``), so with a cache the counts of ``-j N`` may differ
from ``-j 1``; the verdict does not.

``StateCacheMismatch`` is a ``KernelError``: a reduction that is not sound is a
bug in raceproof (exit 70), never a verdict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from raceproof.sim.errors import KernelError
from raceproof.sim.world import SleepBlocked, _process_step_key


class StateSeen(SleepBlocked):
    """The state was explored before: the rest of this run is covered."""


class StateCacheMismatch(KernelError):
    """The debug mode found two runs from one fingerprint that went different ways."""


def kernel_fingerprint(world: Any, model: Callable[[], str]) -> str | None:
    """The model's fingerprint plus every pending event relative to now; None when unknown.

    Unknown: an event someone waits on that does not resume exactly one tracked
    process (a condition, a callback of the model's own, a timer's firing: its key
    names the step, not the callback's state), whose future the kernel cannot name.
    """
    now = world.now_ms
    pending = []
    for entry in [*world._due, *world._queue]:
        time, priority, _, event = entry
        if not event.callbacks:
            continue  # nobody waits on it: it changes nothing
        key = _process_step_key(event)
        if key is None:
            return None
        pending.append((time - now, int(priority), key))
    pending.sort()
    text = f"{model()}|{pending}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class Visit:
    sleep: frozenset[str]
    depth: int
    endings: set[tuple[Any, ...]] = field(default_factory=set)  # debug mode: of its subtree


@dataclass
class StateCache:
    """Fingerprints seen by one walk. ``check``: the debug mode (cut nothing, compare)."""

    check: bool = False
    visits: dict[str, list[Visit]] = field(default_factory=dict)
    hits: int = 0
    checked: int = 0

    def look_up(
        self, fingerprint: str, sleep: frozenset[str], depth: int
    ) -> tuple[Visit | None, Visit | None]:
        """(a covering earlier visit, None), or (None, this visit, now remembered)."""
        for visit in self.visits.get(fingerprint, ()):
            if visit.sleep <= sleep and visit.depth <= depth:
                self.hits += 1
                return visit, None
        new = Visit(sleep, depth)
        self.visits.setdefault(fingerprint, []).append(new)
        return None, new


def ending(outcome: Any, op_index: int) -> tuple[Any, ...]:
    """A run's verdicts and the ops it logged from ``op_index`` on, up to their order."""
    tail = sorted(
        (op.time_ms, op.actor, op.kind, repr(sorted(op.fields.items())))
        for op in outcome.history.ops[op_index:]
        if op.kind != "run.end"  # it counts the run's steps, the past's too
    )
    return (outcome.status, tuple((v.checker, v.status) for v in outcome.verdicts), tuple(tail))


def compare(fingerprint: str, first: Visit, again: Visit) -> None:
    """The debug mode's check: two subtrees from one fingerprint must end the same ways."""
    if first.endings != again.endings:
        only_first = len(first.endings - again.endings)
        only_again = len(again.endings - first.endings)
        raise StateCacheMismatch(
            f"state fingerprint {fingerprint} was reached twice but the runs from it differ "
            f"({only_first} endings only after the first visit, {only_again} only after the "
            f"second): the fingerprint leaves out state that matters"
        )
