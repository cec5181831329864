"""Group coordinator async append: the latent bug, the correct designs, the comparison machinery."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.measure import compare
from raceproof.models.group_coordinator import CoordinatorConfig
from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, KeyedReplaySource, deviations, explore

SCENARIO = get("coordinator-async-append")


def test_one_transactional_commit_leaves_a_phantom_in_the_log() -> None:
    run = SCENARIO.runner("sync-assumption", SCENARIO.config)
    outcome = run(KeyedReplaySource({("txn.b0", 0): 1}))
    kinds = [(op.kind, op.get("batch")) for op in outcome.history if op.get("partition") == 0]
    replay, revert, fail, append = (
        kinds.index(("replay", "b0")),
        kinds.index(("revert", None)),
        kinds.index(("write.fail", "b0")),
        kinds.index(("log.append", "b0")),
    )
    assert replay < revert < fail < append  # reverted and failed, then the append lands anyway
    violation = outcome.violation
    assert violation is not None and violation.checker == "log-matches-state"
    assert "phantom" in violation.message


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
def test_search_finds_the_phantom_and_shrinks_it_to_one_transactional_commit(strategy: str) -> None:
    report = explore(
        SCENARIO.runner("sync-assumption", SCENARIO.config), strategy, 0, Budget(examples=500)
    )
    assert report.verdict == "violated" and report.shrunk is not None
    assert deviations(report.shrunk.values) == 1
    only = [c for c in report.shrunk.choices if c.value]
    assert only[0].label.startswith("txn.")
    assert len(report.shrunk.history) <= 40  # short enough to read


@pytest.mark.parametrize("design", ["block-event-loop", "verify-then-write"])
def test_correct_designs_keep_log_and_state_together_on_every_tried_schedule(design: str) -> None:
    report = explore(SCENARIO.runner(design, SCENARIO.config), "random", 0, Budget(examples=300))
    assert report.verdict == "ok"


def test_an_unloaded_coordinator_keeps_up_and_latency_is_the_pipeline() -> None:
    config = CoordinatorConfig(
        threads=1,
        partitions=2,
        verification_ms=(5,),
        replication_ms=(1,),
        rate_per_s=50,
        duration_ms=2_000,
        quiet_log=True,
    )
    for design in compare.DESIGNS:
        result = compare.one_run(design, config, seed=1)
        assert result["requests"] == 100
        assert result["failed"] == 0
        assert result["throughput"] == pytest.approx(50, abs=1)
        # write cost 1 ms + verification 5 ms + replication 1 ms, nothing queued
        assert result["p50"] == 7.0


def test_runs_are_deterministic_per_seed() -> None:
    config = CoordinatorConfig(
        threads=2,
        partitions=8,
        verification_ms=(20,),
        replication_ms=(1,),
        rate_per_s=400,
        duration_ms=2_000,
        quiet_log=True,
    )
    assert compare.one_run("block-event-loop", config, 7) == compare.one_run(
        "block-event-loop", config, 7
    )


def test_percentile() -> None:
    values = list(range(1, 101))
    assert compare.percentile(values, 0.5) == 51.0
    assert compare.percentile(values, 0.99) == 100.0
    assert compare.percentile([3], 0.99) == 3.0


def test_compare_command_writes_table_csv_and_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "compare",
            "coordinator-async-append",
            "--seeds",
            "1",
            "--duration-ms",
            "1000",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    # designs x transactional shares x write costs x verification latencies
    assert len(result["rows"]) == 2 * 2 * 3 * 3
    with open(result["csv"]) as handle:
        rows = list(csv.DictReader(handle))
    assert {r["design"] for r in rows} == set(compare.DESIGNS)
    assert Path(result["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_text_is_its_table_with_each_point_said_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "coordinator-async-append", "--seeds", "1", "--duration-ms", "500"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["design", "txn", "%"], out
    points = 2 * 2 * 3 * 3  # designs x transactional shares x write costs x verifications
    assert len(lines) == 1 + points + 2 and lines[-1].startswith(f"wrote {tmp_path}"), out
    steps = err.splitlines()
    assert len(steps) == points, err
    assert (
        steps[0]
        == "block-event-loop: 10% transactional, write 0.1 ms, verification 1 ms, 1 seed(s)"
    )


def test_compare_refuses_a_scenario_without_a_comparison(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", "lost-update"]) == 2
    assert "has no design comparison" in capsys.readouterr().err


# -- facts of apache/kafka a8203f9c7a2 (PR #15142), docs/models/group_coordinator.md ------------


def _ops(variant: str, config: CoordinatorConfig, script: dict[tuple[str, int], int]) -> list:  # type: ignore[type-arg]
    outcome = SCENARIO.runner(variant, config)(KeyedReplaySource(script))
    assert outcome.status == "ok", outcome.violation
    return list(outcome.history)


def test_the_high_watermark_event_waits_behind_writes_already_queued() -> None:
    # One thread, one partition, three plain commits at once: b0's HighWatermarkUpdated is
    # enqueued (at 2 ms) after b2 (at 0 ms), so b2 is processed before b0 is acknowledged.
    config = CoordinatorConfig(
        threads=1,
        partitions=1,
        writes=3,
        arrival_gap_ms=(0,),
        transactional=(False,),
        replication_ms=(1,),
    )
    ops = _ops("verify-then-write", config, {})
    poll_b2 = next(op.index for op in ops if op.kind == "event.poll" and op.get("event") == "b2")
    ack_b0 = next(op.index for op in ops if op.kind == "write.ack" and op.get("batch") == "b0")
    assert poll_b2 < ack_b0


def test_the_write_timer_starts_at_the_append_not_at_arrival() -> None:
    # b0 (transactional) holds the only thread 1 + 10 ms under block-event-loop; b1 waits in
    # the queue longer than the 3 ms timeout, yet it is acknowledged: queue time is not timed.
    config = CoordinatorConfig(
        threads=1,
        partitions=1,
        writes=2,
        arrival_gap_ms=(0,),
        verification_ms=(10,),
        replication_ms=(1,),
        write_timeout_ms=3,
    )
    ops = _ops("block-event-loop", config, {("txn.b0", 0): 1})
    acked = {op.get("batch") for op in ops if op.kind == "write.ack"}
    assert acked == {"b0", "b1"}
    assert not [op for op in ops if op.kind == "write.timeout"]
    request_b1 = next(op.time_ms for op in ops if op.kind == "request" and op.get("batch") == "b1")
    ack_b1 = next(op.time_ms for op in ops if op.kind == "write.ack" and op.get("batch") == "b1")
    assert ack_b1 - request_b1 > config.write_timeout_ms


def test_a_write_whose_hwm_never_comes_in_time_fails_through_a_queued_timeout_event() -> None:
    config = CoordinatorConfig(
        threads=1,
        partitions=1,
        writes=1,
        replication_ms=(50,),
        write_timeout_ms=10,
        transactional=(False,),
    )
    ops = _ops("verify-then-write", config, {})
    polls = [op.get("event") for op in ops if op.kind == "event.poll"]
    assert polls[:2] == ["b0", "timeout-b0"]
    assert [op.get("batch") for op in ops if op.kind == "write.timeout"] == ["b0"]


def test_defaults_are_the_pinned_versions() -> None:
    assert CoordinatorConfig().threads == 1  # group.coordinator.threads
    assert CoordinatorConfig().write_timeout_ms == 5_000  # offsets.commit.timeout.ms
    assert compare.Grid().threads == 1
