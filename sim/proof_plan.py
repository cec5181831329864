"""Planning a proof: how big it is before it runs, and how it splits across processes.

``estimate`` samples random paths of the choice tree and applies Knuth's
estimator (1975): the product of the branching factors along a uniformly
random path is an unbiased estimate of the number of leaves, i.e. of the
schedules of the full walk. It ignores the deviation cap and the reduction
(which only ever walk fewer), so it is an upper bound on what ``prove`` runs;
with the mean wall time of a sampled run it gives a time the proof should
not exceed on this machine, so a proof that cannot finish in its budget is
told so before it starts.

``split`` cuts the walk into static shards described by data alone (a
choice prefix, the sleep set it starts with, its depth): one run down the
FIFO path, then one shard for every branch left on that path, each with the
footprints of its earlier siblings learned by one probe run per branch. A shard
learns nothing from another's runs, so shards are walked with every awake option
branched at once (``prove(..., defer=False)``), the walk they add up to. The
shard that branches at the first draw holds nearly the whole tree, so this
plan does not balance; ``prove_parallel`` walks a proof in balanced units
instead (``raceproof.sim.proof_units``), whose merged report is the
sequential walk's for any number of workers.

A first run cut by the reduction is a ``KernelError`` (exit 70); bad
``samples``/``jobs`` are ``ValueError`` errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from raceproof.sim.choices import ChoiceSource, SplitMix64
from raceproof.sim.errors import KernelError
from raceproof.sim.exhaustive import ProofReport, ProofVerdict, WalkOptions, count_undecided
from raceproof.sim.explore import Budget
from raceproof.sim.outcome import Runner
from raceproof.sim.proof_units import prove_balanced
from raceproof.sim.reduction import (
    Footprint,
    Node,
    Shard,
    SleepSetSource,
    branch_options,
)
from raceproof.sim.verdicts import FINDINGS, Verdict
from raceproof.sim.world import SleepBlocked


# -- the size of a proof ------------------------------------------------------------
class _UniformSource(ChoiceSource):
    """Uniform draws (capped at ``max_branch`` options), remembering each draw's width."""

    def __init__(self, seed: int, max_branch: int | None) -> None:
        super().__init__()
        self.rng = SplitMix64(seed)
        self.max_branch = max_branch
        self.widths: list[int] = []

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        width = n if self.max_branch is None else min(n, self.max_branch)
        self.widths.append(width)
        return self.rng.below(width)


@dataclass
class Estimate:
    schedules: float  # Knuth's estimate of the full walk's schedules (an upper bound)
    samples: int
    seconds_per_run: float
    depth_mean: float

    @property
    def overflows(self) -> bool:
        """The estimate is past a float's range: a product of the draws' widths over 1.8e308."""
        return not math.isfinite(self.schedules)

    @property
    def seconds(self) -> float:
        return math.inf if self.overflows else self.schedules * self.seconds_per_run

    def described(self) -> str:
        """The estimate as text, labelled an estimate (``about 1,234 schedules``)."""
        if self.overflows:
            return "an estimated more than 1.8e308 schedules (the estimate overflows a float)"
        return f"about {self.schedules:,.0f} schedules"

    def described_seconds(self) -> str:
        """The full walk's time as text (``~1,234s``), labelled as past counting if it is."""
        return (
            "beyond counting (the estimate overflows)"
            if self.overflows
            else f"~{self.seconds:,.0f}s"
        )

    def to_json(self) -> dict[str, Any]:
        """The figures, rounded; ``null`` for an estimate that overflows (JSON has no infinity)."""
        return {
            "schedules_estimate": None if self.overflows else round(self.schedules),
            "estimate_overflows": self.overflows,
            "samples": self.samples,
            "seconds_per_run": round(self.seconds_per_run, 6),
            "seconds_estimate": None if self.overflows else round(self.seconds, 1),
            "draws_per_run_mean": round(self.depth_mean, 1),
        }


