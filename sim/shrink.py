"""Shrinking a violating choice sequence toward "FIFO except for a few deviations".

Hypothesis shrinks what it finds itself; the random and PCT strategies find a
violation as a raw choice sequence, and this reducer brings it down the same
way: fewer deviations first, then a shorter history, then smaller values. A
candidate is kept only if it still violates the *same* checker, so shrinking
never slips from one bug to another. Candidates are replayed as prefixes
(draws past the end, or out of range, become 0) and the run's own recording is
what is kept, so the result always replays exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.choices import ReplaySource, deviations
from sim.world import Runner, RunOutcome


def shrink_key(outcome: RunOutcome) -> tuple[int, int, int, int]:
    values = outcome.values
    return (deviations(values), len(outcome.history), sum(values), len(values))


@dataclass
class ShrinkResult:
    outcome: RunOutcome
    runs: int
    exhausted: bool  # the run cap stopped it before a fixed point


def shrink(run: Runner, outcome: RunOutcome, *, max_runs: int = 2000) -> ShrinkResult:
    violation = outcome.violation
    assert violation is not None, "only a violating run can be shrunk"
    target = violation.checker
    best = outcome
    runs = 0

    def attempt(values: list[int]) -> bool:
        nonlocal best, runs
        if runs >= max_runs:
            return False
        runs += 1
        candidate = run(ReplaySource(values, strict=False))
        found = candidate.violation
        if (
            found is not None
            and found.checker == target
            and shrink_key(candidate) < shrink_key(best)
        ):
            best = candidate
            return True
        return False

    progress = True
    while progress and runs < max_runs:
        progress = False
        values = best.values
        nonzero = [i for i, v in enumerate(values) if v]
        # 1. keep only the first k deviations (cheap big steps).
        for keep in range(len(nonzero)):
            cut = list(values)
            for i in nonzero[keep:]:
                cut[i] = 0
            if attempt(cut):
                progress = True
                break
        if progress:
            continue
        # 2. drop one deviation at a time, last first.
        for i in reversed(nonzero):
            if i < len(best.values) and best.values[i]:
                cut = list(best.values)
                cut[i] = 0
                if attempt(cut):
                    progress = True
        # 3. lower what is left.
        for i, v in enumerate(best.values):
            for lower in sorted({1, v // 2, v - 1}):
                if 0 < lower < v and i < len(best.values) and best.values[i] == v:
                    cut = list(best.values)
                    cut[i] = lower
                    if attempt(cut):
                        progress = True
                        break
    return ShrinkResult(best, runs, runs >= max_runs)
