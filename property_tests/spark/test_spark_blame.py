"""Blame where it belongs: the user's errors are the pipeline's, a wrong pipeline is caught before any fault.

A factory that raises, a ``query`` that returns a batch DataFrame and a
pipeline without ``expected`` are pipeline errors (verdict ``error``, exit 4,
the user's own frames), never "a bug in raceproof" (exit 70). A pipeline whose
output is wrong with no fault at all is reported as wrong by its baseline
trial, with the difference from its reference, and no fault experiment runs
(no "GUARD FAILED"). A pipeline file loads its sibling modules, as ``python
job.py`` does. Real local-mode Spark (one session, the ``spark`` xdist group).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.spark_integration.pipeline import EXIT_PIPELINE_ERROR

pytestmark = pytest.mark.xdist_group("spark")

HEADER = """
from pyspark.sql import functions as F
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount
"""


def _write(folder: Path, name: str, body: str) -> str:
    (folder / name).write_text(textwrap.dedent(HEADER) + textwrap.dedent(body))
    return str(folder / name)


def test_a_factory_that_raises_is_a_pipeline_error_naming_the_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        "broken_job.py",
        """
        def make():
            raise RuntimeError("no connection string configured")
        """,
    )
    assert main(["spark-check", "--pipeline", f"{path}:make"]) == EXIT_PIPELINE_ERROR == 4
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("spark-check: pipeline error: the factory make()")
    assert "RuntimeError: no connection string configured" in last
    assert "broken_job.py" in err and "bug in raceproof" not in err
    assert "spark_integration" not in err  # the user's frames only


def test_a_pipeline_file_loads_its_sibling_modules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "job_helpers.py").write_text("def make():\n    raise KeyError('from the helper')\n")
    path = _write(tmp_path, "split_job.py", "from job_helpers import make\n")
    code = main(["spark-check", "--pipeline", f"{path}:make", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 4 and out["verdict"] == "error"  # imported (no "No module named"), then raised
    assert "KeyError" in out["error"] and "job_helpers.py" in out["frames"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            """
        class Batchy(WindowedCount):
            def query(self, source):
                return source.sparkSession.range(3)
        """,
            "returned a batch DataFrame",
        ),
        (
            """
        from raceproof.spark_integration.pipeline import Pipeline
        class NoReference(Pipeline):
            def query(self, source):
                return source
        """,
            "expected(records) raised NotImplementedError",
        ),
        (
            """
        class Rejected(WindowedCount):
            output_mode = "append"
            def query(self, source):
                return source.groupBy("key").count()  # no watermark: append mode is refused
        """,
            "Spark rejected the query",
        ),
    ],
)
def test_the_users_query_errors_are_pipeline_errors(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, says: str
) -> None:
    path = _write(
        tmp_path,
        "job.py",
        textwrap.dedent(body) + "\ndef make():\n    return [v for v in globals().values()"
        " if isinstance(v, type) and v.__module__ == __name__][-1]()\n",
    )
    code = main(["spark-check", "--pipeline", f"{path}:make", "--experiment", "drain"])
    captured = capsys.readouterr()
    assert code == 4, captured.err
    assert says in captured.err and "bug in raceproof" not in captured.err + captured.out


def test_a_pipeline_wrong_without_faults_is_reported_as_wrong_and_no_experiment_runs(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        "off_by_one.py",
        """
        class OffByOne(WindowedCount):
            name = "off-by-one"
            def query(self, source):
                return super().query(source).withColumn("count", F.col("count") + 1)

        def make():
            return OffByOne()
        """,
    )
    code = main(["spark-check", "--pipeline", f"{path}:make"])
    out = capsys.readouterr().out
    assert code == 1
    assert "THE PIPELINE IS WRONG WITHOUT ANY FAULT" in out and "GUARD FAILED" not in out
    words = " ".join(out.split())  # long findings are wrapped at spaces
    assert "emitted count=2, but the reference gives 1" in words
    assert "stale-checkpoint-restore" not in out  # no fault experiment ran


def test_a_correct_pipeline_passes_its_baseline_and_both_directions_hold(spark: Any) -> None:
    from raceproof.spark_integration.experiments import baseline
    from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

    trial = baseline(spark, WindowedCount())
    assert trial.verdict == "ok", trial.message
