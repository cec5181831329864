"""One small, fast local-mode SparkSession per process, and what its JVM does behind our back.

The JVM's stderr goes to a log file rather than the terminal: Spark's own
error logs stay out of the table ``spark-check`` prints, and a query thread
that dies with an uncaught error (the JVM prints ``Exception in thread
"stream execution thread ..."`` and nothing reaches Python) can be found and
reported as a failure by ``uncaught_errors_since``. When Ctrl-C or SIGTERM
lands in the middle of a py4j call, py4j logs the connection it then fails
to close, with a traceback; raceproof reports the interrupt itself, so that
record is dropped (``_QuietAfterInterrupt``).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import resource
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from raceproof.sim.errors import Signalled

_SESSION: Any = None
_JVM_LOG: Path | None = None

UNCAUGHT = re.compile(r'Exception in thread "(stream execution thread[^"]*)" (\S+)')


class _QuietAfterInterrupt(logging.Filter):
    """Drops a py4j record whose exception an interrupt caused (reported by raceproof itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None:
            if isinstance(exc, KeyboardInterrupt):
                return False
            exc = exc.__context__
        return True


QUIET_AFTER_INTERRUPT = _QuietAfterInterrupt()
for _name in ("py4j.clientserver", "py4j.java_gateway"):
    if QUIET_AFTER_INTERRUPT not in logging.getLogger(_name).filters:
        logging.getLogger(_name).addFilter(QUIET_AFTER_INTERRUPT)


class SparkUnavailable(RuntimeError):
    """The local Spark session could not start (no Java, a port refused, ...)."""


def jvm_dies_with_us() -> None:
    """The JVM PySpark starts from now on must not outlive us (SIGKILL, an interrupt during
    its start-up, before any session could stop it): it gets the parent-death signal, SIGTERM,
    so its shutdown hooks still remove Spark's local folders."""
    from pyspark import java_gateway

    from raceproof.runs.processes import dying_with_parent

    if not getattr(java_gateway.Popen, "raceproof_dies_with_parent", False):
        popen = dying_with_parent(java_gateway.Popen, signal.SIGTERM)
        popen.raceproof_dies_with_parent = True  # type: ignore[attr-defined]
        setattr(java_gateway, "Popen", popen)  # noqa: B010


def spark_session(settings: dict[str, str] | None = None) -> Any:
    """local[2], UI and progress off, 2 shuffle partitions, AQE off, 127.0.0.1, UTC, ERROR logs.

    ``settings`` (a pipeline's ``spark_conf()``) go into the session as it is built; on a
    session already running they are set where Spark allows it, and a setting it fixes at
    start (a jar, say) that differs is ``SparkUnavailable``, naming it.
    """
    global _SESSION, _JVM_LOG
    if _SESSION is not None and settings:
        _apply(_SESSION, settings)
    if _SESSION is None:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        jvm_dies_with_us()
        _JVM_LOG = Path(tempfile.mkstemp(prefix="raceproof-spark-jvm-", suffix=".log")[1])
        atexit.register(_JVM_LOG.unlink, missing_ok=True)  # whatever path the command leaves by
        saved_stderr = os.dup(2)
        log_fd = os.open(_JVM_LOG, os.O_WRONLY | os.O_APPEND)
        os.dup2(log_fd, 2)  # the JVM launched now inherits the log as its stderr
        try:
            _SESSION = started(
                SparkSession.builder.master("local[2]")
                .appName("raceproof-spark-check")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.adaptive.enabled", "false")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.sql.streaming.stopActiveRunOnRestart", "true")
                .config(map=dict(settings or {}))
            )
            settings_taken(_SESSION)
        except Exception as exc:
            tail = _JVM_LOG.read_text(errors="replace")[-4000:]
            _JVM_LOG.unlink(missing_ok=True)
            _JVM_LOG = None
            _stop_quietly(_half_made())
            _SESSION = None
            raise SparkUnavailable(f"Spark did not start: {one_line(exc, tail)}") from exc
        except BaseException:  # interrupted while starting: no log file left behind
            _JVM_LOG.unlink(missing_ok=True)
            _JVM_LOG = None
            _stop_quietly(_half_made())
            _SESSION = None
            raise
        finally:
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            os.close(log_fd)
        _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def started(builder: Any) -> Any:
    """``builder.getOrCreate()``, with the SIGINT handler found before it put back.

    PySpark installs a SIGINT handler of its own when a SparkContext starts (it cancels
    the jobs and raises a plain ``KeyboardInterrupt``), which no one can tell from a
    ``KeyboardInterrupt`` the user's code raised: a Ctrl-C while ``spark-check`` made
    its session exited 70. The handler before (the command's: ``Interrupted``, 130) is
    put back once the session is made; a Ctrl-C PySpark's handler took while it was
    being made stops the half-made context and is raised again through that handler.
    """
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        return builder.getOrCreate()
    except KeyboardInterrupt as exc:
        if isinstance(exc, Signalled) or not main:
            raise
        from pyspark import SparkContext

        if before is not None:
            signal.signal(signal.SIGINT, before)
        _stop_quietly(SparkContext._active_spark_context)
        if before is not None:
            signal.raise_signal(signal.SIGINT)  # the command's handler raises its interrupt
        raise
    finally:
        if main and before is not None:
            signal.signal(signal.SIGINT, before)


