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

A draw dependent with such a step learns more where the summary knows how the step is
reached: each visit keeps, per step past it, the steps of each run from its state to it
(``paths``, ``Visit.paths``; at most ``PATHS_MAX`` a step, and none for a step fed from a
visit that covered a run through it: such a step releases the draw in full). The covered run
is in that state at its cut, and a path runs from one state as it ran from the other, with
the same footprints: the covered run continued along it is a run, whose races between its
draws before the cut and the path's last step (``races.races_of``) are the draw's, each with
its wakeup sequence (``_path_races``). Which step enabled a path's first steps is the covered
run's own (the event was made before the state, maybe by other steps than in the covering
run): the events pending at the cut tell it (``World.pending_enablers``, ``_enabled``); one
they do not is taken as enabled by nothing, so a sequence may start with a step that no draw
offers yet, and that releases every option there (``backtrack._step``), never fewer.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raceproof.sim.races import (
    UNKNOWN,
    Footprint,
    InstantStep,
    Wakeup,
    cancelled_key,
    causes,
    dependent,
    process_of,
    races_of,
    union,
)

if TYPE_CHECKING:
    from raceproof.sim.reduction import Node
    from raceproof.sim.state_cache import Visit

# A step past a visit's state: its key (None: a step without one, never excused) and the
# values it drew; a visit's summary maps each to the union of its footprints (None: every
# resource).
Step = tuple[str | None, tuple[int, ...]]
Later = dict[Step, Footprint]
TOP: Mapping[Step, Footprint] = {(None, ()): None}  # unknown: dependent with every step
# The steps of a run from a visit's state to one of its summary's, as an instant's steps.
Path = tuple[InstantStep, ...]
PATHS_MAX = 8  # paths kept per step of a summary; a step met on more races unknown


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
    # The covered run's steps of the instant before its cut, and which of them is this
    # draw's: a step the summary reaches by known paths races with it as along each
    # (``_path_races``).
    steps: Sequence[InstantStep] = ()
    index: int = 0
    # Per step pending at the cut, the step of the covered run that triggered it
    # (``World.pending_enablers``): a path's step enabled before the state is enabled so.
    enablers: Mapping[str, str] | None = None


# What a watch learned from a summary's new steps: the races it has (None: unknown).
Found = tuple[Watch, list[Wakeup] | None]


def meets(
    later: Mapping[Step, Footprint], footprint: Footprint, process: str | None
) -> list[tuple[Step, Footprint]]:
    """The steps of another process in the summary ``later`` that a step with ``footprint``
    of ``process`` is dependent with (races some order may run, as far as the summary tells)."""
    return [
        (step, touched)
        for step, touched in later.items()
        if (step[0] is None or process_of(step[0]) != process) and dependent(footprint, touched)
    ]


def _learn(draw: Watch, steps: Mapping[Step, Footprint], visit: Visit) -> Found | None:
    """What ``draw`` learns from ``steps`` newly in its visit's summary (None: nothing)."""
    if not draw.holds:
        met = meets(steps, draw.footprint, draw.process)
        if not met:
            return None
        along = _path_races(draw, met, visit)
        if along is None:
            draw.fired = True
        return draw, along
    races: list[Wakeup] = []
    for (key, drawn), touched in steps.items():
        if key is not None and process_of(key) == draw.process:
            continue  # its own process's later step: after it in every order
        if key is None and touched == {}:
            continue  # an event nobody waited on: left out of a sequence (``races.wakeup_of``)
        name = key if key is not None else cancelled_key(touched)
        if name is None:  # no option names it: every option
            draw.fired = True
            return draw, None
        if key is None:  # a cancelled step's entry: what it draws is not known
            drawn = UNKNOWN
        # Run before the pause, it may touch otherwise (``races.wakeup_of``): not known.
        races.append(((name,), (drawn,), (frozenset(),), (None,)))
    return (draw, races) if races else None


