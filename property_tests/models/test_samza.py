"""Samza drain: kill loses data, drain does not, and each implementation mistake is caught."""

from __future__ import annotations

import dataclasses
import json

import pytest

from raceproof.cli.main import main
from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, KeyedReplaySource, ReplaySource, explore
from raceproof.sim.history import Op

SCENARIO = get("samza-drain")
CAUGHT_BY = {
    "kill": "drain-completeness",
    "drain-1.8": "drain-completeness",
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
    code = main(
        [
            "explore",
            "samza-drain",
            "--variant",
            variant,
            "--examples",
            "300",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
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


# -- facts of apache/samza release-1.8.0-rc0, docs/models/samza.md ----------------------------


def test_a_task_shuts_down_only_when_both_its_ssps_are_drained() -> None:
    history = fifo("drain").history
    for c in range(SCENARIO.config.containers):
        drained = [
            op.index for op in history.of_kind("ssp.drained") if op.actor in {f"src{c}", f"agg{c}"}
        ]
        shutdowns = [
            op.index
            for op in history.of_kind("task.shutdown")
            if op.actor in {f"src{c}", f"agg{c}"}
        ]
        assert len(drained) == 2 and len(shutdowns) == 2
        assert max(drained) < min(shutdowns)  # src/c stays up until int/c is drained too


def test_drain_mode_begins_when_the_drain_message_reaches_the_queue_head() -> None:
    """``RunLoop.AsyncTaskWorker.isReady`` -> ``shouldDrain`` peeks at the pending queue's head
    (release-1.8.0-rc0 ``RunLoop.java`` 885-906, 929-936): drain mode (async commit off) starts
    as a current-run DrainMessage reaches the head, a processing time before the task processes
    it (issue 33 item 7: the model entered it ``process_ms`` late, once processed)."""
    config = SCENARIO.config
    history = fifo("drain").history
    modes = {str(op.get("ssp")): op for op in history.of_kind("drain.mode")}
    enters: dict[str, Op] = {}
    for op in history.of_kind("drain.enter"):
        enters.setdefault(str(op.get("ssp")), op)
    ssps = {f"{topic}/{p}" for topic in ("src", "int") for p in range(config.containers)}
    assert set(modes) == set(enters) == ssps
    for ssp, enter in enters.items():
        mode = modes[ssp]
        c = int(mode.actor[-1])  # src<c> and agg<c> run on container c
        assert mode.actor == enter.actor and mode.index < enter.index
        late_ms = enter.time_ms - mode.time_ms
        assert late_ms == config.process_ms + c * config.container_skew_ms, (ssp, late_ms)


def test_drain_messages_go_to_one_partition_and_the_aggregator_rebroadcasts() -> None:
    history = fifo("drain").history
    agg = SCENARIO.config.aggregate_partition
    producers = {op.get("ssp"): op.get("producers") for op in history.of_kind("ssp.drained")}
    assert producers[f"int/{agg}"] == ["t0", "t1"]  # the aggregate partition counted both
    assert producers["int/1"] == []  # the other one drained on the re-broadcast (no task name)
    assert [op.get("ssp") for op in history.of_kind("drain.rebroadcast")] == [f"int/{agg}"]


def test_the_1_8_drain_fires_no_pending_pane_where_the_sep_fires_them_all() -> None:
    sep, impl = fifo("drain"), fifo("drain-1.8")
    assert sep.history.of_kind("final")[-1].get("unfired_pane_seqs") == []
    unfired = impl.history.of_kind("final")[-1].get("unfired_pane_seqs")
    assert unfired, "1.8 should leave pending panes"
    assert impl.violation is not None and "window panes never fired" in impl.violation.message
    # Nothing else differs: the intermediate stream is empty in both.
    assert all(
        not seqs for seqs in impl.history.of_kind("final")[-1].get("intermediate_left").values()
    )


def test_an_aggregating_task_with_two_intermediate_partitions_never_rebroadcasts_in_1_8() -> None:
    # 3 intermediate partitions on 2 containers: c0's task owns int/0 (the aggregate) and int/2.
    config = dataclasses.replace(SCENARIO.config, intermediate_partitions=3)
    impl = SCENARIO.runner("drain-1.8", config)(ReplaySource([], strict=False))
    withheld = impl.history.of_kind("drain.rebroadcast-withheld")
    assert [op.get("waiting_for") for op in withheld] == [["int/2"]]
    assert "drain-liveness" in {v.checker for v in impl.verdicts if v.status == "violated"}
    # The SEP's per-partition count re-broadcasts and finishes.
    assert SCENARIO.runner("drain", config)(ReplaySource([], strict=False)).status == "ok"
    # With the aggregate on a task that owns one partition (int/1 on c1), 1.8 finishes too.
    other = dataclasses.replace(config, aggregate_partition=1)
    outcome = SCENARIO.runner("drain-1.8", other)(ReplaySource([], strict=False))
    assert not outcome.history.of_kind("drain.timeout")