def estimate(
    run: Runner,
    *,
    samples: int = 30,
    max_branch: int | None = None,
    seed: int = 0,
    clock: Callable[[], float] | None = None,
) -> Estimate:
    """Knuth's estimate of the number of schedules, and the mean seconds per run."""
    if samples < 1:
        raise ValueError(f"estimate: samples must be >= 1, got {samples}")
    products: list[float] = []
    depths: list[int] = []
    started = clock() if clock else 0.0
    for index in range(samples):
        source = _UniformSource(seed * 1_000_003 + index, max_branch)
        run(source)
        product = 1.0
        for width in source.widths:
            product *= width
        products.append(product)
        depths.append(len(source.widths))
    elapsed = (clock() - started) if clock else 0.0
    return Estimate(
        schedules=mean(products),
        samples=samples,
        seconds_per_run=elapsed / samples,
        depth_mean=mean(depths),
    )


# -- the split -----------------------------------------------------------------------
def split(
    run: Runner,
    *,
    reduction: bool = True,
    max_deviations: int | None = None,
    max_branch: int | None = None,
) -> tuple[list[Shard], ProofReport]:
    """The shards of the walk below its first run, and the report of that first run.

    Shards are listed in the order the sequential walk would take them.
    """
    source = SleepSetSource((), None, reduce=reduction)
    pruned: dict[str, int] = {}
    try:
        outcome = run(source)
    except SleepBlocked:  # cannot happen on the first run: nothing sleeps yet
        raise KernelError("the first run of a walk was cut by the reduction") from None
    recorded = tuple(source.values)
    nodes: list[Node] = []
    skipped = 0
    for position, record in enumerate(source.draws):
        node = Node(position, record, 0)
        node.pending, asleep = branch_options(record, 0, max_branch, max_deviations, pruned)
        skipped += asleep
        nodes.append(node)
    first = ProofReport(
        verdict=Verdict.OK,
        complete=True,
        schedules=0,
        runs=1,
        max_deviations_seen=0,
        pruned=pruned,
        reduction=reduction,
        skipped_equivalent=skipped,
    )
    if outcome.status in FINDINGS:  # judged, as prove counts it
        first.verdict, first.found, first.schedules = outcome.status, outcome, 1
        first.found_chain = ()  # the FIFO run: first in walk order
        first.probes = {name: 1 for name in outcome.probes}
    elif outcome.bound is not None:
        pruned[outcome.bound] = 1
    elif outcome.status == Verdict.INCONCLUSIVE:  # a checker said unknown: undecided, not judged
        count_undecided(pruned, outcome)
        first.undecided = outcome
    else:
        first.schedules = 1
        first.probes = {name: 1 for name in outcome.probes}
    shards: list[Shard] = []
    for node in nodes:  # in the order the walk queues them
        explored: dict[str, Footprint] = {}
        keys = node.record.keys
        if reduction and keys is not None and keys[node.record.value] is not None:
            explored[keys[node.record.value]] = source.remembered_footprint(node.position)  # type: ignore[index]
        for value in node.pending:
            prefix = (*recorded[: node.position], value)
            sleep: dict[str, Footprint] = {}
            if reduction:
                sleep = dict(node.record.sleep)
                if keys is not None:
                    sleep.update({k: fp for k, fp in explored.items() if fp is not None})
            shards.append(Shard(prefix, Shard.freeze(sleep), 1))
            if keys is not None and reduction and keys[value] is not None:
                explored[keys[value]] = _probe(run, prefix)  # type: ignore[index]
    return shards, first


def _probe(run: Runner, prefix: tuple[int, ...]) -> Footprint:
    """The footprint of the step the last draw of ``prefix`` chose (everything if it drew)."""
    position = len(prefix) - 1
    source = SleepSetSource(prefix, None, reduce=False)
    run(source)  # nothing sleeps in the full walk's source, so nothing cuts this run
    return source.remembered_footprint(position)


