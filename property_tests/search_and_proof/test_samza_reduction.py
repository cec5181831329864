"""Samza's footprint declaration is sound: the reduction hides no state and no violation.

``samza-drain`` declares its footprints (``models/samza/model.py`` names every
shared object with ``world.touch``), so its proofs skip orders of commuting
steps. A missed touch would make two dependent steps look independent and
could hide a schedule; these tests would then see the reduced walk reach
fewer final states than the full walk, or a buggy variant come out proven.
On two small configurations (two containers without a restart; one
container restarted mid-drain or not), for every variant, the reduced and the
full walk reach the same set of final states (verdicts, and the history up to
the order of same-instant ops) and both complete; on the proof configuration
every variant expected to be violated is still found with the reduction on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, ChoiceSource, RunOutcome, prove

SCENARIO = get("samza-drain")
# The drain noticed at the monitor's 3 s poll, the liveness bound at 20 s: at most ~2,200
# schedules in the full walk.
TWO_CONTAINERS = dataclasses.replace(
    SCENARIO.prove_config,
    stop_at_ms=(100,),
    monitor_poll_ms=3_000,
    restart=(False,),
    horizon_ms=20_000,
)
# One container, restarted mid-drain (1 s or 3 s in) or not: the incarnation's touches; the
# kill at 2 s, after messages reached the intermediate stream, loses them.
RESTARTED = dataclasses.replace(
    TWO_CONTAINERS, containers=1, restart=(False, True), stop_at_ms=(2_000,)
)
CONFIGS = {"two-containers": TWO_CONTAINERS, "restarted": RESTARTED}


def _final(outcome: RunOutcome) -> tuple[Any, ...]:
    """Verdicts and the history up to the order of ops logged at one instant."""
    verdicts = tuple((v.checker, v.status) for v in outcome.verdicts)
    ops = sorted(
        (op.time_ms, op.actor, op.kind, repr(sorted(op.fields.items())))
        for op in outcome.history.ops
        if op.kind != "run.end"  # it counts steps, which differ between equivalent orders
    )
    return verdicts, tuple(ops)


def _walk(variant: str, config: Any, reduction: bool) -> tuple[set[tuple[Any, ...]], int]:
    run = SCENARIO.runner(variant, config)
    reached: set[tuple[Any, ...]] = set()

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        reached.add(_final(outcome))
        return dataclasses.replace(outcome, status="ok")  # walk on past violations

    report = prove(recording, budget=Budget(examples=50_000), reduction=reduction)
    assert report.complete, report.accounting()
    return reached, report.schedules


def test_the_scenario_declares_its_footprints() -> None:
    assert SCENARIO.declares_footprints


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("variant", sorted(SCENARIO.variants))
def test_reduced_and_full_walks_reach_the_same_final_states(variant: str, config: str) -> None:
    full, full_schedules = _walk(variant, CONFIGS[config], reduction=False)
    reduced, reduced_schedules = _walk(variant, CONFIGS[config], reduction=True)
    assert reduced == full
    assert reduced_schedules <= full_schedules


def test_the_reduction_skips_most_schedules_of_two_containers() -> None:
    """Not a soundness check: that the declaration lets the reduction do its work at all."""
    _, full = _walk("drain", TWO_CONTAINERS, reduction=False)
    _, reduced = _walk("drain", TWO_CONTAINERS, reduction=True)
    assert reduced * 4 <= full, (reduced, full)


@pytest.mark.parametrize("variant", sorted(SCENARIO.expect_violation))
def test_every_buggy_variant_is_found_with_the_reduction(variant: str) -> None:
    report = SCENARIO.prove(variant, Budget(examples=20_000), reduction=True)
    assert report.verdict == "violated", report.accounting()
    assert report.shrunk is not None and report.shrunk.status == "violated"
