"""A campaign writes each cell exactly once, its row with its counterexample (issue 33, item 5).

What the issue saw: after a campaign had written its cells, a SIGTERM wrote
each cell a second time (8 rows for 4 cells; ``report`` then counted "found
4/4" for 2 seeds), and a ``counterexamples`` path that is a file lost the
cell's counterexample for good (the row was written without it, so a rerun
skipped the cell as done). Here a real signal (through the command line's own
handler) is sent at moments drawn from a seeded random source: before or
after a flush of rows (the flush's Spark write is a py4j call the signal could
cut while the JVM commits), in the determinism cross-check after every row is
written, and while the manifest is written: one round per kind of moment, the
signal drawn (SIGINT at the flushes, SIGTERM at the check and the manifest with
seed 33; both reach the same handler). Whatever the moment, no cell has
two rows, and a rerun completes the campaign with one row per cell. The
counterexample half: a ``counterexamples`` file is refused before Spark
starts (exit 2, one line), and one that appears mid-run leaves the cell's
row unwritten (``CampaignFolderError``), so a rerun redoes it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli import signals
from raceproof.cli.main import main
from raceproof.reports.campaign_folder import CampaignFolderError
from raceproof.spark_integration import campaign
from raceproof.spark_integration.campaign_cells import Cell, run_cell

MOMENTS = ("before-write", "after-write", "cross-check", "manifest")
SEED = 33  # the moments' seed (printed on failure with the round)


def _moments(rounds: int) -> list[tuple[str, int, int]]:
    draw = random.Random(SEED)
    moments = []
    for round_ in range(rounds):
        moment = MOMENTS[round_ % len(MOMENTS)]  # each kind of moment; where in it is drawn
        at = draw.randint(1, 3) if moment.endswith("write") else 1  # 3+ flushes, 1 check
        moments.append((moment, at, draw.choice((signal.SIGINT, signal.SIGTERM))))
    return moments


def _options(out: Path) -> campaign.Options:
    return campaign.Options(
        scenarios=("lost-update",),
        strategies=("random",),
        seeds=(0, 1),
        examples=30,
        out=str(out),
        cross_check=2,
        cells_per_job=1,  # one job, one flush per cell: several flushes per campaign
        jobs_in_flight=1,
    )


def _keys(out: Path) -> list[str]:
    return [row["cell"] for row in campaign.read_rows(out)]


@pytest.mark.xdist_group("spark-2")
def test_a_signal_at_any_moment_leaves_each_cell_written_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(campaign, "FLUSH_EVERY_S", 0.0)  # every finished job is flushed
    write, check, manifest = campaign.write_rows, campaign.cross_check, campaign.write_manifest
    fired = 0
    rounds = _moments(len(MOMENTS))  # a fifth round would redraw round 0's moment and signal
    for round_, (moment, at, signum) in enumerate(rounds):
        where = f"round {round_} (seed {SEED}): {signal.Signals(signum).name} at {moment} #{at}"
        calls: Counter[str] = Counter()
        sent: list[int] = []

        def hit(
            point: str,
            moment: str = moment,
            at: int = at,
            signum: int = signum,
            calls: Counter[str] = calls,
            sent: list[int] = sent,
        ) -> None:
            calls[point] += 1
            if point == moment and calls[point] == at and not sent:
                sent.append(signum)
                os.kill(os.getpid(), signum)

        def writing(*args: Any, **kwargs: Any) -> None:
            hit("before-write")
            write(*args, **kwargs)
            hit("after-write")

        def checking(*args: Any, **kwargs: Any) -> Any:
            hit("cross-check")
            return check(*args, **kwargs)

        def saving(*args: Any, **kwargs: Any) -> None:
            hit("manifest")
            manifest(*args, **kwargs)

        monkeypatch.setattr(campaign, "write_rows", writing)
        monkeypatch.setattr(campaign, "cross_check", checking)
        monkeypatch.setattr(campaign, "write_manifest", saving)
        out = tmp_path / f"c{round_}"
        options = _options(out)
        capsys.readouterr()
        with signals.interruptible():
            try:
                summary = campaign.run(options, spark=spark)
                stopped = summary.interrupted
                said = capsys.readouterr().err
            except signals.Interrupted:
                stopped = True
                said = ""  # the command line's handler says it (one line, the signal's name)
        fired += bool(sent)
        assert stopped == bool(sent), where
        if said:  # the campaign's own line names the signal, whichever moment it cut
            assert f"interrupted by {signal.Signals(signum).name}" in said, (where, said)
        keys = _keys(out)
        assert len(keys) == len(set(keys)), f"{where}: cells written twice: {Counter(keys)}"
        monkeypatch.setattr(campaign, "write_rows", write)
        monkeypatch.setattr(campaign, "cross_check", check)
        monkeypatch.setattr(campaign, "write_manifest", manifest)
        again = campaign.run(options, spark=spark)
        keys = _keys(out)
        assert not again.interrupted and again.ran == again.cells - again.already_done, where
        assert len(keys) == len(set(keys)) == again.cells, f"{where}: {Counter(keys)}"
    assert fired == len(rounds)  # every drawn moment came up: each round was interrupted


def test_a_counterexamples_file_is_refused_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    out.mkdir()
    (out / "results").mkdir()
    (out / "counterexamples").write_text("not a folder\n")
    argv = ["campaign", "--scenario", "lost-update", "--seeds", "1", "--out", str(out)]
    code = main(argv)
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "counterexamples is not a folder" in lines[0]
    assert sorted(p.name for p in out.iterdir()) == ["counterexamples", "results"]


@pytest.mark.xdist_group("spark-2")
def test_a_row_and_its_counterexample_are_written_together_or_not_at_all(
    spark: Any, tmp_path: Path
) -> None:
    found = run_cell(
        Cell(
            kind="search",
            scenario="lost-update",
            variant="buggy",
            strategy="random",
            seed=0,
            examples=30,
        )
    )
    held = run_cell(
        Cell(
            kind="search",
            scenario="lost-update",
            variant="fix-cas",
            strategy="random",
            seed=0,
            examples=30,
        )
    )
    assert found["_counterexample"] and found["counterexample"] and "_counterexample" not in held
    out = tmp_path / "c"
    out.mkdir()
    (out / "counterexamples").write_text("appeared mid-run\n")
    with pytest.raises(CampaignFolderError, match="its row is not written"):
        campaign.write_rows(spark, out, [held, found])
    assert _keys(out) == []  # neither row: the cell is not lost, a rerun redoes it
    (out / "counterexamples").unlink()
    campaign.write_rows(spark, out, [held, found])
    campaign.write_rows(spark, out, [found])  # a repeated flush adds nothing
    assert sorted(_keys(out)) == sorted([held["cell"], found["cell"]])
    saved = json.loads((out / found["counterexample"]).read_text())
    assert saved["trace_hash"] == found["trace_hash"]


def test_a_signal_waits_for_the_rows_and_a_third_one_still_forces_the_exit() -> None:
    """Inside the hold the write and its bookkeeping finish; then the command's handler runs."""
    done: list[str] = []
    with signals.interruptible(), pytest.raises(signals.Interrupted), campaign._signals_held():
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("rows written")
        done.append("pending cleared")
    assert done == ["rows written", "pending cleared"]
    script = (
        "import os, signal, time\n"
        "from raceproof.cli import signals\n"
        "from raceproof.spark_integration import campaign\n"
        "with signals.interruptible(), campaign._signals_held():\n"
        "    for _ in range(3):\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
    )
    forced = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert forced.returncode == 130, forced.stderr
