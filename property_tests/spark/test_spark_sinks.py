"""The user's own sink under test: real PostgreSQL ``foreachBatch`` writers and Spark's Parquet file sink.

The server is Debian's PostgreSQL, started by this module on 127.0.0.1 on a
free port and stopped by it (``postgres_server``); Spark is real local mode.
Every checker judges the rows the sink stored (``read_output``): the writer
that ignores ``batch_id`` is caught with the duplicated row and the re-run
batch named, on the gate's exit code; the writer that records its batch ids
and the Parquet file sink (exactly-once through ``_spark_metadata``) hold
under the same faults; the Parquet sink is offered its own sink as its guard,
never checkpoint fencing (which could refuse nothing there).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from property_tests import spark_user_sinks
from raceproof.cli.main import main
from raceproof.spark_integration.experiments import EXPERIMENTS
from raceproof.spark_integration.job import PipelineJob, Recorder
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount
from raceproof.spark_integration.results import run_experiment
from raceproof.spark_integration.sandbox import Sandbox

pytestmark = pytest.mark.xdist_group("spark")

SINKS = "property_tests.spark_user_sinks"


def _stored(trial: Any) -> list[dict[str, Any]]:
    return [op.get("row") for op in trial.history.of_kind("sink.row") if op.get("stored")]


def test_a_non_idempotent_postgres_writer_is_caught_with_the_row_and_the_rerun_batch(
    spark: Any, postgres: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "spark-check",
            "--pipeline",
            f"{SINKS}:appending",
            "--experiment",
            "slow-sink-stop",
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    (row,) = result["experiments"]
    assert code == 1 and result["verdict"] == "violated"
    assert row["guard"] == "the pipeline's own sink"
    assert row["broken_promises"] == ["no-duplicate-emission"]
    message = row["stock"]["trials"][0]["message"]
    assert "window=2026-01-01T00:00:" in message and "emitted again in batch" in message, message
    # The restored checkpoint re-runs batches: the writer stores them a second time.
    trial = EXPERIMENTS["stale-checkpoint-restore"].trial(
        spark, spark_user_sinks.appending(), False
    )
    assert trial.checker == "no-duplicate-emission", trial.message
    stored = _stored(trial)
    assert len(stored) > len({(r["window"], r["key"]) for r in stored})  # what PostgreSQL holds


def test_an_idempotent_postgres_writer_holds_under_the_same_faults(
    spark: Any, postgres: str
) -> None:
    sink = spark_user_sinks.idempotent()
    for name in ("slow-sink-stop", "stale-checkpoint-restore"):
        trial = EXPERIMENTS[name].trial(spark, sink, False)
        assert "no-duplicate-emission" not in trial.violated(), trial.message
        stored = _stored(trial)
        assert stored and len(stored) == len({(r["window"], r["key"]) for r in stored})


def test_sparks_parquet_file_sink_holds_and_is_read_through_its_metadata_log(
    spark: Any, keep_trials: Callable[..., list[tuple[bool, Any]]]
) -> None:
    """Offered no guard that cannot act: its guard is its own sink, not checkpoint fencing
    (which could refuse nothing there), so the row's one trial is its stock one."""
    sink = spark_user_sinks.parquet()
    kept = keep_trials("stale-checkpoint-restore")
    row = run_experiment(spark, "stale-checkpoint-restore", sink)
    assert row["guard"] == "the pipeline's own sink", row["guard"]  # not checkpoint fencing
    assert row["verdict"] == "ok", row["stock"]
    ((_, trial),) = kept
    assert trial.verdict == "ok", trial.message
    stored = _stored(trial)
    assert {(r["window"], r["key"]) for r in stored} >= {("2026-01-01T00:00:00", "a")}
    # Without foreachBatch the batch-level faults do not apply; the others do.
    assert not sink.applicable(EXPERIMENTS["slow-sink-stop"].needs)
    assert sink.applicable(EXPERIMENTS["stop-start-race"].needs)


def test_a_transient_sink_failure_catches_a_plain_insert_and_passes_an_upsert(
    spark: Any, postgres: str
) -> None:
    """The sink writes half a batch and raises once; the restart retries the batch."""
    plain = EXPERIMENTS["transient-sink-failure"].trial(spark, spark_user_sinks.appending(), False)
    assert plain.checker == "no-duplicate-emission", plain.message
    (failed,) = plain.history.of_kind("fault.sink-raised")
    assert f"emitted again in batch {failed.get('batch')}" in plain.message  # the retried batch
    assert "delivered again: a replay of it" in plain.message, plain.message  # called a replay
    said = f"raceproof's injected fault: the sink failed in batch {failed.get('batch')}"
    assert any(said in note for note in plain.notes), plain.notes  # named as raceproof's
    stored = _stored(plain)
    assert len(stored) > len({(r["window"], r["key"]) for r in stored})  # what PostgreSQL holds
    upsert = EXPERIMENTS["transient-sink-failure"].trial(spark, spark_user_sinks.upserting(), False)
    assert upsert.verdict == "ok", upsert.message
    assert upsert.history.of_kind("fault.sink-raised")  # the fault did land
    assert {(r["window"], r["key"]) for r in _stored(upsert)} >= {("2026-01-01T00:00:10", "a")}


class SplitWords(WindowedCount):
    """One record feeds a state key per word (replay equivalence over several keys)."""

    state_counts = True

    def count_keys(self, record: dict[str, Any]) -> list[tuple[str, ...]]:
        return [(str(record["ts"]), word) for word in str(record["key"]).split("-")]


def test_one_record_can_feed_several_state_keys() -> None:
    sandbox = Sandbox()
    try:
        job = PipelineJob(None, sandbox=sandbox, recorder=Recorder(), pipeline=SplitWords())
        job.add_input([("a-b-a", 1)])
        (logged,) = job.recorder.history.of_kind("input.file")
        assert [tuple(k) for k in logged.get("keys")] == [
            ("2026-01-01T00:00:01", "a"),
            ("2026-01-01T00:00:01", "b"),
            ("2026-01-01T00:00:01", "a"),
        ]
    finally:
        sandbox.cleanup()
