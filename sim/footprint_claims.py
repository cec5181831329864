"""The claims a run of the reduced walk rests on, read from its step log.

The partial-order reduction (``raceproof.sim.reduction``) never runs the orders it
skips; what it skipped is implied by each run's steps: a step due beside an
earlier one and independent of the steps between "could have run first"
(``movable_steps``), a step chosen among others "could have run later"
(``delayable_steps``), an instant the walk did not branch on "is the same in every
order" (``instant_pulls``), with the steps cancelled in it (``cancelled_pulls``),
and claims across a step with no key, which nothing can follow (``unnamed_claims``).
``raceproof.sim.footprint_check`` runs each claim's orders and compares them; the
soundness generator counts the claims from outside with the same functions. Pure functions over ``StepRecord``s: no run, no kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Footprint = dict[str, bool] | None


@dataclass(frozen=True)
class StepRecord:
    """One step of a run as the walk saw it."""

    key: str | None
    footprint: Footprint
    drew: bool  # it drew a model-level choice
    options: tuple[str | None, ...] | None  # the keys due at its schedule draw, if one chose it
    at_ms: int | None = None  # its instant (None: not known)
    ends_run: bool = False  # its process raised: the run ends on it (nothing can follow it)
    # The key of the step that triggered its event (``World.enabled_by``; None: not known).
    enabled_by: str | None = None
    # It never ran: the walk cut the run on it, asleep (its footprint is the one it sleeps on).
    asleep: bool = False
    # It is in the rest of an instant the walk took as commuting in every order
    # (``SleepSetSource._close_instant``), from the first draw it did not branch on.
    commutes: bool = False
    # The keys of the steps of its instant whose events it cancelled (``World.disabled``):
    # they never ran in this order, and could have run before it.
    disabled: tuple[str, ...] = ()


def _dependent(a: Footprint, b: Footprint) -> bool:
    from raceproof.sim.reduction import dependent

    return dependent(a, b)


def process_of(key: str) -> str:
    """The process of a step key (``/leader#0/worker#1@3`` -> ``/leader#0/worker#1``)."""
    return key.rsplit("@", 1)[0]


def movable_steps(
    steps: Sequence[StepRecord], *, across_unnamed: bool = False
) -> list[tuple[int, int]]:
    """``(i, j)``: step ``j`` was due when step ``i`` was chosen and commutes with steps ``i..j-1``.

    That is the claim sleep sets rest on: the later step could have run first,
    and running it first is equivalent. ``across_unnamed``: also the claims across
    a step with no key (``unnamed_claims``).
    """
    offered: dict[str, list[int]] = {}  # a key -> the steps whose draw had it due, in order
    for i, first in enumerate(steps):
        for key in dict.fromkeys(first.options or ()):
            if key is not None:
                offered.setdefault(key, []).append(i)
    found = []
    for j, moved in enumerate(steps):
        if moved.key is None or moved.drew or moved.footprint is None:
            continue
        earlier = [i for i in offered.get(moved.key, ()) if i < j]
        if not earlier:
            continue
        process = process_of(moved.key)
        # Back from ``j``: a step between that fails the claim fails it for every earlier ``i``.
        for i in range(j - 1, earlier[0] - 1, -1):
            s = steps[i]
            if (
                (s.key is None and not across_unnamed)
                or s.drew
                or (s.key is not None and process_of(s.key) == process)
                or _dependent(s.footprint, moved.footprint)
            ):
                break
            if s.options is not None and moved.key in s.options:
                found.append((i, j))
    return sorted(found)


def delayable_steps(
    steps: Sequence[StepRecord], *, across_unnamed: bool = False
) -> list[tuple[int, int]]:
    """``(i, j)``: step ``i``, chosen among others, commutes with steps ``i+1..j`` of its instant.

    The mirror of ``movable_steps``: the earlier step could have run after them
    (its event stays due), and running it later is equivalent.
    """
    found = []
    for i, late in enumerate(steps):
        if late.options is None or late.key is None or late.drew or late.footprint is None:
            continue
        if late.asleep:
            continue
        if late.at_ms is None:
            continue
        for j in range(i + 1, len(steps)):
            step = steps[j]
            # A step that drew is passed too: the reduction keeps ``late`` asleep past it
            # when its actual footprint is independent (its draws replay in the same order).
            # A step that ``late`` triggered (a watch delivery resuming the process it
            # wakes) could not run before it: no order delays ``late`` past it, and the
            # reduction never sleeps ``late`` past it either.
            if step.key is None and across_unnamed and step.options is not None:
                if step.at_ms != late.at_ms or _dependent(step.footprint, late.footprint):
                    break
                found.append((i, j))
                continue
            if (
                step.key is None
                or step.asleep  # it never ran: nothing can be delayed past it
                or step.at_ms != late.at_ms
                or process_of(step.key) == process_of(late.key)
                or step.enabled_by == late.key
                or _dependent(step.footprint, late.footprint)
            ):
                break
            found.append((i, j))
            if step.ends_run:  # nothing runs after it: the last step ``late`` could pass
                break
    return found


def instant_pulls(steps: Sequence[StepRecord]) -> list[tuple[int, int, list[int]]]:
    """``(q, v, order)``: an order of steps ``q..v`` the instant shortcut calls equivalent.

    A run of steps marked ``commutes`` (one instant, from the first draw the walk did
    not branch on) is claimed equivalent in every order its processes allow. For each
    step ``v`` of it, the steps ``v`` depends on there (its process's earlier steps
    and the steps that triggered them, ``StepRecord.enabled_by``, transitively) run
    first, ``v`` last among them, then the others: that order reverses every pair
    ``(u, v)`` where ``u`` ran earlier and ``v`` does not depend on it, where the
    adjacent claims (``movable_steps``) only reach steps due together.
    """
    found: list[tuple[int, int, list[int]]] = []
    start = 0
    while start < len(steps):
        end = start
        while (
            steps[start].commutes
            and end + 1 < len(steps)
            and steps[end + 1].commutes
            and steps[end + 1].at_ms == steps[start].at_ms
        ):
            end += 1
        for v in range(start, end + 1) if steps[start].commutes else ():
            depends = _depends_on(steps, start, v)
            order = [s for s in range(start, v + 1) if s in depends]
            order += [s for s in range(start, v + 1) if s not in depends]
            if order != list(range(start, v + 1)):
                found.append((start, v, order))
        start = end + 1
    return found


def _depends_on(steps: Sequence[StepRecord], start: int, v: int) -> set[int]:
    """The steps of ``start..v`` that step ``v`` depends on, ``v`` included: its process's
    earlier steps and the steps that triggered them, transitively."""
    depends = {v}
    for k in range(v - 1, start - 1, -1):
        key = steps[k].key
        if key is not None and any(
            steps[d].enabled_by == key
            or (steps[d].key is not None and process_of(str(steps[d].key)) == process_of(key))
            for d in depends
        ):
            depends.add(k)
    return depends


def cancelled_pulls(steps: Sequence[StepRecord]) -> list[tuple[int, str]]:
    """``(x, key)``: step ``x``, in an instant the walk took as commuting in every order,
    cancelled the event of step ``key``, due in that instant.

    The cancelled step never ran in this order, so no other claim names it; but "the
    same in every order" includes the orders where it runs first, which the cancel
    removed. Under the kernel's rule (``World._disables``) a cancel is dependent with
    the step it cancels, so no such instant is taken as commuting: a claim here is that
    rule broken, and the check runs the removed order to show it.
    """
    return [
        (x, key)
        for x, step in enumerate(steps)
        if step.commutes and step.key is not None
        for key in step.disabled
    ]


def unnamed_claims(steps: Sequence[StepRecord]) -> set[tuple[str | None, ...]]:
    """The claims of a run made across a step with no key, which no swap can follow.

    A condition's step (``AllOf``/``AnyOf``) has no key that holds in every order;
    the reduction still lets a step sleep past it when their footprints are
    independent. Such a claim cannot be tested by key: it is counted unverified.
    """
    if all(s.key is not None for s in steps):  # no step to make a claim across
        return set()
    movable = set(movable_steps(steps))
    later = set(delayable_steps(steps))
    return {
        ("unnamed", *(s.key for s in steps[i : j + 1]))
        for i, j in movable_steps(steps, across_unnamed=True)
        if (i, j) not in movable
    } | {
        ("unnamed-later", *(s.key for s in steps[i : j + 1]))
        for i, j in delayable_steps(steps, across_unnamed=True)
        if (i, j) not in later
    }
