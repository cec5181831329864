"""Every output mode judged by its meaning, on real local-mode Spark.

``append``: each key emitted once, when final; ``update``: the last row
emitted per key equals the reference; ``complete``: the last snapshot equals
the reference. A correct complete-mode and a correct update-mode pipeline are
not flagged, with or without a fault; the same complete-mode job judged as an
append-only store (a declared rule, ``stored_as``) is, since every snapshot
re-emits every key; and an update-mode job whose last values are wrong is.
"""

from __future__ import annotations

from typing import Any

import pytest

from raceproof.spark_integration.experiments import EXPERIMENTS, baseline
from raceproof.spark_integration.pipeline import PipelineError, load_pipeline
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

pytestmark = pytest.mark.xdist_group("spark-2")


class CompleteCounts(WindowedCount):
    """Per-key counts of every record, no window: the whole table each batch."""

    name = "complete-counts"
    output_mode = "complete"
    key_fields = ("key",)
    state_counts = False

    def query(self, source: Any) -> Any:
        return source.groupBy("key").count()

    def expected(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        counts: dict[str, int] = {}
        for record in records:
            counts[record["key"]] = counts.get(record["key"], 0) + 1
        return [{"key": k, "count": n} for k, n in sorted(counts.items())]


class UpdateCounts(CompleteCounts):
    """The per-key count in update mode: a key's row is emitted again each time it grows."""

    name = "update-counts"
    output_mode = "update"


class WrongUpdateCounts(UpdateCounts):
    name = "wrong-update-counts"

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        return super().query(source).withColumn("count", F.lit(1).cast("long"))


def test_a_correct_complete_mode_pipeline_is_not_flagged(spark: Any) -> None:
    job = CompleteCounts()
    assert baseline(spark, job).verdict == "ok"
    restored = EXPERIMENTS["stale-checkpoint-restore"].trial(spark, job, False)
    assert restored.verdict == "ok", restored.message
    drained = EXPERIMENTS["drain"].trial(spark, job, False)
    assert drained.verdict == "ok", drained.message  # the last snapshot holds every key


def test_a_correct_update_mode_pipeline_is_not_flagged(spark: Any) -> None:
    job = UpdateCounts()
    trial = baseline(spark, job)
    assert trial.verdict == "ok", trial.message
    emitted = [op.get("row") for op in trial.history.of_kind("batch.row")]
    assert len(emitted) > len({r["key"] for r in emitted})  # updates re-emit keys
    restored = EXPERIMENTS["stale-checkpoint-restore"].trial(spark, job, False)
    assert restored.verdict == "ok", restored.message


def test_the_rule_matters_both_ways(spark: Any) -> None:
    appended = CompleteCounts()
    appended.stored_as = "append"  # a sink that appends every snapshot: duplicates
    trial = baseline(spark, appended)
    assert trial.checker == "no-duplicate-emission", trial.message
    wrong = baseline(spark, WrongUpdateCounts())
    assert wrong.checker == "drain-completeness" and "reference gives" in wrong.message


def test_an_unknown_store_rule_is_a_usage_error(tmp_path: Any) -> None:
    module = tmp_path / "odd_rule.py"
    module.write_text(
        "from raceproof.spark_integration.pipelines.windowed_count import WindowedCount\n"
        "class Odd(WindowedCount):\n    stored_as = 'sometimes'\n"
        "def make():\n    return Odd()\n"
    )
    with pytest.raises(PipelineError, match="stored_as = 'sometimes'"):
        load_pipeline(f"{module}:make")
