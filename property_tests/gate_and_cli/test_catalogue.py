"""Every scenario of the catalogue, every variant: prove must agree with what is expected.

A buggy variant must never come out proven: bounded exhaustive exploration
is required to find its violation; a fixed variant must be proven complete.
The same proofs pin the race-window probes both ways (issue 33, item 6): the
violation a buggy variant's proof finds, and its shrunk form, passed through
one of the scenario's probes; every probe a fix is judged by is reached by
some schedule of its proof and missed by another (a probe every schedule
reaches says nothing about the window), and a probe the fix declares
unreachable is reached by none. The proof of a variant expected to hold runs
with ``check_footprints`` (issue 33: every built-in proof configuration checks
its footprints in the suite), so a model's own footprint slip anywhere in the
whole walk fails here, not only in its first runs.

Two scenarios of one model (the same build, proof configuration and bounds:
``brooklin-double-stop`` and ``brooklin-redundant-stop``, another checker) walk
the same schedules; where both expect a variant to hold, one walk judges it by
both scenarios' checkers and probes (``JUDGED_TOGETHER``) instead of two.
"""

from __future__ import annotations

import pytest

from raceproof.scenarios.catalogue import (
    Scenario,
    all_scenarios,
    get,
    judged_together,
    same_runs,
)
from raceproof.sim import Budget, ProofReport, ReplaySource, RunOutcome, decode_blob
from raceproof.sim.verdicts import Verdict

# brooklin-redundant-stop is brooklin-double-stop's model under another checker: its fix-stop-dedupe
# proof is the same 4,096 classes (60 CPU s with its footprints checked, as long as double-stop's).
# Both hold there, so one walk with both scenarios' checkers and probes judges both: a violation
# of either checker fails it, and each scenario's probes are counted on the same schedules.
JUDGED_TOGETHER = {("brooklin-redundant-stop", "fix-stop-dedupe"): "brooklin-double-stop"}


def together(scenario: Scenario, variant: str) -> Scenario:
    """``scenario`` with the checkers and probes of the scenarios judged on its walk of ``variant``."""
    others = [
        get(n) for (n, v), host in JUDGED_TOGETHER.items() if (host, v) == (scenario.name, variant)
    ]
    if not others:
        return scenario
    for other in others:
        same = ("prove_config", "prove_max_deviations", "prove_max_branch")  # and same_runs'
        assert same_runs(scenario, other, variant), other.name
        assert all(getattr(other, f) == getattr(scenario, f) for f in same), other.name
        assert variant not in other.expect_violation | scenario.expect_violation
    scenario = judged_together(scenario, others)
    return scenario


# The catalogue's largest proof's runs, pinned here where it is walked anyway, as ``prove``
# walks it by default: with the state cache (test_proof_units' plan test pins the stateless
# runs of two other proofs of a thousand runs). With its footprints checked, every awake
# option is branched (the stateless walk: 4,748 runs; 4,084, one per class, unchecked).
PINNED_RUNS = {("brooklin-double-stop+brooklin-redundant-stop", "fix-stop-dedupe"): 1991}

CASES = [(s, v) for s in all_scenarios() for v in s.variants if (s.name, v) not in JUDGED_TOGETHER]


@pytest.mark.parametrize(
    ("scenario", "variant"), CASES, ids=[f"{together(s, v).name}/{v}" for s, v in CASES]
)
def test_prove_agrees_with_the_catalogue(scenario: Scenario, variant: str) -> None:
    scenario = together(scenario, variant)
    holds = variant not in scenario.expect_violation
    report = scenario.prove(variant, Budget(examples=1_000_000), check_footprints=holds)
    if not holds:
        assert report.verdict == Verdict.VIOLATED, (
            f"{scenario.name}/{variant} came out {report.verdict}"
        )
        assert report.shrunk is not None and report.shrunk.violation is not None
        assert report.found is not None
        for outcome in (report.found, report.shrunk):
            assert_violation_passed_a_probe(scenario, variant, outcome)
    else:
        assert report.verdict == Verdict.OK, (
            f"{scenario.name}/{variant}: {report.verdict} {report.pruned}"
        )
        assert report.complete and report.schedules > 1
        if (scenario.name, variant) in PINNED_RUNS:
            assert report.runs == PINNED_RUNS[scenario.name, variant]
        assert_footprints_checked_whole(scenario, variant, report)
        assert_probes_mark_the_window(scenario, variant, report)


def assert_footprints_checked_whole(scenario: Scenario, variant: str, report: ProofReport) -> None:
    """The whole walk's commuting step pairs were swapped and compared, none left unfollowed.

    No counts are pinned (the lead's changes to the check change them). lost-update's
    proof takes no step pair as commuting: every step of its two clients touches the one
    counter node and its observer waits through all_of (touches everything), so it
    checks none; every other holding proof checks some.
    """
    where = f"{scenario.name}/{variant}: "
    assert report.footprints_checked is not None, where + "the footprints were not checked"
    assert report.footprints_unverified == 0, (
        where + f"{report.footprints_unverified} step pairs could not be followed"
    )
    if scenario.name != "lost-update":
        assert report.footprints_checked > 0, where + "no commuting step pair was checked"


def assert_violation_passed_a_probe(scenario: Scenario, variant: str, found: RunOutcome) -> None:
    """A violation of ``variant`` reached one of the probes it is judged by (if it has any)."""
    judged = scenario.probes_for(variant)
    reached = sorted(name for name in found.probes if name in scenario.probes)
    if judged:
        assert set(reached) & set(judged), (
            f"{scenario.name}/{variant}: a violation reached none of the probes {judged}"
        )
    else:  # every probe declared unreachable on it (the status quo that never drains)
        assert not reached, f"{scenario.name}/{variant} reached declared-unreachable {reached}"


def assert_probes_mark_the_window(scenario: Scenario, variant: str, report: ProofReport) -> None:
    """Each judged probe: some schedules reach it, some do not; declared-unreachable: none."""
    exempt = scenario.unreachable_probes.get(variant, {})
    for name in scenario.probes:
        count = report.probes.get(name, 0)
        where = f"{scenario.name}/{variant}: probe {name!r} reached by {count} of "
        where += f"{report.schedules} schedules"
        if name in exempt:
            assert count == 0, where + " though declared unreachable"
        else:
            assert 0 < count < report.schedules, where


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