def _path_races(
    draw: Watch, met: list[tuple[Step, Footprint]], visit: Visit
) -> list[Wakeup] | None:
    """The races of ``draw``'s step with the steps ``met`` of the summary, each as its wakeup
    sequence, where the summary knows every path from its state to each (None: unknown).

    The covered run is in that state at its cut, so each path runs from there as it ran in
    the covering subtree, with the same footprints: the run continued by it is a run, and
    its races with a met step are those of the run's steps before the cut with it, as the
    run would have marked them (``races.races_of``). A step of a path is taken as enabled
    by the step of the path that enabled it; one whose event was made before the state, by
    the step of this run that made it (``Watch.enablers``: the covering run's may have been
    another), else by nothing. A step it truly waits on and this one does not know is only
    taken as able to run after it: its sequence then starts with a step no draw there
    offers, which releases every option (``backtrack._step``), or the branch is cut asleep.
    """
    if not draw.steps:
        return None
    races: list[Wakeup] = []
    for step, _ in met:
        if step in visit.deep or step not in visit.paths:
            return None
        for path in visit.paths[step]:
            steps = [*draw.steps, *_enabled(path, draw)]
            found = races_of(steps, causes(steps), draw.index)
            if found is None:
                return None
            races.extend(race for race in found if race[0][-1] == step[0])
    return races


def _enabled(path: Path, draw: Watch) -> Path:
    """``path``'s steps, each enabled before the state (by none of it) told the step of the
    covered run that triggered it, where that step is one of ``draw``'s instant before the
    cut: the state is the same, the events pending in it are the covered run's own."""
    if not draw.enablers:
        return path
    before = {step[0] for step in draw.steps if step[0] is not None}
    fixed = []
    for key, footprint, drew, record, logged, by, drawn in path:
        if by is None and key is not None:
            found = draw.enablers.get(key)
            by = found if found in before else None
        fixed.append((key, footprint, drew, record, logged, by, drawn))
    return tuple(fixed)


def paths(run_steps: Sequence[Any], index: int, now_ms: int, branch: int) -> dict[Step, Path]:
    """Per step of the run past draw ``index`` in its instant ``now_ms`` that ended past draw
    ``branch`` (the run's own), the run's steps from ``index`` to it, as an instant's steps
    (``races.InstantStep``), each enabled by the earlier one of them that did, or by none."""
    found: dict[Step, Path] = {}
    path: list[InstantStep] = []
    for begun, ended, at_ms, key, drawn, footprint, by in run_steps:
        if begun < index or at_ms != now_ms:
            continue
        keys = {step[0] for step in path}
        path.append((key, footprint, bool(drawn), None, None, by if by in keys else None, drawn))
        if ended > branch and key is not None:
            found[key, drawn] = tuple(path)
    return found


def _add_path(visit: Visit, step: Step, path: Path | None) -> bool:
    """Keep ``path`` to ``step`` in ``visit``'s summary: True if the summary learned something
    (a new path, or the step met without one, or on more than ``PATHS_MAX``)."""
    if step in visit.deep:
        return False
    known = visit.paths.setdefault(step, [])
    if path is not None and path in known:
        return False
    if path is None or len(known) >= PATHS_MAX:
        visit.deep.add(step)
        del visit.paths[step]
        return True
    known.append(path)
    return True


def grow(
    visit: Visit, steps: Mapping[Step, Footprint], paths: Mapping[Step, Path] | None = None
) -> list[Found]:
    """Add ``steps`` to ``visit``'s summary and to those of the visits it feeds, to a fixed
    point; what the watches learn from it (the caller queues the branches). ``paths``: the
    run's steps from ``visit``'s state to each of ``steps`` (``paths``); none from a feed."""
    found: list[Found] = []
    todo: list[tuple[Visit, Mapping[Step, Footprint], Mapping[Step, Path]]] = [
        (visit, steps, paths or {})
    ]
    while todo:
        at, adding, routes = todo.pop()
        changed: Later = {}
        for step, footprint in adding.items():
            told = _add_path(at, step, routes.get(step))
            if step in at.later:
                old = at.later[step]
                new = union(old, footprint)
                if new == old and not told:
                    continue
            else:
                new = None if footprint is None else dict(footprint)
            at.later[step] = changed[step] = new
        if not changed:
            continue
        waiting: list[Any] = []
        for draw in at.watchers:
            learned = None if draw.fired else _learn(draw, changed, at)
            if learned is not None:
                found.append(learned)
            if not draw.fired:
                waiting.append(draw)
        at.watchers = waiting
        todo.extend((fed, changed, {}) for fed in at.feeds.values())
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
    learned = _learn(draw, visit.later, visit)
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
