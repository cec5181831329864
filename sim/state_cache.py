"""State caching for proofs: skip a subtree whose state the walk has already explored.

In the manner of TLC and stateright, each state is named by a canonical
fingerprint: by default the kernel's own (``raceproof.sim.fingerprint``: the
shared state, every live process's position and held values, every pending
event relative to now and the history's ops; ``AUTOMATIC`` on the World), or
the model's, given with ``World.declare_state(fn)``, to which the kernel adds
every pending event relative to now (its delay, its priority and the step it
will run: the process and how many steps that process has taken, and how many of
those a node's pause held, which moved its count but not its code). Between two
steps past the replayed prefix -- after a step that drew a model-level choice,
and at each ``schedule`` draw -- the walk looks the fingerprint up; if the
state was reached before with a sleep set no larger than the current one, with
no more deviations spent and no fewer World steps taken (as much room before
the step bound), every continuation from here was explored from there, and
the run is cut (``state_cache`` in the report's accounting).

Soundness condition (the kernel's for its own fingerprint, the model author's
for a declared one): two states with the same fingerprint have the same
futures and the same verdicts on them. So the
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

With symmetric actors declared (``raceproof.sim.symmetry``) the fingerprint is
that of a canonical representative under their permutations, the sleep set is
renamed the same way, and the debug mode compares endings renamed too; two
states that are one only by a permutation and end differently raise
``SymmetryMismatch`` (the declaration's fault: bad input, exit 2).

A run cut with its instant still open needs from the covering subtree what its steps do
in the rest of that instant (the partial-order reduction's races): each visit keeps it
(``Visit.later``, ``raceproof.sim.cover_races``).

``StateCacheMismatch`` is a ``KernelError``: a reduction that is not sound is a
bug in raceproof (exit 70), never a verdict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from raceproof.sim.errors import KernelError
from raceproof.sim.fingerprint import Memo, fingerprint, relative_steps, state_text
from raceproof.sim.races import Footprint
from raceproof.sim.symmetry import Renaming, State, canonical, mismatch, renamed_ending
from raceproof.sim.world import SleepBlocked, _owner, _process_step_key


class StateSeen(SleepBlocked):
    """The state was explored before: the rest of this run is covered (by ``covering``,
    cut after ``steps`` World steps at ``now_ms``)."""

    def __init__(
        self, fingerprint: str, covering: Visit | None = None, steps: int = 0, now_ms: int = 0
    ) -> None:
        super().__init__(fingerprint)
        self.covering, self.steps, self.now_ms = covering, steps, now_ms


class StateCacheMismatch(KernelError):
    """The debug mode found two runs from one fingerprint that went different ways."""


def kernel_fingerprint(world: Any, model: Callable[[], str]) -> str | None:
    """The model's fingerprint plus every pending event relative to now; None when unknown.

    Unknown: an event someone waits on that does not resume exactly one tracked
    process (a condition, a callback of the model's own, a timer's firing: its key
    names the step, not the callback's state), whose future the kernel cannot name.
    """
    pending = _pending(world)
    if pending is None:
        return None
    return _digest(f"{model()}|{pending}")


def _pending(world: Any) -> list[tuple[int, int, str]] | None:
    """Every pending event someone waits on: (delay from now, priority, step key), sorted.

    The step key counts the process's steps, and a step a node's pause held
    (``nodes.hold_paused``) counted without the process moving: such a process's key
    says how many it held too (``/a1#1@3 held 1``), so a step count tells how far its
    code went (two processes with the same count, one held once, are at different
    places in their code).
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
        held = getattr(_owner(event), "rp_held", 0)
        pending.append((time - now, int(priority), f"{key} held {held}" if held else key))
    pending.sort()
    return pending


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Seen:
    """A state as the cache keys it: its fingerprint (canonical under the declared symmetry),
    the plain one, and the renaming that made it canonical (None: no symmetry declared)."""

    fingerprint: str
    raw: str
    renaming: Renaming | None = None
    relative: Callable[[str], str] | None = None  # the kernel's: step keys relative to counts

    def rename(self, key: str) -> str:
        if self.relative is not None:
            key = self.relative(key)
        return key if self.renaming is None else self.renaming.apply(key)


def AUTOMATIC() -> str:
    """The World's ``state_fingerprint`` when the kernel names the state (``fingerprint``)."""
    raise KernelError("the automatic state fingerprint is computed by the walk, not called")


def kernel_state(world: Any, model: Callable[[], str], memo: Memo | None = None) -> Seen | None:
    """``kernel_fingerprint``, made canonical over the world's symmetric actors if it has any.

    ``model`` is ``AUTOMATIC`` when the kernel names the state itself
    (``raceproof.sim.fingerprint``; ``Unfingerprintable`` when it cannot): canonical
    by rendering the whole state with each renaming (``symmetry.canonical``).
    """
    if model is AUTOMATIC:
        relative = relative_steps(world)  # as ``state_text`` writes step keys
        if not world.symmetric:
            raw = fingerprint(world, memo=memo)
            return Seen(raw, raw, relative=relative)
        whole = _Rendered(world, memo or Memo())
        canonical_text, renaming = canonical(world.symmetric, world.processes_of, whole)  # type: ignore[arg-type]
        return Seen(
            _digest(canonical_text),
            _digest(whole.render(_same)),
            renaming=renaming,
            relative=relative,
        )
    pending = _pending(world)
    if pending is None:
        return None
    text = model()
    raw = _digest(f"{text}|{pending}")
    if not world.symmetric:
        return Seen(raw, raw)
    entries = tuple(repr(p) for p in pending)
    if isinstance(text, str):
        parts = State(ordered=(text,), unordered=entries)
    else:  # a collection of entries: sorted again once renamed (``World.declare_state``)
        parts = State(ordered=(), unordered=(*map(str, text), *entries))
    canonical_text, renaming = canonical(world.symmetric, world.processes_of, parts)
    return Seen(_digest(canonical_text), raw, renaming)


@dataclass
class _Rendered:
    """The kernel's state text as ``symmetry.canonical`` renders sections: renamed throughout."""

    world: Any
    memo: Memo

    def render(self, rename: Callable[[str], str]) -> str:
        return state_text(self.world, rename, self.memo)


def _same(text: str) -> str:
    return text


@dataclass
class Visit:
    sleep: frozenset[str]  # step keys, renamed as the state was (``Seen.rename``)
    depth: int
    steps: int = 0  # the World's steps so far: a later visit with more has less room
    now_ms: int = 0  # the virtual time: a later visit at a later time has less room (``past``)
    endings: set[tuple[Any, ...]] = field(default_factory=set)  # debug mode: of its subtree
    seen: Seen | None = None  # the state as keyed (debug mode: to tell symmetry's merges)
    # How far past this state its runs went (``StateCache.overruns``): the furthest (steps,
    # ms) a run through it reached, and per run cut further on, (steps, ms) to the cut and
    # the visit that covered it.
    reach: tuple[int, int] = (0, 0)
    links: list[tuple[int, int, Visit]] = field(default_factory=list, repr=False, compare=False)
    # What the steps past this state do in its instant (``raceproof.sim.cover_races``): each
    # step (its key and drawn values) with the union of its footprints, in every run through
    # it and in the visits that covered one (``feeds``: the visits whose summaries hold this one's); the draws of
    # covered runs waiting on it (``watchers``); and what names its resources (``frame``).
    frame: tuple[Any, ...] | None = None
    later: dict[tuple[str | None, tuple[int, ...]], Footprint] = field(
        default_factory=dict, repr=False, compare=False
    )
    feeds: dict[int, Visit] = field(default_factory=dict, repr=False, compare=False)
    watchers: list[Any] = field(default_factory=list, repr=False, compare=False)
    # Of those, per step, the runs' steps from this state to it (``cover_races.paths``), and
    # the steps met without one (``deep``): fed from a visit that covered a run through this
    # one, or on too many paths. ``cover_races`` gives the others their wakeup sequences.
    paths: dict[tuple[str | None, tuple[int, ...]], list[tuple[Any, ...]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    deep: set[tuple[str | None, tuple[int, ...]]] = field(
        default_factory=set, repr=False, compare=False
    )

    def went(self, steps: int, now_ms: int, covering: Visit | None = None) -> None:
        """A run through this state reached ``steps`` and ``now_ms`` (cut there, if covered)."""
        here = (steps - self.steps, now_ms - self.now_ms)
        if covering is None:
            self.reach = (max(self.reach[0], here[0]), max(self.reach[1], here[1]))
        else:
            self.links.append((*here, covering))


@dataclass
class StateCache:
    """Fingerprints seen by one walk. ``check``: the debug mode (cut nothing, compare)."""

    check: bool = False
    visits: dict[str, list[Visit]] = field(default_factory=dict)
    hits: int = 0
    checked: int = 0
    # The kernel's own fingerprint (``raceproof.sim.fingerprint``) for a model that declares
    # none; ``off`` says once why it could not name a state (the walk is stateless from then on).
    automatic: bool = True
    off: str | None = None
    symmetric_hits: int = 0  # hits on a state seen only as an image (its plain fingerprint differs)
    # Covers by a visit with more room before the bounds (``overruns``): allowed in a walk
    # that runs every subtree to its end (``prove``), never in a unit handing its frontier on.
    stretch: bool = False
    stretched: list[tuple[Visit, int, int]] = field(default_factory=list)  # (visit, steps, ms)

    def look_up(
        self,
        fingerprint: str,
        sleep: frozenset[str],
        depth: int,
        seen: Seen | None = None,
        steps: int = 0,
        now_ms: int = 0,
        frame: tuple[Any, ...] | None = None,
    ) -> tuple[Visit | None, Visit | None]:
        """(a covering earlier visit, None), or (None, this visit, now remembered).

        An earlier visit covers this one when it had no more asleep and no more deviations
        spent. Taken no fewer steps and reached no earlier, it had no more room before the
        step and time bounds: whatever bound this visit's runs would hit, its runs hit.
        With more room (``stretch``), the cover is remembered and ``overruns`` checks at
        the end that no run past it went further than this visit's room.
        """
        for visit in self.visits.get(fingerprint, ()):
            if visit.sleep <= sleep and visit.depth <= depth:
                tighter = visit.steps >= steps and visit.now_ms >= now_ms
                if not (tighter or self.stretch):
                    continue
                if not (tighter or self.check):  # the debug mode cuts nothing: no overrun
                    self.stretched.append((visit, steps, now_ms))
                self.hits += 1
                if seen is not None and visit.seen is not None and visit.seen.raw != seen.raw:
                    self.symmetric_hits += 1
                return visit, None
        new = Visit(sleep, depth, steps=steps, now_ms=now_ms, seen=seen, frame=frame)
        self.visits.setdefault(fingerprint, []).append(new)
        return None, new

    def overruns(self, bounds: Any) -> dict[str, int]:
        """Stretched covers (see ``look_up``) whose covering subtree went further than the
        covered state's room before ``bounds`` (``max_steps``, ``max_time_ms``): a bound the
        plain walk would hit there. Each counts as a run stopped at that bound. A covering
        subtree that reaches its own state again (a cycle of covers) goes on without end.
        """
        found: dict[str, int] = {}
        extents: dict[int, tuple[float, float]] = {}
        for visit, steps, now_ms in self.stretched:
            far_steps, far_ms = _extent(visit, extents)
            if steps + far_steps > bounds.max_steps:
                found["steps"] = found.get("steps", 0) + 1
            elif now_ms + far_ms > bounds.max_time_ms:
                found["virtual_time"] = found.get("virtual_time", 0) + 1
        return found


def _extent(start: Visit, extents: dict[int, tuple[float, float]]) -> tuple[float, float]:
    """How far (steps, ms) any run from ``start``'s state went, through the runs cut in its
    subtree and the subtrees that covered them; infinite on a cycle. Depth-first, no
    recursion (chains of covers can be long); ``extents`` memoizes."""
    endless = (float("inf"), float("inf"))
    active: set[int] = set()
    stack: list[tuple[Visit, int]] = [(start, 0)]
    while stack:
        visit, at = stack.pop()
        key = id(visit)
        if at == 0:
            if key in extents:
                continue
            active.add(key)
        if at < len(visit.links):
            stack.append((visit, at + 1))
            covering = visit.links[at][2]
            if id(covering) in active:
                extents[key] = endless
            elif id(covering) not in extents:
                stack.append((covering, 0))
            continue
        far = extents.get(key, (float(visit.reach[0]), float(visit.reach[1])))
        for steps, ms, covering in visit.links:
            beyond = extents.get(id(covering), endless)
            far = (max(far[0], steps + beyond[0]), max(far[1], ms + beyond[1]))
        extents[key] = far
        active.discard(key)
    return extents[id(start)]


def ending(
    outcome: Any, op_index: int, seen: Seen | None = None, since_ms: int = 0
) -> tuple[Any, ...]:
    """A run's verdicts and the ops it logged from ``op_index`` on, up to their order,
    each at its time since ``since_ms`` (the state's: one state reached at two times).

    With ``seen``'s renaming (a symmetric model), the actors carry their canonical names.
    """
    tail = sorted(
        (op.time_ms - since_ms, op.actor, op.kind, repr(sorted(op.fields.items())))
        for op in outcome.history.ops[op_index:]
        if op.kind != "run.end"  # it counts the run's steps, the past's too
    )
    plain = (outcome.status, tuple((v.checker, v.status) for v in outcome.verdicts), tuple(tail))
    return plain if seen is None else renamed_ending(plain, seen.renaming)


def compare(fingerprint: str, first: Visit, again: Visit) -> None:
    """The debug mode's check: two subtrees from one fingerprint must end the same ways.

    Two states that are one only under the declared symmetry (their plain fingerprints
    differ) and end differently break the declaration: ``SymmetryMismatch`` names the actor.
    """
    pair = _symmetric(first, again)
    if pair is not None and first.endings != again.endings:
        raise mismatch(fingerprint, (first.endings, pair[0]), (again.endings, pair[1]))
    if first.endings != again.endings:
        only_first = len(first.endings - again.endings)
        only_again = len(again.endings - first.endings)
        raise StateCacheMismatch(
            f"state fingerprint {fingerprint} was reached twice but the runs from it differ "
            f"({only_first} endings only after the first visit, {only_again} only after the "
            f"second): the fingerprint leaves out state that matters"
        )


def _symmetric(first: Visit, again: Visit) -> tuple[Renaming, Renaming] | None:
    """The two visits' renamings, if they are one state only under the declared symmetry."""
    a, b = first.seen, again.seen
    if a is None or b is None or a.raw == b.raw or a.renaming is None or b.renaming is None:
        return None
    return a.renaming, b.renaming
