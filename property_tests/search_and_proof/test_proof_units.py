"""A proof in balanced units is the sequential walk: counts, first finding, shrunk counterexample.

``raceproof.sim.proof_units`` cuts a proof into bounded units and re-cuts what
a unit leaves; the claim is that the merged report is what ``prove`` gives,
for any number of workers and any unit size. Generated models (the toy
model's scripts, with a planted violation that several schedules may reach
at different depths) are walked with units shrunk to a few runs, so that
every draw of the tree lies near a cut; the built-in proofs are compared
across ``-j 1/2/3`` through the pool.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from property_tests.search_and_proof.test_soundness import GUARDED_READ_PAST_A_COVER
from property_tests.soundness_models import spec_strategy
from property_tests.soundness_walks import WALK_RUNS
from property_tests.soundness_walks import scenario as spec_scenario
from property_tests.toy_model import Toy, final_of, runner
from raceproof.scenarios.catalogue import all_scenarios, get, same_runs
from raceproof.sim import Budget, ProofReport, proof_units, prove
from raceproof.sim.errors import KernelError
from raceproof.sim.exhaustive import WalkOptions
from raceproof.sim.proof_plan import merge, split
from raceproof.sim.proof_units import balance, makespan, prove_balanced
from raceproof.sim.verdicts import Verdict

steps = st.tuples(st.sampled_from(("/a", "/b", "/c", "?")), st.booleans())
scripts = st.lists(
    st.lists(steps, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
).filter(
    lambda raw: sum(len(s) for s in raw) <= 7 and sum(p == "?" for s in raw for p, _ in s) <= 2
)


@contextmanager
def tiny_units(first: int, most: int, ways: int, piece: int) -> Iterator[None]:
    saved = (
        proof_units.FIRST_UNIT_RUNS,
        proof_units.UNIT_RUNS,
        proof_units.SPLIT_WAYS,
        proof_units.PIECE_ENTRIES,
        proof_units.PIECE_RUNS_PER_ENTRY,
    )
    (
        proof_units.FIRST_UNIT_RUNS,
        proof_units.UNIT_RUNS,
        proof_units.SPLIT_WAYS,
        proof_units.PIECE_ENTRIES,
        proof_units.PIECE_RUNS_PER_ENTRY,
    ) = (first, most, ways, piece, 1)
    try:
        yield
    finally:
        (
            proof_units.FIRST_UNIT_RUNS,
            proof_units.UNIT_RUNS,
            proof_units.SPLIT_WAYS,
            proof_units.PIECE_ENTRIES,
            proof_units.PIECE_RUNS_PER_ENTRY,
        ) = saved


def same_walk(units: ProofReport, sequential: ProofReport) -> None:
    """What must not depend on the split: the verdict, a complete walk's counts, the finding."""
    assert units.verdict == sequential.verdict
    assert units.complete == sequential.complete
    if sequential.found is None and "budget" not in sequential.pruned:  # walked to its end
        for name in ("schedules", "runs", "skipped_equivalent", "sleep_blocked", "probes"):
            assert getattr(units, name) == getattr(sequential, name), name
        assert units.pruned == sequential.pruned  # the caps cut the same branches
        assert units.max_deviations_seen == sequential.max_deviations_seen
    if sequential.found is not None:
        assert units.found is not None and units.shrunk is not None
        assert sequential.shrunk is not None
        assert units.found_chain == sequential.found_chain
        assert units.found.values == sequential.found.values
        assert units.shrunk.trace_hash == sequential.shrunk.trace_hash
        assert units.shrunk.values == sequential.shrunk.values
    else:
        assert units.found is None


def finals(toy: Toy) -> list[str]:
    seen: dict[str, None] = {}

    def recording(source):  # type: ignore[no-untyped-def]
        outcome = runner(toy)(source)
        seen.setdefault(final_of(outcome))
        return outcome

    prove(recording, budget=Budget(), reduction=False)
    return list(seen)


