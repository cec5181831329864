"""The walk's backtrack sets: a race's wakeup sequence taken down the tree of draws.

Why a module: what a run's races (``raceproof.sim.races``) ask of the walk's draws
(``reduction.Node``) is optimal DPOR's wakeup-tree insertion (Abdulla et al. 2014/2017),
on a tree whose draws are schedule draws (which due step runs) and model draws (which
value a step draws). ``backtrack`` takes each race of a draw's chosen step to the draw:
unless a step asleep where that run took its branch could start the race's sequence (a
weak initial: that step's branch covers it), the sequence goes down the branches taken
or queued whose step starts it (``insert``), and the first branch held back that starts
what is left is queued, to follow the rest (``Node.guides``) and draw the values its
steps drew (``Node.forced``). A step that drew is one transition per value: at its model
draws the sequence goes down the value it drew, or queues it if held back
(``hold_values``: beside a step asleep, a value's runs are new only where a wakeup
sequence reaches it). What is not known queues every branch held back: a draw whose
races are unknown (``_unknown``: also every value held back below it in its instant),
a sequence's first step that no option names, a cancelled step's or a step due alone's
values (``_every_value``).

A sequence also goes down a branch already run whose step is a weak initial of what is
left of it (``_weak``: outside it, and commuting with each of its steps); a sibling queued
before it may not have run when a sequence queued a branch, so a branch queued only for
sequences is looked at again when its turn comes (``covered``), and is not run if they can
now go down such a sibling: its run would only be cut on that sibling's step, asleep.

A sequence that reaches a branch queued but not yet run waits there (``Node.waiting``)
until its run made the draw below; a race's steps are of one instant, so a sequence
never goes past it, and a parallel proof keeps each instant's draws in one unit
(``proof_units.race_group``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raceproof.sim.races import UNKNOWN, Insertion, Wakeup, initials, weak_initial

if TYPE_CHECKING:
    from raceproof.sim.reduction import Node

# A branch still to walk: the draw it leaves from and the value it takes there.
Entry = tuple["Node", int]


def backtrack(node: Node, races: list[Wakeup] | None, chosen: int) -> list[Entry]:
    """The branches held back below ``node`` that its chosen step's races need: queue them.

    Optimal DPOR's wakeup-tree insertion (Abdulla et al. 2014/2017): each race's wakeup
    sequence goes down the branches already taken or queued whose step starts it (``insert``)
    and ends in the first branch held back that starts what is left of it, queued to follow
    it (``Node.guides``, ``SleepSetSource.guide``) and to draw the values its steps drew
    (``Node.forced``), so the race's later step runs, and wakes the steps asleep it
    touches, before a step asleep must run. A sequence that a step asleep where the run
    took its branch ``chosen`` could start (a weak initial, Abdulla et al. 2017) is covered
    by that step's branch already. Every branch held back at ``node`` when the races are
    not known.
    """
    if races is None or node.record.keys is None:
        return _unknown(node)
    sleep = node.record.sleep if chosen == node.record.value else node.sleeps.get(chosen, {})
    added: list[Entry] = []
    for race in races:
        if not any(
            footprint is not None and weak_initial(key, footprint, race, frozenset())
            for key, footprint in sleep.items()
        ):
            added.extend(insert(node, (race, frozenset(), None)))
    return added


# What a draw does with a wakeup sequence going down (``insert``): the branches it queues,
# and the values to take it further down with what is left of it.
Going = tuple[list["Entry"], list[tuple[int, Insertion]]]


def insert(node: Node, insertion: Insertion) -> list[Entry]:
    """Take ``insertion`` down from ``node``: the branches it needs queued, if held back."""
    added: list[Entry] = []
    todo: list[tuple[Node, Insertion]] = [(node, insertion)]
    while todo:
        at, going = todo.pop()
        if at.record.keys is not None:
            queued, down = _step(at, going)
        elif going[2] is not None:
            queued, down = _model_step(at, going)
        elif initials(going[0], going[1]):  # a step due alone drew: its values not known
            queued, down = _every_value(at, going)
        else:
            continue  # the sequence is all taken
        added.extend(queued)
        for value, further in down:
            child = at.children.get(value)
            if (
                child is None
            ):  # queued, not run yet: taken down once it has (``exhaustive.ProofWalk._queue_made``)
                at.waiting.setdefault(value, []).append(further)
            elif child.record.at_ms == at.record.at_ms:  # a race's steps are of one instant
                todo.append((child, further))
    return added


def _step(node: Node, insertion: Insertion) -> Going:
    """At a schedule draw: down the branch taken or queued that starts the rest of the
    sequence; else a held-back one that starts it, queued to follow it."""
    race, done, _ = insertion
    keys = node.record.keys or ()
    first = {race[0][j]: j for j in initials(race, done)}
    if None in first and sum(key is None for key in keys) != 1:
        return _unknown(node), []  # a step no option names starts it: every branch below
    if not first:
        return [], []
    for value in (node.record.value, *sorted(node.branched)):
        j = first.get(keys[value])
        if j is not None:
            return [], [(value, (race, done | {j}, (j, 0) if race[1][j] else None))]
        if _weak(node, keys[value], insertion):  # it commutes with the rest: down it, all left
            return [], [(value, insertion)]
    for value in node.deferred:
        j = first.get(keys[value])
        if j is not None:
            node.deferred.remove(value)
            node.branched.add(value)
            node.guides[value], node.forced[value] = _guided(race, done | {j}, j)
            node.asked[value] = [insertion]
            return [(node, value)], []
    return _release_all(node), []


def _goes_down(node: Node, insertion: Insertion) -> bool:
    """``_step`` would take ``insertion`` down a branch of ``node`` taken or queued (or
    finds it all taken), queuing nothing at ``node``."""
    race, done, _ = insertion
    keys = node.record.keys or ()
    first = {race[0][j]: j for j in initials(race, done)}
    if None in first and sum(key is None for key in keys) != 1:
        return False
    return not first or any(
        keys[value] in first or _weak(node, keys[value], insertion)
        for value in (node.record.value, *sorted(node.branched))
    )


def covered(node: Node, value: int) -> list[Entry] | None:
    """A branch queued only for wakeup sequences, about to run: None if it still must run;
    else what those sequences queue now instead, and the branch is held back again.

    When a sequence came to ``node`` a sibling branch queued before it may not have run
    yet, its footprint unknown; once it has, it may be a weak initial of the sequence (it
    commutes with each of its steps), and the sequence goes down that branch instead
    (optimal DPOR's insertion, Abdulla et al. 2017): the branch's run would only repeat a
    class and be cut on the sibling's step, asleep. A branch a sequence waits below
    (``Node.waiting``) or queued for any other reason (``Node.must``) runs.
    """
    asked = node.asked.get(value)
    if not asked or value in node.must or node.waiting.get(value) or node.record.keys is None:
        return None
    node.branched.discard(value)
    node.deferred.append(value)
    if not all(_goes_down(node, insertion) for insertion in asked):
        node.deferred.remove(value)
        node.branched.add(value)
        return None
    node.deferred.sort()
    del node.asked[value]
    node.guides.pop(value, None)
    node.forced.pop(value, None)
    node.released.pop(value, None)
    added: list[Entry] = []
    for insertion in asked:
        added.extend(insert(node, insertion))
    return added


def _weak(node: Node, key: str | None, insertion: Insertion) -> bool:
    """The branch ``key`` ran at ``node`` (its footprint known: it drew nothing) is a weak
    initial of the rest of the sequence: it is outside it and commutes with each of its steps,
    so the sequence's reversal lies below that branch (optimal DPOR's insertion, Abdulla et
    al. 2017: down the leftmost child that is a weak initial)."""
    footprint = node.explored.get(key) if key is not None else None
    return footprint is not None and weak_initial(key, footprint, insertion[0], insertion[1])  # type: ignore[arg-type]


def _model_step(node: Node, insertion: Insertion) -> Going:
    """At a model draw of the sequence's step: the value it drew there queued now if held
    back, else down that value."""
    race, done, drawing = insertion
    j, k = drawing or (0, 0)
    values = race[1][j]
    if k >= len(values):
        return _every_value(node, (race, done, None))
    value = values[k]
    if value < 0:  # a cancelled step's entry: what it would draw is not known
        return _every_value(node, (race, done, None))
    if value in node.deferred:
        node.deferred.remove(value)
        node.branched.add(value)
        node.guides[value], node.forced[value] = _guided(race, done, j)
        return [(node, value)], []
    # Taken, queued or cut by a bound (whose branch never runs: nothing waits on it then).
    return [], [(value, (race, done, (j, k + 1) if k + 1 < len(values) else None))]


def _every_value(node: Node, insertion: Insertion) -> Going:
    """At a model draw of a step the race did not see run (a cancelled step's): every value
    held back queued to follow the rest of the sequence, and down every other value."""
    race, done, _ = insertion
    for value in node.deferred:
        node.guides[value], node.forced[value] = _guided(race, done, None)
    down = [(value, insertion) for value in range(node.record.n) if value not in node.deferred]
    return _release_all(node), down


def _guided(
    race: Wakeup, done: frozenset[int], own: int | None
) -> tuple[tuple[str, ...], dict[str, tuple[int, ...]]]:
    """What a branch queued for the rest of ``race`` follows: its steps not ``done``, and the
    values each that drew draws again, the branch's ``own`` step's included (its draws the
    prefix replays are drawn again as replayed: ``SleepSetSource._pick``)."""
    sequence, drawn = race[0], race[1]
    left = [(j, key) for j, key in enumerate(sequence) if key is not None]
    guide = tuple(key for j, key in left if j not in done)
    forced = {
        key: drawn[j]
        for j, key in left
        if drawn[j] != UNKNOWN and drawn[j] and (j not in done or j == own)
    }
    return guide, forced


def _unknown(node: Node) -> list[Entry]:
    """The races of ``node``'s step are not known: every option held back there, and every
    value held back at the model draws below it in its instant, now and from now on."""
    node.unknown = True
    added = _release_all(node)
    below = list(node.children.values())
    while below:
        child = below.pop()
        if child.record.at_ms == node.record.at_ms:
            if child.record.keys is None:
                added.extend(_release_all(child))
            below.extend(child.children.values())
    return added


def _release_all(node: Node) -> list[Entry]:
    """Every option held back at ``node``: the branches the races would ask for are not known."""
    added: list[Entry] = [(node, value) for value in node.deferred]
    node.must.update(node.deferred)
    node.branched.update(node.deferred)
    node.deferred = []
    return added


def hold_values(node: Node, above: Node | None) -> None:
    """A model draw with steps asleep: its other values wait for a wakeup sequence to ask.

    From here a value's runs are new only where each step asleep is woken before it runs,
    and a run through that step's earlier branch shows the race that wakes it, whose
    sequence comes down to this value (``insert``). With nothing asleep every value is
    new; where a run did not know its races (``Node.unknown``) every value is queued.
    With the state cache too: a run through that branch cut at a state whose instant is
    still open waits on the covering visit, and is released in full (``_unknown``: every
    value held back below it in its instant) once a step past the cut may race with the
    step asleep (``raceproof.sim.cover_races``); until then its races are the run's own.
    """
    if not node.record.sleep:
        return
    while above is not None and above.record.at_ms == node.record.at_ms:
        if above.unknown:
            return
        above = above.parent
    node.deferred, node.pending = node.pending, []
