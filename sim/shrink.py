"""Shrinking a violating choice sequence toward "FIFO except for a few deviations".

Hypothesis shrinks what it finds itself; the random and PCT strategies find a
violation as a raw choice sequence, and this reducer brings it down the same
way: fewer deviations first, then a shorter history, then smaller values. A
candidate is kept only if it still violates the *same* checker (another may
fail too), so shrinking never slips from one bug to another; an error (the
model's own exception) shrinks to the same exception type raised at the same
place (``ModelError.same_as``). Candidates are replayed as prefixes
(draws past the end, or out of range, become 0) and the run's own recording is
what is kept, so the result always replays exactly. A search runs without
naming the actors of its deviations (``ChoiceSource.names_deviations``); a
result that still lacks them is replayed once more, with them, and that run
is counted. Before shrinking, a search replays what it found once, strictly, on
its own choices (``same_again``, as madsim and FoundationDB re-run a failure): a
model that goes otherwise is not deterministic (``Nondeterministic``, the user's
mistake), and no shrinking of it could be trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from raceproof.sim.choices import (
    ChoiceSource,
    KeyedReplaySource,
    ReplayMisaligned,
    ReplaySource,
    deviations,
    keyed_deviations,
)
from raceproof.sim.enumeration import Walk
from raceproof.sim.errors import Nondeterministic
from raceproof.sim.history import first_divergence
from raceproof.sim.outcome import Runner, RunOutcome
from raceproof.sim.verdicts import CheckStatus


def shrink_key(outcome: RunOutcome) -> tuple[int, int, int, int]:
    values = outcome.values
    return (deviations(values), len(outcome.history), sum(values), len(values))


def violates(outcome: RunOutcome, checker: str) -> bool:
    """The run violates ``checker`` (whether or not another checker failed first)."""
    return any(v.checker == checker and v.status == CheckStatus.VIOLATED for v in outcome.verdicts)


def same_finding(found: RunOutcome) -> Callable[[RunOutcome], bool]:
    """What a candidate must still show: ``found``'s error at its place, or its checker's violation."""
    error = found.error
    if error is not None:
        return lambda candidate: error.same_as(candidate.error)
    violation = found.violation
    if violation is None:
        raise ValueError("only a violating or erring run can be shrunk")
    target = violation.checker
    return lambda candidate: candidate.error is None and violates(candidate, target)


@dataclass
class ShrinkResult:
    outcome: RunOutcome
    runs: int  # the passes' and the final walk's
    exhausted: bool  # a cap stopped it before a fixed point (max_runs or max_walk_runs)


class _Attempts:
    """The shrink's state: the best run so far and the runs spent; calling it tries ``values``."""

    def __init__(self, run: Runner, outcome: RunOutcome, max_runs: int) -> None:
        self.run, self.max_runs = run, max_runs
        self.keeps = same_finding(outcome)
        self.best = outcome
        self.runs = 0

    def __call__(self, values: list[int] | dict[tuple[str, int], int]) -> bool:
        """Run ``values``; keep the run if it is the same finding and smaller. True if kept."""
        if self.runs >= self.max_runs:
            return False
        self.runs += 1
        source: ChoiceSource = (
            KeyedReplaySource(values)
            if isinstance(values, dict)
            else ReplaySource(values, strict=False)
        )
        candidate = self.run(source)
        if self.keeps(candidate) and shrink_key(candidate) < shrink_key(self.best):
            self.best = candidate
            return True
        return False


def same_again(run: Runner, found: RunOutcome) -> RunOutcome:
    """``found``'s choices run once more, strictly; ``Nondeterministic`` if the run goes otherwise."""
    source = ReplaySource(found.choices, strict=True)
    try:
        again = run(source)
        source.finish()
    except ReplayMisaligned as exc:
        # A reduced walk's run skips the draws of commuting instants: its values replayed
        # as a prefix (as the shrinker replays) must give its history, or it is nondeterminism.
        again = run(ReplaySource(found.values, strict=False))
        if again.trace_hash == found.trace_hash:
            return again
        raise exc.as_nondeterminism() from None
    if again.trace_hash != found.trace_hash:
        raise histories_differ(found, again)
    return again


def histories_differ(first: RunOutcome, second: RunOutcome) -> Nondeterministic:
    """Where two runs on the same choices parted: the first op that differs, and its actor."""
    index = first_divergence(first.history, second.history)
    if index is None:  # the same history, yet another hash: nothing more to point at
        return Nondeterministic("the same history hashed differently")
    ops = [h.ops[index] for h in (first.history, second.history) if index < len(h)]
    said = " / now ".join(op.describe() for op in ops) if len(ops) == 2 else "one run ended"
    return Nondeterministic(f"op #{index}: {said}", actor=ops[0].actor if ops else None)


def shrink_found(run: Runner, found: RunOutcome) -> ShrinkResult:
    """What a search found, re-run once (``same_again``: is the model deterministic?), shrunk."""
    same_again(run, found)
    result = shrink(run, found)
    result.runs += 1  # the re-run is a run of the shrink's: every run is counted
    return result