@settings(max_examples=60, deadline=None)
@given(
    scripts,
    st.booleans(),
    st.integers(0, 40),
    st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 4), st.integers(1, 3)),
)
# Two steps that draw: the values a wakeup sequence asks for at their draws below other
# draws of the instant (``exhaustive._insert``) were asked for in units that held a copy of
# that draw without the values queued there (242 -> 226 runs, 214 -> 198 classes).
@example(
    raw=[(("/a", False), ("?", True)), (("/a", True), ("?", False)), (("/a", False),) * 3],
    reduction=True,
    pick=0,
    sizes=(1, 1, 1, 1),
)
def test_units_of_any_size_walk_exactly_the_sequential_walk(
    raw: list[tuple], reduction: bool, pick: int, sizes: tuple[int, int, int, int]
) -> None:
    """Counts of a complete walk, and the first violation in walk order (a planted final
    state: the last one the walk meets is reached late, often by several schedules)."""
    toy = Toy(tuple(raw))
    states = finals(toy)
    for planted in (None, states[pick % len(states)], states[-1]):
        run = runner(Toy(tuple(raw), planted=planted))
        sequential = prove(run, budget=Budget(examples=10**6), reduction=reduction)
        with tiny_units(*sizes):
            units = prove_balanced(
                run, 1, budget=Budget(examples=10**6), options=WalkOptions(reduction=reduction)
            )
        same_walk(units, sequential)
        assert units.balance is not None and units.balance["total_runs"] == units.runs


def test_the_plan_is_the_same_on_one_two_and_three_workers() -> None:
    """The units (how many, how many runs each) depend on the tree alone."""
    run = runner(
        Toy(
            (
                (("/a", True), ("/b", False)),
                (("/b", True), ("/a", True)),
                (("/a", False), ("/c", True)),
            )
        )
    )
    plans = []
    for jobs in (1, 2, 3):
        with tiny_units(1, 4, 3, 1):
            report = prove_balanced(
                run, jobs, budget=Budget(examples=10**6), options=WalkOptions(reduction=False)
            )
        assert report.balance is not None
        plans.append({k: v for k, v in report.balance.items() if k != "workers"})
        assert sum(w["runs"] for w in report.balance["workers"]) == report.runs
    assert plans[0] == plans[1] == plans[2] and plans[0]["units"] > 10


# Every built-in proof, on its proof configuration, through the pool. Whole, the catalogue's
# proofs take minutes; with at most two deviations each is a few dozen runs
# and still ends in its verdict, or in the cap, which both walks must name alike.
# A scenario that makes another's runs (same_runs: brooklin-redundant-stop is brooklin-double-stop's
# model under another checker) walks the same tree into the same units where both hold (their
# fix-stop-dedupe: 1.7 CPU s), so that proof is walked once, as the first scenario's.
def _twin_walked(name: str, variant: str) -> bool:
    scenario = get(name)
    holds = [o for o in all_scenarios() if variant not in o.expect_violation]
    return scenario in holds and any(
        o.name < name and same_runs(o, scenario, variant) for o in holds
    )


BUILT_IN_PROOFS = [
    (s.name, v) for s in all_scenarios() for v in s.variants if not _twin_walked(s.name, v)
]


