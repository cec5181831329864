"""The search loop's accounting (``sim/explore.py``) on a tiny model whose outcome is one draw.

Every strategy must count its examples and its inconclusive runs, report
progress once per example, stop on a seconds budget with the right note, and
derive each example's seed from the search seed. ``make mutation`` found all
of these unpinned: the catalogue tests only look at whether a bug is found.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from raceproof.sim import (
    BoundHit,
    Budget,
    CheckerResult,
    ChoiceSource,
    History,
    ReplaySource,
    RunOutcome,
    World,
    checker,
    execute,
    explore,
    ok,
    violated,
)
from raceproof.sim.choices import SCHEDULE_LABEL
from raceproof.sim.explore import schedule_draws_of_fifo_run

STRATEGIES = ["random", "pct", "hypothesis"]


@checker("not-seven")
def _not_seven(history: History) -> CheckerResult:
    for op in history.of_kind("drew"):
        if op.get("value") == 7:
            return violated("drew 7", op.index)
    return ok()


def _runner(planted: bool, log: list[RunOutcome]) -> Callable[[ChoiceSource], RunOutcome]:
    """One draw of 0..7; 2 hits a bound (inconclusive); 7 is the violation when planted."""

    def build(world: World) -> None:
        value = world.source.choose("value", list(range(8 if planted else 7)))
        world.log("model", "drew", value=value)
        if value == 2:
            raise BoundHit("steps", "forced")

    def run(source: ChoiceSource) -> RunOutcome:
        outcome = execute(build, source, [_not_seven])
        log.append(outcome)
        return outcome

    return run


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_examples_inconclusive_runs_and_progress_are_counted(strategy: str) -> None:
    log: list[RunOutcome] = []
    progress: list[dict[str, Any]] = []
    report = explore(_runner(False, log), strategy, 3, Budget(examples=30), progress.append)
    assert report.strategy == strategy and report.stopped_by == "examples"
    assert report.examples == 30
    runs = log[-30:] if strategy == "pct" else log  # pct first runs the FIFO schedule once
    assert len(runs) == 30
    bounded = sum(o.status == "inconclusive" for o in runs)
    assert report.inconclusive_runs == bounded
    assert progress == [{"examples": i + 1, "status": o.status} for i, o in enumerate(runs)]
    if bounded:
        assert report.verdict == "inconclusive"
        assert report.notes == [
            "no violation in 30 examples (a search, not a proof)",
            f"{bounded} runs hit a bound before finishing",
        ]
    else:
        assert report.verdict == "ok"
        assert report.notes == ["no violation in 30 examples (a search, not a proof)"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_found_violation_stops_the_count_where_it_was_found(strategy: str) -> None:
    log: list[RunOutcome] = []
    progress: list[dict[str, Any]] = []
    report = explore(_runner(True, log), strategy, 0, Budget(examples=500), progress.append)
    assert report.verdict == "violated" and report.stopped_by is None
    assert report.strategy == strategy
    assert report.found is not None and report.found.status == "violated"
    assert report.shrunk is not None and report.shrunk.status == "violated"
    assert progress[-1] == {"examples": report.examples, "status": "violated"}
    assert [p["examples"] for p in progress] == list(range(1, report.examples + 1))
    assert report.inconclusive_runs == sum(p["status"] == "inconclusive" for p in progress)
    assert report.shrink_runs >= 1
    # Every run is accounted for: an example, or a shrink step (pct first runs the FIFO schedule).
    assert len(log) == (strategy == "pct") + report.examples + report.shrink_runs


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("limit", [1, 2, 5])
def test_a_seconds_budget_that_runs_out_is_inconclusive_with_a_note(
    strategy: str, limit: int
) -> None:
    ticks = itertools.count()  # start() reads 0; each check before an example reads the next
    hypothesis = strategy == "hypothesis"  # checks once per chunk of examples
    total = 1000 if hypothesis else 100
    budget = Budget(examples=total, seconds=float(limit), clock=lambda: float(next(ticks)))
    log: list[RunOutcome] = []
    report = explore(_runner(False, log), strategy, 0, budget)
    assert report.verdict == "inconclusive" and report.stopped_by == "seconds"
    assert report.strategy == strategy
    runs = log[len(log) - report.examples :]  # pct's FIFO estimate run comes first
    assert report.inconclusive_runs == sum(o.status == "inconclusive" for o in runs)
    if hypothesis:  # a chunk may end early: seven values exhaust Hypothesis' search space
        assert (report.examples == 0) == (limit == 1) and report.examples < total
    else:
        assert report.examples == limit - 1
    assert report.notes == [
        f"the {float(limit)}s budget ran out after {report.examples} of {total} examples"
    ]


def test_a_budget_reads_only_the_clock_it_is_given() -> None:
    with pytest.raises(ValueError, match="needs a clock"):
        Budget(seconds=1.0)
    assert Budget().elapsed() == 0.0 and not Budget().out_of_time()
    now = [10.0]
    budget = Budget(seconds=2.0, clock=lambda: now[0])
    budget.start()
    now[0] = 11.5
    assert budget.elapsed() == 1.5 and not budget.out_of_time()
    now[0] = 12.0
    assert budget.out_of_time()
    with pytest.raises(ValueError, match="unknown strategy 'dfs'; known: random, hypothesis, pct"):
        explore(_runner(False, []), "dfs", 0, Budget(examples=1))


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_each_example_draws_from_a_seed_derived_from_the_search_seed(strategy: str) -> None:
    def values(seed: int) -> list[int]:
        log: list[RunOutcome] = []
        explore(_runner(False, log), strategy, seed, Budget(examples=12))
        return [o.values[0] if o.values else 0 for o in log]

    assert values(0) == values(0)
    assert values(0) != values(1)
    assert len(set(values(5))) > 2  # examples differ from one another


def test_pct_estimates_its_steps_from_the_fifo_run() -> None:
    def build(world: World) -> None:
        def actor(name: str) -> Any:
            for _ in range(3):
                yield world.sleep(1)
                world.log(name, "tick")

        world.spawn("a", actor("a"))
        world.spawn("b", actor("b"))
        world.source.choose("other", [1, 2])

    outcome = execute(build, ReplaySource([], strict=False), [])
    scheduled = sum(1 for c in outcome.choices if c.label == SCHEDULE_LABEL)
    assert scheduled > 0
    assert schedule_draws_of_fifo_run(lambda source: execute(build, source, [])) == scheduled
