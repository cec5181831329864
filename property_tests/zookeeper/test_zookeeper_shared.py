"""Runs sharing one ZooKeeper (``--zk-hosts``): one chroot each, unique even for the same pid, removed.

Two command lines run at once against one server, both believing they are
pid 4242 on host ``same`` (as two containers with their own pid namespaces
would): neither collides with the other and neither leaves its chroot behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from raceproof.cli.main import main
from raceproof.zookeeper import ZooKeeperServer, run_chroot, run_id

SAME_PID = """
import os, socket, sys
os.getpid = lambda: 4242
socket.gethostname = lambda: "same"
from raceproof.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def shared() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer() as server:
        yield server


def _children(hosts: str, path: str) -> list[str]:
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=30)
    try:
        return sorted(client.get_children(path)) if client.exists(path) else []
    finally:
        client.stop()
        client.close()


def test_run_ids_differ_for_the_same_host_and_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.getpid", lambda: 4242)
    monkeypatch.setattr("socket.gethostname", lambda: "same")
    ids = {run_id() for _ in range(100)}
    assert len(ids) == 100 and all(i.startswith("same-4242-") for i in ids)


def test_a_chroot_is_created_then_removed_with_its_content(shared: ZooKeeperServer) -> None:
    with run_chroot(shared.hosts, prefix="/raceproof-unit") as chroot:
        client = KazooClient(hosts=shared.hosts + chroot, timeout=10)
        client.start(timeout=30)
        client.create("/dms/A", b"{}", makepath=True)
        client.stop()
        client.close()
        assert _children(shared.hosts, "/raceproof-unit") == [chroot.rsplit("/", 1)[1]]
    assert _children(shared.hosts, "/raceproof-unit") == []


def test_two_concurrent_runs_with_the_same_pid_do_not_collide(
    shared: ZooKeeperServer, tmp_path: Path
) -> None:
    argv = [
        "repro",
        "brooklin-double-stop",
        "--report-timeline",
        "--backend",
        "zookeeper",
        "--zk-hosts",
        shared.hosts,
        "--json",
    ]
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_PID, *argv, "--out", str(tmp_path / str(n))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert "NodeExists" not in err and "Traceback" not in err, err
        assert run.returncode == 1, err
        results.append(json.loads(out))
    assert all(r["backend"] == "zookeeper" and r["reproduced"] for r in results)
    assert _children(shared.hosts, "/raceproof") == []  # both chroots removed


def test_an_unreachable_zookeeper_is_bad_input_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["repro", "brooklin-double-stop", "--backend", "zookeeper", "--zk-hosts", "127.0.0.1:1"]
    )
    assert code == 2
    assert "no ZooKeeper reachable at 127.0.0.1:1" in capsys.readouterr().err
