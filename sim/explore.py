"""Searching for a violation: random, PCT and Hypothesis strategies under a budget.

Each strategy feeds a ``Runner`` (choice source -> run outcome) with sources
of its kind until a run violates a checker or the budget is spent, then
shrinks what it found. The kernel has no wall clock: a caller that wants a
time budget passes its own ``clock``. A budget of seconds that runs out
before the requested examples were run is *inconclusive*, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from raceproof.sim.choices import (
    SCHEDULE_LABEL,
    ChoiceSource,
    HypothesisSource,
    PCTSource,
    RandomSource,
    ReplaySource,
    SwarmSource,
    derive_seed,
)
from raceproof.sim.outcome import Runner, RunOutcome
from raceproof.sim.shrink import shrink_found
from raceproof.sim.verdicts import FINDINGS, Verdict

SourceT = TypeVar("SourceT", bound=ChoiceSource)

STRATEGIES = ("random", "hypothesis", "pct")  # the gate's strategies
# Every strategy a search may name; ``swarm`` (random over a random subset of the draw
# kinds, see SwarmSource) is not in the gate until it is measured no worse there.
SEARCH_STRATEGIES = (*STRATEGIES, "swarm")
Progress = Callable[[dict[str, Any]], None]
# Examples of one search at most: the cap of every command that takes --examples and of
# the pytest fixture's ``examples`` (a count beyond it is refused, never run for ever).
MAX_EXAMPLES = 10**9
HYPOTHESIS_CHUNK = 100  # examples of one seeded Hypothesis run within a search
HYPOTHESIS_TOP_UPS = 8  # runs a chunk may take to generate its examples


@dataclass
class Budget:
    """How much a search may do: examples, and wall seconds measured by ``clock``.

    The kernel reads no clock of its own, so ``seconds`` without ``clock`` is
    an error rather than a limit silently ignored.
    """

    examples: int = 10_000
    seconds: float | None = None
    clock: Callable[[], float] | None = None
    started: float = 0.0

    def __post_init__(self) -> None:
        if self.seconds is not None and self.clock is None:
            raise ValueError(
                f"Budget(seconds={self.seconds}) needs a clock (e.g. clock=time.monotonic): "
                "the kernel reads no clock of its own"
            )

    def start(self) -> None:
        self.started = self.clock() if self.clock else 0.0

    def elapsed(self) -> float:
        return (self.clock() - self.started) if self.clock else 0.0

    def out_of_time(self) -> bool:
        return (
            self.seconds is not None and self.clock is not None and self.elapsed() >= self.seconds
        )


@dataclass
class Undecided:
    """A search's runs that ended neither held nor with a finding, and why.

    A run is undecided when it stopped at a bound (``bounds``: bound -> runs)
    or when a checker said ``unknown`` (``checkers``: checker -> runs); either
    makes the search ``inconclusive``, never ``ok``, and its notes say which.
    """

    runs: int = 0
    bounds: dict[str, int] = field(default_factory=dict)
    checkers: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: RunOutcome) -> None:
        if outcome.status != Verdict.INCONCLUSIVE:
            return
        self.runs += 1
        if outcome.bound is not None:
            self.bounds[outcome.bound] = self.bounds.get(outcome.bound, 0) + 1
            return
        for name in outcome.undecided_by:
            self.checkers[name] = self.checkers.get(name, 0) + 1

    def notes(self, bounds: bool = True) -> list[str]:
        """What made runs undecided: a bound (``bounds``), and each checker that said unknown."""
        bounded = sum(self.bounds.values())
        notes = [f"{bounded} runs hit a bound before finishing"] if bounds and bounded else []
        return notes + [
            f"{count} runs undecided by {name} (the checker said unknown: its history cannot tell)"
            for name, count in sorted(self.checkers.items())
        ]


@dataclass
class SearchReport:
    strategy: str
    verdict: Verdict
    examples: int
    inconclusive_runs: int = 0
    stopped_by: str | None = None
    found: RunOutcome | None = None
    shrunk: RunOutcome | None = None
    shrink_runs: int = 0
    notes: list[str] = field(default_factory=list)
    # probe -> examples that reached it (the search's own examples, not shrinking's runs)
    probes: dict[str, int] = field(default_factory=dict)
    undecided_by: dict[str, int] = field(default_factory=dict)  # checker -> runs it said unknown
    undecided: Undecided = field(default_factory=Undecided)  # what left runs undecided, and why


def searching(source: SourceT) -> SourceT:
    """``source`` as a search uses it: its runs do not name the actors of their deviations.

    Naming walks the callbacks of both events on nearly every step of a random
    run; only the finding that is reported needs it, and ``shrink`` replays that
    one with names.
    """
    source.names_deviations = False
    return source


def count_probes(probes: dict[str, int], outcome: RunOutcome) -> None:
    """Count ``outcome`` once for each probe it reached."""
    for name in outcome.probes:
        probes[name] = probes.get(name, 0) + 1


def _violated(
    strategy: str,
    run: Runner,
    examples: int,
    undecided: Undecided,
    found: RunOutcome,
    shrink_runs: int = 0,
) -> SearchReport:
    """The search found ``found`` (a violation or an error): shrink it (``run`` replays candidates)."""
    result = shrink_found(run, found)
    return SearchReport(
        strategy=strategy,
        verdict=found.status,
        examples=examples,
        inconclusive_runs=undecided.runs,
        found=found,
        shrunk=result.outcome,
        shrink_runs=shrink_runs + result.runs,
        undecided_by=dict(undecided.checkers),
        undecided=undecided,
    )


def _out_of_time(
    strategy: str, examples: int, undecided: Undecided, budget: Budget
) -> SearchReport:
    note = f"the {budget.seconds}s budget ran out after {examples} of {budget.examples} examples"
    return SearchReport(
        strategy=strategy,
        verdict=Verdict.INCONCLUSIVE,
        examples=examples,
        inconclusive_runs=undecided.runs,
        stopped_by="seconds",
        notes=[note, *undecided.notes(bounds=False)],
        undecided_by=dict(undecided.checkers),
        undecided=undecided,
    )


def _no_violation(strategy: str, examples: int, undecided: Undecided) -> SearchReport:
    """Every example of the budget ran; inconclusive if any run hit a bound or was undecided."""
    notes = [f"no violation in {examples} examples (a search, not a proof)", *undecided.notes()]
    return SearchReport(
        strategy=strategy,
        verdict=Verdict.INCONCLUSIVE if undecided.runs else Verdict.OK,
        examples=examples,
        inconclusive_runs=undecided.runs,
        stopped_by="examples",
        notes=notes,
        undecided_by=dict(undecided.checkers),
        undecided=undecided,
    )


def explore_random(
    run: Runner,
    seed: int,
    budget: Budget,
    progress: Progress | None = None,
    strategy: str = "random",
    start: int = 0,
) -> SearchReport:
    """One seeded source per example: ``RandomSource``, or ``SwarmSource`` for ``swarm``.

    ``start``: the index of the first example (a part of a longer search: example i
    draws from ``derive_seed(seed, i)`` wherever it runs).
    """
    make = SwarmSource if strategy == "swarm" else RandomSource
    budget.start()
    undecided = Undecided()
    probes: dict[str, int] = {}
    for example in range(budget.examples):
        if budget.out_of_time():
            return _with(probes, _out_of_time(strategy, example, undecided, budget))
        outcome = run(searching(make(derive_seed(seed, start + example))))
        undecided.add(outcome)
        count_probes(probes, outcome)
        if progress:
            progress({"examples": example + 1, "status": outcome.status})
        if outcome.status in FINDINGS:
            return _with(probes, _violated(strategy, run, example + 1, undecided, outcome))
    return _with(probes, _no_violation(strategy, budget.examples, undecided))


def _with(probes: dict[str, int], report: SearchReport) -> SearchReport:
    report.probes = dict(sorted(probes.items()))
    return report


def schedule_draws_of_fifo_run(run: Runner) -> int:
    """How many schedule decisions the all-FIFO run makes (PCT's step estimate)."""
    outcome = run(ReplaySource([], strict=False))
    return sum(1 for c in outcome.choices if c.label == SCHEDULE_LABEL)


def explore_pct(
    run: Runner,
    seed: int,
    budget: Budget,
    progress: Progress | None,
    depth: int,
    start: int = 0,
) -> SearchReport:
    budget.start()
    steps = max(1, schedule_draws_of_fifo_run(run))
    undecided = Undecided()
    probes: dict[str, int] = {}
    for example in range(budget.examples):
        if budget.out_of_time():
            return _with(probes, _out_of_time("pct", example, undecided, budget))
        outcome = run(searching(PCTSource(derive_seed(seed, start + example), depth, steps)))
        undecided.add(outcome)
        count_probes(probes, outcome)
        if progress:
            progress({"examples": example + 1, "status": outcome.status})
        if outcome.status in FINDINGS:
            return _with(probes, _violated("pct", run, example + 1, undecided, outcome))
    return _with(probes, _no_violation("pct", budget.examples, undecided))


class _Found(Exception):
    """Carries a violating outcome out of Hypothesis' test function (never shown)."""

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__()
        self.outcome = outcome


class _HypothesisChunks:
    """What ``explore_hypothesis`` counts across its chunks; ``run_chunk`` runs one of them."""

    def __init__(self, run: Runner, progress: Progress | None) -> None:
        self.run, self.progress = run, progress
        self.examples = 0
        self.shrinks = 0
        self.undecided = Undecided()
        self.probes: dict[str, int] = {}
        self.first: list[RunOutcome] = []

    def run_chunk(self, size: int, run_seed: int) -> RunOutcome | None:
        """``size`` examples seeded ``run_seed``; the shrunk finding, or None."""
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as hypothesis_seed
        from hypothesis import strategies as st

        @settings(
            max_examples=size,
            database=None,
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            phases=[Phase.generate, Phase.shrink],
            report_multiple_bugs=False,
        )
        @hypothesis_seed(run_seed)
        @given(st.data())
        def probe(data: Any) -> None:
            self._example(self.run(searching(HypothesisSource(data))))

        try:
            probe()
        except _Found as found:
            return found.outcome  # Hypothesis re-raises for its shrunk example: replay-ready
        return None

    def _example(self, outcome: RunOutcome) -> None:
        first = self.first
        if first:
            self.shrinks += 1
        else:
            self.examples += 1
            self.undecided.add(outcome)
            count_probes(self.probes, outcome)
            if self.progress:
                self.progress({"examples": self.examples, "status": outcome.status})
        if first and not _same_finding(first[0], outcome):
            return  # Hypothesis shrinks toward the finding first found, not another one
        if outcome.status in FINDINGS:
            if not first:
                first.append(outcome)
            raise _Found(outcome)


def explore_hypothesis(
    run: Runner,
    seed: int,
    budget: Budget,
    progress: Progress | None = None,
    chunk: int = HYPOTHESIS_CHUNK,
    start: int = 0,
) -> SearchReport:
    """Hypothesis drives every draw (``data.draw``), finds, and shrinks.

    Hypothesis has no wall-clock budget of its own, so the search runs in
    chunks of ``chunk`` examples, each with a seed derived from ``seed`` and
    the chunk's index; ``start`` (a multiple of ``chunk``) starts at a later chunk.
    """
    budget.start()
    state = _HypothesisChunks(run, progress)
    # Chunk c is the same examples wherever it runs (a search cut into parts,
    # ``raceproof.gate.parts``): a run that generated fewer than asked (Hypothesis ran out
    # of distinct inputs) is topped up by runs seeded for that chunk alone, a few at most,
    # and the search never runs past its last chunk.
    chunk_index, in_chunk, attempt = start // chunk, 0, 0
    last_chunk = start // chunk + -(-budget.examples // chunk)
    while state.examples < budget.examples and chunk_index < last_chunk:
        if budget.out_of_time():
            spent = _out_of_time("hypothesis", state.examples, state.undecided, budget)
            return _with(state.probes, spent)
        size = min(chunk - in_chunk, budget.examples - state.examples)
        chunk_seed = derive_seed(seed, chunk_index)
        run_seed = derive_seed(chunk_seed, attempt) if attempt else chunk_seed
        before = state.examples
        found = state.run_chunk(size, run_seed)
        if found is not None:
            report = _violated(
                "hypothesis", run, state.examples, state.undecided, found, state.shrinks
            )
            report.found = state.first[0]
            return _with(state.probes, report)
        ran = state.examples - before
        in_chunk, attempt = in_chunk + ran, attempt + 1
        if in_chunk >= chunk or attempt >= HYPOTHESIS_TOP_UPS or not ran:
            chunk_index, in_chunk, attempt = chunk_index + 1, 0, 0
    return _with(state.probes, _no_violation("hypothesis", state.examples, state.undecided))


def _same_finding(first: RunOutcome, outcome: RunOutcome) -> bool:
    """``outcome`` is a finding of the same kind as ``first`` (an error at the same place)."""
    if first.error is not None:
        return first.error.same_as(outcome.error)
    return outcome.status == Verdict.VIOLATED


def explore(
    run: Runner,
    strategy: str,
    seed: int,
    budget: Budget,
    progress: Progress | None = None,
    pct_depth: int = 3,
    start: int = 0,
) -> SearchReport:
    """Search ``budget.examples`` examples, from example ``start`` of the seed's sequence."""
    if strategy in ("random", "swarm"):
        return explore_random(run, seed, budget, progress, strategy, start)
    if strategy == "pct":
        return explore_pct(run, seed, budget, progress, pct_depth, start)
    if strategy == "hypothesis":
        return explore_hypothesis(run, seed, budget, progress, start=start)
    raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(SEARCH_STRATEGIES)}")
