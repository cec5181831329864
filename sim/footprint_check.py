"""Checking the footprints the reduction trusts: swap two "commuting" steps and compare.

The partial-order reduction (``raceproof.sim.reduction``) skips schedules on
the word of the footprints the steps record: two steps touching no common
resource with a write are taken to commute. A footprint that misses a shared
object (an untracked dict, a ``touch`` left out, a primitive recording a write
as a read) silently makes a reduced proof unsound. This module checks the
claim instead of trusting it (``prove --check-footprints``).

For every run of the walk, each step ``j`` that was already due
when an earlier step ``i`` of its instant was chosen, and that the footprints
call independent of every step from ``i`` to ``j - 1`` (other processes,
no model-level choice drawn, nothing ``dependent``) is the claim sleep sets
rest on: ``j`` could have run first, equivalently. It is tested: the run is
repeated twice from scratch, once in its own order and once with ``j`` moved
before ``i``, each following the original's steps by their
interleaving-independent keys and replaying its model-level draws. If the
claim holds, both reach the same state once those steps have run (the
pending events relative to now, and the model's declared state when it has
one) and the same ending (verdicts and the ops logged, up to their order).
When they differ, ``FootprintMismatch`` names the two steps, what each
recorded, and the first op or state that differs, which points at the object
they share untracked. Each sequence of step keys is tested once per walk.

A run the walk cuts (a step asleep, a state the cache has seen) is tested
too: a sleeping step's claim is made in such a run only, since the run that
would show the other order is the one cut. The steps it was cut on join its
steps (``StepRecord.asleep``, with the footprint they sleep on), and once the
followed steps have all run both orders run on alike, the first due step by
key and model draws 0, to an ending to compare.

The mirror claim is tested too (``delayable_steps``): a step chosen among
others that the footprints call independent of the steps of its instant run
after it could have run after them, whether those were due with it or created
later in the instant (a write a later step schedules), and whether or not they
drew a model-level choice (a step asleep stays asleep past one by its actual
footprint, so untracked state that decides whether it draws shows here). Sleep sets rest on it
as well (a step asleep stays asleep while independent steps run, and the run
that would show the other order is cut and never checked). A step is never
delayed past a step it triggered (``StepRecord.enabled_by``); any other
delayed order that cannot be followed (a step that was not due without the
delayed one) is unverified: the reduction never relies on either, since a
sleeping step cannot have caused the steps that run while it sleeps.

A pair is only *unverified* (counted, never reported as wrong) when a run
cannot be followed for reasons that do not show a dependency: a step with no
key among several due (a timer's firing is named, ``World.arm_key``, and any
other event no one process owns by the step that triggered it,
``World._name_event``: a condition, ``AllOf``/``AnyOf``, and an event triggered
by a step without a name are left), or a swapped order that could not be run
as asked. A claim across a step with no key that a draw chose cannot be
followed either: it is counted unverified (``unnamed_claims``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raceproof.sim.choices import SCHEDULE_LABEL, Choice, ChoiceSource
from raceproof.sim.configs import BadInput
from raceproof.sim.invariants import INVARIANT_OP
from raceproof.sim.outcome import Runner, RunOutcome
from raceproof.sim.state_cache import ending, kernel_fingerprint
from raceproof.sim.world import SleepBlocked

Footprint = dict[str, bool] | None


class FootprintMismatch(BadInput):
    """Two steps the footprints call independent do not commute: the model's footprints are wrong.

    Bad input (exit 2): the model under test is wrong, not the kernel; a proof
    that meets one claims nothing.
    """


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


class _Diverged(SleepBlocked):  # passes through ``execute`` like the reduction's own cut
    def __init__(self, position: int, detail: str, ambiguous: bool) -> None:
        super().__init__(detail)
        self.position, self.detail, self.ambiguous = position, detail, ambiguous


class KeyFollowingSource(ChoiceSource):
    """Runs the steps ``targets`` in that order, by key; replays ``model_values``.

    At each schedule draw it picks the earliest step of ``targets`` not yet run
    that is due (whether a step needs a draw at all depends on what else is due,
    which reordering changes). ``snapshot_after``: at the first draw after the
    first that many targets have all run, the kernel's state fingerprint.
    """

    observes_steps = True

    def __init__(
        self,
        targets: Sequence[str],
        model_values: Sequence[int],
        snapshot_after: int,
        *,
        run_on: bool = False,
    ) -> None:
        super().__init__()
        self.targets, self.model_values = list(targets), list(model_values)
        # A cut run's steps stop short of its end: once every target has run, both orders
        # run on alike (the first due step by key, model draws 0) to an ending to compare.
        self.run_on = run_on
        self.order = {key: n for n, key in enumerate(self.targets)}
        self.waiting = set(self.targets[:snapshot_after])  # to run before the snapshot
        self.run: set[str] = set()
        self.model_draws = 0
        self.ambiguous = False  # an unnamed step was due at a draw: the order may not be followed
        self.out_of_order = False  # a target ran with no draw before an earlier one had
        self.snapshot: str | None = None
        self.snapped = False

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        index = self.model_draws
        self.model_draws += 1
        if index >= len(self.model_values) and self._past_targets():
            return 0
        if index >= len(self.model_values) or self.model_values[index] >= n:
            raise _Diverged(index, f"model draw {label!r} #{index} differs", self.ambiguous)
        return self.model_values[index]

    def schedule_steps(self, keys: list[str | None], world: Any = None) -> int:
        if not self.waiting and not self.snapped and world is not None:
            self.snapped = True
            self.snapshot = kernel_fingerprint(world, world.state_fingerprint or (lambda: ""))
        if None in keys:
            self.ambiguous = True
        ranked = sorted(
            (self.order[key], i)
            for i, key in enumerate(keys)
            if key in self.order and key not in self.run
        )
        if ranked:
            value = ranked[0][1]
        elif None in keys:
            value = keys.index(None)
        elif self._past_targets():
            value = min(range(len(keys)), key=lambda i: str(keys[i]))
        else:
            raise _Diverged(
                len(self.run),
                f"none of the steps due ({', '.join(map(str, keys))}) is in the run",
                self.ambiguous,
            )
        self.record.append(Choice(SCHEDULE_LABEL, len(keys), value))
        return value

    def _past_targets(self) -> bool:
        return self.run_on and self.order.keys() <= self.run

    def before_step(self, key: str | None) -> None:
        pass

    def after_step(self, key: str | None, footprint: Footprint) -> None:
        if key is not None:
            if key in self.order and any(
                target not in self.run for target in self.targets[: self.order[key]]
            ):
                self.out_of_order = True  # it ran before an earlier target, no draw to refuse
            self.run.add(key)
            self.waiting.discard(key)


def _dependent(a: Footprint, b: Footprint) -> bool:
    from raceproof.sim.reduction import dependent

    return dependent(a, b)


def _process(key: str) -> str:
    return key.rsplit("@", 1)[0]


def _actor(key: str) -> str:
    """The actor's name in a step key (``/leader#0/worker#1@3`` -> ``worker``)."""
    return _process(key).rsplit("/", 1)[-1].split("#", 1)[0] or key


