"""Campaigns on a real Spark standalone cluster give the rows their cells give anywhere else.

The fixture starts a standalone master and one 1-core worker on 127.0.0.1
with the installed pyspark's own launcher (``spark_integration.standalone``:
``spark-class``), waits until the worker has registered, and stops them
afterwards (their whole process groups, the executors included), failing if
any process is left. If they cannot start, the test fails. One worker is the
cluster path whole (the driver ships tasks through the master to an executor
in another process); a second only added two JVMs (its own and its executor's)
to each test. The cluster's JVMs take the suite's JVM options
(``SPARK_SUBMIT_OPTS``, through ``JAVA_TOOL_OPTIONS``) as its drivers do. One
campaign runs on the cluster through the command line, as a user would, with
``--master spark://127.0.0.1:PORT``: search cells of two scenarios and, with
``--prove``, proofs that ship their balanced units in rounds of Spark tasks. Its
search rows must equal the same cells run in the test's own process
(``run_cell``, what every executor runs; but the timing and executor columns),
with the same counterexample files; its proofs must give the local ``raceproof
prove``'s result on a variant that holds (verdict, schedules, runs, complete)
and on one that does not (verdict, the first violation in walk order, shrunk,
its counterexample file). One campaign for both tests: a second one on the
cluster only started another driver and another executor JVM.
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

from raceproof.spark_integration import campaign
from raceproof.spark_integration.campaign import read_rows
from raceproof.spark_integration.campaign_cells import comparable, run_cell
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


# A proof of about a thousand runs that holds, and one violated after its FIFO run (at 67
# runs with -j 1): both go past the driver's first runs into rounds of Spark tasks.
PROOF = "streams-checkpoint-resurrection"
HOLDS, VIOLATED = "fix-load-after-lock", "buggy"

CAMPAIGN = ("--scenario", "lost-update", "--scenario", PROOF, "--prove", "--cross-check", "1")
CAMPAIGN += ("--variant", "buggy", "--variant", "fix-cas", "--variant", HOLDS)
CAMPAIGN += ("--strategy", "random", "--strategy", "pct", "--seeds", "2", "--examples", "20")


@pytest.fixture(scope="module")
def on_cluster(
    cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], Path]:
    """The campaign's JSON summary and its folder: both tests judge this one run."""
    out = tmp_path_factory.mktemp("on-cluster") / "campaign"
    return _campaign(cluster, out, *CAMPAIGN), out


def _cells_here() -> list[dict[str, Any]]:
    """The campaign's search cells run in this process, no Spark: their rows, by cell key."""
    options = campaign.Options(
        scenarios=("lost-update", PROOF),
        variants=("buggy", "fix-cas", HOLDS),
        strategies=("random", "pct"),
        seeds=(0, 1),
        examples=20,
    )
    cells = [cell for cell in campaign.grid(options) if cell.kind == "search"]
    return sorted((run_cell(cell) for cell in cells), key=lambda row: str(row["cell"]))


def test_a_campaign_on_a_standalone_cluster_gives_the_rows_its_cells_give_here(
    cluster: str, on_cluster: tuple[dict[str, Any], Path]
) -> None:
    summary, out = on_cluster
    assert summary["master"] == cluster
    rows = [row for row in read_rows(out) if row["kind"] == "search"]
    here = _cells_here()
    assert len(rows) == len(here) == 16
    assert [comparable(r) for r in rows] == [comparable(r) for r in here]
    checks = summary["determinism"]
    assert isinstance(checks, list) and checks and all(c["same"] for c in checks)
    found = {row["counterexample"]: row["_counterexample"] for row in here if row["counterexample"]}
    assert any(row["scenario"] == "lost-update" for row in here if row["counterexample"])
    names = sorted(p.name for p in (out / "counterexamples").iterdir())
    proved = {r["counterexample"] for r in read_rows(out) if r["kind"] == "proof"}
    assert names == sorted({Path(name).name for name in {*found, *proved} if name})
    for name, text in found.items():  # one file a shrunk trace: the first cell to find it wrote it
        ours, theirs = json.loads((out / name).read_text()), json.loads(text)
        assert ours.pop("strategy") and theirs.pop("strategy") and ours == theirs


def _local_proof(variant: str, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        # the campaign's proof in rounds is the stateless walk, cut into units
        [
            RACEPROOF,
            "prove",
            PROOF,
            "--variant",
            variant,
            "--out",
            str(out),
            "--json",
            "--no-state-cache",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == (1 if variant == VIOLATED else 0), done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_campaign_prove_in_rounds_on_the_cluster_is_the_local_proof(
    on_cluster: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    summary, out = on_cluster
    assert summary["verdict"] == "ok" and not summary["failed_expectations"]
    rows = read_rows(out)
    proofs = {r["variant"]: r for r in rows if r["kind"] == "proof" and r["scenario"] == PROOF}
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
    ours = out / violated["counterexample"]
    theirs = tmp_path / "local-bug" / ours.name  # prove --out names it the same way
    # A search cell may shrink to the same run and write the file first (one file a shrunk
    # trace): all but the strategy that found it is the local proof's file.
    ours_json, theirs_json = json.loads(ours.read_text()), json.loads(theirs.read_text())
    assert ours_json.pop("strategy") in ("random", "pct", "exhaustive") and theirs_json.pop(
        "strategy"
    )
    assert ours_json == theirs_json
    # the proofs went to the executors in rounds, not all walked on the driver
    balances = {p["cell"].split("/")[2]: p for p in summary["proofs"] if PROOF in p["cell"]}
    assert balances[HOLDS]["rounds"] >= 2 and balances[HOLDS]["tasks"] > 2
    walkers = {w["name"] for w in balances[HOLDS]["balance"]["workers"]}
    assert "driver" in walkers and len(walkers) > 1
    assert balances[HOLDS]["balance"]["total_runs"] == holds["examples"]
