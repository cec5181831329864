"""The gate's searches cut into parts: the merged check is the unsplit search, on any ``-j``.

``raceproof.gate.parts`` cuts each search of ``check`` into fixed parts. For
random, PCT and swarm a part runs the very examples of the unsplit search
(each example its own seeded draw), so the merge must give the unsplit
search's verdict, count, probes and shrunk finding; Hypothesis runs in seeded
chunks of 100, so a part of 200 is two of them. Cheap faithful forms: every
built-in scenario and variant with parts of a few examples (many merges per
check), Hypothesis on two scenarios with the real part size, and ``check
--json`` on one scenario on ``-j 1`` and ``-j 2``. A search's parts after
its finding are dropped (``GatePlan.ended``): the check is the one every
part gives, whichever later parts ran and in whatever order they ended.
Two scenarios that make the same runs (one model, other checkers) make them
once; each check is still the one its scenario gives alone.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.gate import expectations as gate
from raceproof.gate import parts
from raceproof.scenarios.catalogue import (
    CATALOGUE,
    Scenario,
    all_scenarios,
    get,
    same_proof,
    same_runs,
)
from raceproof.sim import Budget, explore
from raceproof.sim.explore import SearchReport


def _fields(report: SearchReport) -> tuple[object, ...]:
    return (
        report.verdict,
        report.examples,
        report.inconclusive_runs,
        report.probes,
        report.undecided_by,
        report.notes,
        None if report.shrunk is None else report.shrunk.trace_hash,
        None if report.found is None else report.found.values,
    )


def _in_parts(name: str, variant: str, strategy: str, examples: int, size: int) -> SearchReport:
    scenario = get(name)
    run = scenario.runner(variant, scenario.config)
    reports = [
        explore(run, strategy, 0, Budget(min(size, examples - start)), start=start)
        for start in range(0, examples, size)
    ]
    return parts.merge_search(reports)


SEARCHES = [
    (s.name, v, strategy)
    for s in all_scenarios()
    for v in s.variants
    for strategy in ("random", "pct", "swarm")
]


@pytest.mark.parametrize(("name", "variant", "strategy"), SEARCHES)
def test_a_search_in_parts_is_the_unsplit_search(name: str, variant: str, strategy: str) -> None:
    scenario = get(name)
    whole = explore(scenario.runner(variant, scenario.config), strategy, 0, Budget(12))
    assert _fields(_in_parts(name, variant, strategy, 12, 5)) == _fields(whole)


@pytest.mark.parametrize(
    ("name", "variant"), [("lost-update", "buggy"), ("lost-update", "fix-cas")]
)
def test_a_hypothesis_search_in_parts_of_two_seeded_runs_is_the_unsplit_search(
    name: str, variant: str
) -> None:
    scenario = get(name)
    whole = explore(scenario.runner(variant, scenario.config), "hypothesis", 0, Budget(450))
    split = _in_parts(name, variant, "hypothesis", 450, parts.PART_EXAMPLES)
    assert _fields(split) == _fields(whole)


def test_the_parts_of_a_check_depend_on_its_example_count_alone() -> None:
    plan = parts.parts_for([get("lost-update")], gate.PROFILES["ci"], examples=450)
    searches = [p for p in plan if p.kind != "prove"]
    assert {(p.start, p.examples) for p in searches} == {(0, 200), (200, 200), (400, 50)}
    assert all(p.parts == 3 and p.seed == 0 for p in searches)
    assert [p.kind for p in plan].count("prove") == 1  # fix-cas, expected to hold
    dev = parts.parts_for([get("lost-update")], gate.PROFILES["dev"], examples=450)
    assert all(p.parts == 1 and p.examples == 450 for p in dev if p.kind != "prove")  # not split


RACEPROOF = shutil.which("raceproof") or str(Path(sys.executable).parent / "raceproof")


def _check(*args: str) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        [RACEPROOF, "check", "lost-update", "--examples", "450", "--json", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for row in result["results"]:
        row.pop("seconds")
    result.pop("seconds")
    return result


def test_check_json_is_the_same_on_one_and_two_processes() -> None:
    one, two = _check(), _check("-j", "2")
    assert one == two
    searches = [r for r in one["results"] if r["kind"] != "prove"]
    assert {r["verdict"] for r in searches} == {"violated", "ok"}
    assert any(r["examples"] == 450 for r in searches)  # ok@450: every part ran


def test_the_check_plan_figure_is_the_cpu_work_over_a_greedy_schedule() -> None:
    def part(index: int, cpu: float) -> parts.PartResult:
        return parts.PartResult(
            parts.Part(
                scenario="s",
                variant="v",
                kind="random",
                seed=0,
                start=index,
                examples=1,
                index=index,
                parts=4,
            ),
            cpu,
            cpu,
        )

    done = [part(0, 4.0), part(1, 1.0), part(2, 1.0), part(3, 2.0)]
    two = parts.plan_figure(done, 2)
    assert two["makespan_s"] == 4.0 and two["speedup_allowed"] == 2.0  # 4 | 1+1+2
    sixteen = parts.plan_figure(done, 16)
    assert sixteen["speedup_allowed"] == 2.0 and sixteen["longest_part"]["cpu_s"] == 4.0


def _in_units(name: str, variant: str) -> parts.PartResult:
    """A proof check as ``check`` runs it: its units one after the other (``-j 1``)."""
    profile = gate.PROFILES["ci"]
    plan = parts.GatePlan([parts.Part(name, variant, "prove")], profile, None)
    finished = []
    while (task := plan.next()) is not None:
        outcome = parts.run_task(task, profile, None)
        assert isinstance(outcome, parts.UnitDone)  # a proof of the ci profile is cut
        result = plan.take(outcome)
        finished += [] if result is None else [result]
    (result,) = finished
    return result


@pytest.mark.parametrize(
    ("name", "variant", "verdict"),
    [
        ("lost-update", "fix-cas", "ok"),
        ("streams-checkpoint-resurrection", "fix-load-after-lock", "ok"),
        (
            "streams-checkpoint-resurrection",
            "fix-standby-running",
            "violated",
        ),  # a fix found violated
    ],
)
def test_a_proof_check_in_units_is_the_whole_proofs_check(
    name: str, variant: str, verdict: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verdict, counts, probes, notes and counterexample of the whole proof. A violated
    proof in units (here one the gate would walk whole, cut as a fix would be) gives the
    whole proof's check: what its units counted depends on the order they ended in."""
    monkeypatch.setattr(parts, "splits", lambda part, profile: True)
    result = _in_units(name, variant)
    assert result.check is not None and len(result.units) > 1
    whole = gate.run_prove(name, variant, gate.PROFILES["ci"]).to_json()
    split = result.check.to_json()
    whole.pop("seconds"), split.pop("seconds")
    assert split["verdict"] == verdict and split == whole


