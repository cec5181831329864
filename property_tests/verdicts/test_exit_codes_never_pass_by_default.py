"""An undecided or missing verdict never exits 0: ``emit()`` and ``campaign --pipeline``.

Why it exists: review found two commands that fell back to a pass. ``emit()``
(explore, prove, replay, repro) returned exit 0 for a result whose verdict was
missing or not a ``Verdict`` word; that is a bug in raceproof, exit 70. A
pipeline campaign exited 0 when some of its cells were ``inconclusive`` or
``not-reached``; an undecided campaign is exit 3. Each is checked both ways: the
decided verdicts keep their codes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.cli.commands import campaign as campaign_cmd
from raceproof.cli.commands.common import emit
from raceproof.sim.verdicts import ExitCode, Verdict


def _emit(result: dict[str, Any], as_json: bool = True) -> int:
    return emit(argparse.Namespace(json=as_json), result, lambda: None)


@pytest.mark.parametrize(
    ("verdict", "code"),
    [
        (Verdict.OK, 0),
        (Verdict.VIOLATED, 1),
        (Verdict.INCONCLUSIVE, 3),
        (Verdict.NOT_REACHED, 3),
        (Verdict.ERROR, 4),
        ("ok", 0),
        ("violated", 1),
    ],
)
def test_emit_keeps_each_verdicts_exit_code(
    verdict: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _emit({"verdict": verdict}) == code
    assert json.loads(capsys.readouterr().out)["verdict"] == str(verdict)


def test_emit_without_a_verdict_is_a_raceproof_bug(capsys: pytest.CaptureFixture[str]) -> None:
    assert _emit({"scenario": "lost-update"}) == ExitCode.INTERNAL == 70
    assert _emit({"verdict": None}, as_json=False) == 70
    err = capsys.readouterr().err
    assert "bug in raceproof" in err and len(err.strip().splitlines()) == 2, err


@given(st.one_of(st.text(max_size=12), st.integers(), st.booleans()))
def test_emit_with_a_word_that_is_no_verdict_is_70(word: object) -> None:
    if word in set(Verdict):
        return
    assert _emit({"verdict": word}, as_json=False) == 70


def _pipeline_campaign(
    verdicts: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, Any]:
    """``campaign --pipeline`` over a run that reports ``verdicts`` (no Spark: the run is faked)."""
    from raceproof.spark_integration import campaign, campaign_pipelines, pipeline

    def fake_run(*_: Any, **__: Any) -> campaign.Summary:
        return campaign.Summary(
            cells=sum(verdicts.values()), ran=sum(verdicts.values()), verdicts=verdicts
        )

    monkeypatch.setattr(pipeline, "resolve", lambda spec: None)
    monkeypatch.setattr(campaign_pipelines, "run", fake_run)
    monkeypatch.setattr(campaign, "read_rows", lambda out: [])
    args = argparse.Namespace(
        pipeline="job.py:make",
        out=str(tmp_path),
        seeds=1,
        seed_range=None,
        experiment=None,
        json=True,
    )
    return campaign_cmd.pipeline_campaign(args), args


@pytest.mark.parametrize(
    ("verdicts", "verdict", "code"),
    [
        ({"ok": 3}, Verdict.OK, 0),
        ({"ok": 2, "inconclusive": 1}, Verdict.INCONCLUSIVE, 3),
        ({"ok": 2, "not-reached": 1}, Verdict.INCONCLUSIVE, 3),
        ({"inconclusive": 1, "violated": 1}, Verdict.VIOLATED, 1),
        ({"ok": 1, "violated": 0, "inconclusive": 0}, Verdict.OK, 0),
        ({"ok": 0}, Verdict.INCONCLUSIVE, 3),
    ],
)
def test_a_pipeline_campaign_with_undecided_cells_is_no_pass(
    verdicts: dict[str, int],
    verdict: Verdict,
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert campaign_cmd.campaign_verdict(verdicts) == verdict
    exit_code, _ = _pipeline_campaign(verdicts, tmp_path, monkeypatch)
    assert exit_code == code
    assert json.loads(capsys.readouterr().out)["verdict"] == verdict


def _row(*, variant: str, expected: str, verdict: str, kind: str = "search") -> dict[str, Any]:
    return {
        "scenario": "lost-update",
        "variant": variant,
        "expected": expected,
        "verdict": verdict,
        "kind": kind,
        "cell": f"lost-update/{variant}/random/0",
        "checker": "",
        "error": "boom" if verdict == Verdict.ERROR else "",
        "met": verdict == expected,
        "complete": False,
    }


@pytest.mark.parametrize(
    ("rows", "verdict"),
    [
        ([_row(variant="fix-cas", expected="ok", verdict="ok")], Verdict.OK),
        ([_row(variant="fix-cas", expected="ok", verdict="inconclusive")], Verdict.INCONCLUSIVE),
        ([_row(variant="fix-cas", expected="ok", verdict="not-reached")], Verdict.INCONCLUSIVE),
        ([_row(variant="fix-cas", expected="ok", verdict="error")], Verdict.ERROR),
        ([_row(variant="fix-cas", expected="ok", verdict="violated")], Verdict.VIOLATED),
        ([_row(variant="buggy", expected="violated", verdict="ok")], Verdict.VIOLATED),
        ([_row(variant="buggy", expected="violated", verdict="violated")], Verdict.OK),
        ([], Verdict.INCONCLUSIVE),
    ],
)
def test_a_scenario_campaign_says_no_more_than_its_cells(
    rows: list[dict[str, Any]], verdict: Verdict
) -> None:
    """Crashed cells are error (4), undecided cells of a variant expected to hold are
    inconclusive (3), an empty campaign judged nothing; only all-decided cells pass."""
    from raceproof.reports.campaign import failed_expectations

    failed = failed_expectations(rows)
    got = campaign_cmd.scenario_campaign_verdict(rows, failed=failed, determinism_failures=[])
    assert got == verdict
    determinism = [{"cell": "x", "same": False}]
    if rows:
        assert (
            campaign_cmd.scenario_campaign_verdict(
                rows, failed=failed, determinism_failures=determinism
            )
            == Verdict.VIOLATED
        )