def movable_steps(
    steps: Sequence[StepRecord], *, across_unnamed: bool = False
) -> list[tuple[int, int]]:
    """``(i, j)``: step ``j`` was due when step ``i`` was chosen and commutes with steps ``i..j-1``.

    That is the claim sleep sets rest on: the later step could have run first,
    and running it first is equivalent. ``across_unnamed``: also the claims across
    a step with no key (``unnamed_claims``).
    """
    found = []
    for i, first in enumerate(steps):
        if first.options is None:
            continue
        for j in range(i + 1, len(steps)):
            moved = steps[j]
            if moved.key is None or moved.key not in first.options:
                continue
            if moved.drew or moved.footprint is None:
                continue
            between = steps[i:j]
            if all(
                (s.key is not None or across_unnamed)
                and not s.drew
                and (s.key is None or _process(s.key) != _process(moved.key))
                and not _dependent(s.footprint, moved.footprint)
                for s in between
            ):
                found.append((i, j))
    return found


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
                or _process(step.key) == _process(late.key)
                or step.enabled_by == late.key
                or _dependent(step.footprint, late.footprint)
            ):
                break
            found.append((i, j))
            if step.ends_run:  # nothing runs after it: the last step ``late`` could pass
                break
    return found


def unnamed_claims(steps: Sequence[StepRecord]) -> set[tuple[str | None, ...]]:
    """The claims of a run made across a step with no key, which no swap can follow.

    A condition's step (``AllOf``/``AnyOf``) has no key that holds in every order;
    the reduction still lets a step sleep past it when their footprints are
    independent. Such a claim cannot be tested by key: it is counted unverified.
    """
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


