"""The partial-order reduction never hides a reachable state or violation.

Over randomly generated small models (a few actors, each a script of reads
and writes of store paths, and with ``sessions`` of ephemeral creates,
session expiries and timers armed and cancelled): the reduced walk reaches exactly the set of
final states the full walk reaches, and a violation planted on one final
state (reachable only through the interleavings that produce it) is found
with the reduction on. The full depth-first walk runs exactly the schedules
of the breadth-first enumeration the shrinker uses.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.toy_model import Toy, final_of, runner
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


session_steps = st.tuples(st.sampled_from(("/a", "/c", "E", "X", "T", "K")), st.booleans())
session_scripts = st.lists(
    st.lists(session_steps, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
).filter(lambda raw: sum(len(s) for s in raw) <= 6)


@settings(max_examples=40, deadline=None)
@given(session_scripts)
def test_sessions_and_timers_keep_the_reduced_walk_exact(raw: list[tuple]) -> None:
    """ZkClient (ephemerals die with an expired session) and Timers record their footprints."""
    toy = Toy(tuple(raw), sessions=True)
    full, full_count = _finals(runner(toy), reduction=False)
    reduced, reduced_count = _finals(runner(toy), reduction=True)
    assert reduced == full
    assert reduced_count <= full_count


@settings(max_examples=40, deadline=None)
@given(session_scripts, st.integers(0, 10_000))
def test_the_reduction_never_hides_a_violation_planted_among_sessions(
    raw: list[tuple], pick: int
) -> None:
    toy = Toy(tuple(raw), sessions=True)
    reachable = sorted(_finals(runner(toy), reduction=False)[0])
    planted = reachable[pick % len(reachable)]
    report = prove(
        runner(dataclasses.replace(toy, planted=planted)), budget=Budget(examples=200_000)
    )
    assert report.verdict == "violated"
    assert report.shrunk is not None and final_of(report.shrunk) == planted


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
