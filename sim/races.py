"""The dependency relation of steps, and the races of an instant's steps with their wakeup sequences.

Why a module of its own: the reduction (``raceproof.sim.reduction``) records the steps of
each instant of a run; what they tell the walk is computed here, from data alone. Two
steps are dependent when their footprints touch a common resource and one writes it
(``dependent``); a step *races* with a later step of its instant when they are dependent
and some order of the instant could run the later one first (``causes``: not its
process's later step, nor one its event triggered). A race is reversed by its *wakeup
sequence* (``wakeup_of``, optimal DPOR's ``notdep(e).e'``, Abdulla et al. 2014/2017): the
steps between the two that do not happen after the first, then the second. The walk
branches one *initial* of it at the first step's draw (source-DPOR's backtrack set) and
that branch's run follows the sequence (``SleepSetSource.guide``).

A step that drew model-level choices (a delay, a fault) is one transition per value
drawn: its race is that value's (``InstantStep``'s values, ``Wakeup``'s drawn values),
and the branch that reverses it draws the same values (``SleepSetSource.forced``), so
the race's later step wakes what it must before a step asleep has to run; the sequence
ends with the drawing step itself, with its value (``_with_earlier``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from raceproof.sim.cells import ANY_KEY
from raceproof.sim.world import DISABLED

if TYPE_CHECKING:
    from raceproof.sim.reduction import DrawRecord

Footprint = dict[str, bool] | None  # resource -> written; None: dependent on everything


def union(a: Footprint, b: Footprint) -> Footprint:
    if a is None or b is None:
        return None
    merged = dict(a)
    for resource, write in b.items():
        merged[resource] = write or merged.get(resource, False)
    return merged


def dependent(a: Footprint, b: Footprint) -> bool:
    """Steps with these footprints may not commute.

    Two entries of one resource conflict when either writes; an entry ``C[?]``
    (a key of the container ``C`` that has no name by value, ``cells.key_part``)
    also conflicts with every key ``C[...]`` of the other footprint.
    """
    if a is None or b is None:
        return True
    if len(b) < len(a):
        a, b = b, a
    for resource, write in a.items():
        other = b.get(resource)
        if other is not None and (write or other):
            return True
    if ANY_KEY in a or ANY_KEY in b:
        return _any_key_meets(a, b) or _any_key_meets(b, a)
    return False


def _any_key_meets(a: dict[str, bool], b: dict[str, bool]) -> bool:
    """An entry ``C[?]`` of ``a`` conflicts with a key ``C[...]`` of ``b``."""
    for resource, write in a.items():
        if resource.endswith("[?]") and resource != ANY_KEY:
            keys = resource[:-2]  # "C["
            for other, other_write in b.items():
                if (write or other_write) and other.startswith(keys):
                    return True
    return False


# A step of the current instant: its key, footprint, whether it drew, its draw (if one
# chose it), its logged step's index, the key of the step that triggered its event and
# the values of the model-level choices it drew, in order.
InstantStep = tuple[
    str | None, Footprint, bool, "DrawRecord | None", int | None, str | None, tuple[int, ...]
]

# A race of a step (``SleepSetSource._mark_races``): its wakeup sequence, as the keys of its
# steps in the run's order, the values each drew, per step the earlier steps of the sequence
# that happen before it (its initials: the steps with none), and the footprint of each.
Wakeup = tuple[
    tuple[str | None, ...],
    tuple[tuple[int, ...], ...],
    tuple[frozenset[int], ...],
    tuple[Footprint, ...],
]


# A wakeup sequence on its way down the walk's tree (``backtrack.insert``): the race, the
# steps of its sequence the path followed so far, and the step whose model draws the path is
# in, with how many of them it passed.
Insertion = tuple[Wakeup, frozenset[int], tuple[int, int] | None]


def initials(race: Wakeup, done: frozenset[int] = frozenset()) -> list[int]:
    """The steps of ``race``'s sequence, past those ``done``, that no step left happens before."""
    return [j for j in range(len(race[0])) if j not in done and race[2][j] <= done]


def causes(steps: Sequence[InstantStep]) -> list[set[int]]:
    """Per step of an instant, the earlier steps it could not run before in any order.

    Its process's earlier steps and the steps that triggered their events or its own
    (``World.enabled_by``), transitively: the relation the footprint check's
    ``footprint_claims.instant_pulls`` orders by. A step without a key (an event nobody
    waits on any more, a condition's check) has the step that triggered its event and that
    step's, for it cannot run before them either: left without them, it joined the wakeup
    sequence of a race of its trigger, unnamed, and that sequence released every option
    held back (``backtrack._step``). A cancelled step's entry has none (no order is
    excused for it).
    """
    if len(steps) < 2:  # most instants hold one step: nothing before it
        return [set() for _ in steps]
    before: list[set[int]] = []
    processes = [process_of(step[0]) for step in steps]  # each key's process, split once
    for k, process in enumerate(processes):
        found: set[int] = set()
        by = steps[k][5]
        for i in range(k - 1, -1, -1) if process is not None or by is not None else ():
            earlier = steps[i][0]
            own = process is not None and processes[i] == process
            related = earlier is not None and (own or earlier == by)
            if related and i not in found:
                found.add(i)
                found |= before[i]
        before.append(found)
    return before


