"""``raceproof campaign --pipeline``: a user's pipeline × experiment × seed into the campaign's Parquet layout.

One user pipeline (a file outside the repository), one experiment, two
seeds: the campaign writes a baseline row and one row per seed to
``DIR/results`` (Parquet), ``report`` renders them, a re-run resumes (runs
nothing) and ``--baseline`` compares two such folders. Interrupted as its
second cell starts, the folder already reports the cells it finished, each
with its finding; resumed, it reports every cell. Real local-mode Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.spark_integration import campaign_pipelines
from raceproof.spark_integration.campaign import read_rows

pytestmark = pytest.mark.xdist_group("spark-2")

USER_JOB = """
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

class MyCounts(WindowedCount):
    name = "my-counts"

def make():
    return MyCounts()
"""


def _interrupt_at(prefix: str) -> Any:
    """A status callback that is Ctrl-C when the campaign says ``prefix...``."""

    def say(text: str) -> None:
        if text.startswith(prefix):
            raise KeyboardInterrupt

    return say


def test_a_pipeline_campaign_writes_parquet_rows_that_report_renders_and_resumes(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "my_job.py"
    job.write_text(USER_JOB)
    out = tmp_path / "campaign"
    # Interrupted as the second cell starts: the baseline and seed 0 are kept, and reported.
    with pytest.raises(KeyboardInterrupt):  # the command's signal handling takes it from here
        campaign_pipelines.run(
            f"{job}:make", out, [0, 1], ["generated-input"], _interrupt_at("[2/2]"), spark
        )
    kept = json.loads((out / "campaign.json").read_text())["summary"]
    assert kept["interrupted"] and kept["ran"] == 2, kept
    assert main(["report", str(out), "--json"]) == 0
    capsys.readouterr()
    markdown = Path(out / "report.md").read_text()
    assert "| my-counts | baseline | 0 | ok | - | no fault: ok:" in markdown, markdown
    assert "| my-counts | generated-input | 0 | ok | - | stock Spark: ok:" in markdown, markdown
    assert "generated-input | 1 |" not in markdown
    argv = [
        "campaign",
        "--pipeline",
        f"{job}:make",
        "--experiment",
        "generated-input",
        "--seeds",
        "2",
        "--out",
        str(out),
        "--json",
    ]
    assert main(argv) == 0  # resumed: only seed 1 is left
    result = json.loads(capsys.readouterr().out)
    assert result["ran"] == 1 and result["already_done"] == 2 and result["rows"] == 3
    rows = read_rows(out)
    assert sorted(r["cell"] for r in rows) == [
        "pipeline/my-counts/baseline/0",
        "pipeline/my-counts/generated-input/0",
        "pipeline/my-counts/generated-input/1",
    ]
    assert {r["verdict"] for r in rows} == {"ok"} and all(r["met"] for r in rows)
    assert all(r["finding"] and r["error"] is None for r in rows)  # findings in their own column
    assert main(argv) == 0  # resumed: nothing left to run
    again = json.loads(capsys.readouterr().out)
    assert again["ran"] == 0 and again["already_done"] == 3 and again["rows"] == 3
    assert main(["report", str(out), "--baseline", str(out), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["reports"]
    markdown = Path(out / "report.md").read_text()
    assert "3 cells (3 ok)" in markdown and "strategies fault-experiment" in markdown
    for seed in (0, 1):
        assert f"| my-counts | generated-input | {seed} | ok | - | stock Spark: ok:" in markdown
    html = Path(out / "report.html").read_text()
    assert "Pipeline experiments" in html and "stock Spark: ok" in html
    assert "no change" in markdown  # --baseline against itself
    assert set(written) >= {"markdown", "html"} or (out / "report.html").exists()


def test_a_pipeline_campaign_refuses_an_unloadable_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["campaign", "--pipeline", "no_such_module_xyz:make", "--out", str(tmp_path / "c")])
    assert code == 2 and "cannot import no_such_module_xyz" in capsys.readouterr().err


def test_a_campaign_over_two_pipelines_judges_both_and_rows_every_cell_asked_for(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 48: the second --pipeline used to replace the first, silently (exit 0)."""
    job = tmp_path / "my_job.py"
    job.write_text(USER_JOB)
    out = tmp_path / "two"
    argv = ["campaign", "--pipeline", "windowed-count", "--pipeline", f"{job}:make"]
    argv += ["--experiment", "drain", "--experiment", "transient-sink-failure"]
    code = main([*argv, "--seeds", "1", "--out", str(out), "--json"])
    result = json.loads(capsys.readouterr().out)
    rows = {r["cell"]: r for r in read_rows(out)}
    for name in ("windowed-count", "my-counts"):
        assert rows[f"pipeline/{name}/baseline/0"]["verdict"] == "ok", rows
        judged = rows[f"pipeline/{name}/drain/0"]
        assert judged["verdict"] == "ok" and judged["finding"].startswith("stock Spark:"), judged
        # Asked for, and needing a sink of its own: a row that says so, never a gap or a pass.
        lacking = rows[f"pipeline/{name}/transient-sink-failure/0"]
        assert lacking["verdict"] == "inconclusive", lacking
        assert lacking["finding"].startswith("not applicable: transient-sink-failure needs")
    assert len(rows) == 6 and result["rows"] == 6
    assert code == 3 and result["verdict"] == "inconclusive", result  # the two not applicable
    assert main(["report", str(out), "--json"]) == 0
    capsys.readouterr()
    markdown = (out / "report.md").read_text()
    assert "| windowed-count | drain | 0 | ok |" in markdown, markdown
    assert "| my-counts | drain | 0 | ok |" in markdown, markdown
    assert "| my-counts | transient-sink-failure | 0 | inconclusive |" in markdown, markdown