def merge(first: ProofReport, reports: Sequence[ProofReport]) -> ProofReport:
    """Add shard reports up in shard order: the first violation in walk order wins.

    ``first`` is the split's own run (its counts of the walk's first path); the
    counts only a walk makes (sleep-blocked runs, the state cache's) come from
    the shards.
    """
    everything = [first, *reports]
    pruned: dict[str, int] = {}
    for report in everything:
        for bound, count in report.pruned.items():
            pruned[bound] = pruned.get(bound, 0) + count
    # The first finding in walk order: fewest deviations, then the earliest chain of them
    # (a shard walked breadth-first finds its own first; a later shard's may come first).
    finders = [report for report in everything if report.found is not None]
    winner = min(finders, key=finding_order) if finders else None
    verdict: ProofVerdict = Verdict.INCONCLUSIVE if pruned else Verdict.OK
    if winner is not None:
        verdict = winner.verdict
    probes: dict[str, int] = {}
    for report in everything:
        for name, count in report.probes.items():
            probes[name] = probes.get(name, 0) + count
    return ProofReport(
        verdict,
        verdict == Verdict.OK,
        schedules=sum(report.schedules for report in everything),
        runs=sum(report.runs for report in everything),
        max_deviations_seen=max(report.max_deviations_seen for report in everything),
        pruned=pruned,
        found=None if winner is None else winner.found,
        shrunk=None if winner is None else winner.shrunk,
        frontier_left=sum(report.frontier_left for report in reports),
        reduction=first.reduction,
        skipped_equivalent=sum(report.skipped_equivalent for report in everything),
        sleep_blocked=sum(report.sleep_blocked for report in reports),
        shards=len(reports),
        state_cache_cuts=sum(report.state_cache_cuts for report in reports),
        states_seen=sum(report.states_seen for report in reports),
        symmetric_merged=sum(report.symmetric_merged for report in reports),
        state_cache_checked=sum(report.state_cache_checked for report in reports),
        state_cache_off=next(
            (report.state_cache_off for report in reports if report.state_cache_off), None
        ),
        footprints_checked=None
        if all(report.footprints_checked is None for report in everything)
        else sum(report.footprints_checked or 0 for report in everything),
        footprints_unverified=sum(report.footprints_unverified for report in everything),
        probes=dict(sorted(probes.items())),
        undecided=next((r.undecided for r in everything if r.undecided is not None), None),
        found_chain=None if winner is None else winner.found_chain,
    )


def finding_order(report: ProofReport) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Where a report's finding lies in the sequential walk's order (breadth-first, as a key)."""
    chain = tuple(tuple(step) for step in report.found_chain or ())
    return (len(chain), chain)  # type: ignore[return-value]


# -- walking a proof on worker processes ---------------------------------------------
def prove_parallel(
    run: Runner,
    jobs: int,
    *,
    budget: Budget,
    reduction: bool = True,
    max_deviations: int | None = None,
    max_branch: int | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    state_cache: bool = False,
    state_cache_check: bool = False,
    check_footprints: bool = False,
    worker_setup: Callable[[], None] | None = None,
) -> ProofReport:
    """``prove`` in balanced units over ``jobs`` worker processes (``raceproof.sim.proof_units``).

    The budget of runs and seconds is the whole proof's, shared by its units. With
    the state cache each unit has its own (its cuts depend on the units, never its
    soundness). Each worker calls ``worker_setup`` first: the command line passes
    one that asks the kernel to kill the worker when the command dies
    (``raceproof.runs.processes``), which this kernel module cannot import.
    """
    if jobs < 1:
        raise ValueError(f"prove_parallel: jobs must be >= 1, got {jobs}")
    options = WalkOptions(
        max_deviations=max_deviations,
        max_branch=max_branch,
        reduction=reduction,
        state_cache=state_cache,
        state_cache_check=state_cache_check,
        check_footprints=check_footprints,
    )
    return prove_balanced(
        run, jobs, budget=budget, options=options, progress=progress, worker_setup=worker_setup
    )
