"""A user's own pipeline through ``raceproof spark-check --pipeline``, and the gate's exit code, on real Spark.

The pipeline is written to a temporary file outside the repository, as a user
would write it, and loaded by its path; it runs through every experiment that
applies to it but the four longest (``ELSEWHERE``: ``test_spark.py`` runs each
both ways on the windowed count; so does the gate test that disables a guard through the
experiment's own parameter and expects exit 1).
These tests start a real local Spark session (in one of the two Spark
xdist groups) and fail if it cannot start.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.spark_integration.experiments import (
    EXPERIMENTS,
    applicable,
)
from raceproof.spark_integration.pipeline import resolve

pytestmark = pytest.mark.xdist_group("spark-2")

USER_PIPELINE = '''
"""A user's job: per-key counts in 20-second event-time windows, keys upper-cased."""

from pyspark.sql import functions as F

from raceproof.spark_integration.pipeline import Pipeline, second_of, timestamp


def window_of(ts):
    second = second_of(ts)
    return timestamp(second - second % 20)


class UpperCounts(Pipeline):
    name = "user-upper-counts"
    key_fields = ("window", "key")
    state_counts = True

    def query(self, source):
        upper = source.select(F.upper("key").alias("key"), "ts")
        counted = upper.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "20 seconds"), "key")
        return counted.count().select(F.col("window.start").alias("window"), "key", "count")

    def expected(self, records):
        counts = {}
        for r in records:
            row = (window_of(r["ts"]), r["key"].upper())
            counts[row] = counts.get(row, 0) + 1
        return [{"window": w, "key": k, "count": n} for (w, k), n in sorted(counts.items())]

    def count_key(self, record):
        return (window_of(record["ts"]), record["key"].upper())

    def state_count(self, row):
        window = row["key"]["window"]["start"].strftime("%Y-%m-%dT%H:%M:%S")
        return (window, row["key"]["key"]), int(row["value"]["count"])


def make():
    return UpperCounts()
'''


def _spark_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["spark-check", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


# The four longest on the user's pipeline (61, 24, 14 and 13 s of its 225 s run, load 4-5),
# each run on the windowed count by test_spark.py: stock and guarded, asserting both, where
# the experiment has a guard (maintenance-snapshot has none: stock, ok).
ELSEWHERE = (
    "maintenance-snapshot",
    "stop-start-race",
    "slow-sink-stop",
    "cleaner-whole-checkpoint",
)


def test_a_users_pipeline_from_a_file_runs_through_the_experiments_that_apply(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "my_jobs.py"
    module.write_text(textwrap.dedent(USER_PIPELINE))
    fits = applicable(resolve(f"{module}:make"))  # what spark-check plans for it, unasked
    # No lateness declared (generated-input), no sink of its own (transient-sink-failure, kill).
    assert set(fits) == set(EXPERIMENTS) - {"generated-input", "transient-sink-failure", "kill"}
    run = [name for name in fits if name not in ELSEWHERE]
    asked = [arg for name in run for arg in ("--experiment", name)]
    code, result = _spark_check(capsys, "--pipeline", f"{module}:make", *asked)
    rows = {row["experiment"]: row for row in result["experiments"]}
    assert list(rows) == run
    assert any("never fed late data" in line for line in result["unjudged"])
    assert all(row["scenario"] == "user-upper-counts" for row in rows.values())
    broken = {name: row["broken_promises"] for name, row in rows.items() if row["broken_promises"]}
    assert code == 0 and result["verdict"] == "ok", broken
    # Stock Spark's findings on the user's job are reported, and are not failures of the run:
    stale = rows["stale-checkpoint-restore"]["stock"]["trials"][0]
    assert "no-duplicate-emission" in stale["violated"], stale["message"]
    drained = rows["drain"]["stock"]["trials"][0]
    assert "drain-completeness" in drained["violated"], drained["message"]
    assert rows["drain"]["guarded"]["trials"][0]["verdict"] == "ok"
    assert rows["replay-equivalence"]["stock"]["trials"][0]["verdict"] == "ok"


def test_a_pipeline_that_cannot_be_loaded_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["spark-check", "--pipeline", "no_such_module_xyz:make"]) == 2
    assert "cannot import no_such_module_xyz" in capsys.readouterr().err
    (tmp_path / "not_a_pipeline.py").write_text("def make():\n    return 42\n")
    assert main(["spark-check", "--pipeline", f"{tmp_path / 'not_a_pipeline.py'}:make"]) == 2
    assert "returned int, not a" in capsys.readouterr().err
    assert main(["spark-check", "--repeat", "0"]) == 2


@pytest.mark.parametrize(
    ("pipeline", "experiment", "stock_violates", "guarded_ok"),
    [
        # The join's unpaid orders wait in its state for the watermark: AvailableNow leaves them.
        ("stream-join", "drain", {"drain-completeness"}, True),
        # The dedup's state (the ids seen) restored from an older copy lets ids through again.
        ("dedup", "stale-checkpoint-restore", {"no-duplicate-emission"}, True),
        # A stop landing while the batch's own Spark job runs: the query thread dies uncaught.
        # (Whether the thread also dies uncaught is up to the JVM's timing: 3 of 3 in the
        # measured runs, not every run under a loaded CI, so the test asks for the replay.)
        ("windowed-count", "stop-during-batch-job", {"no-duplicate-emission"}, True),
    ],
)
def test_the_built_in_pipelines_measured_findings(
    spark: Any,
    pipeline: str,
    experiment: str,
    stock_violates: set[str],
    guarded_ok: bool,
) -> None:
    from raceproof.spark_integration.pipeline import resolve

    job = resolve(pipeline)
    stock = EXPERIMENTS[experiment].trial(spark, job, False)
    may_also = {"no-uncaught-error"} if experiment == "stop-during-batch-job" else set()
    assert stock_violates <= stock.violated() <= stock_violates | may_also, stock.message
    guarded = EXPERIMENTS[experiment].trial(spark, job, True)
    assert (guarded.verdict == "ok") == guarded_ok, guarded.message
