"""A Spark standalone cluster on 127.0.0.1 — a master and N workers — that raceproof starts and stops.

Why: a campaign's claim that it runs on a cluster is only tested against a
real one, and the figure of what a second worker gains (``raceproof bench
--cluster``) needs a cluster of one and then of two workers. Both use this
module; nothing here is needed to run a campaign against a cluster someone
else runs.

The processes come from the installed pyspark's own launcher
(``pyspark/bin/spark-class``, ``org.apache.spark.deploy.master.Master`` and
``...worker.Worker``), each in a session (process group) of its own, so
stopping a worker stops the executor it launched too. A start waits for the
master's election and each worker's registration, reading their logs, and
raises :class:`ClusterDidNotStart` with the log's tail when one does not come
up; :meth:`Cluster.stop` stops every group (SIGTERM, then SIGKILL) and says
which, if any, still had a process left.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 240.0  # a JVM on a loaded 2-core machine: a minute is not rare
STOP_TIMEOUT_S = 30.0
POLL_S = 0.5


class ClusterDidNotStart(RuntimeError):
    """The master or a worker did not come up; the message has its log's tail."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass
class Cluster:
    """A running standalone cluster: its master URL, its folder, the process groups it started."""

    url: str
    folder: Path
    workers: int
    cores_per_worker: int
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    left: list[int] | None = None  # after the stop: the process groups still alive

    def _environment(self) -> dict[str, str]:
        env = dict(
            os.environ,
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            SPARK_LOG_DIR=str(self.folder),
            SPARK_WORKER_DIR=str(self.folder / "work"),
        )
        env.pop("SPARK_HOME", None)  # pyspark's own jars, whatever else is installed
        return env

    def _start(self, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as handle:
            process = subprocess.Popen(
                [str(_spark_class()), *args],
                stdout=handle,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def _wait_for(self, log: Path, text: str, process: subprocess.Popen[bytes], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            if process.poll() is not None:
                break
            time.sleep(POLL_S)
        tail = log.read_text(errors="replace")[-3000:]
        raise ClusterDidNotStart(f"the Spark {what} did not start ({log}):\n{tail}")

    def start(self, port: int) -> None:
        master_log = self.folder / "master.log"
        master = self._start(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            master_log,
        )
        self._wait_for(master_log, "I have been elected leader", master, "master")
        started = []
        for number in range(self.workers):
            log = self.folder / f"worker-{number}.log"
            worker = self._start(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    self.url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.cores_per_worker),
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(self.folder / f"work-{number}"),
                ],
                log,
            )
            started.append((log, worker, number))
        for log, worker, number in started:  # they start together; each must register
            self._wait_for(log, "Successfully registered with master", worker, f"worker {number}")

    def stop(self) -> list[int]:
        """Stop every process group started, the last first; the groups that outlived SIGKILL
        (the same list is kept in ``left``)."""
        left = []
        for process in reversed(self.processes):
            if process.poll() is None:
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    _signal_group(process.pid, signal.SIGKILL)
                    process.wait(timeout=STOP_TIMEOUT_S)
            # the launcher is gone; what it started (an executor) may not be yet
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while group_alive(process.pid) and time.monotonic() < deadline:
                _signal_group(process.pid, signal.SIGKILL)
                time.sleep(POLL_S)
            if group_alive(process.pid):
                left.append(process.pid)
        self.left = left
        return left


def _signal_group(pgid: int, signum: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` still exists (not yet reaped counts)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of the group exists, someone else's to signal
        return True
    return True


@contextmanager
def standalone(folder: Path, workers: int, cores_per_worker: int = 1) -> Iterator[Cluster]:
    """A master and ``workers`` workers (``cores_per_worker`` cores and 1 GiB each) on 127.0.0.1,
    all registered; stopped when the block ends, however it ends."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cluster = Cluster(
        url=f"spark://127.0.0.1:{port}",
        folder=folder,
        workers=workers,
        cores_per_worker=cores_per_worker,
    )
    try:
        cluster.start(port)
        yield cluster
    finally:
        cluster.left = cluster.stop()
