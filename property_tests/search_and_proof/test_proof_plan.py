"""Planning proofs: the estimate of a proof's size, and the split over worker processes.

``prove -j N`` must give the verdict and the counts of ``-j 1`` (the shards are
the sequential walk cut into pieces, merged in walk order); ``--estimate``
samples the tree and must land near the real size of a walk it can check.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.toy_model import ONE_PATH, SAMPLE, THREE, TWO_PATHS, Toy, final_of, runner
from raceproof.scenarios.catalogue import get
from raceproof.sim import (
    Budget,
    ProofReport,
    proof_units,
    prove,
)
from raceproof.sim.enumeration import Walk
from raceproof.sim.exhaustive import WalkOptions
from raceproof.sim.proof_plan import estimate, merge, prove_parallel, split
from raceproof.sim.reduction import (
    SleepSetSource,
)
from raceproof.sim.world import Bounds

steps = st.tuples(st.sampled_from(("/a", "/b", "/c", "?")), st.booleans())
# At most 7 steps in all: the full walk stays in the low thousands of runs.
scripts = st.lists(
    st.lists(steps, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
).filter(
    lambda raw: sum(len(s) for s in raw) <= 7 and sum(p == "?" for s in raw for p, _ in s) <= 2
)


def _counts(report):  # type: ignore[no-untyped-def]
    return (
        report.verdict,
        report.complete,
        report.schedules,
        report.runs,
        report.skipped_equivalent,
        report.sleep_blocked,
        report.pruned,
    )


@settings(max_examples=40, deadline=None)
@given(scripts, st.booleans())
def test_the_shards_are_exactly_the_sequential_walk(raw: list[tuple], reduction: bool) -> None:
    run = runner(Toy(tuple(raw)))
    # Static shards learn nothing from each other: walked without holding options back
    # (``defer``), as the sequential walk they add up to.
    sequential = prove(run, budget=Budget(examples=10**6), reduction=reduction, defer=False)
    shards, first = split(run, reduction=reduction)
    walked = [
        prove(run, budget=Budget(examples=10**6), reduction=reduction, shard=s, defer=False)
        for s in shards
    ]
    from raceproof.sim.proof_plan import merge

    assert _counts(merge(first, walked)) == _counts(sequential)


@pytest.mark.parametrize("reduction", [True, False])
def test_two_workers_give_the_counts_of_one(reduction: bool) -> None:
    toy = Toy(((("/a", True), ("/b", False)), (("/b", True), ("/c", False)), (("/a", False),)))
    one = prove(runner(toy), budget=Budget(examples=10**6), reduction=reduction)
    two = prove_parallel(runner(toy), 2, budget=Budget(examples=10**6), reduction=reduction)
    assert _counts(two) == _counts(one) and two.shards > 1


def test_two_workers_find_the_bug_one_finds() -> None:
    scenario = get("lost-update")
    run = scenario.runner("buggy", scenario.prove_config)
    report = prove_parallel(run, 2, budget=Budget(examples=10**6))
    assert report.verdict == "violated" and report.shrunk is not None


def test_the_estimate_is_near_the_size_of_the_full_walk() -> None:
    toy = Toy(((("/a", True), ("/b", False)), (("/b", True), ("/c", False)), (("/a", False),)))
    full = prove(runner(toy), budget=Budget(examples=10**6), reduction=False)
    size = estimate(runner(toy), samples=400)
    assert 0.5 * full.schedules <= size.schedules <= 2 * full.schedules


RACEPROOF = shutil.which("raceproof") or str(Path(sys.executable).parent / "raceproof")


def _cli(*args: str) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        [RACEPROOF, *args, "--json"],  # the installed command, as a user runs it
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    assert "Traceback" not in done.stderr, done.stderr  # not even from a pool worker's exit
    return json.loads(done.stdout)


def test_the_command_line_reports_the_accounting_and_the_split() -> None:
    stateless = ("prove", "lost-update", "--variant", "fix-cas", "--no-state-cache")
    one, two = _cli(*stateless), _cli(*stateless, "-j", "2")
    full = _cli("prove", "lost-update", "--variant", "fix-cas", "--no-reduction")
    for key in ("verdict", "complete", "schedules", "runs", "skipped_equivalent", "bounds_pruned"):
        assert one[key] == two[key], key
    # With the state cache (the default) each unit has its own: the verdict is the same on
    # any number of workers, the counts need not be.
    cached, cached_two = _cli(*stateless[:-1]), _cli(*stateless[:-1], "-j", "2")
    assert cached["states_seen"] > 0 and cached_two["states_seen"] > 0
    for key in ("verdict", "complete", "bounds_pruned"):
        assert cached[key] == cached_two[key] == one[key], key
    assert one["complete"] and one["reduction"] and not full["reduction"]
    assert full["schedules"] == 46 and two["shards"] > 1
    assert "equivalence class" in one["complete_means"]
    size = _cli("prove", "lost-update", "--variant", "fix-cas", "--estimate")
    assert size["schedules_estimate"] > 0 and size["fits_budget"] is True


def test_a_parallel_proof_of_a_declared_model_matches_one_core_and_its_workers_exit_quietly() -> (
    None
):
    """The coordinator declares its footprints, so its shards start with real sleep sets.

    Its pool's workers are stopped by ``Pool.terminate`` at the end; before they reset
    the CLI's signal handlers, each printed a traceback there (``_cli`` checks stderr).
    Two writes, not the proof configuration's three: 229 classes (61 shards on ``-j 2``)
    where 3,389 cost 3.4 CPU s a command; the whole proof is test_catalogue's.
    """
    args = ("prove", "coordinator-async-append", "--variant", "block-event-loop")
    args += ("--set", "writes=2", "--no-state-cache")  # the stateless walk's counts are -j's
    one, two = _cli(*args), _cli(*args, "-j", "2")
    assert one["complete"] and two["complete"] and two["shards"] > 1
    for key in ("verdict", "schedules", "runs", "skipped_equivalent", "sleep_blocked"):
        assert one[key] == two[key], key
    assert one["skipped_equivalent"] > 0


def test_pool_workers_reset_the_signal_handlers_they_inherit() -> None:
    import multiprocessing
    import signal

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # as the CLI's handler would be
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(1, initializer=proof_units._worker_signals) as pool:
            term, interrupt = (
                pool.apply(signal.getsignal, (signal.SIGTERM,)),
                pool.apply(signal.getsignal, (signal.SIGINT,)),
            )
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (term, interrupt) == (signal.SIG_DFL, signal.SIG_IGN)


def test_a_violation_on_the_first_run_counts_one_schedule_on_any_number_of_cores() -> None:
    scenario = get("samza-drain")  # `kill` loses data on the FIFO path itself
    one = scenario.prove("kill", Budget(examples=1_000))
    two = scenario.prove("kill", Budget(examples=1_000), jobs=2)
    assert (one.verdict, one.schedules, one.runs) == ("violated", 1, 1)
    assert (two.verdict, two.schedules, two.runs) == (one.verdict, one.schedules, one.runs)
    assert one.shrunk is not None and two.shrunk is not None  # the counterexample, shrunk
    assert two.shrunk.trace_hash == one.shrunk.trace_hash


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_an_estimate_samples_paths_seeded_from_its_seed_with_capped_widths() -> None:
    from property_tests.toy_model import Toy, runner
    from raceproof.sim.proof_plan import _UniformSource, estimate

    run = runner(Toy(((("/a", True), ("/b", False)), (("/b", True),), (("/a", False),))))
    for seed, cap in ((0, None), (5, 2)):
        products = []
        for index in range(4):
            source = _UniformSource(seed * 1_000_003 + index, cap)
            run(source)
            assert cap is None or max(source.widths) <= cap
            product = 1.0
            for width in source.widths:
                product *= width
            products.append(product)
        plan = estimate(run, samples=4, seed=seed, max_branch=cap)
        assert plan.schedules == sum(products) / 4
    assert (
        estimate(run).samples == 30 and estimate(run).schedules == estimate(run, seed=0).schedules
    )
    assert estimate(run, samples=1).samples == 1


# -- moved from test_proof_parts.py ---------------------------------------------------
def _report(verdict: str, schedules: int, **fields: object) -> ProofReport:
    report = ProofReport(
        verdict=verdict,
        complete=verdict == "ok",
        schedules=schedules,
        runs=schedules + 1,
        max_deviations_seen=1,
    )  # type: ignore[arg-type]
    for name, value in fields.items():
        setattr(report, name, value)
    return report


counted = st.builds(
    _report,
    st.sampled_from(["ok", "inconclusive"]),
    st.integers(0, 9),
    pruned=st.dictionaries(st.sampled_from(["budget", "steps"]), st.integers(1, 3), max_size=2),
    skipped_equivalent=st.integers(0, 5),
    sleep_blocked=st.integers(0, 5),
    state_cache_cuts=st.integers(0, 5),
    states_seen=st.integers(0, 5),
    symmetric_merged=st.integers(0, 5),
    state_cache_checked=st.integers(0, 5),
    frontier_left=st.integers(0, 5),
    max_deviations_seen=st.integers(0, 4),
    reduction=st.booleans(),
)


def test_the_estimate_of_a_uniform_tree_is_exact_and_its_time_is_measured() -> None:
    run = runner(Toy(TWO_PATHS))
    ticks = iter([5.0, 9.0])

    def clock() -> float:
        return next(ticks)

    full = prove(run, budget=Budget(), reduction=False)
    plan = estimate(run, samples=4, clock=clock)
    assert plan.samples == 4 and plan.seconds_per_run == 1.0
    assert plan.schedules >= 1 and plan.seconds == plan.schedules
    assert plan.to_json() == {
        "schedules_estimate": round(plan.schedules),
        "estimate_overflows": False,
        "samples": 4,
        "seconds_per_run": 1.0,
        "seconds_estimate": round(plan.schedules, 1),
        "draws_per_run_mean": plan.depth_mean,
    }
    assert estimate(run, samples=4).seconds_per_run == 0.0  # no clock, no time
    assert estimate(run, samples=3, max_branch=1).schedules == 1.0
    uniform = estimate(run, samples=50, seed=7)
    assert uniform.depth_mean >= 1
    assert 0.25 * full.schedules <= uniform.schedules <= 4 * full.schedules
    with pytest.raises(ValueError):
        estimate(run, samples=0)


@pytest.mark.parametrize("reduction", [True, False])
@pytest.mark.parametrize("scripts", [ONE_PATH, THREE], ids=["one", "three"])
def test_the_shards_of_a_small_walk_add_up_to_it(scripts: tuple, reduction: bool) -> None:
    run = runner(Toy(scripts))
    sequential = prove(run, budget=Budget(), reduction=reduction, defer=False)
    shards, first = split(run, reduction=reduction)
    assert first.runs == 1 and first.schedules == 1 and first.verdict == "ok"
    assert shards and all(s.depth == 1 for s in shards)
    assert len({s.prefix for s in shards}) == len(shards)
    if not reduction:
        assert all(s.sleep == () for s in shards)
    walked = [
        prove(run, budget=Budget(), reduction=reduction, shard=s, defer=False) for s in shards
    ]
    total = merge(first, walked)
    assert (total.schedules, total.runs, total.verdict, total.complete) == (
        sequential.schedules,
        sequential.runs,
        sequential.verdict,
        sequential.complete,
    )
    assert total.skipped_equivalent == sequential.skipped_equivalent
    assert total.sleep_blocked == sequential.sleep_blocked and total.shards == len(shards)


def test_a_split_whose_first_run_violates_or_hits_a_bound_says_so() -> None:
    fifo = prove(runner(Toy(ONE_PATH)), budget=Budget(examples=1), reduction=False)
    planted = final_of(
        next(
            iter(Walk(runner(Toy(ONE_PATH)), max_deviations=None, max_branch=None, on_prune=None))
        )[0]
    )
    assert fifo.runs == 1
    _, first = split(runner(Toy(ONE_PATH, planted=planted)))
    assert first.verdict == "violated" and first.schedules == 1 and first.found is not None
    _, capped = split(runner(Toy(ONE_PATH)), max_deviations=0, max_branch=1)
    assert capped.pruned.get("max_branch", 0) >= 1 and capped.verdict == "ok"


@given(counted, st.lists(counted, max_size=4))
def test_merging_shard_reports_adds_every_count(
    first: ProofReport, reports: list[ProofReport]
) -> None:
    total = merge(first, reports)
    everything = [first, *reports]
    for name in ("schedules", "runs", "skipped_equivalent"):
        assert getattr(total, name) == sum(getattr(r, name) for r in everything)
    for name in (
        "sleep_blocked",
        "state_cache_cuts",
        "states_seen",
        "symmetric_merged",
        "state_cache_checked",
        "frontier_left",
    ):
        assert getattr(total, name) == sum(getattr(r, name) for r in reports)
    assert total.max_deviations_seen == max(r.max_deviations_seen for r in everything)
    bounds = {b for r in everything for b in r.pruned}
    assert total.pruned == {b: sum(r.pruned.get(b, 0) for r in everything) for b in bounds}
    assert total.shards == len(reports) and total.reduction == first.reduction
    assert total.verdict == ("inconclusive" if bounds else "ok")
    assert total.complete == (not bounds) and total.found is None


def test_the_first_violation_in_walk_order_wins_a_merge() -> None:
    outcomes = [object(), object(), object()]
    first = _report("ok", 1)
    reports = [
        _report("ok", 2),
        _report("violated", 1, found=outcomes[0], shrunk=outcomes[1]),
        _report("violated", 1, found=outcomes[2], shrunk=outcomes[2]),
    ]
    total = merge(first, reports)
    assert total.verdict == "violated" and not total.complete
    assert total.found is outcomes[0] and total.shrunk is outcomes[1]
    assert merge(first, []).verdict == "ok" and merge(first, []).shards == 0
    found_first = _report("violated", 1, found=outcomes[2], shrunk=None)
    assert merge(found_first, reports).found is outcomes[2]
    assert first.pruned == {}  # merging leaves its inputs alone
    merge(_report("ok", 1, pruned={"budget": 1}), [_report("ok", 1, pruned={"budget": 2})])
    with_cut = _report("ok", 1, pruned={"budget": 1})
    merge(with_cut, [_report("ok", 1, pruned={"budget": 2})])
    assert with_cut.pruned == {"budget": 1}


def test_an_estimate_rounds_each_figure_for_its_reader() -> None:
    from raceproof.sim.proof_plan import Estimate

    plan = Estimate(schedules=123.456, samples=3, seconds_per_run=0.123456789, depth_mean=2.36)
    assert plan.seconds == 123.456 * 0.123456789
    assert plan.to_json() == {
        "schedules_estimate": 123,
        "estimate_overflows": False,
        "samples": 3,
        "seconds_per_run": 0.123457,
        "seconds_estimate": 15.2,
        "draws_per_run_mean": 2.4,
    }
    past = Estimate(schedules=float("inf"), samples=3, seconds_per_run=0.0, depth_mean=700.0)
    assert past.overflows and past.seconds == float("inf")  # never inf * 0 = NaN
    assert past.to_json()["schedules_estimate"] is None
    assert past.to_json()["seconds_estimate"] is None and past.to_json()["estimate_overflows"]
    assert "overflows" in past.described() and plan.described() == "about 123 schedules"


# -- moved from test_walk_edges.py ----------------------------------------------------
@pytest.mark.parametrize("reduction", [True, False])
@pytest.mark.parametrize("case", ["ok", "violated", "bound"])
def test_a_splits_first_report_counts_what_one_run_of_the_walk_counts(
    reduction: bool, case: str
) -> None:
    toy, bounds = Toy(SAMPLE), Bounds(max_time_ms=10, max_steps=10_000)
    if case == "violated":  # the FIFO run's own final state: the first run violates
        toy = Toy(SAMPLE, planted=final_of(runner(toy)(SleepSetSource((), None, reduce=False))))
    elif case == "bound":
        bounds = Bounds(max_time_ms=10, max_steps=3)
    run = runner(toy, bounds)
    _, first = split(run, reduction=reduction, max_deviations=2, max_branch=2)
    one = prove(run, budget=Budget(examples=1), reduction=reduction, max_deviations=2, max_branch=2)
    # A budget of one run leaves the rest unwalked ("inconclusive"); the split hands it to shards.
    assert first.verdict == ("violated" if case == "violated" else "ok")
    assert (first.schedules, first.runs, first.max_deviations_seen) == (
        one.schedules,
        one.runs,
        one.max_deviations_seen,
    )
    assert first.schedules == (0 if case == "bound" else 1)
    assert (first.reduction, first.skipped_equivalent) == (reduction, one.skipped_equivalent)
    assert first.pruned == {k: v for k, v in one.pruned.items() if k != "budget"}
    assert (first.found is not None) == (case == "violated")
    if case != "bound":
        assert first.pruned.get("max_branch", 0) > 0
        shards, fifo_only = split(run, reduction=reduction, max_deviations=0)
        assert shards == [] and fifo_only.pruned.get("max_deviations", 0) > 0
    assert split(run)[1].reduction is True  # the reduction is on unless turned off


# -- moved from test_proof_parts.py: a pool worker --------------------------------------
def test_a_worker_walks_its_unit_with_the_options_it_was_given() -> None:
    """What a pool worker runs, run here in the test's own process: the root unit, unbounded,
    is the whole walk; a unit stops at its share of runs or of seconds and leaves the rest."""

    run = runner(Toy(SAMPLE, state="right"))
    saved = dict(proof_units._WORKER)
    ticks = iter(range(10**6))
    root = proof_units.Unit((), [])
    try:
        for reduction, cap, branch, cache in (
            (True, None, None, False),
            (False, 1, None, False),
            (False, None, 2, False),
            (False, None, None, True),
        ):
            options = WalkOptions(
                max_deviations=cap, max_branch=branch, reduction=reduction, state_cache=cache
            )
            proof_units._WORKER.update(run=run, options=options, clock=None)
            walked = proof_units._walk(
                proof_units.Dispatch(unit=root, examples=10**6, seconds=None, stop_depth=None),
                "here",
            )
            direct = prove(
                run,
                budget=Budget(),
                reduction=reduction,
                max_deviations=cap,
                max_branch=branch,
                state_cache=cache,
            )
            assert walked.report == direct and walked.report.reduction is reduction
            assert walked.left == [] and walked.worker == "here"
        proof_units._WORKER.update(clock=lambda: float(next(ticks)))
        timed = proof_units._walk(
            proof_units.Dispatch(unit=root, examples=10**6, seconds=3.0, stop_depth=None), "here"
        )
        assert timed.left and timed.report.runs < direct.runs  # one tick a reading: out of time
        one = proof_units._walk(
            proof_units.Dispatch(unit=root, examples=1, seconds=None, stop_depth=None), "here"
        )
        assert one.report.runs == 1 and one.left  # the share of runs is the unit's
    finally:
        proof_units._WORKER.clear()
        proof_units._WORKER.update(saved)


def test_a_worker_ignores_ctrl_c_and_dies_on_sigterm() -> None:
    import signal

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        proof_units._worker_signals()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def test_a_parallel_proof_passes_every_option_to_its_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from raceproof.sim.proof_plan import prove_parallel

    run = runner(Toy(SAMPLE, state="right"))

    def counts(report: ProofReport) -> tuple[object, ...]:
        return (
            report.verdict,
            report.schedules,
            report.runs,
            report.pruned,
            report.skipped_equivalent,
            report.sleep_blocked,
        )

    for options in (
        {"reduction": True},
        {"reduction": False},
        {"reduction": False, "max_deviations": 1},
        {"reduction": False, "max_branch": 2},
    ):
        one = prove(run, budget=Budget(), **options)  # type: ignore[arg-type]
        seen: list[dict[str, object]] = []
        two = prove_parallel(run, 2, budget=Budget(), progress=seen.append, **options)  # type: ignore[arg-type]
        assert counts(two) == counts(one), options
        assert seen and set(seen[-1]) == {
            "shards",
            "schedules",
            "runs",
            "skipped_equivalent",
            "frontier",
        }
        assert seen[-1]["schedules"] == two.schedules and seen[-1]["runs"] == two.runs
        done, total = str(seen[-1]["shards"]).split("/")
        assert done == total == str(two.shards)
    cached = prove_parallel(run, 2, budget=Budget(), reduction=False, state_cache=True)
    assert cached.verdict == "ok" and cached.state_cache_cuts > 0
    # The debug mode compares a state's repeats when the unit that met it walked its whole
    # subtree: here one unit, the whole tree (90 runs), walked by a worker.
    with monkeypatch.context() as patch:
        patch.setattr(proof_units, "IN_PROCESS_RUNS", 0)
        patch.setattr(proof_units, "FIRST_UNIT_RUNS", 1024)
        patch.setattr(proof_units, "UNIT_RUNS", 1024)
        checked = prove_parallel(
            run, 2, budget=Budget(), reduction=False, state_cache=True, state_cache_check=True
        )
    assert checked.state_cache_checked > 0 and checked.balance is not None
    assert "driver" not in {w["name"] for w in checked.balance["workers"]}
    short = prove_parallel(run, 2, budget=Budget(examples=1), reduction=False)
    assert short.verdict == "inconclusive" and short.pruned.get("budget", 0) > 0
    full = prove(run, budget=Budget(), reduction=False)
    assert counts(prove_parallel(run, 1, budget=Budget(), reduction=False)) == counts(full)
    with pytest.raises(ValueError):
        prove_parallel(run, 0, budget=Budget())
