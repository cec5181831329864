"""The user's cause in full, every sink judged or said not to be, guards listed only where they act.

Spark-free: a wrapped Python error is unwrapped to the user's exception line
(``FOREACH_BATCH_USER_FUNCTION_ERROR``, ``Py4JJavaError``), a long message is
wrapped at spaces and never cut, a sink that holds rows when a trial begins
is one line naming ``begin_trial``, a requested experiment a pipeline lacks
what it needs for is inconclusive (exit 3, no Spark started), a sink
never read back or a pipeline never fed late data is said, and whatever a
sink leaves by (``sys.exit()``, a ``KeyboardInterrupt`` it raised) fails its
batch as a ``RuntimeError`` naming it. On real Spark: a
``foreachBatch`` sink that raises ``ConnectionError`` once shows that
exception and the user's frame (exit 4), a sink that calls ``sys.exit(0)`` is
exit 4 too (the command used to wait for the batch for ever), and a
join reads its two streams from two file sources (that Spark's Parquet file sink is
offered no checkpoint fencing is ``test_spark_sinks.py``'s).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests import spark_user_sinks
from raceproof.cli.main import main
from raceproof.spark_integration.job import short_error, wrapped
from raceproof.spark_integration.pipeline import PipelineRaised, Row
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount
from raceproof.spark_integration.results import unjudged
from raceproof.spark_integration.trial import TrialRun

# The tests on the module's Spark session share a Spark worker; the Spark-free ones and the
# command in a process (and JVM) of its own need not wait in line there.
spark_group = pytest.mark.xdist_group("spark-2")

WRAPPED = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/venv/site-packages/pyspark/sql/utils.py", line 120, in call
    raise e
  File "/venv/site-packages/pyspark/sql/utils.py", line 117, in call
    self.func(DataFrame(jdf, wrapped_session_jdf), batch_id)
  File "/home/me/jobs/sink.py", line 9, in sink
    raise ConnectionError("the database went away after 2 of 4 rows")
ConnectionError: the database went away after 2 of 4 rows

: org.apache.spark.SparkException: [FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in \
the user provided function in foreach batch sink. Reason: ConnectionError SQLSTATE: 39000
"""


def test_a_wrapped_python_error_is_the_users_exception() -> None:
    assert short_error(RuntimeError(WRAPPED)) == (
        "ConnectionError: the database went away after 2 of 4 rows"
    )
    java = "py4j.protocol.Py4JJavaError: An error occurred\n: java.lang.IllegalStateException: x y"
    assert short_error(RuntimeError(java)) == "java.lang.IllegalStateException: x y"


@given(st.lists(st.text("abcdefghij", min_size=1, max_size=30), min_size=1, max_size=40))
def test_a_long_message_is_wrapped_never_cut(words: list[str]) -> None:
    text = " ".join(words)
    lines = wrapped(text, width=40, indent="  ").split("\n")
    assert [w for line in lines for w in line.split()] == words  # every word whole, in order


class StaleTable(WindowedCount):
    """A sink whose table keeps an earlier trial's rows (no begin_trial)."""

    def sink(self, batch: Any, batch_id: int) -> None:
        pass

    def read_output(self, spark: Any) -> list[Row]:
        return [{"window": "2026-01-01T00:00:00", "key": "a", "count": 1}]


def test_a_stale_sink_is_one_line_naming_begin_trial() -> None:
    with pytest.raises(PipelineRaised) as raised:
        TrialRun(None, StaleTable())
    message = str(raised.value)
    assert "\n" not in message and "begin_trial(spark, folder)" in message
    assert message.startswith("pipeline error: read_output() holds 1 rows before the trial")


class PlainSink(WindowedCount):
    name = "plain-sink"

    def sink(self, batch: Any, batch_id: int) -> None:
        pass


def test_what_no_experiment_judged_is_said() -> None:
    said = unjudged(PlainSink())
    assert any("never read back" in line and "read_output" in line for line in said)
    assert not any("late data" in line for line in said)  # it declares max_lateness_s
    assert not unjudged(spark_user_sinks.ParquetCounts())  # read back, fed late data
    from raceproof.spark_integration.pipelines.dedup import Dedup

    assert any("never fed late data" in line for line in unjudged(Dedup()))


