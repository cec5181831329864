"""The gate's checks cut below the check: a search in fixed parts, the same on any ``-j``.

Why: ``check -j 16`` stopped at its longest check (a 2,000-example Hypothesis
search was 13.7 s of a 20.8 s gate) because a check was never split. Here a
search of N examples is cut into ``ceil(N / PART_EXAMPLES)`` parts, a number
that depends on N alone, never on ``-j``, and the parts are merged in order
into one check, so the verdict and the counts of every check are the same
for any ``-j``.

What an example count means when split: ``ok@2000`` is still 2,000 examples.

- random, PCT, swarm: example i draws from its own seed, ``derive_seed(seed,
  i)``, wherever it runs, so the parts are exactly the unsplit search's
  examples. The merge takes the parts in order up to the first that found
  something: its finding is the unsplit search's first (same example, same
  count ``i + 1``, shrunk the same), and the examples, undecided runs and
  probe counts are those of the examples before it.
- Hypothesis: a search already runs as independent seeded runs of
  ``HYPOTHESIS_CHUNK`` examples (seed ``derive_seed(seed, chunk)``); a part is
  ``PART_EXAMPLES // HYPOTHESIS_CHUNK`` of those runs, merged the same way.
  It is the unsplit search as long as each run generates all its examples
  (Hypothesis stops a run early only when it runs out of distinct inputs).
- A profile with a wall budget (``dev``) is not split: its parts would each get
  the whole budget.

A proof is one part here, walked where it lands (``prove``'s own split is
``raceproof.sim.proof_units``). A search's finding is shrunk in its part's
worker and its counterexample saved by the merge, so only the check's own
finding is written.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from raceproof.gate import expectations as gate
from raceproof.scenarios.catalogue import Scenario, get
from raceproof.sim import Budget, explore
from raceproof.sim.explore import HYPOTHESIS_CHUNK, SearchReport, Undecided, _no_violation
from raceproof.sim.verdicts import FINDINGS

# Examples of one part of a search: a multiple of HYPOTHESIS_CHUNK, so that a part is
# whole seeded Hypothesis runs.
PART_EXAMPLES = 2 * HYPOTHESIS_CHUNK


@dataclass(frozen=True)
class Part:
    """One part of one check: which examples of which search, or a whole proof."""

    scenario: str
    variant: str
    kind: str  # a strategy, or "prove"
    seed: int = 0  # one seed for every part of a search
    start: int = 0  # its first example's index in the search
    examples: int = 0  # how many
    index: int = 0
    parts: int = 1


@dataclass
class PartResult:
    part: Part
    seconds: float
    cpu_seconds: float = 0.0  # the worker's CPU time for it (the plan figure's unit of work)
    search: SearchReport | None = None  # a search's part
    check: gate.CheckResult | None = None  # a proof: the whole check


def parts_for(
    scenarios: list[Scenario], profile: gate.Profile, examples: int | None = None
) -> list[Part]:
    """Every check of ``gate.jobs_for``, each search cut into its fixed parts, in check order."""
    parts: list[Part] = []
    for job in gate.jobs_for(scenarios, profile):
        if job.kind == "prove":
            parts.append(Part(job.scenario, job.variant, "prove"))
            continue
        scenario = get(job.scenario)
        count = examples or max(1, round(scenario.default_examples * profile.examples_scale))
        seed = 0 if profile.derandomize else gate._seed(profile)
        size = count if profile.wall_budget else PART_EXAMPLES
        starts = list(range(0, count, size))
        parts += [
            Part(
                scenario=job.scenario,
                variant=job.variant,
                kind=job.kind,
                seed=seed,
                start=start,
                examples=min(size, count - start),
                index=index,
                parts=len(starts),
            )
            for index, start in enumerate(starts)
        ]
    return parts


def run_part(part: Part, profile: gate.Profile, out_dir: Path | None) -> PartResult:
    """Run one part (in a worker of ``check -j``, or here)."""
    started, cpu = time.monotonic(), time.process_time()
    if part.kind == "prove":
        check = gate.run_prove(part.scenario, part.variant, profile, out_dir=out_dir)
        return PartResult(part, time.monotonic() - started, time.process_time() - cpu, check=check)
    scenario = get(part.scenario)
    budget = Budget(part.examples)
    if profile.wall_budget:
        budget = Budget(part.examples, scenario.default_budget_s, time.monotonic)
    run = scenario.runner(part.variant, scenario.config)
    report = explore(run, part.kind, part.seed, budget, start=part.start)
    return PartResult(part, time.monotonic() - started, time.process_time() - cpu, search=report)


def merge_search(reports: list[SearchReport]) -> SearchReport:
    """A search's parts, in order, as the one search they cut: up to its first finding."""
    taken: list[SearchReport] = []
    for report in reports:
        taken.append(report)
        if report.verdict in FINDINGS or report.stopped_by == "seconds":
            break
    undecided = Undecided()
    probes: dict[str, int] = {}
    for report in taken:
        undecided.runs += report.undecided.runs
        for bound, count in report.undecided.bounds.items():
            undecided.bounds[bound] = undecided.bounds.get(bound, 0) + count
        for name, count in report.undecided.checkers.items():
            undecided.checkers[name] = undecided.checkers.get(name, 0) + count
        for name, count in report.probes.items():
            probes[name] = probes.get(name, 0) + count
    examples = sum(report.examples for report in taken)
    last = taken[-1]
    if last.verdict in FINDINGS or last.stopped_by == "seconds":
        merged = replace(last, examples=examples)
    else:
        merged = _no_violation(last.strategy, examples, undecided)
    merged.inconclusive_runs = undecided.runs
    merged.undecided_by = dict(undecided.checkers)
    merged.undecided = undecided
    merged.probes = dict(sorted(probes.items()))
    return merged


