"""The Brooklin coordinator on a real ZooKeeper: the simulated counterexample, forced onto threads.

The server is Debian's ZooKeeper, started by the fixture on 127.0.0.1 with its
data in a temporary folder and stopped afterwards; each run uses its own
chroot. If ZooKeeper cannot start, these tests fail: they never skip.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from raceproof.cli.main import main
from raceproof.scenarios.catalogue import get
from raceproof.sim import BadVersion, Budget, History, KeyedReplaySource, NoNode, explore
from raceproof.zookeeper import ZooKeeperServer
from raceproof.zookeeper.brooklin import run_forced
from raceproof.zookeeper.kazoo_store import KazooStore

SCENARIO = get("brooklin-double-stop")
RESUME = "acknowledged-resume-holds"


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer() as server:
        yield server


@pytest.fixture(scope="module")
def shrunk_counterexample():  # type: ignore[no-untyped-def]
    run = SCENARIO.runner("buggy", SCENARIO.config, RESUME)
    report = explore(run, "random", seed=0, budget=Budget(examples=2_000))
    assert report.shrunk is not None
    return report.shrunk


def test_kazoo_store_behaves_like_the_simulated_store(zookeeper: ZooKeeperServer) -> None:
    root = KazooClient(hosts=zookeeper.hosts)
    root.start(timeout=30)
    root.ensure_path("/store-test")
    root.stop()
    client = KazooClient(hosts=zookeeper.hosts + "/store-test")
    client.start(timeout=30)
    try:
        store = KazooStore(client)
        store.ensure_path("/ds")
        store.create("/ds/A", {"status": "READY"})
        assert store.get("/ds/A") == ({"status": "READY"}, 0)
        assert store.set("/ds/A", {"status": "STOPPING"}, 0) == 1
        with pytest.raises(BadVersion):
            store.set("/ds/A", {"status": "STOPPED"}, 0)
        with pytest.raises(NoNode):
            store.get("/ds/missing")
        store.create("/ds/B")
        assert store.children("/ds") == ["A", "B"]
    finally:
        client.stop()
        client.close()


def test_forced_counterexample_loses_the_resume_on_real_zookeeper(
    zookeeper: ZooKeeperServer, shrunk_counterexample
) -> None:  # type: ignore[no-untyped-def]
    real = run_forced(zookeeper.hosts, "buggy", SCENARIO.config, shrunk_counterexample)
    assert real.finished and real.diverged is None and not real.errors
    assert real.followed == real.forced  # every checkpoint passed in the simulated order
    violated = {v.checker for v in real.verdicts if v.status == "violated"}
    assert {RESUME, "legal-transitions", "no-lost-update"} <= violated
    writes = [
        op.get("to") for op in real.history.of_kind("status.write") if op.get("entity") == "A"
    ]
    assert writes == ["STOPPING", "STOPPED", "READY", "STOPPED"]


def test_forced_counterexample_holds_with_the_conditional_write(
    zookeeper: ZooKeeperServer, shrunk_counterexample
) -> None:  # type: ignore[no-untyped-def]
    real = run_forced(
        zookeeper.hosts, "fix-conditional-write", SCENARIO.config, shrunk_counterexample
    )
    assert real.finished and real.diverged is None and not real.errors
    assert real.status == "ok", [v for v in real.verdicts if v.status != "ok"]
    final = real.history.of_kind("final")[-1]
    assert final.get("statuses") == {"A": "READY", "B": "STOPPED"}


def test_report_timeline_on_zookeeper_from_the_command_line(
    zookeeper: ZooKeeperServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sim, real = tmp_path / "sim.jsonl", tmp_path / "zookeeper.jsonl"
    code = main(
        [
            "repro",
            "brooklin-double-stop",
            "--report-timeline",
            "--backend",
            "zookeeper",
            "--zk-hosts",
            zookeeper.hosts,
            "--json",
            "--out",
            str(tmp_path / "cx"),
            "--history-out",
            str(sim),
            "--real-history-out",
            str(real),
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert "_real_history" not in result and "_timeline" not in result
    # The real run's history is written too, so the two can be drawn side by side.
    real_history = History.from_jsonl(real.read_text(encoding="utf-8"))
    assert len(real_history) == result["timeline_ops"]
    assert real_history.trace_hash() == result["trace_hash"]
    pictures = tmp_path / "pictures"
    assert (
        main(
            [
                "report",
                str(sim),
                "--beside",
                str(real),
                "--format",
                "html",
                "--out",
                str(pictures),
                "--scenario",
                "brooklin-double-stop",
            ]
        )
        == 0
    )
    page = next(pictures.glob("*.html")).read_text(encoding="utf-8")
    assert "beside" in page and "they part at op #" in page
    assert code == 1
    assert result["backend"] == "zookeeper"
    assert result["simulated"]["verdict"] == "violated"
    assert result["verdict"] == "violated" and result["reproduced"] is True
    assert result["checker"] == result["simulated"]["checker"] == "legal-transitions"
    violated = {v["checker"] for v in result["verdicts"] if v["status"] == "violated"}
    assert {RESUME, "legal-transitions"} <= violated
    assert result["real_diverged"] is None


def test_report_timeline_story_holds_for_the_fix_on_zookeeper(zookeeper: ZooKeeperServer) -> None:
    assert SCENARIO.report_script is not None
    story = SCENARIO.runner("buggy", SCENARIO.config)(
        KeyedReplaySource(dict(SCENARIO.report_script))
    )
    real = run_forced(zookeeper.hosts, "fix-stop-dedupe", SCENARIO.config, story)
    assert real.status == "ok"


def test_a_scenario_without_the_backend_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["repro", "lost-update", "--backend", "zookeeper"]) == 2
    assert "has no zookeeper backend" in capsys.readouterr().err


def test_a_missing_zookeeper_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from raceproof.zookeeper import ZooKeeperUnavailable, server

    monkeypatch.setattr(server, "ZOOKEEPER_JAR", tmp_path / "absent.jar")
    with pytest.raises(ZooKeeperUnavailable, match="make zookeeper"):
        ZooKeeperServer().start()


def test_an_actor_past_its_part_of_the_order_waits_for_the_rest() -> None:
    """The leader's extra refresh must not overtake a slow stop task still in the script."""
    from raceproof.zookeeper.threads import Sequencer

    sequencer = Sequencer([("leader", "refresh", None), ("task", "write", "A")], timeout_s=10)
    passed: list[str] = []
    sequencer.arrive(("leader", "refresh", None))
    passed.append("leader refresh")
    extra = threading.Thread(
        target=lambda: (sequencer.arrive(("leader", "refresh", None)), passed.append("extra"))
    )
    extra.start()
    extra.join(0.3)
    assert passed == ["leader refresh"]  # held: the task's write is still to come
    passed.append("task write")  # before it arrives: the extra cannot pass until it has
    sequencer.arrive(("task", "write", "A"))
    extra.join(5)
    assert passed == ["leader refresh", "task write", "extra"]
    assert sequencer.complete and sequencer.released == 0 and sequencer.diverged is None