def test_a_requested_judgement_that_cannot_be_made_is_inconclusive(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["spark-check", "--pipeline", "dedup", "--experiment", "generated-input", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 3 and result["verdict"] == "inconclusive", result
    (row,) = result["experiments"]
    assert row["verdict"] == "inconclusive" and row["stock"]["stability"] == "not applicable"
    assert "max_lateness_s" in row["stock"]["trials"][0]["message"]
    assert any("never fed late data" in line for line in result["unjudged"])


FLAKY_SINK = """
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

class FlakySink(WindowedCount):
    name = "flaky-sink"
    written = 0

    def sink(self, batch, batch_id):
        rows = batch.collect()
        for row in rows[: len(rows) // 2]:
            self.written += 1
        if rows and self.written < 100:
            self.written = 100
            raise ConnectionError(
                "the database went away after writing half of the batch, " + "x" * 300
            )

def make():
    return FlakySink()
"""


@spark_group
def test_a_sink_that_raises_once_shows_the_users_exception_and_frame(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "flaky_job.py"
    path.write_text(textwrap.dedent(FLAKY_SINK))
    code = main(["spark-check", "--pipeline", f"{path}:make", "--experiment", "drain"])
    out = capsys.readouterr().out
    assert code == 4 and "PIPELINE ERROR" in out, out
    words = " ".join(out.split())  # long lines are wrapped at spaces
    assert "raised ConnectionError: the database went away after writing half of the batch" in words
    assert "x" * 300 in words  # the whole message, no word cut
    assert f'File "{path}", line' in out and "in sink" in out, out  # the user's frame
    assert "FOREACH_BATCH_USER_FUNCTION_ERROR" not in out


class _Batch:
    """What ``_write_batch`` asks of a micro-batch when it has no rows (no Spark needed)."""

    def collect(self) -> list[Any]:
        return []


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("sys.exit(0)", "SystemExit: sys.exit(0)"),
        ("raise KeyboardInterrupt('from the sink')", "KeyboardInterrupt: from the sink"),
        ("raise GeneratorExit()", "GeneratorExit"),
    ],
)
def test_foreach_batchs_function_fails_the_batch_whatever_the_sink_leaves_by(
    statement: str, named: str
) -> None:
    """py4j answers the JVM for an ``Exception`` only; anything else a sink leaves by ended
    py4j's callback thread unanswered and Spark waited for the batch for ever (issue 33 item
    3). The function foreachBatch calls raises it on as a ``RuntimeError`` naming it."""
    from raceproof.spark_integration.job import PipelineJob, Recorder
    from raceproof.spark_integration.sandbox import Sandbox

    class Leaving(WindowedCount):
        def sink(self, batch: Any, batch_id: int) -> None:
            exec(statement, {"sys": __import__("sys")})

    sandbox = Sandbox()
    try:
        job = PipelineJob(spark=None, sandbox=sandbox, recorder=Recorder(), pipeline=Leaving())
        message = f"the pipeline's sink(batch, 3) raised {named}"
        with pytest.raises(RuntimeError, match=re.escape(message)):
            job._sink(_Batch(), 3)
        assert job.user_raised is not None and job.user_raised.message == message
        (logged,) = job.recorder.history.of_kind("sink.raised")
        assert logged.get("error") == message
    finally:
        sandbox.cleanup()


LEAVING_SINK = """
import sys

from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

class LeavingSink(WindowedCount):
    name = "leaving-sink"

    def sink(self, batch, batch_id):
        if batch.count():
            sys.exit(0)

def make():
    return LeavingSink()
"""


def test_a_sink_that_calls_sys_exit_is_a_pipeline_error_not_a_hang(tmp_path: Path) -> None:
    """Real Spark, in a process of its own with a time limit: before, the command never ended."""
    path = tmp_path / "leaving_job.py"
    path.write_text(textwrap.dedent(LEAVING_SINK))
    argv = ["spark-check", "--pipeline", f"{path}:make", "--experiment", "drain", "--json"]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "raceproof"), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 4, (done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "interrupted" not in done.stderr, done.stderr
    assert "raised SystemExit: sys.exit(0)" in done.stdout, done.stdout[-2000:]


@spark_group
def test_a_join_reads_its_two_streams_from_two_file_sources(spark: Any) -> None:
    """``sources = ("orders", "payments")``: one file per source per micro-batch, the query
    given a DataFrame per source; the baseline (no fault, drained) gives the reference."""
    from property_tests.spark_generated_pipelines import two_source_join
    from raceproof.spark_integration.experiments import baseline

    trial = baseline(spark, two_source_join())
    assert trial.verdict == "ok", trial.message  # every order joined, each unpaid one emitted
    logged = trial.history.of_kind("input.file")
    assert {op.get("source") for op in logged} == {"orders", "payments"}
    read = [f for op in trial.history.of_kind("checkpoint.batch") for f in op.get("files")]
    assert sorted(read) == sorted(str(op.get("file")) for op in logged)  # both sources' files
    assert trial.history.of_kind("sink.row")


def test_records_are_written_to_the_source_they_name() -> None:
    from property_tests.spark_generated_pipelines import TwoSourceJoin
    from raceproof.spark_integration.job import PipelineJob, Recorder
    from raceproof.spark_integration.sandbox import Sandbox

    class Astray(TwoSourceJoin):
        def source_of(self, record: dict[str, Any]) -> str:
            return "refunds"

    sandbox = Sandbox()
    try:
        job = PipelineJob(None, sandbox=sandbox, recorder=Recorder(), pipeline=TwoSourceJoin())
        job.add_input([("a", 1), ("b", 2)])  # a@1 is paid at 3, b@2 never
        job.add_input([("c", 4)])  # no payment: an empty payments file keeps the batches aligned
        orders = sorted((sandbox.input / "orders").glob("part-*.json"))
        payments = sorted((sandbox.input / "payments").glob("part-*.json"))
        assert len(orders) == len(payments) == 2
        assert [len(p.read_text().splitlines()) for p in orders] == [2, 1]
        assert [len(p.read_text().splitlines()) for p in payments] == [1, 0]
        with pytest.raises(PipelineRaised, match="not one of its sources"):
            PipelineJob(None, sandbox=sandbox, recorder=Recorder(), pipeline=Astray()).add_input(
                [("a", 1)]
            )
    finally:
        sandbox.cleanup()