def shrink(
    run: Runner, outcome: RunOutcome, *, max_runs: int = 2000, max_walk_runs: int = 5000
) -> ShrinkResult:
    attempt = _Attempts(run, outcome, max_runs)
    _few_deviations(attempt)
    progress = True
    while progress and attempt.runs < max_runs:
        progress = _keep_first(attempt)
        if progress:
            continue
        progress = _drop_each(attempt)
        progress = _lower_each(attempt) or progress
        # 4. with few deviations left, try moving one onto another draw: a different
        #    pair of deviations may tell the same story in a shorter timeline.
        if not progress and deviations(attempt.best.values) == 3:
            progress = _swap_one(attempt.best, attempt)
    passes_capped = attempt.runs >= max_runs
    best, walked, walk_capped = _walk_two_deviations(run, attempt, max_walk_runs)
    # Before a fixed point: the passes ran out of runs, or the walk stopped with schedules left.
    exhausted = passes_capped or walk_capped
    if not best.actors_named:  # still the search's own run: replay it with names
        named = run(ReplaySource(best.values))
        if named.trace_hash != best.trace_hash:
            raise histories_differ(best, named)
        best, walked = named, walked + 1
    return ShrinkResult(best, attempt.runs + walked, exhausted)


def _few_deviations(attempt: _Attempts) -> None:
    """0. Races usually need one or two deviations: try keeping only those."""
    initial = sorted(keyed_deviations(attempt.best.choices).items())
    if len(initial) > 2:
        subsets = [[a] for a in initial] + [
            [a, b] for i, a in enumerate(initial) for b in initial[i + 1 :]
        ]
        for subset in subsets:
            if attempt(dict(subset)):
                break


def _keep_first(attempt: _Attempts) -> bool:
    """1. Keep only the first k deviations (cheap big steps)."""
    values = attempt.best.values
    nonzero = [i for i, v in enumerate(values) if v]
    for keep in range(len(nonzero)):
        cut = list(values)
        for i in nonzero[keep:]:
            cut[i] = 0
        if attempt(cut):
            return True
    return False


def _drop_each(attempt: _Attempts) -> bool:
    """2. Drop one deviation at a time, last first: at its position, and by
    (label, occurrence) so the others stay on the draws they meant."""
    progress = False
    nonzero = [i for i, v in enumerate(attempt.best.values) if v]
    for i in reversed(nonzero):
        best = attempt.best
        if i < len(best.values) and best.values[i]:
            cut = list(best.values)
            cut[i] = 0
            if attempt(cut):
                progress = True
                continue
            keyed = keyed_deviations(best.choices)
            label = best.choices[i].label
            occurrence = sum(1 for c in best.choices[:i] if c.label == label)
            if keyed.pop((label, occurrence), None) is not None and attempt(keyed):
                progress = True
    return progress


def _lower_each(attempt: _Attempts) -> bool:
    """3. Lower what is left."""
    progress = False
    for i, v in enumerate(attempt.best.values):
        for lower in sorted({1, v // 2, v - 1}):
            if 0 < lower < v and i < len(attempt.best.values) and attempt.best.values[i] == v:
                cut = list(attempt.best.values)
                cut[i] = lower
                if attempt(cut):
                    progress = True
                    break
    return progress


def _walk_two_deviations(
    run: Runner, attempt: _Attempts, max_walk_runs: int
) -> tuple[RunOutcome, int, bool]:
    """5. Walk every schedule with at most two deviations (races rarely need more),
    keeping the shortest violation of the same checker. From two or fewer this is
    exact; from more, it finds a smaller counterexample the passes missed.

    The best run, the runs walked, and whether the cap stopped the walk early.
    """
    best = attempt.best
    walk = Walk(run, max_deviations=min(deviations(best.values), 2), max_branch=None, on_prune=None)
    walked = 0
    for candidate, _ in walk:
        walked += 1
        if attempt.keeps(candidate) and shrink_key(candidate) < shrink_key(best):
            best = candidate
        if walked >= max_walk_runs:
            break
    return best, walked, walked >= max_walk_runs and bool(walk.frontier)


def _swap_one(best: RunOutcome, attempt: Callable[[dict[tuple[str, int], int]], bool]) -> bool:
    keyed = keyed_deviations(best.choices)
    seen: dict[str, int] = {}
    targets: list[tuple[tuple[str, int], int]] = []
    for choice in best.choices:
        occurrence = seen.get(choice.label, 0)
        seen[choice.label] = occurrence + 1
        if (choice.label, occurrence) not in keyed:
            targets.extend(((choice.label, occurrence), v) for v in range(1, choice.n))
    for moved in sorted(keyed):
        for target, value in targets:
            candidate = {k: v for k, v in keyed.items() if k != moved}
            candidate[target] = value
            if attempt(candidate):
                return True
    return False
