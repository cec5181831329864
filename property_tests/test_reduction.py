"""The partial-order reduction never hides a reachable state or violation.

Over randomly generated small models (a few actors, each a script of reads
and writes of store paths): the reduced walk reaches exactly the set of
final states the full walk reaches, and a violation planted on one final
state (reachable only through the interleavings that produce it) is found
with the reduction on. The full depth-first walk runs exactly the schedules
of the breadth-first enumeration the shrinker uses.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.toy_model import Toy, final_of, runner
from raceproof.scenarios.catalogue import all_scenarios
from raceproof.sim import Budget, ChoiceSource, RunOutcome, prove
from raceproof.sim.enumeration import Walk
from raceproof.sim.world import Runner

steps = st.tuples(st.sampled_from(("/a", "/b", "/c", "?")), st.booleans())
# At most 7 steps in all: the full walk stays in the low thousands of runs.
scripts = st.lists(
    st.lists(steps, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
).filter(
    lambda raw: sum(len(s) for s in raw) <= 7 and sum(p == "?" for s in raw for p, _ in s) <= 2
)


def _finals(run: Runner, reduction: bool) -> tuple[set[str], int]:
    seen: set[str] = set()

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        seen.add(final_of(outcome))
        return outcome

    report = prove(recording, budget=Budget(examples=200_000), reduction=reduction)
    assert report.complete, report
    return seen, report.schedules


@settings(max_examples=60, deadline=None)
@given(scripts)
def test_reduced_and_full_walks_reach_the_same_final_states(raw: list[tuple]) -> None:
    toy = Toy(tuple(raw))
    full, full_count = _finals(runner(toy), reduction=False)
    reduced, reduced_count = _finals(runner(toy), reduction=True)
    assert reduced == full
    assert reduced_count <= full_count


@settings(max_examples=60, deadline=None)
@given(scripts, st.integers(0, 10_000))
def test_the_reduction_never_hides_a_planted_violation(raw: list[tuple], pick: int) -> None:
    toy = Toy(tuple(raw))
    reachable = sorted(_finals(runner(toy), reduction=False)[0])
    planted = reachable[pick % len(reachable)]
    report = prove(runner(Toy(tuple(raw), planted=planted)), budget=Budget(examples=200_000))
    assert report.verdict == "violated"
    assert report.shrunk is not None and final_of(report.shrunk) == planted


@settings(max_examples=30, deadline=None)
@given(scripts)
def test_the_full_walk_runs_exactly_the_enumerated_schedules(raw: list[tuple]) -> None:
    run = runner(Toy(tuple(raw)))
    enumerated = {tuple(outcome.values) for outcome, _ in Walk(run, None, None, None)}
    walked: set[tuple[int, ...]] = set()

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        walked.add(tuple(outcome.values))
        return outcome

    report = prove(recording, budget=Budget(examples=200_000), reduction=False)
    assert walked == enumerated and report.schedules == len(enumerated)


def _history_fingerprint(outcome: RunOutcome) -> tuple:  # type: ignore[type-arg]
    """The history up to the order of ops logged at the same instant (what commuting changes)."""
    ops = [
        (op.time_ms, op.actor, op.kind, repr(sorted(op.fields.items())))
        for op in outcome.history.ops
    ]
    return tuple(sorted(ops))


# samza-drain's proof configuration is ~99,000 schedules in the full walk: its equivalence
# test runs on small configurations of its own (property_tests/test_samza_reduction.py).
OWN_SMALL_CONFIGS = {"samza-drain"}
DECLARED = [
    (s, v)
    for s in all_scenarios()
    if s.declares_footprints and s.name not in OWN_SMALL_CONFIGS
    for v in s.variants
]


def test_some_scenario_declares_its_footprints() -> None:
    assert DECLARED


@pytest.mark.parametrize(
    ("scenario", "variant"), DECLARED, ids=[f"{s.name}/{v}" for s, v in DECLARED]
)
def test_reduced_and_full_walks_agree_on_every_declared_scenario(scenario, variant) -> None:  # type: ignore[no-untyped-def]
    run = scenario.runner(variant, scenario.prove_config)
    reached: dict[bool, set[tuple]] = {True: set(), False: set()}  # type: ignore[type-arg]

    for reduction in (True, False):

        def recording(source: ChoiceSource, reduction: bool = reduction) -> RunOutcome:
            outcome = run(source)
            verdicts = tuple((v.checker, v.status) for v in outcome.verdicts)
            reached[reduction].add((verdicts, _history_fingerprint(outcome)))
            return dataclasses.replace(outcome, status="ok")  # walk on past violations

        report = prove(recording, budget=Budget(examples=200_000), reduction=reduction)
        assert report.complete
    assert reached[True] == reached[False]
