"""Every scenario of the catalogue, every variant: prove must agree with what is expected.

A buggy variant must never come out proven: bounded exhaustive exploration
is required to find its violation; a fixed variant must be proven complete.
"""

from __future__ import annotations

import pytest

from raceproof.scenarios.catalogue import Scenario, all_scenarios
from raceproof.sim import Budget, ReplaySource, decode_blob

CASES = [(s, v) for s in all_scenarios() for v in s.variants]


@pytest.mark.parametrize(("scenario", "variant"), CASES, ids=[f"{s.name}/{v}" for s, v in CASES])
def test_prove_agrees_with_the_catalogue(scenario: Scenario, variant: str) -> None:
    report = scenario.prove(variant, Budget(examples=1_000_000))
    if variant in scenario.expect_violation:
        assert report.verdict == "violated", f"{scenario.name}/{variant} came out {report.verdict}"
        assert report.shrunk is not None and report.shrunk.violation is not None
    else:
        assert report.verdict == "ok", (
            f"{scenario.name}/{variant}: {report.verdict} {report.pruned}"
        )
        assert report.complete and report.schedules > 1


def test_report_timelines_replay_to_a_violation() -> None:
    for scenario in all_scenarios():
        if scenario.report_timeline is None:
            continue
        assert scenario.report_variant in scenario.expect_violation, scenario.name
        run = scenario.runner(scenario.report_variant, scenario.config)
        outcome = run(ReplaySource(decode_blob(scenario.report_timeline), strict=True))
        assert outcome.status == "violated", (
            f"{scenario.name}: the report's timeline did not violate"
        )