def races_of(
    steps: Sequence[InstantStep], after: list[set[int]], i: int, *, known: bool = False
) -> list[Wakeup] | None:
    """The races of the instant's step ``i`` with its later steps, each as its wakeup sequence.

    A race: a later step dependent with it that some order could run before it (not in
    its ``causes``), and not through its own process's or trigger's earlier step that runs
    after ``i`` (that step's race reverses first; this pair's sequence, without that step,
    no run could follow). None when any order matters: it touches everything (what it does to
    the others, an interrupt's or a join's, is not described). A step that drew model-level
    choices races as the value it drew: its other values are other transitions, each with
    its own runs through the same draw, which tell their races. ``known``: the step touches
    everything but only holds other steps' events past the instant (a node's pause,
    ``World.touch_all``): it races with every later step that some order runs first.
    """
    footprint = steps[i][1]
    if footprint is None and not known:
        return None
    races: list[Wakeup] = []
    later: set[int] = set()  # the steps so far that happen after ``i``
    for k in range(i + 1, len(steps)):
        # Through a cause of ``k`` that happens after ``i`` the pair is no race of its own:
        # ``k`` cannot run first without that step, whose race with ``i`` reverses first.
        through = not later.isdisjoint(after[k])
        if dependent(footprint, steps[k][1]) and i not in after[k] and not through:
            wakeup = wakeup_of(steps, after, i, k)
            if wakeup is None:
                return None
            races.append(wakeup)
        if through or happens_before(steps, after, i, k):
            later.add(k)
    return races


def wakeup_of(steps: Sequence[InstantStep], after: list[set[int]], i: int, k: int) -> Wakeup | None:
    """The race of step ``i`` with the later step ``k``: its wakeup sequence.

    Optimal DPOR's ``notdep(i).k`` (Abdulla et al. 2014): the steps between them that do
    not happen after ``i`` (a process's order, an event triggered, or a dependent step of
    the run, transitively), then ``k``. Run from ``i``'s draw in this order, they reach
    ``k`` before ``i`` (the race reversed). Its initials are its steps that no earlier step
    of it happens before: source-DPOR's backtrack set at ``i``'s draw needs one of them.
    What ``i`` does after it is part of the sequence too (``_with_earlier``).
    """
    later = {i}  # the steps that happen after ``i``
    chosen: list[int] = []
    for j in range(i + 1, k):
        if any(happens_before(steps, after, h, j) for h in later):
            later.add(j)
        else:
            chosen.append(j)
    chosen.append(k)
    # A step without a key that touches nothing (an event nothing waits on any more) commutes
    # with every step: it is left out. A cancelled step's entry is named by the step it
    # stands for (the option that runs it first), with what it would draw and touch unknown
    # (none, everything); any other step without a key has no option to name it (None: a
    # branch it starts is not known, ``exhaustive._step``).
    chosen = [j for j in chosen if steps[j][0] is not None or steps[j][1] != {}]
    names = tuple(steps[j][0] or cancelled_key(steps[j][1]) for j in chosen)
    preds = tuple(
        frozenset(m for m, h in enumerate(chosen[:n]) if happens_before(steps, after, h, j))
        for n, j in enumerate(chosen)
    )
    footprints = tuple(steps[j][1] if steps[j][0] is not None else None for j in chosen)
    drawn = tuple(steps[j][6] if steps[j][0] is not None else UNKNOWN for j in chosen)
    if not chosen or chosen[-1] != k:
        return names, drawn, preds, footprints
    return _with_earlier(steps, i, chosen, (names, drawn, preds, footprints))


def _with_earlier(steps: Sequence[InstantStep], i: int, chosen: list[int], race: Wakeup) -> Wakeup:
    """``race``'s sequence, told what its earlier step ``i`` does once it has run.

    A step asleep covers the sequence only if it also commutes with ``i``, which runs after
    it: run first, one dependent with ``i`` changes what ``i`` reads, and the race may be
    gone (a read guarded by what the asleep step writes); so the sequence's last step is
    given ``i``'s footprint too. A step ``i`` that drew is one transition per value, and the
    race is the value it drew: the sequence ends with ``i`` itself, drawing those values, so
    the branch runs the transition it reverses. Left to draw its first value, a node's pause
    (which touches everything, so no step asleep covers the sequence) ran as no pause, and
    the run was cut on the step asleep it would have woken.
    """
    names, drawn, preds, footprints = race
    key, footprint, drew, values = steps[i][0], steps[i][1], steps[i][2], steps[i][6]
    if not drew or key is None:
        return names, drawn, preds, (*footprints[:-1], union(footprints[-1], footprint))
    before = frozenset(m for m, h in enumerate(chosen) if dependent(steps[h][1], footprint))
    return (*names, key), (*drawn, values), (*preds, before), (*footprints, footprint)


# The values a cancelled step's entry would draw: not known (every value of its draws).
UNKNOWN = (-1,)


def cancelled_key(footprint: Footprint) -> str | None:
    """The key of the step a cancelled step's entry stands for (``World._disables``)."""
    if footprint is None or len(footprint) != 1:
        return None
    (resource,) = footprint
    return resource[len(DISABLED) :] if resource.startswith(DISABLED) else None


def weak_initial(key: str, footprint: Footprint, race: Wakeup, done: frozenset[int]) -> bool:
    """The step ``key`` could run first in every order of the rest of ``race``'s sequence:
    one of its initials, or outside it and independent of each of its steps (optimal DPOR's
    weak initials, Abdulla et al. 2017): a branch that ran it first covers the sequence."""
    left = [j for j in range(len(race[0])) if j not in done]
    if any(race[0][j] == key for j in left):
        return key in (race[0][j] for j in initials(race, done))
    process = process_of(key)
    return not any(
        process_of(race[0][j]) == process or dependent(footprint, race[3][j]) for j in left
    )


def happens_before(steps: Sequence[InstantStep], after: list[set[int]], h: int, j: int) -> bool:
    """The instant's earlier step ``h`` happens before ``j``: by ``causes`` or a dependency."""
    return h in after[j] or dependent(steps[h][1], steps[j][1])


def process_of(key: str | None) -> str | None:
    return key.rsplit("@", 1)[0] if key is not None else None
