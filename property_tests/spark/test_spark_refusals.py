"""Spark-path mistakes of the user's, said in one line with their exit code, mostly before Spark starts.

Why it exists: issue 47 item 4. Each of these ended in exit 70 ("a bug in raceproof",
a traceback) or in a JVM's stack trace: a ``spark_conf()`` raising ``KeyboardInterrupt``;
``sources = (1, 2)`` (a ``TypeError`` in the first trial, after Spark started); a source
named ``..`` (the sandbox's refusal reported as raceproof's bug); ``spark_conf()`` giving
``spark.sql.shuffle.partitions = "abc"`` (after a session and a trial); a bad
``spark.master`` (exit 2 with 17 lines of the JVM's stack); a Ctrl-C while ``spark-check``
made its session (PySpark's own SIGINT handler raised a plain ``KeyboardInterrupt`` that
the command line took for a bug). Now a declaration or setting that can be judged without
Spark is refused before it starts (exit 2, no JVM: most tests here start none), the user's
code raising is exit 4, a value only Spark can judge is one line as the session starts,
and the Ctrl-C is 130 with nothing left running.

Two tests start Spark: the Ctrl-C one runs the command in a process of its own (a real
JVM, to see that none is left) and the one for a value only Spark judges starts a session
in a Spark tests' worker (``xdist_group("spark-2")``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from property_tests.processes import alive, descendants
from raceproof.cli.main import main
from raceproof.spark_integration.session import (
    SparkUnavailable,
    one_line,
    session_running,
    spark_session,
    stop_session,
)

PIPELINES = """
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount


class Conf(WindowedCount):
    def __init__(self, conf):
        self.conf = conf

    def spark_conf(self):
        if self.conf == "interrupt":
            raise KeyboardInterrupt("from spark_conf")
        return self.conf


class Sources(WindowedCount):
    def __init__(self, sources, chosen=None):
        self.sources = sources
        self.chosen = chosen

    def source_of(self, record):
        return self.chosen or self.sources[0]


def interrupt():
    return Conf("interrupt")


def partitions_abc():
    return Conf({"spark.sql.shuffle.partitions": "abc"})


def bad_master():
    return Conf({"spark.master": "bogus://x"})


def numbers():
    return Sources((1, 2))


def dot_dot():
    return Sources(("..", "b"))


def chosen_dot_dot():
    return Sources(("a", "b"), chosen="..")
"""

# (factory, exit code, what the one line says): each refused before a session starts.
REFUSED = {
    "interrupt": (4, "pipeline error: spark_conf() raised KeyboardInterrupt: from spark_conf"),
    "numbers": (2, "sources = (1, 2); expected a tuple of source names (strings)"),
    "dot_dot": (2, "sources holds '..'; a source's name is a folder name"),
    "chosen_dot_dot": (4, "pipeline error: source_of({'key': 'k', 'ts': '2026-01-01T00:00:01'})"),
    "partitions_abc": (
        2,
        "spark_conf() sets spark.sql.shuffle.partitions = 'abc': Spark wants a whole number",
    ),
    "bad_master": (2, "spark_conf() sets spark.master = 'bogus://x': Spark wants yarn"),
}


@pytest.fixture
def pipelines(tmp_path: Path) -> Path:
    path = tmp_path / "mistakes.py"
    path.write_text(PIPELINES)
    return path


@pytest.mark.parametrize("factory", sorted(REFUSED))
def test_a_mistake_spark_need_not_see_is_refused_before_it_starts(
    factory: str,
    pipelines: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from raceproof.spark_integration import session

    running = session_running()
    started: list[object] = []  # spark-check's progress is off here (stderr is no terminal)
    monkeypatch.setattr(session, "spark_session", started.append)
    code = main(["spark-check", "--pipeline", f"{pipelines}:{factory}"])
    err = capsys.readouterr().err
    expected_code, line = REFUSED[factory]
    assert code == expected_code, (code, err)
    assert line in err, err
    assert "internal error" not in err and "Traceback" not in err, err
    assert started == [] and session_running() == running
    last = err.rstrip().splitlines()[-1]  # the user's code raising: its frames, then the line
    assert line in last and (expected_code == 4 or err.count("\n") == 1), err


def test_a_campaign_master_spark_would_refuse_is_refused_before_any_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    code = main(["campaign", "--scenario", "lost-update", "--master", "bogus", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--master 'bogus': Spark wants yarn, spark://HOST:PORT" in err
    assert not out.exists()


def test_what_spark_says_is_cut_to_its_one_line() -> None:
    """A master the JVM refuses (its log's ``Exception in thread "main"``, 17 lines of stack
    before) and py4j's "An error occurred while calling" with the cause on the next line."""
    log = (
        "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
        'Exception in thread "main" org.apache.spark.SparkException: Master must either be '
        "yarn or start with spark, k8s, or local\n"
        "\tat org.apache.spark.deploy.SparkSubmit.error(SparkSubmit.scala:1068)\n"
    )
    gateway = RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited.")
    assert one_line(gateway, log) == "Master must either be yarn or start with spark, k8s, or local"
    called = RuntimeError(
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": org.apache.spark.SparkException: Could not parse Master URL: 'spark'\n\tat x.y(Z)"
    )
    assert one_line(called) == "Could not parse Master URL: 'spark'"
    refused = RuntimeError(
        "[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'x'. SQLSTATE: 22022\n\nJVM"
    )
    assert one_line(refused) == "[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'x'."


