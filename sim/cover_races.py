"""What a covering subtree does in its instant: the races of a run the state cache cut there.

Why a module of its own: a run the state cache covers at a state whose instant is still
open (``SleepSetSource._cover``) sees the rest of that instant in one order only, while the
draws of the instant before the cut hold options back until some run through them shows
their step racing (``reduction``'s race feedback). Past the cut, the runs through those
draws are the covering visit's: the walk made them from another prefix, so their races
were told to that prefix's draws, never to these. Marking every such draw as racing with
its races unknown (what the walk did) releases every option and value held back there,
and the branches that were equivalent to one explored end sleep-blocked (39 of
``fix-conditional-write``'s 679 runs with the cache, 0 without).

Steps due at different instants never race, so what a draw of the cut instant needs from
past the cut is what the steps of that instant touch there. Each visit keeps that
(``Visit.later``): every step taken after its state in its instant, in every run through
it, by its key and the values it drew, with the union of its footprints, and, through
``Visit.feeds``, those of the visits that covered a run through it with that instant open
(a cycle of covers is a fixed point of unions). Two runs that reach one state have the
same futures, so every step a walk from the cut state would have run in the rest of the
instant (sleep sets cut runs, never a trace's steps) is one of the covering subtree's,
whose sleep set is no larger: the same step, with the same footprint. A draw before the
cut whose step is dependent with such a step of another process (its own process's later
steps always run after it: ``races.causes``) counts as racing with its races unknown
(every option released, ``backtrack._unknown``); one independent of all of them races
only with the steps the run did take, whose wakeup sequences the run knows. A node's
pause (``World.touch_all(holds=True)``) is dependent with every later step, so every step
between it and a later one happens after it, and its race with a step of another process
is reversed by that step alone (``races.wakeup_of``): its sequence is known from the key
and the values drawn, and only a step without a key releases the draw in full.

The covering subtree may not be walked yet when it covers (the walk goes breadth first), so
a draw independent of the summary so far waits on the visit (``Watch``): when its summary
grows by an entry it is dependent with, it is released then, whatever run made it grow.
A unit of a parallel proof (``proof_units``) has its own cache; the rest of a covering
subtree may go on in another unit, so a unit that hands on a frontier releases every draw
still waiting (``ProofWalk.settle``).

The footprints are names of resources, compared across two runs: only a cover whose state
is the visit's in plain (the same raw fingerprint, no symmetry's renaming between them)
with every process at the same step count (``frame``) names the same resources alike and
the same processes; any other cover (a symmetric image, a state reached with other step
counts) marks every draw as before, and the visits above it summarize as touching
everything (``TOP``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raceproof.sim.races import UNKNOWN, Footprint, Wakeup, dependent, process_of, union
from raceproof.sim.world import DISABLED

if TYPE_CHECKING:
    from raceproof.sim.reduction import Node
    from raceproof.sim.state_cache import Visit

# A step past a visit's state: its key (None: a step without one, never excused) and the
# values it drew; a visit's summary maps each to the union of its footprints (None: every
# resource).
Step = tuple[str | None, tuple[int, ...]]
Later = dict[Step, Footprint]
TOP: Mapping[Step, Footprint] = {(None, ()): None}  # unknown: dependent with every step


@dataclass(eq=False)
class Watch:
    """A draw of a covered run, before its cut, waiting on its covering visit's summary
    (``Visit.later``) for a step of another process its step is dependent with."""

    node: Node
    chosen: int  # the option the covered run took there
    footprint: Footprint
    process: str | None
    holds: bool = False  # a node's pause: its races are each later step alone
    fired: bool = False


# What a watch learned from a summary's new steps: the races it has (None: unknown).
Found = tuple[Watch, list[Wakeup] | None]


def meets(later: Mapping[Step, Footprint], footprint: Footprint, process: str | None) -> bool:
    """A step with ``footprint`` of ``process`` is dependent with a step of another process
    in the summary ``later`` (a race some order may run, as far as the summary tells)."""
    return any(
        (key is None or process_of(key) != process) and dependent(footprint, touched)
        for (key, _), touched in later.items()
    )


def _learn(draw: Watch, steps: Mapping[Step, Footprint]) -> Found | None:
    """What ``draw`` learns from ``steps`` newly in its visit's summary (None: nothing)."""
    if not draw.holds:
        if not meets(steps, draw.footprint, draw.process):
            return None
        draw.fired = True
        return draw, None
    races: list[Wakeup] = []
    for (key, drawn), touched in steps.items():
        if key is not None and process_of(key) == draw.process:
            continue  # its own process's later step: after it in every order
        if key is None and touched == {}:
            continue  # an event nobody waited on: left out of a sequence (``races.wakeup_of``)
        name = key if key is not None else _cancelled(touched)
        if name is None:  # no option names it: every option
            draw.fired = True
            return draw, None
        if key is None:  # a cancelled step's entry: what it draws and touches is not known
            drawn, touched = UNKNOWN, None
        races.append(((name,), (drawn,), (frozenset(),), (touched,)))
    return (draw, races) if races else None


def _cancelled(footprint: Footprint) -> str | None:
    """The key of the step a cancelled step's entry stands for (``World._disables``)."""
    if footprint is None or len(footprint) != 1:
        return None
    (resource,) = footprint
    return resource[len(DISABLED) :] if resource.startswith(DISABLED) else None


def grow(visit: Visit, steps: Mapping[Step, Footprint]) -> list[Found]:
    """Add ``steps`` to ``visit``'s summary and to those of the visits it feeds, to a fixed
    point; what the watches learn from it (the caller queues the branches)."""
    found: list[Found] = []
    todo: list[tuple[Visit, Mapping[Step, Footprint]]] = [(visit, steps)]
    while todo:
        at, adding = todo.pop()
        changed: Later = {}
        for step, footprint in adding.items():
            if step in at.later:
                old = at.later[step]
                new = union(old, footprint)
                if new == old:
                    continue
            else:
                new = None if footprint is None else dict(footprint)
            at.later[step] = changed[step] = new
        if not changed:
            continue
        waiting: list[Any] = []
        for draw in at.watchers:
            learned = None if draw.fired else _learn(draw, changed)
            if learned is not None:
                found.append(learned)
            if not draw.fired:
                waiting.append(draw)
        at.watchers = waiting
        todo.extend((fed, changed) for fed in at.feeds.values())
    return found


def link(covering: Visit, visit: Visit) -> list[Found]:
    """``visit``'s summary holds ``covering``'s, now and as it grows (a run through ``visit``
    was covered by it with their instant open); what the watches learn from it."""
    if id(visit) in covering.feeds:
        return []
    covering.feeds[id(visit)] = visit
    return grow(visit, covering.later) if covering.later else []


def watch(visit: Visit, draw: Watch) -> Found | None:
    """Wait on ``visit``'s summary, and learn from what it holds already."""
    learned = _learn(draw, visit.later)
    if not draw.fired:
        visit.watchers.append(draw)
    return learned


def frame(world: Any, raw: str) -> tuple[Any, ...] | None:
    """What makes two states with one fingerprint name their resources alike: the plain
    fingerprint and every process's identity, step count and held steps (None: unknown)."""
    processes = getattr(world, "processes", None)
    if processes is None:
        return None
    counts = sorted(
        (str(p.rp_id), int(p.rp_steps), int(getattr(p, "rp_held", 0)))
        for p in processes
        if hasattr(p, "rp_id")
    )
    return (raw, tuple(counts))
