"""Real local-mode Spark under injected faults, judged by the same checkers as the models.

The session is started by the fixture (never mocked); if Spark cannot start,
these tests fail. They run on one xdist worker (one session per process).
Each test asserts what the checkers must see in the history Spark produced;
where real threads race (the stop/start race), the faults land at named
points, so the verdicts do not vary with the interleaving.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from property_tests.report_checks import check_real_run_reports
from raceproof.cli.main import main
from raceproof.sim import dataflow
from raceproof.sim import lifecycle as sim_lifecycle
from raceproof.sim.history import History
from raceproof.spark_integration import experiments, lifecycle, results
from raceproof.spark_integration.pipeline import Pipeline, Record, Row, second_of, timestamp
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

pytestmark = pytest.mark.xdist_group("spark")

COUNT = WindowedCount()
POLLING_DELAY = "spark.sql.streaming.pollingDelay"


def test_the_checkers_are_the_shared_ones() -> None:
    assert experiments.no_duplicate_emission is dataflow.no_duplicate_emission
    assert experiments.drain_emits_every_window is dataflow.drain_emits_every_window
    assert experiments.state_matches_inputs is dataflow.state_matches_inputs
    assert lifecycle.acknowledged_resume_holds is sim_lifecycle.acknowledged_resume_holds
    assert lifecycle.no_lost_update is sim_lifecycle.no_lost_update
    assert lifecycle.legal_transitions is sim_lifecycle.legal_transitions


def test_stale_checkpoint_restore_duplicates_on_stock_spark_and_fencing_refuses(
    spark: Any,
    keep_trials: Callable[..., list[tuple[bool, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """And a disabled guard fails the gate: ``spark-check`` with fencing turned off by the
    experiment's own parameter (this test only) exits 1; its stock trial is checked here."""

    def unfenced(spark: Any, pipeline: Pipeline, guarded: bool) -> Any:
        return experiments.stale_checkpoint_restore(spark, pipeline, guarded, fencing=False)

    kept = keep_trials("stale-checkpoint-restore", unfenced)
    code = main(["spark-check", "--experiment", "stale-checkpoint-restore", "--json"])
    result = json.loads(capsys.readouterr().out)
    (row,) = result["experiments"]
    assert code == 1 and result["verdict"] == "violated" and row["pipeline"] == COUNT.name
    assert row["broken_promises"] == ["no-duplicate-emission"] == [row["checker"]]
    assert row["stock"]["trials"][0]["verdict"] == "violated"
    stock = dict(kept)[False]
    assert stock.verdict == "violated" and stock.checker == "no-duplicate-emission"
    assert "emitted again" in stock.message
    guarded = experiments.stale_checkpoint_restore(spark, COUNT, guarded=True)
    assert guarded.verdict == "ok"
    assert "refusing to start" in guarded.message and guarded.history.of_kind("guard.refused")


def test_available_now_drain_leaves_windows_unemitted_and_the_procedure_emits_them(
    spark: Any, tmp_path: Path
) -> None:
    stock = experiments.drain(spark, COUNT, guarded=False)
    assert stock.verdict == "violated" and stock.checker == "drain-completeness"
    assert "never emitted" in stock.message
    check_real_run_reports(stock.history, "drain-stock", tmp_path)  # pictures of a real run
    guarded = experiments.drain(spark, COUNT, guarded=True)
    assert guarded.verdict == "ok", guarded.message
    emitted = {
        (op.get("row")["window"], op.get("row")["key"])  # type: ignore[index]
        for op in guarded.history.of_kind("sink.row")
    }
    assert ("2026-01-01T00:00:20", "a") in emitted


def test_a_late_stop_by_name_loses_the_acknowledged_resume_and_a_run_bound_stop_does_not(
    spark: Any,
) -> None:
    stock = lifecycle.double_stop_resume(spark, COUNT, guarded=False)
    assert {"acknowledged-resume-holds", "no-lost-update"} <= stock.violated()
    assert stock.history.of_kind("final")[-1].get("statuses") == {"q": "STOPPED"}
    guarded = lifecycle.double_stop_resume(spark, COUNT, guarded=True)
    assert guarded.verdict == "ok", guarded.message
    assert guarded.history.of_kind("stop.skipped")
    assert guarded.history.of_kind("final")[-1].get("statuses") == {"q": "ACTIVE"}


