"""A campaign on a real Spark standalone cluster equals the same campaign in local mode.

The fixture starts a standalone master and one worker on 127.0.0.1 with the
installed pyspark's own launcher (``spark-class``), waits until the worker has
registered, and stops both (their whole process groups, the executor
included) afterwards. If they cannot start, the test fails. The campaign runs
through the command line, as a user would, once with ``--master
spark://127.0.0.1:PORT`` and once with ``local[2]``; the Parquet rows must be
equal except the timing and executor columns.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from raceproof.spark_integration.campaign import read_rows
from raceproof.spark_integration.campaign_cells import comparable

pytestmark = pytest.mark.xdist_group("spark-cluster")

START_TIMEOUT_S = 240.0
RACEPROOF = str(Path(sys.executable).with_name("raceproof"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    with log.open("wb") as handle:
        return subprocess.Popen(
            [str(spark_class), *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(1.0)
    pytest.fail(f"the Spark {what} did not start:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a master with one 1-core worker, both ours."""
    folder = tmp_path_factory.mktemp("standalone")
    port = _free_port()
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(folder),
        SPARK_WORKER_DIR=str(folder / "work"),
    )
    env.pop("SPARK_HOME", None)
    master_log, worker_log = folder / "master.log", folder / "worker.log"
    master = _start(
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(_free_port()),
        ],
        master_log,
        env,
    )
    processes = [master]
    try:
        _wait_for(master_log, "I have been elected leader", master, "master")
        url = f"spark://127.0.0.1:{port}"
        worker = _start(
            [
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(folder / "work"),
            ],
            worker_log,
            env,
        )
        processes.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker, "worker")
        yield url
    finally:
        for process in reversed(processes):
            _stop(process)


def _campaign(master: str, out: Path) -> dict[str, object]:
    done = subprocess.run(
        [
            RACEPROOF,
            "campaign",
            "--master",
            master,
            "--scenario",
            "lost-update",
            "--strategy",
            "random",
            "--strategy",
            "pct",
            "--seeds",
            "2",
            "--examples",
            "20",
            "--cross-check",
            "1",
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_campaign_on_a_standalone_cluster_equals_the_local_mode_run(
    standalone: str, tmp_path: Path
) -> None:
    cluster = _campaign(standalone, tmp_path / "cluster")
    local = _campaign("local[2]", tmp_path / "local")
    assert cluster["master"] == standalone and cluster["ran"] == local["ran"] == 8
    cluster_rows = read_rows(tmp_path / "cluster")
    local_rows = read_rows(tmp_path / "local")
    assert len(cluster_rows) == 8
    assert [comparable(r) for r in cluster_rows] == [comparable(r) for r in local_rows]
    checks = cluster["determinism"]
    assert isinstance(checks, list) and checks and all(c["same"] for c in checks)
    names = sorted(p.name for p in (tmp_path / "cluster" / "counterexamples").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "local" / "counterexamples").iterdir())