@dataclass
class FootprintChecker:
    """Per walk: the pairs checked so far and the counts for the report."""

    run: Runner
    checked: int = 0
    unverified: int = 0
    seen: set[tuple[str | None, ...]] = field(default_factory=set)
    _cut: bool = field(default=False, init=False)  # the run checked now was cut short

    def check(
        self, steps: Sequence[StepRecord], record: Sequence[Choice], *, cut: bool = False
    ) -> None:
        """Test every new "could have run first" claim of one run.

        ``cut``: the walk cut the run (a step asleep, a state seen); its steps end
        with the ones it was cut on (``StepRecord.asleep``), and both orders of a claim
        run on alike past its steps to an ending to compare. A sleeping step's claim
        (it commutes with every step run since it fell asleep) is made in such a run
        only: the run that would show the other order is the one cut.
        """
        self._cut = cut
        model_values = [c.value for c in record if c.label != SCHEDULE_LABEL]
        # Unnamed steps no draw chose (an event nobody waits on) carry no claim.
        steps = [s for s in steps if s.key is not None or s.options is not None]
        named = [n for n, s in enumerate(steps) if s.key is not None]
        at = {n: d for d, n in enumerate(named)}  # step index -> its index among named steps
        keys: list[str] = [s.key for s in steps if s.key is not None]
        for i, j in movable_steps(steps):
            a, b = steps[i], steps[j]
            assert a.key is not None and b.key is not None
            di, dj = at[i], at[j]
            seen = tuple(s.key for s in steps[i : j + 1])
            if seen in self.seen:
                continue
            self.seen.add(seen)
            swapped = [*keys[:di], b.key, *keys[di:dj], *keys[dj + 1 :]]
            first = self._follow(keys, model_values, dj + 1)
            if first is None:
                self.unverified += 1
                continue
            second = self._follow(swapped, model_values, dj + 1)
            if second is None:
                self.unverified += 1
                continue
            self.checked += 1
            compare = _raised_alike if b.ends_run else self._difference
            difference = compare(first, second)
            if difference is None:
                continue
            if first[0].ambiguous or second[0].ambiguous:  # not checked after all
                self.checked, self.unverified = self.checked - 1, self.unverified + 1
                continue
            if b.ends_run:  # moved one step back at a time it ends the run early each time
                k = di
            else:
                k, difference = self._culprit(keys, model_values, first, di, dj, difference)
            culprit = steps[named[k]]
            assert culprit.key is not None
            raise FootprintMismatch(
                f"footprints are wrong: step {b.key} ({_actor(b.key)}, recorded "
                f"{_show(b.footprint)}) does not commute with step {culprit.key} "
                f"({_actor(culprit.key)}, recorded {_show(culprit.footprint)}): {difference}; "
                f"{_cause(first, second)}"
            )
        self._check_delays(steps, keys, at, model_values)
        for claim in unnamed_claims(steps) - self.seen:
            self.seen.add(claim)
            self.unverified += 1

    def _check_delays(
        self,
        steps: list[StepRecord],
        keys: list[str],
        at: dict[int, int],
        model_values: list[int],
    ) -> None:
        """Test every new "could have run later" claim (``delayable_steps``) of one run.

        The sleep sets rest on these too: a step asleep stays asleep while the steps
        run after it are independent of it, and the run that shows the other order is
        cut, never checked. Only a difference between two runs that both followed
        their order is reported; a delayed order that cannot be followed (a step that
        was not due without the delayed one) is counted unverified.
        """
        for i, j in delayable_steps(steps):
            late = steps[i]
            assert late.key is not None
            di, dj = at[i], at[j]
            seen = ("later", *(s.key for s in steps[i : j + 1]))
            if seen in self.seen:
                continue
            self.seen.add(seen)
            delayed = [*keys[:di], *keys[di + 1 : dj + 1], late.key, *keys[dj + 1 :]]
            first = self._follow(keys, model_values, dj + 1)
            second = self._follow(delayed, model_values, dj + 1)
            if first is None or second is None or first[2] is not None or second[2] is not None:
                self.unverified += 1
                continue
            self.checked += 1
            # Delayed past a step that ends the run, ``late`` never runs: that step must
            # end it alike.
            difference = (_raised_alike if steps[j].ends_run else self._difference)(first, second)
            if difference is None:
                continue
            if any(f[0].ambiguous or f[0].out_of_order for f in (first, second)):
                self.checked, self.unverified = self.checked - 1, self.unverified + 1
                continue
            culprit = steps[j]
            for k in range(i + 1, j + 1):  # the first step that ``late`` fails to pass
                dk = at[k]
                moved = [*keys[:di], *keys[di + 1 : dk + 1], late.key, *keys[dk + 1 :]]
                again = self._follow(moved, model_values, dj + 1)
                if again is not None and again[2] is None:
                    compare = _raised_alike if steps[k].ends_run else self._difference
                    found = compare(first, again)
                    if found is not None and not (again[0].ambiguous or again[0].out_of_order):
                        culprit, difference = steps[k], found
                        break
            assert culprit.key is not None
            raise FootprintMismatch(
                f"footprints are wrong: step {late.key} ({_actor(late.key)}, recorded "
                f"{_show(late.footprint)}) does not commute with step {culprit.key} "
                f"({_actor(culprit.key)}, recorded {_show(culprit.footprint)}), which ran "
                f"after it: {difference}; {_cause(first, second)}"
            )

    def _culprit(
        self,
        keys: list[str],
        model_values: list[int],
        first: tuple[KeyFollowingSource, RunOutcome | None, str | None],
        i: int,
        j: int,
        difference: str,
    ) -> tuple[int, str]:
        """The step between ``i`` and ``j`` that ``j`` fails to commute with: move ``j`` one back at a time."""
        for k in range(j - 1, i, -1):
            moved = [*keys[:k], keys[j], *keys[k:j], *keys[j + 1 :]]
            again = self._follow(moved, model_values, j + 1)
            if again is None:
                break
            found = self._difference(first, again)
            if found is not None:
                return k, found
        return i, difference

    def _follow(
        self, targets: list[str], model_values: list[int], snapshot_after: int
    ) -> tuple[KeyFollowingSource, RunOutcome | None, str | None] | None:
        source = KeyFollowingSource(targets, model_values, snapshot_after, run_on=self._cut)
        try:
            outcome = self.run(source)
        except _Diverged as diverged:
            if diverged.ambiguous:
                return None
            return source, None, f"after the swap, {diverged.detail} (step #{diverged.position})"
        return source, outcome, None

    @staticmethod
    def _difference(
        first: tuple[KeyFollowingSource, RunOutcome | None, str | None],
        second: tuple[KeyFollowingSource, RunOutcome | None, str | None],
    ) -> str | None:
        both = _ended(first, second)
        if not isinstance(both, tuple):
            return both
        (out1, out2), src1, src2 = both, first[0], second[0]
        if src1.snapshot != src2.snapshot:
            return "the pending events (or the model's declared state) differ right after the pair"
        end1, end2 = ending(out1, 0), ending(out2, 0)
        if end1 == end2:
            return None
        if end1[:2] != end2[:2]:
            return f"the verdicts differ ({end1[0]} in one order, {end2[0]} in the other)"
        # Multisets: the same op logged a different number of times is a difference too.
        counted1, counted2 = Counter(end1[2]), Counter(end2[2])
        only = sorted((counted1 - counted2) or (counted2 - counted1))
        time_ms, actor, kind, fields = only[0]
        return f"the ops differ, first {actor} {kind} {fields} at {time_ms} ms"


