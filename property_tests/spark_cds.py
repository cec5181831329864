"""Spark's classes archived once for the suite's driver JVMs (class-data sharing): cheaper starts.

Every Spark driver JVM the tests start (a module's session, and the spark-check, campaign and
bench commands run in processes of their own) first loads, parses and verifies the same
thousands of classes from Spark's jars: most of the ~8 CPU s one start costs on two cores.
Java's dynamic class-data-sharing archive (``-XX:ArchiveClassesAtExit``, then
``-XX:SharedArchiveFile``) keeps them ready to map instead: a session started and stopped
took 4.6-4.8 CPU s with it, 7.9-8.2 without (JDK 17, PySpark 4.3.0, ``cgcpu.sh``).

The archive is made once for a machine's Java and PySpark (its file name hashes both), by
one process in the background (``python -m property_tests.spark_cds``) that the first Spark
test starts: it runs one spark-check experiment on a JVM that writes the archive as it
exits, then renames the file into place, so a JVM sees the whole archive or none. The tests
do not wait for it: a JVM started before it is there starts as before, one started after
maps it. What Spark computes is the same; only where its classes come from changes. An
archive Java cannot use (another class path: a test's own jar put first) is skipped, and
``-Xlog:cds*=off`` keeps Java's warning about it off the commands' stdout. With no Java,
or a ``SPARK_SUBMIT_OPTS`` of the user's own, nothing is archived or added.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The suite's own JVM options (conftest.py says why the first JIT tier only, and the serial GC).
DEFAULT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ROOT = Path(__file__).resolve().parents[1]
# The environment before any test ran: the maker must not inherit a test's broken Java or PATH.
_BEFORE_TESTS = dict(os.environ)
_maker: list[subprocess.Popen[bytes]] = []


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home, "bin", "java")) if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


@functools.cache
def archive() -> Path | None:
    """Where this machine's archive for this Java and PySpark is (made or not); None: no Java."""
    java, spark = _java(), importlib.util.find_spec("pyspark")
    if java is None or spark is None:
        return None
    version = importlib.metadata.version("pyspark")
    made_of = f"{java}|{java.stat().st_mtime_ns}|{spark.origin}|{version}"
    key = hashlib.sha256(made_of.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir(), f"raceproof-spark-cds-{key}.jsa")


def _flags(path: Path) -> str:
    return f"{DEFAULT} -XX:SharedArchiveFile={path} -Xlog:cds*=off"


def use_when_made() -> None:
    """Point ``SPARK_SUBMIT_OPTS`` at the archive once it exists (the suite's default opts only)."""
    path = archive()
    if path is None or not path.exists():
        return
    if os.environ.get("SPARK_SUBMIT_OPTS") == DEFAULT:
        os.environ["SPARK_SUBMIT_OPTS"] = _flags(path)


def start_making() -> None:
    """Start the background process that makes the archive, once per process, if none exists."""
    path = archive()
    if _maker or path is None or path.exists() or os.environ.get("SPARK_SUBMIT_OPTS") != DEFAULT:
        return
    maker = subprocess.Popen(
        [sys.executable, "-m", "property_tests.spark_cds"],
        cwd=ROOT,
        env={**_BEFORE_TESTS, "SPARK_SUBMIT_OPTS": DEFAULT},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C meant for the tests does not cut the archive short
    )
    _maker.append(maker)


def _make(path: Path) -> None:
    """Run one experiment on a JVM that archives the classes it loaded as it exits."""
    from pyspark import SparkContext

    from raceproof.spark_integration import experiments
    from raceproof.spark_integration.pipelines.windowed_count import WindowedCount
    from raceproof.spark_integration.session import spark_session, stop_session

    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    os.environ["SPARK_SUBMIT_OPTS"] = f"{DEFAULT} -XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off"
    try:
        spark = spark_session()
        experiments.EXPERIMENTS["second-start"].trial(spark, WindowedCount(), False)
        stop_session()
        jvm = SparkContext._gateway.proc  # type: ignore[attr-defined]
        jvm.stdin.close()  # the gateway JVM exits when its stdin closes, writing the archive
        jvm.wait(timeout=600)
        if partial.exists() and partial.stat().st_size > 0:
            os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def main() -> None:
    """Make the archive unless another process is making it or it is made."""
    path = archive()
    if path is None:
        return
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another process is making it
        if not path.exists():
            _make(path)


if __name__ == "__main__":
    main()
