"""The proof's parts one at a time: footprints, sleep sets, branching, the walk, the plan.

The whole-walk comparisons (``test_reduction.py``, ``test_proof_plan.py``,
``test_state_cache.py``) check that the parts add up, over generated models,
but each costs seconds. These check each part directly and fast, against
its specification: ``dependent`` and ``union`` against what two footprints
share, ``branch_options`` against which options a node may still try,
``SleepSetSource`` against a hand-driven sequence of draws and steps,
``merge`` against field-by-field sums, the state cache's covering rule, and
the walk on models small enough to count by hand. They are what kills a
mutant of these modules in a mutation run (docs/maintaining/mutation.md).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.toy_model import Toy, final_of, runner
from raceproof.sim import Budget, RunOutcome, prove
from raceproof.sim.enumeration import Walk
from raceproof.sim.exhaustive import ProofReport
from raceproof.sim.proof_plan import estimate, merge, split
from raceproof.sim.reduction import (
    DrawRecord,
    Footprint,
    Shard,
    SleepSetSource,
    branch_options,
    dependent,
    union,
)
from raceproof.sim.state_cache import StateCache, StateCacheMismatch, Visit, compare
from raceproof.sim.world import SleepBlocked

RESOURCES = ("r", "s", "t", "u")
footprints: st.SearchStrategy[Footprint] = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(RESOURCES), st.booleans(), max_size=4)
)
concrete = st.dictionaries(st.sampled_from(RESOURCES), st.booleans(), max_size=4)


# -- footprints ----------------------------------------------------------------------
def _conflict(a: Footprint, b: Footprint) -> bool:
    """The definition: unknown is dependent on all; else a shared resource one of them writes."""
    if a is None or b is None:
        return True
    return any(r in b and (a[r] or b[r]) for r in a)


@given(footprints, footprints)
def test_two_steps_are_dependent_exactly_when_they_share_a_resource_one_writes(
    a: Footprint, b: Footprint
) -> None:
    assert dependent(a, b) == _conflict(a, b) == dependent(b, a)


def test_dependence_in_examples() -> None:
    assert not dependent({"r": False}, {"r": False})  # two reads commute
    assert dependent({"r": True}, {"r": False}) and dependent({"r": False}, {"r": True})
    assert not dependent({"r": True}, {"s": True})
    assert not dependent({"r": True, "s": False}, {"s": False})  # the longer one first
    assert dependent({"s": False}, {"r": True, "s": True, "t": False})
    assert dependent(None, {}) and dependent({}, None)
    assert not dependent({}, {"r": True})


@given(footprints, footprints, footprints)
def test_a_union_is_dependent_on_what_either_part_is(
    a: Footprint, b: Footprint, c: Footprint
) -> None:
    merged = union(a, b)
    if a is None or b is None:
        assert merged is None
        return
    assert merged is not None
    assert set(merged) == set(a) | set(b)
    for resource, write in merged.items():
        assert write == (a.get(resource, False) or b.get(resource, False))
    assert dependent(merged, c) == (dependent(a, c) or dependent(b, c))
    assert a == dict(a)  # the parts are left as they were
    assert union({"r": True}, {"r": False}) == {"r": True} == union({"r": False}, {"r": True})


@given(st.dictionaries(st.sampled_from(("k1", "k2", "k3")), concrete))
def test_a_shard_carries_its_sleep_set_as_sorted_data(sleep: dict[str, Footprint]) -> None:
    frozen = Shard.freeze(sleep)
    assert [key for key, _ in frozen] == sorted(sleep)
    for _, items in frozen:
        assert list(items) == sorted(items)
    assert Shard((0,), frozen).sleep_set() == sleep
    assert hash(Shard((1,), frozen, 1)) == hash(Shard((1,), Shard.freeze(dict(sleep)), 1))
    assert Shard.freeze({"k": None}) == (("k", ()),)


def test_a_shard_defaults_to_the_root() -> None:
    root = Shard(())
    assert (root.prefix, root.sleep, root.depth, root.sleep_set()) == ((), (), 0, {})


# -- branching at a node -------------------------------------------------------------
@st.composite
def records(draw: st.DrawFn) -> tuple[DrawRecord, int, int | None, int | None]:
    n = draw(st.integers(1, 6))
    value = draw(st.integers(0, n - 1))
    keyed = draw(st.booleans())
    keys = tuple(draw(st.sampled_from(("p", "q", "w", "x", None))) for _ in range(n))
    sleep = {k: {"r": True} for k in draw(st.sets(st.sampled_from(("p", "q", "w"))))}
    record = DrawRecord(
        label="schedule" if keyed else "delay",
        n=n,
        value=value,
        keys=keys if keyed else None,
        sleep=sleep,  # type: ignore[arg-type]
        commutes=draw(st.booleans()),
    )
    depth = draw(st.integers(0, 3))
    max_branch = draw(st.one_of(st.none(), st.integers(1, 7)))
    max_deviations = draw(st.one_of(st.none(), st.integers(0, 4)))
    return record, depth, max_branch, max_deviations


@given(records(), st.dictionaries(st.sampled_from(("budget", "steps")), st.integers(0, 5)))
def test_a_node_tries_every_awake_option_within_the_caps(
    drawn: tuple[DrawRecord, int, int | None, int | None], earlier: dict[str, int]
) -> None:
    record, depth, max_branch, max_deviations = drawn
    cut = dict(earlier)
    others, skipped = branch_options(record, depth, max_branch, max_deviations, cut)
    limit = record.n if max_branch is None else min(record.n, max_branch)
    candidates = [v for v in range(limit) if v != record.value]
    if record.keys is None:  # a model-level draw: never reduced
        awake = candidates
    elif record.commutes:  # the rest of the instant commutes: one order is enough
        awake = []
    else:
        awake = [v for v in candidates if record.keys[v] not in record.sleep]
    assert skipped == len(candidates) - len(awake)
    over = max_deviations is not None and depth + 1 > max_deviations
    assert others == ([] if over else awake)
    expected = dict(earlier)
    if limit < record.n:
        expected["max_branch"] = expected.get("max_branch", 0) + record.n - limit
    if over and awake:
        expected["max_deviations"] = expected.get("max_deviations", 0) + len(awake)
    assert cut == expected


def test_branching_in_examples() -> None:
    record = DrawRecord(
        label="schedule", n=4, value=1, keys=("a", "b", "c", "d"), sleep={"c": {"r": True}}
    )
    cut: dict[str, int] = {}
    assert branch_options(record, 0, None, None, cut) == ([0, 3], 1) and cut == {}
    assert branch_options(record, 0, 3, None, cut) == ([0], 1) and cut == {"max_branch": 1}
    assert branch_options(record, 2, None, 2, cut) == ([], 1)
    assert cut == {"max_branch": 1, "max_deviations": 2}
    assert branch_options(record, 1, None, 2, cut) == ([0, 3], 1)  # depth 2 is within the cap
    record.commutes = True
    assert branch_options(record, 0, None, None, {}) == ([], 3)


# -- the sleep-set source, driven by hand --------------------------------------------
def test_the_source_replays_its_prefix_then_takes_the_first_awake_step() -> None:
    source = SleepSetSource((1, 5), {"b": {"r": True}}, reduce=True)
    assert source.schedule_steps(["a", "b"]) == 1  # replayed
    assert not source.tracking and source.draws == []
    assert source.schedule_steps(["a", "b", "c"]) == 0  # 5 is out of range: replayed as 0
    assert source.tracking and source.sleep == {"b": {"r": True}}
    assert [(d.label, d.n, d.value, d.keys) for d in source.draws] == [
        ("schedule", 3, 0, ("a", "b", "c"))
    ]
    source.before_step("a")
    source.after_step("a", {"s": True})  # independent of b's footprint: b sleeps on
    assert source.draws[0].footprint == {"s": True}
    assert source.step_footprints == {1: {"s": True}} and source.step_drew == {1: False}
    assert source.schedule_steps(["b", "c"]) == 1  # b asleep: c
    assert source.draws[-1].sleep == {"b": {"r": True}}
    with pytest.raises(SleepBlocked):
        source.before_step("b")
    source.before_step("c")
    source.after_step("c", {"r": False})  # reads what b writes: b wakes
    assert source.sleep == {}
    assert source.schedule_steps(["b"]) == 0
    assert source.values == [1, 0, 1, 0]


def test_a_source_whose_every_due_step_sleeps_is_cut() -> None:
    source = SleepSetSource((0,), {"b": {"r": True}, "c": {"t": False}, "d": None}, reduce=True)
    source.schedule_steps(["a"])
    source.after_step("a", {"s": False})
    assert set(source.sleep) == {"b", "c"}  # d touches everything: any step wakes it
    with pytest.raises(SleepBlocked):
        source.schedule_steps(["b", "c"])


def test_the_full_walk_records_the_same_draws_but_never_sleeps() -> None:
    source = SleepSetSource((0,), {"b": {"r": True}}, reduce=False)
    source.schedule_steps(["a"])
    source.after_step("a", {})
    assert source.schedule_steps(["b", "c"]) == 0
    source.before_step("b")
    assert source.sleep == {} and source.start_sleep == {}
    assert [d.sleep for d in source.draws] == [{}, {}]


def test_model_level_draws_are_recorded_with_the_step_that_drew_them() -> None:
    source = SleepSetSource((), None, reduce=True)
    assert source.tracking  # no prefix: tracked from the first draw
    assert source.schedule_steps(["a", "b"]) == 0
    source.before_step("a")
    assert source.choose("a.delay", (10, 20, 30)) == 10
    source.after_step("a", {"r": True})
    assert source.step_drew == {0: True} and source.draw_step == {1: 0}
    assert [(d.label, d.n, d.value, d.keys) for d in source.draws] == [
        ("schedule", 2, 0, ("a", "b")),
        ("a.delay", 3, 0, None),
    ]
    source.before_step("b")
    source.after_step("b", {"r": True})
    assert 0 in source.step_drew and source.draw_step == {1: 0}


# -- the walk on models small enough to count ----------------------------------------
ONE_PATH = ((("/a", True),), (("/a", True),))  # two writes of one path: two orders
TWO_PATHS = ((("/a", True),), (("/b", True),))  # two writes of two paths: one class
THREE = ((("/a", True),), (("/a", True),), (("/a", True),))
SAMPLE = (  # reads and writes of three paths: states repeat across orders
    (("/a", True), ("/b", False)),
    (("/b", True), ("/a", True)),
    (("/a", False), ("/c", True)),
)


@pytest.mark.parametrize("scripts", [ONE_PATH, TWO_PATHS, THREE], ids=["one", "two", "three"])
def test_the_full_proof_runs_exactly_the_enumerated_schedules(scripts: tuple) -> None:
    run = runner(Toy(scripts))
    cuts: list[tuple[str, int]] = []
    walked = list(Walk(run, None, None, lambda bound, n: cuts.append((bound, n))))
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
        finals = {final_of(o) for o, _ in Walk(run, None, None, None)}
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
    everything = list(Walk(run, None, None, None))
    cuts: list[tuple[str, int]] = []
    fifo_only = list(Walk(run, 0, None, lambda bound, n: cuts.append((bound, n))))
    assert len(fifo_only) == 1 and fifo_only[0][0].values == [0] * len(fifo_only[0][0].values)
    first = fifo_only[0][0]
    assert cuts == [("max_deviations", c.n - 1) for c in first.choices if c.n > 1]
    cuts.clear()
    narrow = list(Walk(run, None, 1, lambda bound, n: cuts.append((bound, n))))
    assert len(narrow) == 1 < len(everything)
    assert cuts == [("max_branch", c.n - 1) for c in first.choices if c.n > 1]
    assert list(Walk(run, None, 1, None)) != []  # no callback: the cuts are not counted


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
    finals = [final_of(o) for o, _ in Walk(run, None, None, None)]
    report = prove(runner(Toy(ONE_PATH, planted=finals[-1])), budget=Budget(), reduction=False)
    assert report.verdict == "violated" and not report.complete
    assert report.found is not None and report.shrunk is not None
    assert final_of(report.found) == final_of(report.shrunk) == finals[-1]
    assert report.schedules == report.runs  # nothing was cut before it
    assert report.frontier_left == len(finals) - report.runs


# -- the plan: estimate, split, merge ------------------------------------------------
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
    sequential = prove(run, budget=Budget(), reduction=reduction)
    shards, first = split(run, reduction=reduction)
    assert first.runs == 1 and first.schedules == 1 and first.verdict == "ok"
    assert shards and all(s.depth == 1 for s in shards)
    assert len({s.prefix for s in shards}) == len(shards)
    if not reduction:
        assert all(s.sleep == () for s in shards)
    walked = [prove(run, budget=Budget(), reduction=reduction, shard=s) for s in shards]
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
    planted = final_of(next(iter(Walk(runner(Toy(ONE_PATH)), None, None, None)))[0])
    assert fifo.runs == 1
    _, first = split(runner(Toy(ONE_PATH, planted=planted)))
    assert first.verdict == "violated" and first.schedules == 1 and first.found is not None
    _, capped = split(runner(Toy(ONE_PATH)), max_deviations=0, max_branch=1)
    assert capped.pruned.get("max_branch", 0) >= 1 and capped.verdict == "ok"


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
    state_cache_checked=st.integers(0, 5),
    frontier_left=st.integers(0, 5),
    max_deviations_seen=st.integers(0, 4),
    reduction=st.booleans(),
)


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


# -- the state cache -----------------------------------------------------------------
visits = st.lists(
    st.tuples(
        st.sampled_from(["f1", "f2"]), st.frozensets(st.sampled_from("abc")), st.integers(0, 3)
    ),
    max_size=8,
)


@given(visits)
def test_a_state_is_covered_by_an_earlier_visit_with_less_asleep_and_no_more_deviations(
    sequence: list[tuple[str, frozenset[str], int]],
) -> None:
    cache = StateCache()
    remembered: list[tuple[str, frozenset[str], int]] = []
    hits = 0
    for fingerprint, sleep, depth in sequence:
        covering, new = cache.look_up(fingerprint, sleep, depth)
        expected = [
            (s, d) for f, s, d in remembered if f == fingerprint and s <= sleep and d <= depth
        ]
        if expected:
            hits += 1
            assert new is None and covering is not None
            assert (covering.sleep, covering.depth) == expected[0]  # the earliest that covers
        else:
            assert covering is None and new is not None
            assert (new.sleep, new.depth, new.endings) == (sleep, depth, set())
            remembered.append((fingerprint, sleep, depth))
    assert cache.hits == hits
    assert sum(len(v) for v in cache.visits.values()) == len(remembered)


def test_the_debug_mode_compares_the_endings_of_two_visits() -> None:
    first, again = Visit(frozenset(), 0), Visit(frozenset(), 1)
    first.endings |= {("ok", (), ()), ("ok", (("c", "ok"),), ())}
    again.endings |= {("ok", (), ())}
    with pytest.raises(
        StateCacheMismatch,
        match=r"abc.*\(1 endings only after the first visit, "
        r"0 only after the second\)",
    ):
        compare("abc", first, again)
    again.endings |= {("ok", (("c", "ok"),), ())}
    compare("abc", first, again)  # the same endings: nothing to say
    assert StateCache().check is False and StateCache(True).check is True


def test_a_proof_through_the_cache_cuts_repeated_states_and_its_debug_mode_cuts_none() -> None:
    toy = Toy(SAMPLE, state="right")
    plain = prove(runner(Toy(SAMPLE)), budget=Budget(), reduction=False)
    cached = prove(runner(toy), budget=Budget(), reduction=False, state_cache=True)
    assert cached.verdict == plain.verdict == "ok" and cached.complete
    assert cached.state_cache_cuts > 0 and cached.runs == cached.schedules + cached.state_cache_cuts
    assert cached.states_seen > 0 and cached.state_cache_checked == 0
    assert cached.accounting()["state_cache_cuts"] == cached.state_cache_cuts
    checked = prove(
        runner(toy), budget=Budget(), reduction=False, state_cache=True, state_cache_check=True
    )
    assert (checked.runs, checked.schedules) == (plain.runs, plain.schedules)
    # What the cache would have cut, over the whole walk; with no sleep sets (no reduction)
    # every such state is compared with its first visit.
    assert checked.state_cache_cuts >= cached.state_cache_cuts
    assert checked.state_cache_checked == checked.state_cache_cuts > 0


def _finals(toy: Toy, reduction: bool) -> tuple[set[str], int]:
    seen: set[str] = set()
    report = prove(
        lambda source: _seen(runner(toy)(source), seen), budget=Budget(), reduction=reduction
    )
    assert report.complete
    return seen, report.schedules


def _seen(outcome: RunOutcome, seen: set[str]) -> RunOutcome:
    seen.add(final_of(outcome))
    return outcome


@pytest.mark.parametrize(
    "scripts",
    [
        ((("E", True), ("X", True)), (("E", True),)),  # an ephemeral against an expiry
        ((("T", True),), (("K", True),)),  # a timer armed against its cancel
        ((("T", True), ("/c", True)), (("/c", True), ("K", True))),  # a firing writes /c
        ((("/a", True), ("?", True)), (("/b", False), ("/a", False))),  # a drawn path
    ],
    ids=["ephemeral-expiry", "arm-cancel", "firing-write", "drawn-path"],
)
def test_the_reduction_reaches_every_final_state_of_small_session_models(scripts: tuple) -> None:
    """The primitives' footprints (sessions, timers, the store) in fixed small cases."""
    toy = Toy(scripts, sessions=True)
    full, full_count = _finals(toy, reduction=False)
    reduced, reduced_count = _finals(toy, reduction=True)
    assert reduced == full and len(full) > 1
    assert reduced_count <= full_count


