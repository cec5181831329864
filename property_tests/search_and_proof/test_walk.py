"""The walk (``sim/enumeration.py``, ``sim/exhaustive.py``) on models small enough to count by hand.

The full and the reduced proof against the enumerated schedules, the caps
(deviations, branches) and what they report as cut, progress, a spent budget,
a violation's report. Worked out by hand; what a mutation run found the
whole-walk comparisons let through (docs/maintaining/mutation.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from property_tests.toy_model import ONE_PATH, SAMPLE, THREE, TWO_PATHS, Toy, final_of, runner
from raceproof.sim import Budget, RunOutcome, World, execute, prove
from raceproof.sim.enumeration import Walk


# -- moved from test_proof_parts.py ---------------------------------------------------
@pytest.mark.parametrize("scripts", [ONE_PATH, TWO_PATHS, THREE], ids=["one", "two", "three"])
def test_the_full_proof_runs_exactly_the_enumerated_schedules(scripts: tuple) -> None:
    run = runner(Toy(scripts))
    cuts: list[tuple[str, int]] = []
    walked = list(
        Walk(
            run,
            max_deviations=None,
            max_branch=None,
            on_prune=lambda bound, n: cuts.append((bound, n)),
        )
    )
    report = prove(run, budget=Budget(), reduction=False)
    assert report.schedules == report.runs == len(walked) and cuts == []
    assert report.verdict == "ok" and report.complete and report.pruned == {}
    depths = [depth for _, depth in walked]
    assert depths == sorted(depths) and depths[0] == 0
    assert report.max_deviations_seen == depths[-1]
    assert len({tuple(outcome.values) for outcome, _ in walked}) == len(walked)
    assert report.skipped_equivalent == report.sleep_blocked == report.frontier_left == 0


def test_the_reduction_keeps_one_schedule_per_order_of_dependent_writes() -> None:
    for scripts, orders in ((ONE_PATH, 2), (TWO_PATHS, 1), (THREE, 6), (SAMPLE, None)):
        run = runner(Toy(scripts))
        full = prove(run, budget=Budget(), reduction=False)
        reduced = prove(run, budget=Budget(), reduction=True)
        finals = {
            final_of(o) for o, _ in Walk(run, max_deviations=None, max_branch=None, on_prune=None)
        }
        assert orders is None or len(finals) == orders
        assert reduced.complete and reduced.verdict == "ok"
        assert len(finals) <= reduced.schedules <= full.schedules
        assert reduced.schedules + reduced.sleep_blocked == reduced.runs
        assert reduced.accounting() == {
            "complete": True,
            "schedules": reduced.schedules,
            "runs": reduced.runs,
            "bounds_pruned": {},
            "reduction": True,
            "skipped_equivalent": reduced.skipped_equivalent,
            "sleep_blocked": reduced.sleep_blocked,
            "frontier_left": 0,
            "shards": 1,
            "state_cache_cuts": 0,
            "states_seen": 0,
            "symmetric_merged": 0,
            "state_cache_checked": 0,
            "probes": {},
        }
    # Two writes of two paths commute: one schedule, the other order skipped at its draw.
    independent = prove(runner(Toy(TWO_PATHS)), budget=Budget(), reduction=True)
    assert (independent.schedules, independent.runs, independent.skipped_equivalent) == (1, 1, 1)
    # A step that reads what another writes: sleep sets cut runs that repeat a class.
    mixed = prove(runner(Toy(SAMPLE)), budget=Budget(), reduction=True)
    assert mixed.sleep_blocked > 0 and mixed.schedules < mixed.runs


def test_the_walk_names_what_its_caps_cut() -> None:
    run = runner(Toy(ONE_PATH))
    everything = list(Walk(run, max_deviations=None, max_branch=None, on_prune=None))
    cuts: list[tuple[str, int]] = []
    fifo_only = list(
        Walk(
            run,
            max_deviations=0,
            max_branch=None,
            on_prune=lambda bound, n: cuts.append((bound, n)),
        )
    )
    assert len(fifo_only) == 1 and fifo_only[0][0].values == [0] * len(fifo_only[0][0].values)
    first = fifo_only[0][0]
    assert cuts == [("max_deviations", c.n - 1) for c in first.choices if c.n > 1]
    cuts.clear()
    narrow = list(
        Walk(
            run,
            max_deviations=None,
            max_branch=1,
            on_prune=lambda bound, n: cuts.append((bound, n)),
        )
    )
    assert len(narrow) == 1 < len(everything)
    assert cuts == [("max_branch", c.n - 1) for c in first.choices if c.n > 1]
    assert (
        list(Walk(run, max_deviations=None, max_branch=1, on_prune=None)) != []
    )  # no callback: the cuts are not counted


def test_a_proof_reports_its_progress_and_its_deepest_branch() -> None:
    run = runner(Toy(ONE_PATH))
    seen: list[dict[str, object]] = []
    report = prove(run, budget=Budget(), reduction=False, progress=seen.append)
    assert len(seen) == report.runs
    assert [s["runs"] for s in seen] == list(range(1, report.runs + 1))
    assert seen[-1]["schedules"] == report.schedules and seen[-1]["frontier"] == 0
    assert set(seen[0]) == {
        "schedules",
        "runs",
        "frontier",
        "depth",
        "skipped_equivalent",
        "sleep_blocked",
        "elapsed_s",
    }
    assert seen[0]["depth"] == 0 and seen[-1]["depth"] == report.max_deviations_seen >= 1
    assert seen[0]["elapsed_s"] == 0.0  # no clock: the kernel reads none


def test_a_spent_budget_leaves_the_frontier_it_names() -> None:
    run = runner(Toy(THREE))
    full = prove(run, budget=Budget(), reduction=False)
    for examples in (1, 2, full.runs - 1):
        report = prove(run, budget=Budget(examples=examples), reduction=False)
        assert report.runs == examples and report.verdict == "inconclusive"
        assert report.pruned == {"budget": report.frontier_left} and report.frontier_left > 0
    assert prove(run, budget=Budget(examples=full.runs), reduction=False).complete


def test_a_violation_is_shrunk_and_reported_with_its_counts() -> None:
    run = runner(Toy(ONE_PATH))
    finals = [
        final_of(o) for o, _ in Walk(run, max_deviations=None, max_branch=None, on_prune=None)
    ]
    report = prove(runner(Toy(ONE_PATH, planted=finals[-1])), budget=Budget(), reduction=False)
    assert report.verdict == "violated" and not report.complete
    assert report.found is not None and report.shrunk is not None
    assert final_of(report.found) == final_of(report.shrunk) == finals[-1]
    assert report.schedules == report.runs  # nothing was cut before it
    assert report.frontier_left == len(finals) - report.runs


# -- moved from test_walk_edges.py ----------------------------------------------------
def _two_draws(source: Any) -> RunOutcome:
    """A model of two draws, of three options and then two: six schedules in all."""

    def build(world: World) -> None:
        world.log(
            "m", "drew", a=world.source.choose("a", (0, 1, 2)), b=world.source.choose("b", (0, 1))
        )

    return execute(build, source, [])


def _walk(max_deviations: int | None, max_branch: int | None) -> tuple[list[tuple], list[tuple]]:
    pruned: list[tuple[str, int]] = []
    walk = Walk(
        _two_draws,
        max_deviations=max_deviations,
        max_branch=max_branch,
        on_prune=lambda bound, count: pruned.append((bound, count)),
    )
    runs = [(tuple(outcome.values), depth) for outcome, depth in walk]
    return runs, pruned


def test_an_uncapped_walk_runs_every_schedule_breadth_first() -> None:
    runs, pruned = _walk(None, None)
    assert runs == [((0, 0), 0), ((1, 0), 1), ((2, 0), 1), ((0, 1), 1), ((1, 1), 2), ((2, 1), 2)]
    assert pruned == []


def test_a_deviation_cap_prunes_what_lies_past_it_and_counts_each_draw() -> None:
    runs, pruned = _walk(1, None)
    assert runs == [((0, 0), 0), ((1, 0), 1), ((2, 0), 1), ((0, 1), 1)]
    assert pruned == [("max_deviations", 1), ("max_deviations", 1)]
    runs, pruned = _walk(0, None)
    assert runs == [((0, 0), 0)]
    assert pruned == [("max_deviations", 2), ("max_deviations", 1)]  # every draw, not the first


def test_a_branch_cap_keeps_the_first_options_and_counts_the_rest() -> None:
    runs, pruned = _walk(None, 2)
    assert runs == [((0, 0), 0), ((1, 0), 1), ((0, 1), 1), ((1, 1), 2)]
    assert pruned == [("max_branch", 1)]  # the draw of two options is within the cap: no prune
    runs, pruned = _walk(0, 1)
    assert runs == [((0, 0), 0)]
    assert pruned == [("max_branch", 2), ("max_branch", 1)]  # nothing left for the other cap


def test_a_violation_reports_what_a_budget_of_as_many_runs_reports() -> None:
    """The walk is the same up to the violating run, so every count must be too."""
    run = runner(Toy(SAMPLE))
    finals: list[tuple[str, int]] = []

    def recording(source: Any) -> RunOutcome:
        outcome = run(source)
        finals.append((final_of(outcome), source.depth))
        return outcome

    prove(recording, budget=Budget(), reduction=True, max_deviations=2)
    # a final state reached only late in the reduced walk, two deviations deep
    late = [final for final, depth in finals if depth == 2][-1]
    assert [final for final, _ in finals].index(late) > 2
    found = prove(
        runner(Toy(SAMPLE, planted=late)), budget=Budget(), reduction=True, max_deviations=2
    )
    cut = prove(run, budget=Budget(examples=found.runs), reduction=True, max_deviations=2)
    assert found.verdict == "violated" and cut.verdict == "inconclusive"
    assert found.complete is False and cut.complete is False
    assert (found.runs, found.schedules, found.max_deviations_seen, found.frontier_left) == (
        cut.runs,
        cut.schedules,
        cut.max_deviations_seen,
        cut.frontier_left,
    )
    assert (found.skipped_equivalent, found.sleep_blocked, found.reduction) == (
        cut.skipped_equivalent,
        cut.sleep_blocked,
        True,
    )
    assert found.skipped_equivalent > 0 and found.max_deviations_seen == 2
    assert {**found.pruned, "budget": cut.frontier_left} == cut.pruned and found.pruned
