"""Search, shrinking and proof on the lost-update self-test scenario."""

from __future__ import annotations

import itertools

import pytest

from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, ReplaySource, deviations, explore, prove, shrink

SCENARIO = get("lost-update")
BUGGY = SCENARIO.runner("buggy", SCENARIO.config)
FIXED = SCENARIO.runner("fix-cas", SCENARIO.config)


def test_fifo_run_is_correct_even_for_the_buggy_variant() -> None:
    outcome = BUGGY(ReplaySource([], strict=False))
    assert outcome.status == "ok"
    assert deviations(outcome.values) == 0


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis"])
def test_each_strategy_finds_and_shrinks_the_lost_update(strategy: str) -> None:
    report = explore(BUGGY, strategy, seed=1, budget=Budget(examples=500))
    assert report.verdict == "violated"
    assert report.shrunk is not None and report.found is not None
    violation = report.shrunk.violation
    assert violation is not None and violation.checker == "final-equals-acks"
    assert deviations(report.shrunk.values) == 1  # one slow round trip is all it takes
    # The shrunk counterexample replays exactly.
    again = BUGGY(ReplaySource(report.shrunk.choices, strict=True))
    assert again.trace_hash == report.shrunk.trace_hash


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis"])
def test_search_is_a_function_of_its_seed(strategy: str) -> None:
    first = explore(BUGGY, strategy, seed=3, budget=Budget(examples=200))
    second = explore(BUGGY, strategy, seed=3, budget=Budget(examples=200))
    assert first.examples == second.examples
    assert first.shrunk is not None and second.shrunk is not None
    assert first.shrunk.trace_hash == second.shrunk.trace_hash


def test_fixed_variant_finds_nothing_and_says_it_is_not_a_proof() -> None:
    report = explore(FIXED, "random", seed=0, budget=Budget(examples=300))
    assert report.verdict == "ok"
    assert report.examples == 300
    assert "not a proof" in report.notes[0]


def test_running_out_of_time_is_inconclusive() -> None:
    ticks = itertools.count()
    budget = Budget(examples=10_000, seconds=5.0, clock=lambda: float(next(ticks)))
    report = explore(FIXED, "random", seed=0, budget=budget)
    assert report.verdict == "inconclusive"
    assert report.stopped_by == "seconds"
    assert report.examples < 10_000


def test_shrink_keeps_the_same_checker_and_reduces_deviations() -> None:
    noisy = None
    for seed in range(200):
        from raceproof.sim import RandomSource

        outcome = BUGGY(RandomSource(seed))
        if outcome.status == "violated" and deviations(outcome.values) >= 3:
            noisy = outcome
            break
    assert noisy is not None
    result = shrink(BUGGY, noisy)
    assert result.outcome.violation is not None
    assert result.outcome.violation.checker == "final-equals-acks"
    assert deviations(result.outcome.values) < deviations(noisy.values)


def test_prove_the_fix_completely() -> None:
    report = prove(FIXED, budget=Budget(examples=100_000))
    assert report.verdict == "ok" and report.complete
    assert report.schedules > 1
    assert report.pruned == {}
    assert report.runs == report.schedules  # every run a distinct, complete schedule


def test_prove_finds_the_bug_with_the_fewest_deviations() -> None:
    report = prove(BUGGY, budget=Budget(examples=100_000))
    assert report.verdict == "violated" and not report.complete
    assert report.shrunk is not None
    assert deviations(report.shrunk.values) == 1


def test_a_deviation_cap_that_prunes_is_never_a_proof() -> None:
    report = prove(FIXED, budget=Budget(examples=100_000), max_deviations=1)
    assert report.verdict == "inconclusive" and not report.complete
    assert report.pruned.get("max_deviations", 0) > 0


def test_a_deviation_cap_cannot_hide_the_bug_it_covers() -> None:
    report = prove(BUGGY, budget=Budget(examples=100_000), max_deviations=1)
    assert report.verdict == "violated"


def test_a_schedule_budget_that_runs_out_is_inconclusive() -> None:
    report = prove(FIXED, budget=Budget(examples=10))
    assert report.verdict == "inconclusive"
    assert report.pruned["budget"] > 0
    assert report.runs == 10


def test_distinct_schedules_are_distinct() -> None:
    seen = set()

    def recording(source):  # type: ignore[no-untyped-def]
        outcome = FIXED(source)
        values = tuple(outcome.values)
        assert values not in seen, "a schedule ran twice"
        seen.add(values)
        return outcome

    report = prove(recording, budget=Budget(examples=100_000))
    assert len(seen) == report.schedules