def settings_taken(spark: Any) -> None:
    """Make Spark read its SQL settings now: a value it refuses (``spark.sql.shuffle.partitions``
    = ``"abc"``) fails here, naming the setting, instead of in the first trial."""
    spark.conf.get("spark.sql.session.timeZone")


# The line of Spark's own error, in a message or the JVM's log: [ERROR_CLASS] text, or
# "Exception in thread "main" org.apache.spark.SparkException: text".
_SPARK_ERROR = re.compile(r"^(?:Exception in thread \"main\" )?(?:\S+(?:Exception|Error): )?(.+)$")


_NOISE = re.compile(r"^WARNING: |^Using Spark's default log4j| WARN | INFO ")


def one_line(exc: BaseException, jvm_log: str = "") -> str:
    """What Spark said went wrong, in one line: the JVM's ``Exception in thread "main"`` if
    its log has one (a master URL it refuses), else the first line of ``exc`` (py4j's cause
    line), without the JVM's stack trace and ``SQLSTATE`` code; a JVM that never started
    (no Java) adds the launcher's first line."""
    thrown = [
        line for line in jvm_log.splitlines() if line.startswith('Exception in thread "main"')
    ]
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    # py4j: "An error occurred while calling X.", then ": org.apache...Exception: what" below
    cause = [line[2:] for line in lines[1:] if line.startswith(": ")]
    text = thrown[-1] if thrown else cause[0] if cause else lines[0]
    found = _SPARK_ERROR.match(text.strip())
    said = re.sub(r"\s*SQLSTATE: \w+\s*$", "", found[1] if found else text).strip()
    launcher = [line for line in jvm_log.splitlines() if line.strip() and not _NOISE.search(line)]
    if not thrown and launcher and "JAVA_GATEWAY_EXITED" in said:  # no JVM: the launcher's words
        said += f" (the JVM said: {launcher[0].strip()})"
    return said


def _half_made() -> Any:
    """The session made, else the SparkContext a failed or interrupted start left running."""
    from pyspark import SparkContext

    return _SESSION if _SESSION is not None else SparkContext._active_spark_context


def _stop_quietly(session: Any) -> None:
    """Stop a session or context that may be half made (a signal or a refused setting)."""
    if session is not None:
        with contextlib.suppress(Exception):
            session.stop()


def _apply(spark: Any, settings: dict[str, str]) -> None:
    """Set each setting on a running session; one fixed at start that differs is refused."""
    for key, value in settings.items():
        if spark.conf.get(key, None) == value:
            continue
        try:
            spark.conf.set(key, value)
        except Exception as exc:
            if "CANNOT_MODIFY" not in str(exc):  # a value Spark refuses: the setting's error
                raise SparkUnavailable(f"spark_conf() sets {key}: {one_line(exc)}") from None
            raise SparkUnavailable(  # a static setting cannot be changed once started
                f"the Spark session is already running and {key} is fixed when it starts "
                f"({type(exc).__name__}); run spark-check in a fresh process to apply it"
            ) from None


def session_running() -> bool:
    return _SESSION is not None


def stop_session() -> None:
    global _SESSION, _JVM_LOG
    try:
        if _SESSION is not None:
            session, _SESSION = _SESSION, None
            session.stop()  # may raise when a signal already cut the JVM's connection
    finally:
        if _JVM_LOG is not None:
            _JVM_LOG.unlink(missing_ok=True)
            _JVM_LOG = None


def jvm_log_offset() -> int:
    """Where the JVM's log ends now (pass to ``uncaught_errors_since``)."""
    return _JVM_LOG.stat().st_size if _JVM_LOG is not None and _JVM_LOG.exists() else 0


def uncaught_errors_since(offset: int) -> list[tuple[str, str]]:
    """(thread, error class) for each query thread that died uncaught since ``offset``."""
    if _JVM_LOG is None or not _JVM_LOG.exists():
        return []
    with _JVM_LOG.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode("utf-8", "replace")
    return UNCAUGHT.findall(text)


RUN_ID = re.compile(r"runId = ([0-9a-f-]+)")


def thread_of_runs(thread: str, runs: set[str]) -> bool:
    """Whether a dying query thread belongs to one of ``runs`` (this trial's query runs).

    A stream thread of an earlier trial can die after that trial ended (a stop that
    interrupted it lands late) and its error reaches the log while the next trial runs;
    it is that earlier trial's, not this one's. A thread name without a run id is kept.
    """
    found = RUN_ID.search(thread)
    return found is None or found[1] in runs


def jvm_cpu_s(spark: Any) -> float:
    """CPU seconds (user + system) the Spark JVM has used so far: a cost a loaded machine does not inflate."""
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    stat = Path(f"/proc/{jvm_pid}/stat")
    if not stat.exists():
        return 0.0
    fields = stat.read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return ticks / os.sysconf("SC_CLK_TCK")


def peak_memory_mb(spark: Any) -> dict[str, float]:
    """Peak resident memory so far of this Python process and of the Spark JVM (MiB)."""
    python_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    jvm_kib = 0
    status = Path(f"/proc/{jvm_pid}/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                jvm_kib = int(line.split()[1])
    return {"python_peak_mb": round(python_kib / 1024, 1), "jvm_peak_mb": round(jvm_kib / 1024, 1)}
