"""Shared test settings: a derandomized Hypothesis profile for CI (never flaky), the suite's Spark
JVM options (with an archive of Spark's classes, made once a machine), and the Spark session fixture.

The JVM options: every Spark driver JVM the tests start (the module sessions, and the commands,
second drivers and campaigns they run in processes of their own, which inherit
``SPARK_SUBMIT_OPTS``) compiles with the JIT's first tier only: the suite's JVMs live for seconds
to minutes, and the second tier's compiler threads cost more CPU than they give back on two cores
(test_spark_output_modes.py: 57.6 and 53.6 CPU s without, 36.6 and 37.6 with, at a load average of
8-11). They collect garbage with the serial collector, not G1 (its concurrent threads on a 1 GiB
heap cost more than they save here): test_spark_generated_sessions + test_spark_output_modes
44.2, 44.1, 42.2 CPU s with G1, 38.1, 38.3 serial; test_spark_generated 68.6, 56.9 with G1, 62.9,
58.9. What Spark computes is the same; a ``SPARK_SUBMIT_OPTS`` already set (even empty: users'
default) is kept, and then nothing is archived or added.

The archive: every such JVM first loads, parses and verifies the same thousands of classes from
Spark's jars, most of the ~8 CPU s one start costs on two cores. Java's dynamic class-data-sharing
archive (``-XX:ArchiveClassesAtExit``, then ``-XX:SharedArchiveFile``) keeps them ready to map
instead: a session started and stopped took 4.6-4.8 CPU s with it, 7.9-8.2 without (JDK 17,
PySpark 4.3.0, ``cgcpu.sh``). It is made once for a machine's Java and PySpark (its file name in
``$TMPDIR`` hashes both) by one background process (``_make_archive``) that the first Spark test
of a pytest process starts: it runs one spark-check experiment on a JVM that writes the archive
as it exits, then renames the file into place, so a JVM sees the whole archive or none; an
exclusive lock lets one maker at a time work, so xdist workers never write it together. The
tests do not wait for it: a JVM started before it is there starts as before, one started after
maps it. The process that started a maker stops it at its session's end (``pytest_sessionfinish``):
it waits for it a bounded time, then stops it, JVM and all, and removes the folder the maker
worked in (its ``TMPDIR``), a partial archive included. An
archive Java cannot use (another class path: a test's own jar put first) is skipped, and
``-Xlog:cds*=off`` keeps Java's warning about it off the commands' stdout.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from raceproof.sim import RunOutcome, exhaustive
from raceproof.sim.outcome import Runner
from raceproof.sim.shrink import ShrinkResult
from raceproof.spark_integration.session import spark_session, stop_session

settings.register_profile(
    "ci",
    derandomize=True,
    print_blob=True,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
# `make mutation` runs the tests once per mutant: fewer examples, same derandomized draws.
settings.register_profile(
    "mutation",
    derandomize=True,
    deadline=None,
    max_examples=25,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The suite's own JVM options (the docstring says why the first JIT tier only, and the serial GC).
SPARK_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ROOT = Path(__file__).resolve().parents[1]
# The environment before any test ran: the maker must not inherit a test's broken Java or PATH.
_BEFORE_TESTS = dict(os.environ)
# How long a session's end waits for the maker it started before killing it (it takes ~35 CPU s).
MAKER_WAIT_S = 60
_maker: list[tuple[subprocess.Popen[bytes], Path]] = []


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


def use_archive_when_made() -> None:
    """Point ``SPARK_SUBMIT_OPTS`` at the archive once it exists (the suite's default opts only)."""
    path = archive()
    if path is None or not path.exists():
        return
    if os.environ.get("SPARK_SUBMIT_OPTS") == SPARK_OPTS:
        os.environ["SPARK_SUBMIT_OPTS"] = (
            f"{SPARK_OPTS} -XX:SharedArchiveFile={path} -Xlog:cds*=off"
        )


def start_making_archive() -> None:
    """Start the background process that makes the archive, once per process, if none exists.

    It works in a folder of its own (its ``TMPDIR``: the session's log, the trial's sandbox,
    the archive until it is whole), so whatever a killed maker leaves goes with that folder.
    """
    path = archive()
    if _maker or path is None or path.exists() or os.environ.get("SPARK_SUBMIT_OPTS") != SPARK_OPTS:
        return
    folder = Path(tempfile.mkdtemp(prefix="raceproof-spark-cds-maker-", dir=path.parent))
    maker = subprocess.Popen(
        [sys.executable, "-c", MAKER, str(path)],
        cwd=ROOT,
        env={**_BEFORE_TESTS, "SPARK_SUBMIT_OPTS": SPARK_OPTS, "TMPDIR": str(folder)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C meant for the tests does not cut the archive short
    )
    _maker.append((maker, folder))


MAKER = "import sys; from property_tests.conftest import _make_archive; _make_archive(sys.argv[1])"


def stop_making_archive(wait_s: float = MAKER_WAIT_S) -> None:
    """Let the maker this process started finish within ``wait_s``, else stop its process group
    (its JVM is in it: SIGTERM, so Spark's shutdown hooks run, then SIGKILL after 10 s); then
    remove its folder, with any partial archive in it. No process and no half file is left."""
    while _maker:
        maker, folder = _maker.pop()
        try:
            maker.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            for signum in (signal.SIGTERM, signal.SIGKILL):
                _signal_group(maker.pid, signum)
                maker.wait()
                deadline = time.monotonic() + 10
                while _signal_group(maker.pid, 0) and time.monotonic() < deadline:
                    time.sleep(0.1)
        shutil.rmtree(folder, ignore_errors=True)


def _signal_group(pgid: int, signum: int) -> bool:
    """``os.killpg``; False once no process of the group is left."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def _archive_classes(path: Path) -> None:
    """Run one experiment on a JVM that archives the classes it loaded as it exits."""
    from pyspark import SparkContext

    from raceproof.spark_integration import experiments
    from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

    partial = Path(tempfile.gettempdir(), path.name)  # the maker's own folder (its TMPDIR)
    os.environ["SPARK_SUBMIT_OPTS"] = (
        f"{SPARK_OPTS} -XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off"
    )
    spark = spark_session()
    experiments.EXPERIMENTS["second-start"].trial(spark, WindowedCount(), False)
    stop_session()
    jvm = SparkContext._gateway.proc  # type: ignore[attr-defined]
    jvm.stdin.close()  # the gateway JVM exits when its stdin closes, writing the archive
    jvm.wait(timeout=600)
    if partial.exists() and partial.stat().st_size > 0:
        os.replace(partial, path)  # the same file system: a JVM sees the whole archive or none


def _make_archive(target: str) -> None:
    """The maker process: make the archive unless another process is making it or it is made."""
    path = Path(target)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another process is making it
        if not path.exists():
            _archive_classes(path)


os.environ.setdefault("SPARK_SUBMIT_OPTS", SPARK_OPTS)
use_archive_when_made()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A Spark test starts making the archive of Spark's classes; any test uses it once made."""
    group = item.get_closest_marker("xdist_group")
    if "spark" in item.nodeid.lower() or (group and str(group.args[0]).startswith("spark")):
        start_making_archive()
    use_archive_when_made()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Tests stop what they start: the archive's maker too (a bounded wait, none after Ctrl-C)."""
    stop_making_archive(0 if exitstatus == pytest.ExitCode.INTERRUPTED else MAKER_WAIT_S)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local-mode Spark session per test module (started by the test, never skipped)."""
    session = spark_session()
    yield session
    stop_session()


@pytest.fixture
def unshrunk(monkeypatch: pytest.MonkeyPatch) -> list[RunOutcome]:
    """A proof's finding is handed back as found, not shrunk, for a test that asks for its
    verdict alone (Brooklin's shrinks are 1.3-3 CPU s): the findings handed to the shrink."""
    found: list[RunOutcome] = []

    def as_found(run: Runner, outcome: RunOutcome) -> ShrinkResult:
        found.append(outcome)
        return ShrinkResult(outcome=outcome, runs=0, exhausted=False)

    monkeypatch.setattr(exhaustive, "shrink_found", as_found)
    return found
