"""A pipeline's Spark settings and jars through ``spark_conf()``: a JDBC sink with no environment variable.

The pipeline writes each micro-batch into PostgreSQL through Spark's own JDBC
writer (``batch.write.jdbc``); the driver jar reaches Spark only through the
pipeline's ``spark_conf()`` (``spark.jars``), applied to the session
spark-check builds: no ``PYSPARK_SUBMIT_ARGS``. The server is started by the
test (``postgres_server``) and the sink judged at what PostgreSQL holds.
Spark-free: junk from ``spark_conf()`` is the user's error and two pipelines
wanting two values of one setting are refused.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from property_tests.postgres_server import jdbc_jar, running_postgres
from raceproof.spark_integration.pipeline import (
    PipelineError,
    PipelineRaised,
    settings_of,
)
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

RACEPROOF = str(Path(sys.executable).parent / "raceproof")

# No xdist_group("spark"): the JDBC test runs the user's command in a process and JVM of its
# own (as test_spark_signals does), the others start no Spark; so the 64 s it took in the
# clean-clone run at a4e4ce0 need not wait in line behind the spark group's one worker.

JDBC_JOB = """
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

CONNINFO = {conninfo!r}
URL = "jdbc:postgresql://127.0.0.1:{port}/postgres"
JAR = {jar!r}


class JdbcCounts(WindowedCount):
    name = "jdbc-counts"

    def spark_conf(self):
        return {{"spark.jars": JAR}}

    def begin_trial(self, spark, folder):
        import psycopg

        with psycopg.connect(CONNINFO, autocommit=True) as db:
            db.execute("DROP TABLE IF EXISTS counts")
            db.execute("CREATE TABLE counts (window_start TEXT, key TEXT, count BIGINT)")

    def sink(self, batch, batch_id):
        rows = batch.selectExpr(
            "date_format(window, \\"yyyy-MM-dd'T'HH:mm:ss\\") AS window_start", "key", "count"
        )
        rows.write.jdbc(
            URL, "counts", mode="append",
            properties={{"user": "postgres", "driver": "org.postgresql.Driver"}},
        )

    def read_output(self, spark):
        import psycopg

        with psycopg.connect(CONNINFO) as db:
            stored = db.execute("SELECT window_start, key, count FROM counts").fetchall()
        return [{{"window": w, "key": k, "count": n}} for w, k, n in stored]


def make():
    return JdbcCounts()
"""


def test_a_jdbc_sink_gets_its_driver_through_spark_conf(tmp_path: Path) -> None:
    """The user's command in a process of its own, as they run it: a JVM's driver
    classpath is fixed when it starts, so a session this test worker started earlier
    (another test's) could not take the jar, whatever raceproof asked for."""
    assert "PYSPARK_SUBMIT_ARGS" not in os.environ
    jar = str(jdbc_jar())
    stopped: list[int] = []
    with running_postgres(stopped) as conninfo:
        port = re.search(r"port=(\d+)", conninfo)
        assert port
        path = tmp_path / "jdbc_job.py"
        path.write_text(textwrap.dedent(JDBC_JOB).format(conninfo=conninfo, port=port[1], jar=jar))
        done = subprocess.run(
            [
                RACEPROOF,
                "spark-check",
                "--pipeline",
                f"{path}:make",
                "--experiment",
                "drain",
                "--json",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    code = done.returncode
    result = json.loads(done.stdout)
    assert code == 0 and result["verdict"] == "ok", json.dumps(result["experiments"])[:4000]
    (row,) = result["experiments"]  # the baseline held: the JDBC writer ran, its rows read back
    guarded = row["guarded"]["trials"][0]
    assert guarded["verdict"] == "ok", guarded  # the drain procedure: every window in PostgreSQL
    stock = row["stock"]["trials"][0]  # stock AvailableNow: the windows still open are lost
    assert stock["checker"] == "drain-completeness", stock
    assert "never emitted" in stock["message"] and "of 6 rows" in stock["message"]
    assert stopped == [0], "PostgreSQL did not stop when asked (killed after its bound)"


class Settings(WindowedCount):
    def __init__(self, conf: Any) -> None:
        self.conf = conf

    def spark_conf(self) -> Any:
        return self.conf


def test_settings_are_merged_and_junk_or_a_contradiction_refused() -> None:
    merged = settings_of([Settings({"spark.sql.shuffle.partitions": 4, "a.b": True}), Settings({})])
    assert merged == {"spark.sql.shuffle.partitions": "4", "a.b": "true"}
    with pytest.raises(PipelineRaised, match="not a dict of setting name -> value"):
        settings_of([Settings(["spark.jars"])])
    with pytest.raises(PipelineError, match="both '1' and '2'"):
        settings_of([Settings({"x": 1}), Settings({"x": 2})])