@pytest.mark.parametrize(("scenario", "variant"), BUILT_IN_PROOFS)
def test_a_built_in_proof_is_the_same_on_one_two_and_three_workers(
    scenario: str, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = get(scenario)
    cap = 2 if found.prove_max_deviations is None else min(2, found.prove_max_deviations)
    # The stateless walk: its counts are the same however it is cut (a state cache's are not).
    walk: dict[str, Any] = dict(max_deviations=cap, state_cache=False)
    one = found.prove(variant, Budget(10**6), jobs=1, **walk)
    monkeypatch.setattr(proof_units, "IN_PROCESS_RUNS", 0)  # every unit goes to the pool
    for jobs, sizes in ((2, (2, 16, 4, 2)), (3, (1, 5, 3, 1))):
        with tiny_units(*sizes):  # many units even on a small tree
            many = found.prove(variant, Budget(10**6), jobs=jobs, **walk)
        same_walk(many, one)
        assert many.shards > 1 or one.runs <= 2


def test_the_whole_proof_of_a_fix_is_the_same_on_one_and_two_workers() -> None:
    """One built-in proof whole (complete, 46 schedules), with the units it has by default."""
    found = get("lost-update")
    one = found.prove("fix-cas", Budget(10**6), jobs=1, state_cache=False)
    two = found.prove("fix-cas", Budget(10**6), jobs=2, state_cache=False)
    assert one.complete and one.schedules == 46
    same_walk(two, one)


def test_the_speedup_allowed_is_the_work_over_a_greedy_schedule() -> None:
    runs = {(): 4, (0,): 8, (1,): 8, (0, 0): 16, (0, 1): 16}
    assert makespan(runs, 1) == 52
    assert makespan(runs, 2) == 4 + 8 + 16  # both halves, then both quarters
    assert makespan(runs, 16) == 4 + 8 + 16  # the longest chain of units
    results = [
        proof_units.UnitResult(
            ident=ident,
            report=ProofReport(
                verdict=Verdict.OK, complete=True, schedules=n, runs=n, max_deviations_seen=0
            ),
            left=[],
            worker=f"w{len(ident)}",
        )
        for ident, n in runs.items()
    ]
    figure = balance(results)
    assert figure["total_runs"] == 52 and figure["largest_unit_runs"] == 16
    assert figure["critical_path_runs"] == 28
    assert figure["speedup_allowed"]["16"] == round(52 / 28, 2)
    assert [w["runs"] for w in figure["workers"]] == [4, 16, 32]


def test_bench_growth_gives_the_reduced_proof_beside_the_full_walks_estimate() -> None:
    from raceproof.measure import bench

    figures = bench.growth(values=(1, 2), budget_s=600.0)
    rows = figures["growth"]
    assert [row["writes"] for row in rows] == [1, 2]
    # With the state cache (the growth table's), which names the coordinator's deques by their
    # items and leaves out dead locals and step counts: 59 classes at writes=2 where the plain
    # reduced walk has 229.
    assert [(row["verdict"], row["complete"], row["schedules"]) for row in rows] == [
        ("ok", True, 3),
        ("ok", True, 59),
    ]
    assert rows[1]["full_walk_schedules_estimate"] > rows[1]["schedules"]  # the reduction's gain


@settings(max_examples=15, deadline=None)
@given(scripts, st.integers(0, 40))
def test_the_static_shards_merge_to_the_sequential_walks_first_violation(
    raw: list[tuple], pick: int
) -> None:
    """``proof_plan.split``'s shards (a Spark campaign's) merge by walk order, not shard order:
    a later shard's violation with fewer deviations comes first, as in the sequential walk."""

    states = finals(Toy(tuple(raw)))
    run = runner(Toy(tuple(raw), planted=states[pick % len(states)]))
    sequential = prove(run, budget=Budget(examples=10**6), reduction=False)
    shards, first = split(run, reduction=False)
    walked = [prove(run, budget=Budget(), reduction=False, shard=s) for s in shards]
    merged = merge(first, [] if first.found is not None else walked)
    assert merged.verdict == sequential.verdict
    assert merged.found_chain == sequential.found_chain
    if sequential.found is not None:
        assert merged.found is not None and merged.found.values == sequential.found.values


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    spec_strategy(max_ops=4),
    st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 4), st.integers(1, 3)),
)
def test_units_walk_the_soundness_generators_models_as_the_sequential_walk(
    spec: Any, sizes: tuple[int, int, int, int]
) -> None:
    """The soundness generator's random models (every user primitive), each walked in units
    of a few runs against ``-j 1``'s sequential walk: verdict, counts, first finding."""
    found = spec_scenario(spec)
    one = found.prove("model", Budget(examples=WALK_RUNS), jobs=1, state_cache=False)
    assume(one.found is not None or "budget" not in one.pruned)  # a walk to compare
    run = found.runner("model", found.prove_config)
    with tiny_units(*sizes):
        units = prove_balanced(run, 1, budget=Budget(examples=10**6), options=WalkOptions())
    same_walk(units, one)


def test_a_unit_with_the_state_cache_leaves_no_visit_below_the_draws_it_shares() -> None:
    """``prove -j 2 --state-cache`` stopped on brooklin-double-stop fix-conditional-write with
    "AttributeError: Can't pickle local object 'relative_steps.<locals>.rename'": a unit walked
    in the driver hangs its runs' draws, with its cache's visits, below entry draws that the
    pieces still to send a worker share (``cut``). Here a piece is walked in the driver, and
    what the root left (its draws are the piece's) must still pickle."""
    found = spec_scenario(GUARDED_READ_PAST_A_COVER)
    run = found.runner("model", found.prove_config)
    options = WalkOptions(state_cache=True)
    root = proof_units.walk_unit(run, options, proof_units.Unit((), []), Budget(examples=2))
    pieces = proof_units.cut(root.left, piece=1)
    walked = proof_units.walk_unit(
        run, options, proof_units.Unit((0,), pieces[0]), Budget(examples=3)
    )
    assert walked.report.runs
    assert pickle.loads(pickle.dumps(root.left, pickle.HIGHEST_PROTOCOL))


