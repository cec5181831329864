"""Samza drain: kill loses data, drain does not, and each implementation mistake is caught."""

from __future__ import annotations

import json

import pytest

from raceproof.scenarios.catalogue import get
from raceproof.scenarios.cli import main
from raceproof.sim import Budget, KeyedReplaySource, ReplaySource, explore

SCENARIO = get("samza-drain")
CAUGHT_BY = {
    "kill": "drain-completeness",
    "no-shuffle-aggregation": "drain-aggregation",
    "accept-stale-run-id": "run-isolation",
    "async-commit-during-drain": "commit-discipline",
    "stop-intermediate-consumers": "drain-liveness",
    "drain-before-consumers-start-stuck": "drain-liveness",
}


def fifo(variant: str):  # type: ignore[no-untyped-def]
    return SCENARIO.runner(variant, SCENARIO.config)(ReplaySource([], strict=False))


def test_kill_leaves_intermediate_data_for_an_incompatible_upgrade() -> None:
    outcome = fifo("kill")
    violation = outcome.violation
    assert violation is not None and violation.checker == "drain-completeness"
    assert "intermediate messages left for the new deployment" in violation.message


def test_drain_empties_every_stage_and_fires_every_pane() -> None:
    outcome = fifo("drain")
    assert outcome.status == "ok"
    final = outcome.history.of_kind("final")[-1]
    assert all(not seqs for seqs in final.get("intermediate_left").values())
    assert final.get("unfired_pane_seqs") == []
    # The stale DrainMessages of the previous run were discarded, and nothing stalled.
    assert len(outcome.history.of_kind("drain.discard")) == SCENARIO.config.containers
    assert [op.get("ssp") for op in outcome.history.of_kind("ssp.drained")].count("int/0") == 1


def test_drain_survives_a_container_restart_mid_drain() -> None:
    run = SCENARIO.runner("drain", SCENARIO.config)
    outcome = run(KeyedReplaySource({("fault.restart", 0): 1}))
    assert outcome.history.of_kind("container.restart")
    assert outcome.status == "ok", [v for v in outcome.verdicts if v.status != "ok"]


@pytest.mark.parametrize("variant", sorted(CAUGHT_BY))
def test_each_mistake_is_caught_by_its_checker(
    variant: str, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    code = main(["explore", "samza-drain", "--variant", variant, "--examples", "300", "--out", str(tmp_path),
                 "--json"])  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["verdict"] == "violated"
    assert CAUGHT_BY[variant] in {
        v["checker"] for v in result["verdicts"] if v["status"] == "violated"
    }


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
def test_every_strategy_finds_the_loss_of_kill(strategy: str) -> None:
    report = explore(SCENARIO.runner("kill", SCENARIO.config), strategy, 0, Budget(examples=100))
    assert report.verdict == "violated"


def test_the_drain_design_holds_on_searched_schedules() -> None:
    report = explore(SCENARIO.runner("drain", SCENARIO.config), "random", 0, Budget(examples=300))
    assert report.verdict == "ok"