def test_a_worker_walks_its_unit_with_the_options_it_was_given() -> None:
    """What a pool worker runs, run here in the test's own process: the root unit, unbounded,
    is the whole walk; a unit stops at its share of runs or of seconds and leaves the rest."""
    from raceproof.sim import proof_units
    from raceproof.sim.exhaustive import WalkOptions

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

    from raceproof.sim import proof_units

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        proof_units._worker_signals()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def test_a_parallel_proof_passes_every_option_to_its_workers() -> None:
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
    checked = prove_parallel(
        run, 2, budget=Budget(), reduction=False, state_cache=True, state_cache_check=True
    )
    assert checked.state_cache_checked > 0
    short = prove_parallel(run, 2, budget=Budget(examples=1), reduction=False)
    assert short.verdict == "inconclusive" and short.pruned.get("budget", 0) > 0
    full = prove(run, budget=Budget(), reduction=False)
    assert counts(prove_parallel(run, 1, budget=Budget(), reduction=False)) == counts(full)
    with pytest.raises(ValueError):
        prove_parallel(run, 0, budget=Budget())


def test_an_estimate_rounds_each_figure_for_its_reader() -> None:
    from raceproof.sim.proof_plan import Estimate

    plan = Estimate(schedules=123.456, samples=3, seconds_per_run=0.123456789, depth_mean=2.36)
    assert plan.seconds == 123.456 * 0.123456789
    assert plan.to_json() == {
        "schedules_estimate": 123,
        "samples": 3,
        "seconds_per_run": 0.123457,
        "seconds_estimate": 15.2,
        "draws_per_run_mean": 2.4,
    }
