"""Checks of a report's files that more than one suite makes: the Perfetto trace, a real run's reports.

``reports/test_reports.py`` checks the simulated stories' reports with them, and
``spark/test_spark.py`` the reports of a real Spark run's history.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from raceproof.cli.main import main
from raceproof.reports import Story, load_story
from raceproof.sim import History


def validate_trace(trace: dict, story: Story) -> None:  # type: ignore[type-arg]
    """The trace event format: required keys, µs timestamps, one pid, one tid per actor."""
    events = trace["traceEvents"]
    names = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    assert set(story.actors()) <= set(names), "every actor is a named thread"
    assert len(set(names.values())) == len(names), "one tid per thread"
    for event in events:
        for key in ("name", "ph", "pid", "tid"):
            assert key in event, f"{key} missing in {event}"
        assert event["ph"] in {"M", "X", "i", "s", "f"}
        if event["ph"] != "M":
            assert isinstance(event["ts"], int) and event["ts"] >= 0
        if event["ph"] == "X":
            assert isinstance(event["dur"], int) and event["dur"] >= 1
            op = story.history[event["args"]["index"]]
            assert event["ts"] // 1000 == op.time_ms, "ts is the op's ms in µs"
            assert event["tid"] == names[op.actor]
        if event["ph"] == "i":
            assert event["s"] in {"t", "p", "g"}
    slices = sorted((e["tid"], e["ts"], e["dur"]) for e in events if e["ph"] == "X")
    for (tid_a, ts_a, dur_a), (tid_b, ts_b, _) in itertools.pairwise(slices):
        assert tid_a != tid_b or ts_a + dur_a <= ts_b, "slices of one thread never overlap"
    flows = [e for e in events if e["ph"] in "sf"]
    for verdict in story.violations:
        ends = [e for e in flows if e["ph"] == "f" and e["name"] == f"✗ {verdict.checker}"]
        assert ends and ends[0]["bp"] == "e"
        violating = story.history[verdict.op_index]
        assert ends[0]["tid"] == names[violating.actor]
        assert any(e["ph"] == "s" and e["id"] == ends[0]["id"] for e in flows)
    deviation_events = [e for e in events if e.get("cat") == "deviation"]
    assert len(deviation_events) == len(story.deviations)


def check_real_run_reports(history: History, name: str, out_dir: Path) -> None:
    """A real run's history (wall ms): Markdown, HTML and Perfetto files through ``report``.

    Called from the Spark suite on the history of a real experiment it already ran.
    """
    path = out_dir / f"{name}.jsonl"
    path.write_text(history.to_jsonl(), encoding="utf-8")
    assert main(["report", str(path), "--out", str(out_dir), "--json"]) == 0
    story = load_story(path)
    assert story.clock == "wall" and "real run" in story.title
    md = (out_dir / f"{name}.md").read_text(encoding="utf-8")
    assert "times are wall ms since the real run began" in md and "```mermaid" in md
    html_text = (out_dir / f"{name}.html").read_text(encoding="utf-8")
    assert "(wall ms)</title>" in html_text
    validate_trace(json.loads((out_dir / f"{name}.trace.json").read_text()), story)
