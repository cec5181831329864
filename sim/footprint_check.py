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

An instant the walk took as commuting in every order
(``SleepSetSource._close_instant``: it branches nowhere there) is a claim about
every order of its steps, not only the adjacent ones: for each of its steps the
check runs the steps it depends on first and the others after
(``instant_pulls``), so every pair of steps that could run in either order is
reversed by some test, wherever its two steps ran.

A step that cancelled the event of another step due in such an instant (a timer's
cancel or re-arm beside its firing) removed the orders where that step runs first,
which no run of the walk shows: the check runs the cancelled step just before its
cancel (``cancelled_pulls``). Under the kernel's rule (``World._disables``) the two
are dependent and no such instant is taken as commuting, so this finds the rule broken.

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

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from raceproof.sim.choices import SCHEDULE_LABEL, Choice, ChoiceSource
from raceproof.sim.configs import BadInput
from raceproof.sim.footprint_blame import FootprintBug, blame
from raceproof.sim.footprint_claims import (
    StepRecord,
    cancelled_pulls,
    delayable_steps,
    instant_pulls,
    movable_steps,
    process_of,
    unnamed_claims,
)
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


class _Diverged(SleepBlocked):  # passes through ``execute`` like the reduction's own cut
    def __init__(self, position: int, detail: str, ambiguous: bool) -> None:
        super().__init__(detail)
        self.position, self.detail, self.ambiguous = position, detail, ambiguous


class KeyFollowingSource(ChoiceSource):
    """Runs the steps ``targets`` in that order, by key; replays ``model_values``.

    At each schedule draw it picks the earliest step of ``targets`` not yet run
    that is due (whether a step needs a draw at all depends on what else is due,
    which reordering changes). ``snapshot_after``: at the first draw after the
    first that many targets have all run, the kernel's state fingerprint; None:
    that snapshot for every number of targets (``snapshots``), in one run.
    """

    observes_steps = True

    def __init__(
        self,
        targets: Sequence[str],
        model_values: Sequence[int],
        snapshot_after: int | None,
        *,
        run_on: bool = False,
    ) -> None:
        super().__init__()
        self.targets, self.model_values = list(targets), list(model_values)
        # A cut run's steps stop short of its end: once every target has run, both orders
        # run on alike (the first due step by key, model draws 0) to an ending to compare.
        self.run_on = run_on
        self.order = {key: n for n, key in enumerate(self.targets)}
        self.every_point = snapshot_after is None
        self.waiting = set(self.targets[:snapshot_after]) if snapshot_after is not None else set()
        self.snapshots: list[str | None] = []  # every point: [k] once the first k targets ran
        self.run: set[str] = set()
        self.unrun = 0  # the index of the first target not yet run (run only grows)
        self.ran: list[str] = []  # the keys in the order they ran
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
        if world is not None:
            self._snap(world)
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

    def _snap(self, world: Any) -> None:
        if self.every_point:  # targets[:k] have all run exactly when k <= unrun
            if len(self.snapshots) <= self.unrun:
                snapshot = kernel_fingerprint(world, world.state_fingerprint or (lambda: ""))
                self.snapshots += [snapshot] * (self.unrun + 1 - len(self.snapshots))
        elif not self.waiting and not self.snapped:
            self.snapped = True
            self.snapshot = kernel_fingerprint(world, world.state_fingerprint or (lambda: ""))

    def at_point(self, snapshot_after: int) -> KeyFollowingSource:
        """This run as one followed with that ``snapshot_after`` (an every-point run's view)."""
        view = copy.copy(self)
        if snapshot_after < len(self.snapshots):
            view.snapshot = self.snapshots[snapshot_after]
        return view

    def _past_targets(self) -> bool:
        return self.run_on and self.order.keys() <= self.run

    def before_step(self, key: str | None) -> None:
        pass

    def after_step(self, key: str | None, footprint: Footprint) -> None:
        if key is not None:
            if key in self.order and self.unrun < self.order[key]:
                self.out_of_order = True  # it ran before an earlier target, no draw to refuse
            self.run.add(key)
            while self.unrun < len(self.targets) and self.targets[self.unrun] in self.run:
                self.unrun += 1
            self.ran.append(key)
            self.waiting.discard(key)


# One followed run: its source, its outcome, and what went wrong following it (None: nothing).
_Followed = tuple[KeyFollowingSource, RunOutcome | None, str | None]


def _actor(key: str) -> str:
    """The actor's name in a step key (``/leader#0/worker#1@3`` -> ``worker``)."""
    return process_of(key).rsplit("/", 1)[-1].split("#", 1)[0] or key


