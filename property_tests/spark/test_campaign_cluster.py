"""Campaigns on a real Spark standalone cluster equal the same work done locally.

The fixture starts a standalone master and one 1-core worker on 127.0.0.1
with the installed pyspark's own launcher (``spark_integration.standalone``:
``spark-class``), waits until the worker has registered, and stops them
afterwards (their whole process groups, the executors included), failing if
any process is left. If they cannot start, the test fails. One worker is the
cluster path whole (the driver ships tasks through the master to an executor
in another process); a second only added two JVMs (its own and its executor's)
to each test. The cluster's JVMs take the suite's JVM options
(``SPARK_SUBMIT_OPTS``, through ``JAVA_TOOL_OPTIONS``) as its drivers do. The campaigns run
through the command line, as a user would, with ``--master
spark://127.0.0.1:PORT``: a search campaign's Parquet rows must equal the
same campaign's on ``local[2]`` (but the timing and executor columns), and
``campaign --prove``, which ships a proof's balanced units in rounds of
Spark tasks, must give the local ``raceproof prove``'s result on a variant
that holds (verdict, schedules, runs, complete) and on one that does not
(verdict, the first violation in walk order, shrunk, its counterexample file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from raceproof.spark_integration.campaign import read_rows
from raceproof.spark_integration.campaign_cells import comparable
from raceproof.spark_integration.standalone import ClusterDidNotStart, standalone

pytestmark = pytest.mark.xdist_group("spark-cluster")

RACEPROOF = str(Path(sys.executable).with_name("raceproof"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a master with one 1-core worker, all ours."""
    folder = tmp_path_factory.mktemp("standalone")
    # the master, the worker and the executors it starts (they inherit the worker's environment)
    options = {"JAVA_TOOL_OPTIONS": os.environ.get("SPARK_SUBMIT_OPTS", "")}
    with ExitStack() as stack:
        with mock.patch.dict(os.environ, options):
            try:
                running = stack.enter_context(standalone(folder, workers=1))
            except ClusterDidNotStart as exc:
                pytest.fail(str(exc))
        yield running.url
    assert running.left == [], f"processes left after the cluster stopped: {running.left}"


def _campaign(master: str, out: Path, *args: str) -> dict[str, Any]:
    """``raceproof campaign --master MASTER --out OUT ARGS --json``: its JSON, exit 0 asserted."""
    done = subprocess.run(
        [RACEPROOF, "campaign", "--master", master, "--out", str(out), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


SEARCH = ("--scenario", "lost-update", "--strategy", "random", "--strategy", "pct")
SEARCH += ("--seeds", "2", "--examples", "20", "--cross-check", "1")


def test_a_campaign_on_a_standalone_cluster_equals_the_local_mode_run(
    cluster: str, tmp_path: Path
) -> None:
    on_cluster = _campaign(cluster, tmp_path / "cluster", *SEARCH)
    local = _campaign("local[2]", tmp_path / "local", *SEARCH)
    assert on_cluster["master"] == cluster and on_cluster["ran"] == local["ran"] == 8
    cluster_rows = read_rows(tmp_path / "cluster")
    local_rows = read_rows(tmp_path / "local")
    assert len(cluster_rows) == 8
    assert [comparable(r) for r in cluster_rows] == [comparable(r) for r in local_rows]
    checks = on_cluster["determinism"]
    assert isinstance(checks, list) and checks and all(c["same"] for c in checks)
    names = sorted(p.name for p in (tmp_path / "cluster" / "counterexamples").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "local" / "counterexamples").iterdir())


# A proof of about a thousand runs that holds, and one violated after its FIFO run (at 67
# runs with -j 1): both go past the driver's first runs into rounds of Spark tasks.
PROOF = "streams-checkpoint-resurrection"
HOLDS, VIOLATED = "fix-load-after-lock", "buggy"


def _local_proof(variant: str, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [RACEPROOF, "prove", PROOF, "--variant", variant, "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == (1 if variant == VIOLATED else 0), done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_campaign_prove_in_rounds_on_the_cluster_is_the_local_proof(
    cluster: str, tmp_path: Path
) -> None:
    summary = _campaign(
        cluster,
        tmp_path / "campaign",
        *("--scenario", PROOF, "--variant", HOLDS, "--variant", VIOLATED, "--prove"),
        *("--strategy", "random", "--seeds", "1", "--examples", "5", "--cross-check", "0"),
    )
    assert summary["verdict"] == "ok" and not summary["failed_expectations"]
    proofs = {r["variant"]: r for r in read_rows(tmp_path / "campaign") if r["kind"] == "proof"}
    holds, local_holds = proofs[HOLDS], _local_proof(HOLDS, tmp_path / "local-holds")
    assert (holds["verdict"], holds["complete"]) == (local_holds["verdict"], True) == ("ok", True)
    assert (holds["schedules"], holds["examples"]) == (
        local_holds["schedules"],
        local_holds["runs"],
    )
    assert holds["schedules"] > 1000
    violated, local_violated = proofs[VIOLATED], _local_proof(VIOLATED, tmp_path / "local-bug")
    assert violated["verdict"] == local_violated["verdict"] == "violated"
    for name in ("trace_hash", "blob", "deviations", "checker"):
        assert violated[name] == local_violated[name], name
    ours = tmp_path / "campaign" / violated["counterexample"]
    theirs = tmp_path / "local-bug" / ours.name  # prove --out names it the same way
    # The random search cell shrank to the same run and wrote the file first (one file a
    # shrunk trace): all but the strategy that found it is the local proof's file.
    ours_json, theirs_json = json.loads(ours.read_text()), json.loads(theirs.read_text())
    assert ours_json.pop("strategy") in ("random", "exhaustive") and theirs_json.pop("strategy")
    assert ours_json == theirs_json
    # the proofs went to the executors in rounds, not all walked on the driver
    balances = {p["cell"].split("/")[2]: p for p in summary["proofs"]}
    assert balances[HOLDS]["rounds"] >= 2 and balances[HOLDS]["tasks"] > 2
    walkers = {w["name"] for w in balances[HOLDS]["balance"]["workers"]}
    assert "driver" in walkers and len(walkers) > 1
    assert balances[HOLDS]["balance"]["total_runs"] == holds["examples"]
