"""Symmetry: interchangeable actors counted once (TLC's ``SYMMETRY`` sets), for the state cache.

A model whose actors are identical but for their names (clients running the
same code on the same shared state) reaches many states that differ only by a
permutation of those actors: client0 has written and client1 is reading, or
the other way round. Their futures are the same up to the same permutation, and
so are their verdicts, as long as nothing in the model, its checkers or its
probes tells the actors apart except through their names. A scenario declares
such actors (``Scenario(symmetric=...)`` or ``World.declare_symmetric``) and the
state cache (``raceproof.sim.state_cache``) then fingerprints a canonical
representative of each state's class: for ``n`` interchangeable actors up to
``n!`` states are one.

What references an actor is renamed, as text tokens, in every section of the
state: its name (in the model's fingerprint, cell keys and values such as
``"client-1"`` or ``"history:client1"``, pending events), the names that belong
to it (its node, its session client, its timer: an actor may be declared as a
tuple of names, its own first), and the processes spawned under any of those
names (``World.processes_of``: the j-th process of the k-th canonical actor is
named ``k.0#j`` whatever its spawn counter said; canonical tokens are delimited by a
character no model text holds, so the renaming is one-to-one). The same renaming applies to the step
keys of the sleep set the state is looked up with, and to the endings the debug
mode compares, so ``--check-state-cache`` / ``--check-symmetry`` compare two
symmetric subtrees in one namespace.

Canonicalisation (``canonical``): each actor's signature is the whole state as
seen with that actor as ``self`` and every other declared actor as ``other``;
the actors sorted by signature (ties by declaration order) take the canonical
names ``0``, ``1``, ... . Any permutation of the declared actors gives a sound
merge (two states with the same canonical text are images of each other under
some permutation); sorting picks one in ``n + 1`` renderings rather than ``n!``,
and may miss a merge where two actors tie on their signatures yet differ in how
they relate to a third. Unordered sections (pending events, cells) are sorted
again after renaming; the model's own fingerprint text is renamed in place.

Soundness condition, the scenario author's to keep: the model's code, its
checkers and its probes treat the declared actors alike but for their names
(the same code, the same configuration once started, no per-actor constant
kept past the start). ``--check-symmetry`` checks it against the plain walk:
it cuts nothing and, where two states differ only by a permutation, compares
the endings of their subtrees up to that permutation; a difference raises
``SymmetryMismatch`` (bad input, exit 2) naming the actor that does not behave
as the one in its place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from raceproof.sim.configs import BadInput

Actor = tuple[str, ...]  # an actor's names: its own first, then the names that belong to it
# A canonical token is delimited by a character no model text holds, so the renaming stays
# one-to-one: ``client0.1`` (a value naming client0) and the second name of actor 0 never meet.
MARK = "\x1e"
SELF, OTHER = "self", "other"


class SymmetryMismatch(BadInput):
    """Two states that differ only by a permutation of declared actors ended differently."""


def declared(actors: Sequence[str | Sequence[str]]) -> tuple[Actor, ...]:
    """The declaration as tuples of names, checked: ``ValueError``/``TypeError`` naming the call."""
    groups: list[Actor] = []
    for actor in actors:
        names = (actor,) if isinstance(actor, str) else tuple(actor)
        if not names or not all(isinstance(n, str) and n and MARK not in n for n in names):
            raise TypeError(
                f"World.declare_symmetric: an actor is a name or a tuple of names, got {actor!r}"
            )
        groups.append(names)
    if len(groups) < 2:
        return ()  # one actor (a configuration of one client) has no other to be exchanged with
    if len({len(g) for g in groups}) != 1:
        raise ValueError(
            f"World.declare_symmetric: every actor needs as many names as the others, got {groups!r}"
        )
    every = [n for g in groups for n in g]
    twice = sorted({n for n in every if every.count(n) > 1})
    if twice:
        raise ValueError(f"World.declare_symmetric: {twice} named twice in {groups!r}")
    return tuple(groups)


@dataclass(frozen=True)
class Renaming:
    """Text tokens (names, process ids) of the declared actors -> their canonical names."""

    table: dict[str, str]
    pattern: re.Pattern[str]
    order: tuple[str, ...]  # order[k]: the actor (its first name) that is canonical actor k here

    def apply(self, text: str) -> str:
        table = self.table
        return self.pattern.sub(lambda match: table[match.group(0)], text)

    def actor(self, text: str) -> str | None:
        """The actor the first canonical token in ``text`` stands for in this state."""
        found = CANONICAL.search(text)
        return self.order[int(found.group(1))] if found else None


CANONICAL = re.compile(f"{MARK}(\\d+)\\.")


@lru_cache(maxsize=256)
def _pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for every token, longest first, never inside a longer name (``client1``
    in ``client10`` or ``stop-client1``); a process id before the name it contains."""
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t)))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