@dataclass
class FootprintChecker:
    """Per walk: the pairs checked so far and the counts for the report."""

    run: Runner
    checked: int = 0
    unverified: int = 0
    seen: set[tuple[str | None, ...]] = field(default_factory=set)
    _cut: bool = field(default=False, init=False)  # the run checked now was cut short
    # The run checked now, followed once in its own order with a snapshot at every point
    # (``_own_order``); empty until a claim asks for it.
    _own: list[_Followed | None] = field(default_factory=list, init=False)

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
        self._cut, self._own = cut, []
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
            first = self._own_order(keys, model_values, dj + 1)
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
            self._wrong(
                f"footprints are wrong: step {b.key} ({_actor(b.key)}, recorded "
                f"{_show(b.footprint)}) does not commute with step {culprit.key} "
                f"({_actor(culprit.key)}, recorded {_show(culprit.footprint)}): {difference}",
                (first, second),
                (keys, model_values),
                (b.key, culprit.key),
            )
        self._check_delays(steps, keys, at, model_values)
        self._check_instants(steps, keys, at, model_values)
        self._check_cancels(steps, keys, at, model_values)
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
            first = self._own_order(keys, model_values, dj + 1)
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
            self._wrong(
                f"footprints are wrong: step {late.key} ({_actor(late.key)}, recorded "
                f"{_show(late.footprint)}) does not commute with step {culprit.key} "
                f"({_actor(culprit.key)}, recorded {_show(culprit.footprint)}), which ran "
                f"after it: {difference}",
                (first, second),
                (keys, model_values),
                (late.key, culprit.key),
            )

    def _check_instants(
        self,
        steps: list[StepRecord],
        keys: list[str],
        at: dict[int, int],
        model_values: list[int],
    ) -> None:
        """Test the instant shortcut's claims (``instant_pulls``) of one run.

        The walk branches nowhere in an instant it took as commuting, so no other run
        shows another order of it, and two of its steps of different processes may
        never be due together for an adjacent claim to swap. A pulled order that
        cannot be followed, or that holds a step with no key, is counted unverified.
        One the kernel does not allow (the pulled steps, preferred at each draw, still
        run where they ran) is no claim of the walk: checked, with nothing to compare.
        """
        for q, v, order in instant_pulls(steps):
            pulled = [steps[s].key for s in order]
            seen = ("instant", *pulled)
            if seen in self.seen:
                continue
            self.seen.add(seen)
            if None in pulled:
                self.unverified += 1
                continue
            dq, dv = at[q], at[v]
            moved = [*keys[:dq], *(str(key) for key in pulled), *keys[dv + 1 :]]
            first = self._own_order(keys, model_values, dv + 1)
            second = self._follow(moved, model_values, dv + 1)
            if not _both_followed(first, second):
                self.unverified += 1
                continue
            assert first is not None and second is not None
            self.checked += 1
            if _tail_order(first, pulled) == _tail_order(second, pulled):
                # Preferred at every draw of the instant, the pulled steps still ran where
                # they did: the kernel allows no other order (an urgent step, one alone due).
                continue
            difference = self._difference(first, second)
            if difference is None:
                continue
            if first[0].ambiguous or second[0].ambiguous:  # not checked after all
                self.checked, self.unverified = self.checked - 1, self.unverified + 1
                continue
            late = steps[v]
            culprit, difference = self._instant_culprit(
                steps, keys, model_values, first, (q, v, order), difference
            )
            assert late.key is not None and culprit.key is not None
            self._wrong(
                f"footprints are wrong: step {late.key} ({_actor(late.key)}, recorded "
                f"{_show(late.footprint)}) does not commute with step {culprit.key} "
                f"({_actor(culprit.key)}, recorded {_show(culprit.footprint)}), which ran "
                f"before it in an instant the walk took as commuting in every order: "
                f"{difference}",
                (first, second),
                (keys, model_values),
                (late.key, culprit.key),
            )

    def _check_cancels(
        self,
        steps: list[StepRecord],
        keys: list[str],
        at: dict[int, int],
        model_values: list[int],
    ) -> None:
        """Run the orders a cancel removed from an instant the walk took as commuting.

        The cancelled step (``cancelled_pulls``) runs just before the step that
        cancelled it, as it could have: it was due there. Not followed: unverified;
        the kernel running them in the same order anyway: checked, nothing to compare.
        A difference is the kernel's rule broken, never the model's: ``FootprintBug``.
        """
        for x, cancelled in cancelled_pulls(steps):
            canceller = steps[x]
            assert canceller.key is not None
            seen = ("cancelled", canceller.key, cancelled)
            if seen in self.seen:
                continue
            self.seen.add(seen)
            dx = at[x]
            first = self._own_order(keys, model_values, dx + 1)
            second = self._follow([*keys[:dx], cancelled, *keys[dx:]], model_values, dx + 2)
            if not _both_followed(first, second):
                self.unverified += 1
                continue
            assert first is not None and second is not None
            self.checked += 1
            pair = [cancelled, canceller.key]
            if _tail_order(second, pair) != pair:
                continue  # the kernel ran the cancel first even so: no other order
            difference = self._difference(first, second)
            if difference is None:
                continue
            if first[0].ambiguous or second[0].ambiguous:  # not checked after all
                self.checked, self.unverified = self.checked - 1, self.unverified + 1
                continue
            raise FootprintBug(  # the kernel's rule, whatever the model recorded: exit 70
                f"footprints are wrong: step {canceller.key} ({_actor(canceller.key)}, "
                f"recorded {_show(canceller.footprint)}) cancelled the event of step "
                f"{cancelled}, due in the same instant, which the walk took as commuting in "
                f"every order; with {cancelled} first, {difference}. This is raceproof's bug, "
                f"not your model's: a step that cancels an event is dependent with the step it "
                f"would have run (World._disables)"
            )

    def _wrong(
        self,
        said: str,
        runs: tuple[_Followed, _Followed],
        order: tuple[list[str], list[int]],
        pair: tuple[str, str],
    ) -> NoReturn:
        """Report a pair that does not commute: the model's mistake, or raceproof's bug.

        When the runs point at nothing of the model's (an invariant's or a checker's
        reads), ``footprint_blame`` tells whether the missing footprint is a kernel
        primitive's (exit 70, naming the two operations) or may be the model's.
        """
        cause = _cause(*runs)
        if cause == SHARED_UNTRACKED:
            keys, model_values = order
            source = KeyFollowingSource(keys, model_values, len(keys), run_on=self._cut)
            blame(self.run, source, pair, said)
        raise FootprintMismatch(f"{said}; {cause}")

    def _instant_culprit(
        self,
        steps: list[StepRecord],
        keys: list[str],
        model_values: list[int],
        first: _Followed,
        pull: tuple[int, int, list[int]],
        difference: str,
    ) -> tuple[StepRecord, str]:
        """The nearest step before ``v`` that the pulled steps fail to pass, and how."""
        q, v, order = pull
        dq, dv = keys.index(str(steps[q].key)), keys.index(str(steps[v].key))
        pulled_at = set(order[: order.index(v) + 1])
        for k in range(v - 1, q - 1, -1):
            if k in pulled_at:
                continue
            retry = [
                *range(q, k),
                *(s for s in range(k, v + 1) if s in pulled_at),
                *(s for s in range(k, v + 1) if s not in pulled_at),
            ]
            again = self._follow(
                [*keys[:dq], *(str(steps[s].key) for s in retry), *keys[dv + 1 :]],
                model_values,
                dv + 1,
            )
            if again is not None and _both_followed(first, again):
                found = self._difference(first, again)
                if found is not None:
                    return steps[k], found
        return steps[order[len(pulled_at)]], difference  # the first step they passed

    def _culprit(
        self,
        keys: list[str],
        model_values: list[int],
        first: _Followed,
        i: int,
        j: int,
        difference: str,
    ) -> tuple[int, str]:
        """The step between ``i`` and ``j`` that ``j`` fails to commute with.

        ``j`` is moved back one step at a time; the first place where the runs differ names it.
        """
        for k in range(j - 1, i, -1):
            moved = [*keys[:k], keys[j], *keys[k:j], *keys[j + 1 :]]
            again = self._follow(moved, model_values, j + 1)
            if again is None:
                break
            found = self._difference(first, again)
            if found is not None:
                return k, found
        return i, difference

    def _own_order(
        self, keys: list[str], model_values: list[int], snapshot_after: int
    ) -> _Followed | None:
        """The run checked now, followed in its own order, as with that snapshot point.

        One run per checked run: following its own order takes the same steps and
        draws whatever the snapshot point, so it snapshots every point at once.
        """
        if not self._own:
            self._own.append(self._follow(keys, model_values, None))
        own = self._own[0]
        if own is None:
            return None
        source, outcome, error = own
        return source.at_point(snapshot_after), outcome, error

    def _follow(
        self, targets: list[str], model_values: list[int], snapshot_after: int | None
    ) -> _Followed | None:
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
        first: _Followed,
        second: _Followed,
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


def _both_followed(
    first: _Followed | None,
    second: _Followed | None,
) -> bool:
    """Both runs reached an ending (or a cut run's end) through the steps asked, the
    original in its own order (another order preferred at each draw may run as the
    kernel allows: urgent events and a step alone due run without a draw)."""
    return (
        first is not None
        and second is not None
        and first[2] is None
        and second[2] is None
        and not first[0].out_of_order
    )


def _tail_order(run: _Followed, keys: Sequence[str | None]) -> list[str]:
    """The order in which ``run`` ran the steps ``keys``."""
    wanted = set(keys)
    return [key for key in run[0].ran if key in wanted]


def _ended(
    first: _Followed,
    second: _Followed,
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
    first: _Followed,
    second: _Followed,
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
    first: _Followed,
    second: _Followed,
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
    return SHARED_UNTRACKED


SHARED_UNTRACKED = "they share an object no footprint records (track it, or world.touch it)"


def _show(footprint: Footprint) -> str:
    if not footprint:
        return "nothing"
    return ", ".join(f"{'w' if w else 'r'}:{r}" for r, w in sorted(footprint.items()))