def _ended(
    first: tuple[KeyFollowingSource, RunOutcome | None, str | None],
    second: tuple[KeyFollowingSource, RunOutcome | None, str | None],
) -> tuple[RunOutcome, RunOutcome] | str | None:
    """Both runs' outcomes, or instead what to report: the other order's divergence, or
    None (say nothing) when the original order itself could not be followed."""
    (_, out1, err1), (_, out2, err2) = first, second
    if err1 is not None:
        return None
    if err2 is not None:
        return err2
    assert out1 is not None and out2 is not None
    return out1, out2


def _raised_alike(
    first: tuple[KeyFollowingSource, RunOutcome | None, str | None],
    second: tuple[KeyFollowingSource, RunOutcome | None, str | None],
) -> str | None:
    """For a step whose process raised, in the other order: it must end the run alike.

    The run ends on it, so in the other order the steps on its far side never run
    and the endings cannot match; what its footprint vouches for is that it behaves
    the same, so it ends the run with the same status and the same error.
    """
    both = _ended(first, second)
    if not isinstance(both, tuple):
        return both
    out1, out2 = both
    if out1.status == out2.status and out1.error == out2.error:
        return None
    said = out2.error.message if out2.error is not None else "no error"
    return f"in the other order the step that raised ends the run {out2.status} ({said})"