def _tokens(actor: Actor, processes: dict[str, list[str]], name: str) -> dict[str, str]:
    """The tokens of ``actor`` renamed to ``name`` (``k``, ``self``, ``other``), delimited:
    its p-th name ``MARK name.p MARK``, the j-th process spawned under it ``MARK name.p#j MARK``."""
    table: dict[str, str] = {}
    for position, own in enumerate(actor):
        label = f"{name}.{position}"
        table[own] = f"{MARK}{label}{MARK}"
        for index, pid in enumerate(processes.get(own, ())):
            table[pid] = f"{MARK}{label}#{index}{MARK}"
    return table


@dataclass(frozen=True)
class State:
    """A state as text sections: renamed in place (``ordered``) or renamed and sorted."""

    ordered: tuple[str, ...]
    unordered: tuple[str, ...]

    def render(self, rename: Callable[[str], str]) -> str:
        kept = [rename(text) for text in self.ordered]
        return "\n".join([*kept, *sorted(rename(entry) for entry in self.unordered)])


def canonical(
    actors: tuple[Actor, ...], processes: dict[str, list[str]], state: State
) -> tuple[str, Renaming]:
    """The state's canonical text under permutations of ``actors``, and the renaming used."""
    views = []
    for me in range(len(actors)):
        table: dict[str, str] = {}
        for other, group in enumerate(actors):
            table.update(_tokens(group, processes, SELF if other == me else OTHER))
        pattern = _pattern(tuple(sorted(table)))
        views.append((state.render(_renamer(table, pattern)), me))
    views.sort()
    table = {}
    for k, (_, me) in enumerate(views):
        table.update(_tokens(actors[me], processes, str(k)))
    renaming = Renaming(
        table=table,
        pattern=_pattern(tuple(sorted(table))),
        order=tuple(actors[me][0] for _, me in views),
    )
    return state.render(renaming.apply), renaming


def _renamer(table: dict[str, str], pattern: re.Pattern[str]) -> Callable[[str], str]:
    return lambda text: pattern.sub(lambda match: table[match.group(0)], text)


def renamed_ending(ending: tuple[Any, ...], renaming: Renaming | None) -> tuple[Any, ...]:
    """A run's ending (``state_cache.ending``) with the actors' canonical names, re-sorted."""
    if renaming is None:
        return ending
    status, verdicts, tail = ending
    ops = sorted(
        (time_ms, renaming.apply(actor), kind, renaming.apply(fields))
        for time_ms, actor, kind, fields in tail
    )
    return (status, verdicts, tuple(ops))


def mismatch(
    fingerprint: str,
    first: tuple[set[tuple[Any, ...]], Renaming],
    again: tuple[set[tuple[Any, ...]], Renaming],
) -> SymmetryMismatch:
    """Name the actor that breaks the declaration: two permuted states, different endings."""
    (endings_a, names_a), (endings_b, names_b) = first, again
    only_a, only_b = endings_a - endings_b, endings_b - endings_a
    moved = [(a, b) for a, b in zip(names_a.order, names_b.order, strict=True) if a != b]
    swapped = ", ".join(f"{b} in place of {a}" for a, b in moved) or "no actor moved"
    odd = _odd_actors(endings_a, names_a, endings_b, names_b)
    if len(odd) == 1:
        who = f"{odd[0]} does not behave as the actor in its place"
    elif odd:
        who = f"{' and '.join(odd)} do not behave alike"
    else:
        who = "the permutation changes the verdicts"
    return SymmetryMismatch(
        f"the declared symmetric actors are not interchangeable: {who} (state {fingerprint} "
        f"was reached twice, with {swapped}, and the runs from the two ended differently: "
        f"{len(only_a)} endings only after the first, {len(only_b)} only after the second)"
    )


def _odd_actors(
    endings_a: set[tuple[Any, ...]],
    names_a: Renaming,
    endings_b: set[tuple[Any, ...]],
    names_b: Renaming,
) -> list[str]:
    """The declared actors that logged the most ops one subtree has and the other has not."""
    ops_a = {op for _, _, tail in endings_a for op in tail}
    ops_b = {op for _, _, tail in endings_b for op in tail}
    counts: dict[str, int] = {}
    for ops, names in ((ops_a - ops_b, names_a), (ops_b - ops_a, names_b)):
        for _, actor, _, _ in ops:
            real = names.actor(actor)
            if real is not None:
                counts[real] = counts.get(real, 0) + 1
    most = max(counts.values(), default=0)
    return sorted(name for name, count in counts.items() if count == most)