def test_only_a_proof_expected_to_hold_is_cut_into_units() -> None:
    ci, dev = gate.PROFILES["ci"], gate.PROFILES["dev"]
    holds = parts.Part("brooklin-double-stop", "fix-conditional-write", "prove")
    violates = parts.Part("brooklin-double-stop", "fix-zk-lookup", "prove")  # found by proof
    assert parts.splits(holds, ci) and not parts.splits(violates, ci)
    assert not parts.splits(holds, dev)  # a proof budget in seconds: walked whole
    plan = parts.GatePlan([violates, holds], ci, None)
    first = plan.next()
    assert isinstance(first, parts.UnitTask) and first.part == holds  # units go first
    assert plan.next() == violates


def test_the_check_plan_figure_waits_for_the_unit_a_unit_was_cut_from() -> None:
    def done(kind: str, cpu: float, units: list[tuple[tuple[int, ...], float]]) -> parts.PartResult:
        return parts.PartResult(parts.Part("s", kind, kind), cpu, cpu, units=units)

    proof = done("prove", 7.0, [((), 1.0), ((0,), 2.0), ((1,), 2.0), ((0, 0), 2.0)])
    search = done("random", 3.0, [])
    figure = parts.plan_figure([search, proof], 16)
    # The chain root -> 0 -> 0.0 is 5 CPU s; the search runs beside it.
    assert figure["parts"] == 5 and figure["cpu_s"] == 10.0 and figure["makespan_s"] == 5.0
    assert figure["longest_part"] == {"check": "s / random / random", "part": "1/1", "cpu_s": 3.0}
    one = parts.plan_figure([search, proof], 1)
    assert one["makespan_s"] == 10.0 and one["speedup_allowed"] == 1.0


CI = gate.PROFILES["ci"]


def _run_plan(plan: list[parts.Part], *, drop: bool) -> list[parts.PartResult]:
    """The plan's parts as ``check -j 1`` runs them, dropping a search's parts after its
    finding (``drop``) or not."""
    gate_plan = parts.GatePlan(plan, CI, None)
    done: list[parts.PartResult] = []
    while (task := gate_plan.next()) is not None:
        outcome = parts.run_task(task, CI, None)
        finished = gate_plan.take(outcome) if isinstance(outcome, parts.UnitDone) else outcome
        for result in [finished, *finished.twins] if finished is not None else []:
            done.append(result)
            if drop:
                gate_plan.ended(result)
    return done