@pytest.mark.parametrize(
    ("scenario", "variant", "runs", "speedup"),
    [
        ("streams-checkpoint-resurrection", "fix-load-after-lock", 1024, 12),
        # 1,389 before an instant's triggered steps counted as ordered (the runs sleep sets
        # cut: 373 -> 319), 1,335 -> 1,113 since a draw's options wait for its step to race
        # (issue 46: 319 -> 97 sleep-blocked), 1,084 since a run cut on a step asleep that ran
        # alone sees its instant as one cut with every step asleep (68), 1,057 since a race
        # releases one initial of its wakeup sequence (41; 1,016 classes), 987 since a step
        # that drew races as the value it drew and a model draw's values wait for a wakeup
        # sequence (23 sleep-blocked, 964 classes: the same 737 traces, 52 fewer runs that
        # were equivalent to another). Its plan allows x9.58 on 16 (x12.01 before): a race's
        # wakeup sequence goes down to any draw below its own in the instant, so a race
        # group is the topmost draw of the instant that branches (``race_group``). 964 (one
        # run per class, none sleep-blocked, the same 737 traces) since a leader pause's races
        # are known (``World.touch_all(holds=True)``) and a branch a sibling run since covers
        # is not run (``backtrack.covered``): x11.61 on 16, critical path 59 runs. 967 (3
        # sleep-blocked) since a step asleep that does not commute with a race's earlier step
        # starts none of its sequences (``races.wakeup_of``); 964 again (none sleep-blocked)
        # since a race of a pause ends its sequence with the pause (``races._with_earlier``).
        ("brooklin-double-stop", "fix-conditional-write", 964, 11),
    ],
)
def test_the_plan_of_a_proof_of_a_thousand_runs_allows_twelve_on_sixteen_workers(
    scenario: str, variant: str, runs: int, speedup: int
) -> None:
    """streams-checkpoint-resurrection / fix-load-after-lock (1,024 runs) allowed x10.04, the
    Brooklin fixes x9.57 (fix-stop-dedupe) and x10.63: the root's rest was cut into pieces of 8
    branches (3 units where 16 workers wait) and a chain of units each leaving a rest was 92-135
    runs. Cut one branch a piece near the root, each allows x12 or more (the proofs closest to
    it); Brooklin's x11 (x12.01 now) since its draws hold options back (a race group is never cut apart).
    fix-stop-dedupe (4,084 runs) is the same plan on a larger tree: its runs
    are pinned by test_catalogue, which walks it anyway."""
    found = get(scenario)
    run = found.runner(variant, found.prove_config)
    report = prove_balanced(run, 1, budget=Budget(examples=10**6), options=WalkOptions())
    assert report.complete and report.runs == runs
    assert report.balance is not None
    assert report.balance["speedup_allowed"]["16"] >= speedup
    assert report.balance["critical_path_runs"] <= runs // speedup


def _in_worker(fail: Callable[[], None]) -> Any:
    """The toy model's runner, which calls ``fail`` in a worker process (never in the driver)."""
    run = runner(Toy(((("/a", True), ("/b", False)), (("/b", True), ("/a", True)))))

    def walked(source):  # type: ignore[no-untyped-def]
        if multiprocessing.current_process().name != "MainProcess":
            fail()
        return run(source)

    return walked


def _kernel_error() -> None:
    raise KernelError("planted in a worker")


class _Unpicklable(Exception):
    def __init__(self, lock: Any) -> None:
        super().__init__("holds a lock")
        self.lock = lock


def _unpicklable() -> None:
    raise _Unpicklable(threading.Lock())


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        (_kernel_error, "planted in a worker"),
        (_unpicklable, "a proof worker raised _Unpicklable"),
        (lambda: os._exit(3), "proof worker worker-. died"),
    ],
)
def test_what_a_worker_raises_or_how_it_dies_ends_the_proof_at_the_driver(
    fail: Callable[[], None], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never a hang or a pass: the driver raises what the worker raised (a ``KernelError`` when
    that cannot travel back, or when the worker died), and the workers are gone after."""
    monkeypatch.setattr(proof_units, "IN_PROCESS_RUNS", 0)
    with pytest.raises(KernelError, match=message):
        prove_balanced(_in_worker(fail), 2, budget=Budget(examples=10**6), options=WalkOptions())
    assert not multiprocessing.active_children()