@pytest.mark.parametrize("cut", ["stopping the JVM", "removing the folder"])
def test_a_signal_that_lands_in_the_servers_clean_up_still_leaves_nothing(
    cut: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's SIGTERM raises ``Interrupted`` wherever the main thread is: a run that
    ends as it comes is inside ``stop``. The JVM still goes and the folder is still removed
    (a clean-clone CI run left ``raceproof-zk-*`` behind twice)."""
    from raceproof.cli.signals import Interrupted
    from raceproof.runs import processes
    from raceproof.zookeeper import server as server_module

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(server_module.tempfile, "tempdir", None)  # TMPDIR read again
    zk = ZooKeeperServer().start()
    jvm = zk.process
    assert jvm is not None and list(tmp_path.glob("raceproof-zk-*"))
    real_stop, real_rmtree, cuts = processes.stop, server_module.shutil.rmtree, []

    def stop_cut(process, timeout_s=10.0):  # type: ignore[no-untyped-def]
        if not cuts:
            cuts.append(cut)
            processes._signal_group(process, 15)  # the JVM was told, then the signal came
            raise Interrupted(15)
        return real_stop(process, timeout_s)

    def rmtree_cut(path, ignore_errors=False):  # type: ignore[no-untyped-def]
        if not cuts:
            cuts.append(cut)
            raise Interrupted(15)
        return real_rmtree(path, ignore_errors=ignore_errors)

    if cut == "stopping the JVM":
        monkeypatch.setattr(server_module.processes, "stop", stop_cut)
    else:
        monkeypatch.setattr(server_module.shutil, "rmtree", rmtree_cut)
    with pytest.raises(Interrupted):
        zk.stop()
    assert cuts == [cut]
    assert jvm.poll() is not None, "the JVM outlived its server's stop"
    assert list(tmp_path.glob("raceproof-zk-*")) == []
