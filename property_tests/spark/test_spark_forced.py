"""The simulated stories forced onto real Spark: ``raceproof repro SCENARIO --backend spark``.

The checkpoint-resurrection story (KAFKA-8187) and the drain story
(SAMZA-2741) run in simulation, and their op order is played on a real
local-mode windowed count at named fault points. The tests start a real
local Spark session (in one of the two Spark xdist groups) and fail
if it cannot start; what they assert is what Spark did, measured: it refuses a
state directory deleted between the checkpoint read and the state load, and
its stock AvailableNow drain leaves exactly the windows the model's 1.8 drain
leaves unfired.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.sim import History
from raceproof.spark_integration.session import session_running

pytestmark = pytest.mark.xdist_group("spark-2")


def _repro(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, Any]:
    code = main(
        [
            "repro",
            *args,
            "--backend",
            "spark",
            "--json",
            "--out",
            str(tmp_path / "cx"),
            "--history-out",
            str(tmp_path / "sim.jsonl"),
            "--real-history-out",
            str(tmp_path / "real.jsonl"),
        ]
    )
    return code, json.loads(capsys.readouterr().out)


def test_resurrection_order_is_forced_and_spark_refuses_the_deleted_state(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, result = _repro(capsys, tmp_path, "streams-checkpoint-resurrection", "--report-timeline")
    assert result["simulated"]["verdict"] == "violated"
    assert result["simulated"]["checker"] == "checkpoint-soundness"
    steps = result["real_steps"]
    sim_order = [s["sim_index"] for s in steps if s["sim_index"] is not None]
    assert sim_order == sorted(sim_order), steps
    kinds = [s["sim"].split()[1] for s in steps[1:]]
    assert kinds[:3] == ["checkpoint.load", "dir.delete", "seek"], steps
    assert all(s["reached"] for s in steps[:4]), steps
    # On Spark the same order hits the state load: it fails loudly instead of seeking over nothing.
    assert result["real_outcome"]["verdict"] == "raised", result["real_outcome"]
    assert "CANNOT_READ_DELTA_FILE_NOT_EXISTS" in result["real_outcome"]["message"]
    assert (result["verdict"], result["reproduced"], code) == ("ok", False, 0)
    real = History.from_jsonl((tmp_path / "real.jsonl").read_text())
    point = real.of_kind("fault.point")[0]
    delete = real.of_kind("fault.delete")[0]
    assert point.get("checked_on_files") is True and point.index < delete.index
    assert (point.get("sim_index"), delete.get("sim_index")) == (
        steps[1]["sim_index"],
        steps[2]["sim_index"],
    )
    assert session_running()  # the caller's session is left running


def test_drain_story_misses_the_windows_the_model_leaves_unfired(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, result = _repro(capsys, tmp_path, "samza-drain", "--variant", "drain-1.8")
    assert result["simulated"]["checker"] == "drain-completeness"
    assert (result["verdict"], result["checker"], result["reproduced"], code) == (
        "violated",
        "drain-completeness",
        True,
        1,
    )
    sim = History.from_jsonl((tmp_path / "sim.jsonl").read_text())
    unfired = sim.of_kind("final")[-1].get("unfired_pane_seqs")
    windows = sorted({f"00:0{s // 3 // 6}:{s // 3 % 6}0" for s in unfired})
    message = result["message"]
    for window in windows:  # pane seq // 3 is the window starting at 10 * (seq // 3) seconds
        assert f"window=2026-01-01T{window}" in message, (windows, message)
    # The two histories drawn side by side in one report.
    assert main(
        [
            "report",
            str(tmp_path / "sim.jsonl"),
            "--beside",
            str(tmp_path / "real.jsonl"),
            "--format",
            "html",
            "--scenario",
            "samza-drain",
        ]
    ) in (0, 1)
    capsys.readouterr()
    report = (tmp_path / "sim.html").read_text()
    assert "pane.fire" in report and "sink.row" in report  # the model's ops and Spark's


def test_the_designed_drain_is_complete_on_spark(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, result = _repro(capsys, tmp_path, "samza-drain", "--variant", "drain")
    assert (result["simulated"]["verdict"], result["verdict"], code) == ("ok", "ok", 0), result
    assert result["real_outcome"]["verdict"] == "ok"
    assert "sentinel" in result["real_steps"][-2]["spark"]


def test_a_variant_without_a_spark_counterpart_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    running = session_running()
    code = main(
        [
            "repro",
            "samza-drain",
            "--variant",
            "accept-stale-run-id",
            "--backend",
            "spark",
            "--out",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "no Spark counterpart" in err and "Traceback" not in err
    assert session_running() == running  # refused before any Spark session started
    assert main(["repro", "lost-update", "--backend", "spark"]) == 2
    assert "no spark backend" in capsys.readouterr().err


def test_the_fixes_orders_are_forced_too(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # KAFKA-9113's fix reads the checkpoint after the cleaner's delete: on Spark the state folder
    # is gone before the restart, and Spark refuses to start rather than run on no state.
    code, result = _repro(
        capsys,
        tmp_path,
        "streams-checkpoint-resurrection",
        "--report-timeline",
        "--variant",
        "fix-load-after-lock",
    )
    kinds = [s["sim"].split()[1] for s in result["real_steps"][1:3]]
    assert kinds == ["dir.delete", "checkpoint.load"], result["real_steps"]
    assert result["real_outcome"]["verdict"] == "raised"
    assert (
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY" in result["real_outcome"]["message"]
    )
    assert not result["real_steps"][2]["reached"]  # the query never got to the batch
    # PR #6818's run has no delete in the story: the restarted state matches its inputs.
    code, result = _repro(
        capsys,
        tmp_path,
        "streams-checkpoint-resurrection",
        "--report-timeline",
        "--variant",
        "fix-standby-running",
    )
    assert all(s["reached"] for s in result["real_steps"]), result["real_steps"]
    assert not any("dir.delete" in s["sim"] for s in result["real_steps"])
    checked = {v["checker"]: v["status"] for v in result["verdicts"]}
    assert (checked["replay-equivalence"], result["verdict"], code) == ("ok", "ok", 0)


def test_the_side_by_side_puts_each_header_over_its_column() -> None:
    """No Spark: the layout alone. The header's "Spark" once sat three columns left of its column."""
    from types import SimpleNamespace

    from raceproof.spark_integration.forced import ForcedTrial, Step

    forced = ForcedTrial(
        story="KAFKA-8187",
        trial=SimpleNamespace(verdict="raised", message="the query fails"),  # type: ignore[arg-type]
        steps=[
            Step(14, "checkpoints of 1_0 up to offset 2", "2 records committed"),
            Step(None, "cleaner dir.delete", "deleted checkpoint/state"),
            Step(182, "restore.done", "not run", reached=False),
        ],
        checker_map={},
    )
    header, *steps, trial = forced.side_by_side().splitlines()
    assert steps == [
        "    #14  checkpoints of 1_0 up to offset 2  ->  2 records committed",
        "      -  cleaner dir.delete                 ->  deleted checkpoint/state",
        "   #182  restore.done                       ->  not run   [NOT REACHED]",
    ]
    assert header.index("simulated") == steps[0].index("checkpoints")
    assert header.index("Spark") == steps[0].index("2 records")
    assert trial == "  Spark trial: raised: the query fails"