def _cause(
    first: tuple[KeyFollowingSource, RunOutcome | None, str | None],
    second: tuple[KeyFollowingSource, RunOutcome | None, str | None],
) -> str:
    """What the two steps share that no footprint records, as far as the two runs tell.

    An invariant whose verdict differs reads state between steps that its reads did
    not record; a checker whose verdict differs over the same ops reads their order.
    """
    out1, out2 = first[1], second[1]
    if out1 is not None and out2 is not None:
        status1 = {v.checker: v.status for v in out1.verdicts}
        status2 = {v.checker: v.status for v in out2.verdicts}
        differing = sorted(
            c for c in status1.keys() | status2.keys() if status1.get(c) != status2.get(c)
        )
        invariants = {
            str(op.get("invariant"))
            for outcome in (out1, out2)
            for op in outcome.history.of_kind(INVARIANT_OP)
        }
        named = [c for c in differing if c in invariants]
        if named:
            return (
                f"the invariant {named[0]!r} sees a state between them that differs: its "
                f"predicate reads state that no footprint records (read it through "
                f"world.shared, or world.touch it)"
            )
        if differing and ending(out1, 0)[2] == ending(out2, 0)[2]:
            return (
                f"the checker {differing[0]!r} judges the same ops differently in another "
                f"order: it reads the order of ops of different actors (mark it with "
                f"raceproof.reads_op_order)"
            )
    return "they share an object no footprint records (track it, or world.touch it)"


def _show(footprint: Footprint) -> str:
    if not footprint:
        return "nothing"
    return ", ".join(f"{'w' if w else 'r'}:{r}" for r, w in sorted(footprint.items()))
