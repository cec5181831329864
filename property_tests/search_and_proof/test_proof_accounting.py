"""Honest accounting of proofs: every cause that prunes the walk is named, and none is `complete`.

A run stopped at a step or time bound is not a finished schedule; a cap on
options per draw or on deviations cuts branches; a spent budget leaves
branches. Each must come out ``inconclusive`` with the cut named, so a change
that counted a bound-hit run as finished, or dropped a cut, fails here. The
reduction's skips are sound and counted apart: they never make a proof
incomplete by themselves.
"""

from __future__ import annotations

import pytest

from property_tests.toy_model import Toy, runner
from raceproof.sim import Budget, prove

TWO = ((("/a", True),), (("/a", True),))


@pytest.mark.parametrize("reduction", [True, False])
def test_a_run_stopped_at_the_step_bound_is_not_a_finished_schedule(reduction: bool) -> None:
    report = prove(runner(Toy(TWO, spin_steps=1_000)), budget=Budget(), reduction=reduction)
    assert report.verdict == "inconclusive" and not report.complete
    assert report.pruned.get("steps", 0) >= 1
    assert report.schedules + report.pruned["steps"] + report.sleep_blocked == report.runs
    bounded = prove(runner(Toy(TWO, spin_steps=0)), budget=Budget(), reduction=reduction)
    assert bounded.complete and bounded.verdict == "ok"  # the same model without the spin


@pytest.mark.parametrize("reduction", [True, False])
def test_a_run_stopped_at_the_time_bound_is_not_a_finished_schedule(reduction: bool) -> None:
    report = prove(runner(Toy(TWO, spin_sleep_ms=60_000)), budget=Budget(), reduction=reduction)
    assert report.verdict == "inconclusive" and not report.complete
    assert report.pruned.get("virtual_time", 0) >= 1
    assert "steps" not in report.pruned


THREE = ((("/a", True),), (("/a", True),), (("/a", True),))


@pytest.mark.parametrize("reduction", [True, False])
def test_a_cap_on_options_per_draw_is_named_and_never_complete(reduction: bool) -> None:
    full = prove(runner(Toy(THREE)), budget=Budget(), reduction=reduction)
    assert full.complete and full.verdict == "ok"
    capped = prove(runner(Toy(THREE)), budget=Budget(), max_branch=2, reduction=reduction)
    assert capped.verdict == "inconclusive" and not capped.complete
    assert capped.pruned["max_branch"] >= 1
    assert capped.schedules < full.schedules


@pytest.mark.parametrize("reduction", [True, False])
def test_a_violation_only_past_the_branch_cap_is_inconclusive_not_ok(reduction: bool) -> None:
    # Actor 2 writes first only if the first tie takes option 2.
    planted = "/a=a2.0 a0.0 a1.0 ;/b=;/c="
    toy = Toy(THREE, planted=planted)
    assert prove(runner(toy), budget=Budget(), reduction=reduction).verdict == "violated"
    capped = prove(runner(toy), budget=Budget(), max_branch=2, reduction=reduction)
    assert capped.verdict == "inconclusive" and capped.pruned["max_branch"] >= 1


@pytest.mark.parametrize("reduction", [True, False])
def test_a_deviation_cap_is_named_and_never_complete(reduction: bool) -> None:
    capped = prove(runner(Toy(THREE)), budget=Budget(), max_deviations=1, reduction=reduction)
    assert capped.verdict == "inconclusive" and not capped.complete
    assert capped.pruned["max_deviations"] >= 1


@pytest.mark.parametrize("reduction", [True, False])
def test_a_spent_budget_is_named_with_what_it_left(reduction: bool) -> None:
    report = prove(runner(Toy(THREE)), budget=Budget(examples=2), reduction=reduction)
    assert report.verdict == "inconclusive" and not report.complete
    assert report.pruned["budget"] == report.frontier_left > 0
    assert report.runs == 2


def test_the_reduction_skips_only_with_a_declaration_and_stays_complete() -> None:
    independent = ((("/a", True),), (("/b", True),), (("/c", True),))
    reduced = prove(runner(Toy(independent)), budget=Budget())
    full = prove(runner(Toy(independent)), budget=Budget(), reduction=False)
    undeclared = prove(runner(Toy(independent, declared=False)), budget=Budget())
    assert reduced.complete and reduced.verdict == "ok"
    assert reduced.skipped_equivalent + reduced.sleep_blocked > 0
    assert reduced.schedules < full.schedules
    assert full.skipped_equivalent == full.sleep_blocked == 0
    assert undeclared.schedules == full.schedules and undeclared.skipped_equivalent == 0


def test_a_model_level_draw_stays_fully_enumerated() -> None:
    independent = ((("/a", True),), (("/b", True),))
    plain = prove(runner(Toy(independent)), budget=Budget())
    drawn = prove(runner(Toy(independent, drawn_delay=True)), budget=Budget())
    assert drawn.schedules >= 2 * plain.schedules  # both values of the draw, each walked