def test_a_second_start_silently_stops_the_live_run_unless_restart_stopping_is_off(
    spark: Any,
    keep_trials: Callable[..., list[tuple[bool, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through ``spark-check`` as a user runs it: stock Spark's violation is a finding, the
    gate holds; each of its two trials is checked where it ran (kept by a wrapper)."""
    kept = keep_trials("second-start")
    code = main(["spark-check", "--experiment", "second-start", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["verdict"] == "ok"  # stock Spark violates; the guard holds
    (row,) = result["experiments"]
    assert row["pipeline"] == COUNT.name and row["stock"]["trials"][0]["violated"] == [
        "acknowledged-resume-holds"
    ]
    assert row["guarded"]["trials"][0]["verdict"] == "ok"
    for field in ("scenario", "pipeline", "experiment", "variant", "verdict", "checker", "seconds"):
        assert field in row
    assert row["jvm_peak_mb"] > 0 and row["python_peak_mb"] > 0
    trials = dict(kept)
    stock, guarded = trials[False], trials[True]
    assert stock.checker == "acknowledged-resume-holds" and "set by spark" in stock.message
    assert guarded.verdict == "ok" and guarded.history.of_kind("start.refused")
    assert "already active" in guarded.message
    assert spark.conf.get("spark.sql.streaming.stopActiveRunOnRestart") == "true"  # restored


def test_the_stop_start_race_stops_only_at_its_named_point_and_gives_one_verdict_thrice(
    spark: Any,
) -> None:
    # Before the stops landed at a named point, the guarded trial was "violated
    # (no-uncaught-error) 2/3, ok 1/3": the verdict followed where the race put the stop.
    # Three trials a side, as ``spark-check --repeat 3`` runs them (at 3 rounds each, not the
    # command's 5: each round is one more stop at the same named point), each checked where
    # its stops landed; the same trials give the row's stability and verdict.
    experiment = experiments.EXPERIMENTS["stop-start-race"]
    for guarded in (False, True):
        trials = [experiments.stop_start_race(spark, COUNT, guarded, rounds=3) for _ in range(3)]
        for trial in trials:
            points = trial.history.of_kind("fault.point")
            assert [op.get("point") for op in points] == ["idle, no input pending"] * 3
            assert not any(op.get("failed") for op in points), trial.message
            # No stop lands inside foreachBatch, so Spark's StackOverflowError never fires here.
            assert not trial.history.of_kind("error.uncaught"), trial.message
            assert trial.verdict == "ok", trial.message
            assert not results.broken_promises(experiment, trial), trial.message
        assert results.stability([trial.to_json() for trial in trials]) == "ok 3/3"


def test_a_stop_during_a_slow_sink_replays_the_batch_unless_the_sink_keys_on_batch_id(
    spark: Any,
) -> None:
    stock = experiments.slow_sink_stop(spark, COUNT, guarded=False)
    assert "no-duplicate-emission" in stock.violated(), stock.message
    assert stock.history.of_kind("sink.slow-write")
    guarded = experiments.slow_sink_stop(spark, COUNT, guarded=True)
    assert not {"no-duplicate-emission", "drain-completeness"} & guarded.violated()


def test_a_process_stopped_before_the_commit_replays_the_batch_in_every_run_unless_keyed(
    spark: Any, keep_trials: Callable[..., list[tuple[bool, Any]]]
) -> None:
    # A graceful stop() at this point let Spark write commits/k in some runs and not others (a
    # race inside Spark and Hadoop: docs/howto/spark_stop_commit_race.py), so the stock verdict
    # was violated 9/10, ok 1/10. The process now stops before the commit in every run: each
    # stock trial of the command's two runs is checked where it stopped, and what it says.
    kept = keep_trials("stop-before-commit")
    both = results.run_experiment(spark, "stop-before-commit", COUNT, repeat=2)
    assert both["stock"]["stability"] == "violated (no-duplicate-emission) 2/2", both["stock"]
    assert both["guarded"]["stability"] == "ok 2/2", both["guarded"]
    assert both["verdict"] == "ok"
    stocks = [trial for guarded, trial in kept if not guarded]
    assert len(stocks) == 2
    for stock in stocks:
        (fault,) = stock.history.of_kind("fault.process-stopped")
        assert fault.get("checked_on_files") is True and fault.get("committed_after") is False
        assert stock.verdict == "violated" and stock.checker == "no-duplicate-emission"
        k = str(fault.get("point")).split()[1]
        assert f"emitted again in batch {k} " in stock.message and "key=" in stock.message, (
            stock.message
        )


class SlidingWords(Pipeline):
    """Words of a line counted in 10-second windows sliding every 5 s: one record, four keys."""

    name = "sliding-words"
    schema = "line STRING, ts TIMESTAMP"
    key_fields = ("window", "word")
    state_counts = True

    def records(self, key: str, second: int) -> list[Record]:
        return [{"line": f"{key} all", "ts": timestamp(second)}]

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        words = source.select(F.explode(F.split("line", " ")).alias("word"), "ts")
        counted = (
            words.withWatermark("ts", "10 seconds")
            .groupBy(F.window("ts", "10 seconds", "5 seconds"), "word")
            .count()
        )
        return counted.select(F.col("window.start").alias("window"), "word", "count")

    def count_keys(self, record: Record) -> list[tuple[str, ...]]:
        second = second_of(str(record["ts"]))
        starts = (second - second % 5 - 5, second - second % 5)  # the two windows holding it
        return [(timestamp(s), w) for s in starts for w in str(record["line"]).split()]

    def expected(self, records: list[Record]) -> list[Row]:
        counts: dict[tuple[str, ...], int] = {}
        for record in records:
            for key in self.count_keys(record):
                counts[key] = counts.get(key, 0) + 1
        return [{"window": w, "word": k, "count": n} for (w, k), n in sorted(counts.items())]

    def state_count(self, row: Any) -> tuple[tuple[str, ...], int]:
        window = row["key"]["window"]["start"].strftime("%Y-%m-%dT%H:%M:%S")
        return (window, str(row["key"]["word"])), int(row["value"]["count"])


def test_replay_equivalence_counts_a_record_under_every_key_it_feeds(spark: Any) -> None:
    trial = experiments.replay_equivalence(spark, SlidingWords(), False)
    assert trial.verdict == "ok", trial.message
    keys = {tuple(op.get("key")) for op in trial.history.of_kind("state.row")}
    assert ("2026-01-01T00:00:00", "all") in keys and ("2025-12-31T23:59:55", "all") in keys
    # The same real history with each record declared under its first key only (one key per
    # record, as count_key alone gives): the store's counts no longer match.
    one_key = History()
    for op in trial.history.ops:
        fields = dict(op.fields)
        if op.kind == "input.file":
            fields["keys"] = fields["keys"][::4]  # 2 windows x 2 words per record
        one_key.append(op.time_ms, op.actor, op.kind, **fields)
    verdict = dataflow.state_matches_inputs()(one_key)
    assert verdict.status == "violated", verdict.message


@pytest.mark.parametrize(
    ("name", "while_running"),
    [("cleaner-partition-state", "failed"), ("cleaner-latest-delta", "went on")],
)
def test_deleting_state_while_running_raises(spark: Any, name: str, while_running: str) -> None:
    trial = experiments.EXPERIMENTS[name].trial(spark, COUNT, False)
    assert trial.verdict == "raised", trial.message
    assert "CANNOT_READ_DELTA_FILE_NOT_EXISTS" in trial.message
    assert while_running in trial.notes[0]


def test_deleting_the_whole_checkpoint_reprocesses_silently_and_fencing_refuses(
    spark: Any,
) -> None:
    experiment = experiments.EXPERIMENTS["cleaner-whole-checkpoint"]
    stock = experiment.trial(spark, COUNT, False)
    assert stock.verdict == "violated" and stock.checker == "no-duplicate-emission"
    guarded = experiment.trial(spark, COUNT, True)
    assert guarded.verdict == "ok" and "refusing to start" in guarded.message


def test_recovered_state_equals_the_recomputation_from_the_inputs(spark: Any) -> None:
    trial = experiments.replay_equivalence(spark, COUNT, False)
    assert trial.verdict == "ok", trial.message
    batches = {op.get("batch") for op in trial.history.of_kind("state.row")}
    assert len(batches) >= 4  # the state after every committed batch was read and compared


def test_a_snapshot_truncated_as_maintenance_writes_it_loses_nothing_on_restart(
    spark: Any,
) -> None:
    # The named point: state-store maintenance has just written a .snapshot. Measured 3 of 3
    # (PySpark 4.3.0): the restarted query's state still matches its inputs. Until maintenance
    # runs (every 60 s) the query has no new input; it looks for some every second here, not
    # every 10 ms (Spark's pollingDelay), which only changes how soon a restart sees its files.
    spark.conf.set(POLLING_DELAY, "1s")
    try:
        trial = experiments.EXPERIMENTS["maintenance-snapshot"].trial(spark, COUNT, False)
    finally:
        spark.conf.unset(POLLING_DELAY)
    (truncated,) = trial.history.of_kind("fault.truncate")
    assert str(truncated.get("path")).endswith(".snapshot") and int(truncated.get("bytes")) > 0
    checked = {v.checker: v.status for v in trial.verdicts}
    assert checked["replay-equivalence"] == "ok", trial.message
    assert trial.verdict == "ok", trial.message
