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

from property_tests.toy_model import Toy, runner
from raceproof.scenarios.catalogue import get
from raceproof.sim import (
    Budget,
    prove,
)
from raceproof.sim.proof_plan import estimate, prove_parallel, split

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
    sequential = prove(run, budget=Budget(examples=10**6), reduction=reduction)
    shards, first = split(run, reduction=reduction)
    walked = [
        prove(run, budget=Budget(examples=10**6), reduction=reduction, shard=s) for s in shards
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
    one = _cli("prove", "lost-update", "--variant", "fix-cas")
    two = _cli("prove", "lost-update", "--variant", "fix-cas", "-j", "2")
    full = _cli("prove", "lost-update", "--variant", "fix-cas", "--no-reduction")
    for key in ("verdict", "complete", "schedules", "runs", "skipped_equivalent", "bounds_pruned"):
        assert one[key] == two[key], key
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
    """
    args = ("prove", "coordinator-async-append", "--variant", "block-event-loop")
    one, two = _cli(*args), _cli(*args, "-j", "2")
    assert one["complete"] and two["complete"] and two["shards"] > 1
    for key in ("verdict", "schedules", "runs", "skipped_equivalent", "sleep_blocked"):
        assert one[key] == two[key], key
    assert one["skipped_equivalent"] > 0


def test_pool_workers_reset_the_signal_handlers_they_inherit() -> None:
    import multiprocessing
    import signal

    from raceproof.sim import proof_units

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