def results_of(
    done: list[PartResult], profile: gate.Profile, out_dir: Path | None
) -> list[gate.CheckResult]:
    """The checks whose every part is done, merged, in check order."""
    groups: dict[tuple[str, str, str], list[PartResult]] = {}
    for result in done:
        key = (result.part.scenario, result.part.variant, result.part.kind)
        groups.setdefault(key, []).append(result)
    checks: list[gate.CheckResult] = []
    for (scenario, variant, _kind), results in groups.items():
        results.sort(key=lambda r: r.part.index)
        if len(results) != results[0].part.parts:
            continue  # interrupted before every part ran: not a check
        seconds = sum(r.seconds for r in results)
        if results[0].check is not None:  # a proof: one part, its whole check
            checks.append(results[0].check)
            continue
        search = merge_search([r.search for r in results if r.search is not None])
        checks.append(
            gate.search_check(
                get(scenario),
                variant,
                search,
                seed=results[0].part.seed,
                seconds=seconds,
                out_dir=out_dir,
            )
        )
    return checks


def plan_figure(done: list[PartResult], workers: int = 16) -> dict[str, Any]:
    """The speedup the check's plan allows on ``workers``: its parts' CPU seconds scheduled
    greedily in check order (as the pool takes them) against their sum; the longest part."""
    free = [0.0] * workers
    for result in done:  # in check order
        heapq.heappush(free, heapq.heappop(free) + result.cpu_seconds)
    total = sum(r.cpu_seconds for r in done)
    makespan = max(free) if done else 0.0
    longest = max(done, key=lambda r: r.cpu_seconds) if done else None
    return {
        "parts": len(done),
        "cpu_s": round(total, 2),
        "makespan_s": round(makespan, 2),
        "workers": workers,
        "speedup_allowed": round(total / max(makespan, 1e-9), 2),
        "longest_part": None
        if longest is None
        else {
            "check": f"{longest.part.scenario} / {longest.part.variant} / {longest.part.kind}",
            "part": f"{longest.part.index + 1}/{longest.part.parts}",
            "cpu_s": round(longest.cpu_seconds, 2),
        },
    }
