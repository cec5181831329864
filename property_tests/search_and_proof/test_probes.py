"""Race-window probes mark the window, on the search side and in ``raceproof list`` (issue 33, item 6).

A probe (``world.reach``) turns an ``ok`` that never opened the race window into
``not-reached``, so it proves something only where the window really opens: a
probe every run reaches says nothing. ``test_catalogue`` pins the proof side
(a buggy variant's proof finds its violation through a probe; every probe a fix
is judged by is reached by some schedules of its proof and missed by others).
Here the search side: the violation each strategy of the gate finds for every
buggy variant (as found and as shrunk) passed through one of the probes the
variant is judged by. ``raceproof list`` shows each scenario's probes and the variants that declare one unreachable.
Brooklin's buggy searches are asserted so in ``test_brooklin.py``, which makes the same three searches.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from raceproof.cli.main import main
from raceproof.models.brooklin.model import (
    STALE_MARK_WINDOW,
    STOP_AGAIN_WINDOW,
    WRITE_CONFLICT_WINDOW,
)
from raceproof.models.kafka_streams.state_dir import DELETE_WINDOW
from raceproof.models.samza.model import (
    ASYNC_COMMIT_WINDOW,
    DRAIN_WINDOW,
    EARLY_DRAIN_WINDOW,
    PANE_WINDOW,
)
from raceproof.scenarios.catalogue import (
    ORIGINS,
    RegistrationError,
    Scenario,
    all_scenarios,
    get,
    register,
)
from raceproof.sim import Budget, explore
from raceproof.sim.verdicts import Verdict

BUILTIN = [s for s in all_scenarios() if ORIGINS.get(s.name) == "builtin"]
# A variant found by proof alone is pinned by test_catalogue's proof, not searched here.
# brooklin-double-stop/buggy's three searches (the same: seed 0, 2,000 examples, 17 CPU s) are
# test_brooklin's test_search_finds_the_lost_resume_from_scratch, which asserts the probe too.
SEARCHED_IN_TEST_BROOKLIN = ("brooklin-double-stop", "buggy")
BUGGY = [
    (s, v)
    for s in BUILTIN
    for v in s.variants
    if v in s.expect_violation and v not in s.found_by_proof
    if (s.name, v) != SEARCHED_IN_TEST_BROOKLIN
]
STRATEGIES = ("random", "pct", "hypothesis")


@pytest.mark.parametrize(("scenario", "variant"), BUGGY, ids=[f"{s.name}/{v}" for s, v in BUGGY])
def test_every_violation_a_search_finds_passed_through_a_probe(
    scenario: Scenario, variant: str
) -> None:
    judged = scenario.probes_for(variant)
    for strategy in STRATEGIES:
        # The gate's ci profile: seed 0, examples only (raceproof.gate.expectations).
        report = explore(
            scenario.runner(variant, scenario.config),
            strategy,
            0,
            Budget(scenario.default_examples),
        )
        assert report.verdict == Verdict.VIOLATED, f"{scenario.name}/{variant} {strategy}"
        assert report.found is not None and report.shrunk is not None
        for outcome in (report.found, report.shrunk):
            reached = {name for name in outcome.probes if name in scenario.probes}
            if judged:
                assert reached & set(judged), (
                    f"{scenario.name}/{variant} {strategy}: its violation reached none of {judged}"
                )
            else:
                assert not reached


def test_every_builtin_scenario_declares_a_probe_and_each_is_placed_in_the_model() -> None:
    placed = {
        "brooklin-double-stop": {STALE_MARK_WINDOW, WRITE_CONFLICT_WINDOW},
        "brooklin-redundant-stop": {STOP_AGAIN_WINDOW},
        "streams-checkpoint-resurrection": {DELETE_WINDOW},
        "samza-drain": {DRAIN_WINDOW, PANE_WINDOW, ASYNC_COMMIT_WINDOW, EARLY_DRAIN_WINDOW},
    }
    for scenario in BUILTIN:
        assert scenario.probes, scenario.name
        if scenario.name in placed:
            assert set(scenario.probes) == placed[scenario.name]


def test_list_shows_each_scenarios_probes_and_its_declared_unreachable_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    samza = out[out.index("samza-drain:") :]
    for name in (DRAIN_WINDOW, PANE_WINDOW, ASYNC_COMMIT_WINDOW, EARLY_DRAIN_WINDOW):
        assert f"    probe: {name}\n        unreachable on kill: " in samza
    brooklin = out[out.index("brooklin-double-stop:") : out.index("brooklin-redundant-stop:")]
    for name in (STALE_MARK_WINDOW, WRITE_CONFLICT_WINDOW):  # the lost resume's two windows
        assert brooklin.count(f"probe: {name}\n        unreachable on fix-stop-dedupe: ") == 1
    assert f"probe: {STOP_AGAIN_WINDOW}" not in brooklin  # a precondition, not the window
    for variant in ("fix-zk-lookup", "fix-conditional-write"):  # judged by both
        assert f"        unreachable on {variant}: " not in brooklin
    assert main(["list", "--json"]) == 0
    listed = {s["scenario"]: s for s in json.loads(capsys.readouterr().out)["scenarios"]}
    samza_probes = [DRAIN_WINDOW, PANE_WINDOW, ASYNC_COMMIT_WINDOW, EARLY_DRAIN_WINDOW]
    assert listed["samza-drain"]["probes"] == samza_probes
    assert set(listed["samza-drain"]["unreachable_probes"]["kill"]) == set(samza_probes)


def test_a_variant_found_by_proof_is_judged_by_its_proof_alone() -> None:
    from raceproof.gate import expectations as gate

    scenario = get("brooklin-double-stop")
    jobs = gate.jobs_for([scenario], gate.PROFILES["ci"])
    kinds = {v: sorted(j.kind for j in jobs if j.variant == v) for v in scenario.variants}
    assert kinds["fix-zk-lookup"] == ["prove"]
    assert kinds["buggy"] == sorted(gate.PROFILES["ci"].strategies)
    assert kinds["fix-conditional-write"] == sorted([*gate.PROFILES["ci"].strategies, "prove"])
    with pytest.raises(RegistrationError, match="found_by_proof"):
        register(
            dataclasses.replace(
                scenario, name="double-stop-bad", found_by_proof=frozenset({"fix-stop-dedupe"})
            )
        )
