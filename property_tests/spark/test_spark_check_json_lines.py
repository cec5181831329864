"""``spark-check --json`` over several pipelines keeps what was judged when a time limit kills it.

Issue 48: one ``spark-check`` over five pipelines with ``--json`` that ran past
its time printed nothing, and the results of the pipelines already judged were
lost. Over several pipelines each pipeline's rows are now one JSON line, printed
and flushed as soon as its last experiment is judged, before the final document
(the last line, the same document as before). Spark-free: the session, the
baseline and the experiment are stand-ins that record what stdout held when
they ran, so the test sees the first pipeline's line out before the second
pipeline's experiment starts (where a kill would land).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.spark_integration import experiments, results, session


class _Trial:
    def to_json(self) -> dict[str, Any]:
        return {"verdict": "ok", "message": "every checker holds", "seconds": 0.0}


def _row(name: str, pipeline: Any) -> dict[str, Any]:
    return {
        "scenario": pipeline.name,
        "experiment": name,
        "verdict": "ok",
        "checker": None,
        "guard": None,
        "guarded": None,
        "broken_promises": [],
        "stock": {"stability": "ok", "trials": [{"message": "every checker holds"}]},
        "seconds": 0.0,
        "python_cpu_s": 0.0,
        "jvm_cpu_s": 0.0,
        "jvm_peak_mb": 0.0,
    }


def test_each_pipeline_is_a_json_line_as_soon_as_it_is_judged(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    printed_before: dict[str, list[str]] = {}

    def experiment(spark: Any, name: str, pipeline: Any, **_: Any) -> dict[str, Any]:
        out = capsys.readouterr().out
        printed_before[pipeline.name] = out.splitlines()
        print(out, end="")  # put back what was read: the command's output stays whole
        return _row(name, pipeline)

    monkeypatch.setattr(session, "spark_session", lambda settings=None: object())
    monkeypatch.setattr(session, "session_running", lambda: False)
    monkeypatch.setattr(session, "stop_session", lambda: None)
    monkeypatch.setattr(experiments, "baseline", lambda spark, pipeline: _Trial())
    monkeypatch.setattr(results, "run_experiment", experiment)
    argv = ["spark-check", "--pipeline", "windowed-count", "--pipeline", "dedup"]
    code = main([*argv, "--experiment", "drain", "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    first, second, final = lines
    assert code == 0 and final["verdict"] == "ok" and len(final["experiments"]) == 2
    assert first["judged"] == "windowed-count" and first["verdict"] == "ok"
    assert [r["experiment"] for r in first["experiments"]] == ["drain"]
    assert second["judged"] == "dedup"
    # The first pipeline's line was out before the second pipeline's experiment began.
    assert printed_before["windowed-count"] == []
    assert [json.loads(line)["judged"] for line in printed_before["dedup"]] == ["windowed-count"]


def test_one_pipeline_keeps_its_one_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(session, "spark_session", lambda settings=None: object())
    monkeypatch.setattr(session, "session_running", lambda: False)
    monkeypatch.setattr(session, "stop_session", lambda: None)
    monkeypatch.setattr(experiments, "baseline", lambda spark, pipeline: _Trial())
    monkeypatch.setattr(results, "run_experiment", lambda spark, name, p, **_: _row(name, p))
    code = main(["spark-check", "--pipeline", "dedup", "--experiment", "drain", "--json"])
    (document,) = capsys.readouterr().out.splitlines()
    assert code == 0 and "judged" not in json.loads(document)