MAINTENANCE = "spark.sql.streaming.stateStore.maintenanceInterval"


@pytest.mark.xdist_group("spark-2")
def test_a_value_only_spark_judges_is_one_line_as_the_session_starts() -> None:
    """A time setting given ``"soon"``: Spark read it only in the first trial (exit 70 there).
    On a session running, it is Spark's refusal of the value (it was "fixed when it starts");
    a session made with it reads its settings as it starts: one line, the session stopped.

    The good session comes first: the JVM PySpark launches takes the first session's
    settings as its system properties, which every later session of the worker would inherit.
    """
    from pyspark import SparkContext

    stop_session()  # one an earlier module of this worker left running: a fresh start here
    spark_session()
    try:
        with pytest.raises(SparkUnavailable) as refused:
            spark_session({MAINTENANCE: "soon"})
        assert str(refused.value).startswith(f"spark_conf() sets {MAINTENANCE}: "), refused.value
        assert "\n" not in str(refused.value) and "fixed when" not in str(refused.value)
    finally:
        stop_session()
    with pytest.raises(SparkUnavailable) as again:
        spark_session({MAINTENANCE: "soon"})
    said = str(again.value)
    assert "\n" not in said and f'"{MAINTENANCE}" is invalid' in said, said
    assert not session_running() and SparkContext._active_spark_context is None


SIGINT_IN_GET_OR_CREATE = textwrap.dedent(
    """
    import os, signal, sys
    from pyspark.sql import session

    made = session.SparkSession.__init__

    def interrupted(self, *args, **kwargs):  # the SparkContext is up, PySpark's handler in
        os.kill(os.getpid(), signal.SIGINT)
        return made(self, *args, **kwargs)

    session.SparkSession.__init__ = interrupted
    from raceproof.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_a_ctrl_c_while_the_session_is_made_is_130_and_leaves_no_jvm(tmp_path: Path) -> None:
    """A real SIGINT at the moment PySpark's own handler takes it (inside getOrCreate, the
    context made): exit 130, the one line the command line says for it, no JVM, no log."""
    process = subprocess.Popen(
        [sys.executable, "-c", SIGINT_IN_GET_OR_CREATE, "spark-check", "--experiment", "drain"],
        cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp_path)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[int] = set()
    deadline = time.monotonic() + 600
    while process.poll() is None and time.monotonic() < deadline:
        seen |= descendants(process.pid)
        time.sleep(0.2)
    if process.poll() is None:
        process.kill()
    err = process.communicate()[1]
    assert process.returncode == 130, (process.returncode, err[-3000:])
    said = [line for line in err.splitlines() if line.startswith("raceproof:")]
    assert said == ["raceproof: error: interrupted by SIGINT"], err[-3000:]
    assert "Traceback" not in err and "internal error" not in err
    assert seen, "no JVM was started: the test did not reach the session"
    left = time.monotonic() + 30.0
    while any(alive(pid) for pid in seen) and time.monotonic() < left:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in seen), "processes left behind"
    assert list(tmp_path.glob("raceproof-spark-jvm-*")) == []