def _checks(done: list[parts.PartResult]) -> list[dict]:  # type: ignore[type-arg]
    rows = [r.to_json() for r in parts.results_of(done, CI, None)]
    for row in rows:
        row.pop("seconds")
    return rows


@pytest.fixture(scope="module")
def every_part(tmp_path_factory: pytest.TempPathFactory) -> list[parts.PartResult]:
    """lost-update's check cut into parts of 3 examples, every part run (nothing dropped)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parts, "PART_EXAMPLES", 3)
        return _run_plan(parts.parts_for([get("lost-update")], CI, examples=12), drop=False)


def test_a_search_stops_at_the_part_that_found_with_the_check_every_part_gives(
    every_part: list[parts.PartResult],
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parts, "PART_EXAMPLES", 3)
        plan = parts.parts_for([get("lost-update")], CI, examples=12)
        dropped = _run_plan(plan, drop=True)
    buggy = [r for r in dropped if r.part.variant == "buggy"]
    assert buggy and all(r.part.index == 0 for r in buggy)  # found in the first part: no other
    assert len([r for r in every_part if r.part.variant == "buggy"]) == 3 * 4
    fix = [r for r in dropped if r.part.variant == "fix-cas" and r.search is not None]
    assert len(fix) == 3 * 4  # nothing found: every part ran
    assert _checks(dropped) == _checks(every_part)
    assert {row["verdict"] for row in _checks(dropped)} == {"violated", "ok"}


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_merge_reads_the_parts_up_to_the_finding_whatever_else_ran(
    every_part: list[parts.PartResult], data: st.DataObject
) -> None:
    """Any later parts (in flight on ``-j N`` when the finding came), in any order: the same
    checks; a check missing one of the parts up to its finding is not a check yet."""
    keep = [r for r in every_part if r.part.variant != "buggy" or r.part.index == 0]
    later = [r for r in every_part if r.part.variant == "buggy" and r.part.index > 0]
    ran = keep + data.draw(st.lists(st.sampled_from(later), unique_by=id), label="later parts")
    order = data.draw(st.permutations(ran), label="order")
    assert _checks(order) == _checks(every_part)
    missing = data.draw(st.sampled_from([r for r in keep if r.search is not None]), label="lost")
    partial = _checks([r for r in order if r is not missing])
    lost = (missing.part.scenario, missing.part.variant, missing.part.kind)
    assert all((row["scenario"], row["variant"], row["kind"]) != lost for row in partial)
    assert len(partial) == len(_checks(every_part)) - 1


# -- scenarios that make the same runs --------------------------------------------------------
def test_same_runs_pairs_one_model_judged_by_other_checkers() -> None:
    double, redundant = get("brooklin-double-stop"), get("brooklin-redundant-stop")
    assert all(same_runs(double, redundant, v) for v in double.variants)
    assert not same_runs(double, double, "buggy")
    assert not same_runs(get("lost-update"), get("samza-drain"), "buggy")
    longer = dataclasses.replace(redundant.bounds, max_steps=redundant.bounds.max_steps + 1)
    assert not same_runs(double, dataclasses.replace(redundant, bounds=longer), "buggy")
    # A run refuses a probe a typo away from a declared one: no twins across such a pair.
    typo = dataclasses.replace(redundant, probes=(double.probes[0] + "s",))
    assert not same_runs(double, typo, "buggy")


TWINS = ["brooklin-double-stop", "brooklin-redundant-stop"]
# Both hold on fix-stop-dedupe (the runs shared); on fix-conditional-write only double-stop
# does (each searched alone from redundant-stop's first violation on).
TWIN_VARIANTS = ("fix-stop-dedupe", "fix-conditional-write")


def _searches(names: list[str]) -> list[parts.Part]:
    plan = parts.parts_for([get(n) for n in names], CI, examples=40)
    return [p for p in plan if p.kind != "prove" and p.variant in TWIN_VARIANTS]


def _by_check(done: list[parts.PartResult]) -> list[dict]:  # type: ignore[type-arg]
    return sorted(_checks(done), key=lambda row: (row["scenario"], row["variant"], row["kind"]))


def test_twins_make_their_runs_once_and_each_check_is_the_one_it_gives_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """brooklin-redundant-stop rides on brooklin-double-stop's parts: where neither checker
    fails (fix-stop-dedupe) the runs are made once; where one fails (fix-conditional-write,
    redundant-stop's finding its own) each is searched alone. Either way, every check is the
    one each scenario's own gate gives."""
    searched: list[int] = []  # the runs each search made (a shared one stops at its first not ok)
    explore_once = parts.explore

    def counted(run, *args, **kwargs):  # type: ignore[no-untyped-def]
        def run_counted(source):  # type: ignore[no-untyped-def]
            searched.append(1)
            return run(source)

        return explore_once(run_counted, *args, **kwargs)

    monkeypatch.setattr(parts, "explore", counted)
    plan = _searches(TWINS)
    hosts = parts.GatePlan(plan, CI, None).parts
    riders = [t for p in hosts for t in p.twins]
    assert {t.scenario for t in riders} == {TWINS[1]} and len(hosts) + len(riders) == len(plan)
    together = _run_plan(plan, drop=True)
    shared = len(searched)
    alone = [r for name in TWINS for r in _run_plan(_searches([name]), drop=True)]
    assert _by_check(together) == _by_check(alone)
    assert shared < len(searched) - shared  # fix-stop-dedupe's three searches made once
    verdicts = {(r["scenario"], r["variant"]): r["verdict"] for r in _checks(together)}
    holds = {"ok", "not-reached"}  # 40 examples may reach no probe: judged per scenario
    assert {verdicts[name, "fix-stop-dedupe"] for name in TWINS} <= holds
    assert verdicts[TWINS[1], "fix-conditional-write"] == "violated"
    assert verdicts[TWINS[0], "fix-conditional-write"] in holds


# -- proofs of the same schedules --------------------------------------------------------------
# Brooklin's proof configuration with one value for three of its delays: fix-stop-dedupe's
# proof is 64 classes (0.5 CPU s), and fix-conditional-write's finds redundant-stop's violation.
SMALL = {"leader_notify_ms": (0,), "task_stop_ms": (500,), "resume_think_ms": (0,)}


def _small(name: str, **fields: object) -> Scenario:
    base = get(name)
    config = dataclasses.replace(base.prove_config, **SMALL)
    return dataclasses.replace(base, name=f"{name}-small", prove_config=config, **fields)


def test_same_proof_pairs_the_proofs_of_one_model_on_one_proof_configuration() -> None:
    double, redundant = get("brooklin-double-stop"), get("brooklin-redundant-stop")
    assert all(same_proof(double, redundant, v) for v in double.variants)
    assert not same_proof(double, _small("brooklin-redundant-stop"), "fix-stop-dedupe")
    assert same_proof(_small("brooklin-double-stop"), _small("brooklin-redundant-stop"), "buggy")
    capped = dataclasses.replace(redundant, prove_max_deviations=3)
    assert same_runs(double, capped, "buggy") and not same_proof(double, capped, "buggy")


def _proofs(names: list[str], variant: str) -> list[parts.Part]:
    plan = parts.parts_for([get(n) for n in names], CI, examples=20)
    return [p for p in plan if p.kind == "prove" and p.variant == variant]


@pytest.mark.parametrize("variant", ["fix-stop-dedupe", "fix-conditional-write"])
def test_twin_proofs_walk_once_and_each_check_is_the_one_it_gives_alone(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two proofs of the same schedules, both expected to hold, walk their units once,
    judged by both scenarios' checkers. On fix-stop-dedupe both hold; on
    fix-conditional-write redundant-stop's checker fails (here it is expected to hold, so
    its proof is walked in units), and each scenario's proof is walked alone. Either way,
    every check is the one each scenario's own gate gives."""
    twins = [
        _small("brooklin-double-stop"),
        _small("brooklin-redundant-stop", expect_violation=frozenset()),
    ]
    for twin in twins:
        monkeypatch.setitem(CATALOGUE, twin.name, twin)
    names = [t.name for t in twins]
    walked: list[int] = []
    walk_unit = parts.walk_unit

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        walked.append(1)
        return walk_unit(*args, **kwargs)

    monkeypatch.setattr(parts, "walk_unit", counted)
    plan = _proofs(names, variant)
    (proof,) = parts.GatePlan(plan, CI, None).proofs
    assert [t.scenario for t in proof.part.twins] == names[1:]
    together = _run_plan(plan, drop=True)
    shared = len(walked)
    alone = [r for name in names for r in _run_plan(_proofs([name], variant), drop=True)]
    assert _by_check(together) == _by_check(alone)
    verdicts = {r["scenario"]: r["verdict"] for r in _checks(together)}
    if variant == "fix-stop-dedupe":
        assert verdicts == dict.fromkeys(names, "ok")
        assert shared * 2 == len(walked) - shared  # the units of one walk, not two
    else:  # the shared walk's finding: each proof walked whole, alone
        assert verdicts[names[1]] == "violated" and verdicts[names[0]] != "violated"
