"""Bounded exhaustive exploration: every schedule of a configuration, or an honest no.

The choice tree is walked breadth-first by number of deviations from choice 0:
first the all-FIFO run, then every run with one deviation, then two, and so
on. Each run is a distinct schedule (a child is its parent's recording cut at
a position past the parent's own prefix, with one more nonzero value), so no
schedule runs twice, and a buggy variant's violation is found with the fewest
deviations it needs.

A proof is ``complete`` only if nothing pruned the walk: no deviation cap, no
cap on option values, no run stopped at a step or time bound, no budget spent
with schedules left. Everything that pruned is named with how much it cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raceproof.sim.enumeration import Walk
from raceproof.sim.explore import Budget, Progress
from raceproof.sim.shrink import shrink
from raceproof.sim.world import Runner, RunOutcome

ProofVerdict = Literal["ok", "violated", "inconclusive"]


@dataclass
class ProofReport:
    verdict: ProofVerdict
    complete: bool
    schedules: int  # distinct schedules run to their end
    runs: int  # every run, including those stopped at a bound
    max_deviations_seen: int
    pruned: dict[str, int] = field(default_factory=dict)  # bound -> branches cut
    found: RunOutcome | None = None
    shrunk: RunOutcome | None = None
    frontier_left: int = 0


def prove(
    run: Runner,
    *,
    budget: Budget,
    max_deviations: int | None = None,
    max_branch: int | None = None,
    progress: Progress | None = None,
) -> ProofReport:
    """Walk every schedule of ``run`` (within the named caps) and judge each one."""
    budget.start()
    pruned: dict[str, int] = {}
    schedules = runs = deepest = 0

    def cut(bound: str, count: int) -> None:
        pruned[bound] = pruned.get(bound, 0) + count

    walk = Walk(run, max_deviations, max_branch, cut)
    for outcome, depth in walk:
        runs += 1
        deepest = max(deepest, depth)
        if outcome.status == "violated":
            result = shrink(run, outcome)
            return ProofReport(
                "violated", False, schedules + 1, runs, deepest, pruned, outcome, result.outcome,
                len(walk.frontier),
            )  # fmt: skip
        if outcome.bound is not None:
            cut(outcome.bound, 1)
        else:
            schedules += 1
        if progress:
            progress(
                {
                    "schedules": schedules,
                    "runs": runs,
                    "frontier": len(walk.frontier),
                    "depth": depth,
                }
            )
        if walk.frontier and (runs >= budget.examples or budget.out_of_time()):
            cut("budget", len(walk.frontier))
            break
    complete = not pruned
    verdict: ProofVerdict = "ok" if complete else "inconclusive"
    return ProofReport(
        verdict, complete, schedules, runs, deepest, pruned, frontier_left=len(walk.frontier)
    )
