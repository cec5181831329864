"""Pictures of a race: Markdown/Mermaid, HTML, Perfetto and terminal reports, checked for real.

The Mermaid text is rendered by Mermaid itself and the HTML by headless
Chromium (property_tests/browser.py); the Perfetto JSON is checked against the
trace event format. The models' timelines change as the models grow, so no
test counts their ops: each asserts what must hold of any timeline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.browser import load, render_mermaid
from property_tests.report_checks import validate_trace
from raceproof.cli.main import main
from raceproof.reports import (
    Story,
    VerdictView,
    is_noise,
    mermaid,
    mermaid_text,
    perfetto_json,
    render_html,
    render_markdown,
    timeline_text,
)
from raceproof.runs.runner import repro_line
from raceproof.runs.stories import story_of_outcome
from raceproof.scenarios.catalogue import get
from raceproof.sim import History, KeyedReplaySource

pytestmark = pytest.mark.xdist_group("browser")

REPORTS = ("brooklin-double-stop", "streams-checkpoint-resurrection")


def report_story(name: str) -> Story:
    scenario = get(name)
    assert scenario.report_script is not None and scenario.report_variant is not None
    run = scenario.runner(scenario.report_variant, scenario.config)
    outcome = run(KeyedReplaySource(dict(scenario.report_script)))
    repro = repro_line(scenario, scenario.report_variant, outcome.values, scenario.config)
    return story_of_outcome(
        scenario, scenario.report_variant, scenario.config, outcome, repro=repro
    )


@pytest.mark.parametrize("name", REPORTS)
def test_report_timelines_render_as_markdown_html_and_perfetto(name: str, tmp_path: Path) -> None:
    story = report_story(name)
    assert story.violations and story.deviations and story.counterpart is not None
    assert all(d.before_op is not None for d in story.deviations), "each deviation is placed"
    md = render_markdown(story)
    assert "```mermaid\nsequenceDiagram" in md and story.repro and story.repro in md
    for d in story.deviations:
        assert mermaid_text(d.sentence()) in md
    for verdict in story.violations:
        assert mermaid_text(f"✗ {verdict.checker}: {verdict.message}") in md
    noise = [op for op in story.history if is_noise(op) and not story.violations_at(op.index)]
    assert noise, "the models log checkpoints and kernel ops"
    hidden, everything = mermaid(story), mermaid(story, show_all=True)
    for op in noise:
        assert f" {op.index} · {op.kind}" not in hidden and f" {op.index} · {op.kind}" in everything
    trace = json.loads(perfetto_json(story))
    validate_trace(trace, story)
    text = timeline_text(story)
    violating = story.violations[0]
    assert f"#{violating.op_index} " in text and f"✗ {violating.checker}" in text
    (tmp_path / f"{name}.md").write_text(md)
    (tmp_path / f"{name}.html").write_text(render_html(story))
    (tmp_path / f"{name}.trace.json").write_text(json.dumps(trace))


def test_the_counterpart_reverts_the_deciding_deviation_and_the_checker_then_holds() -> None:
    story = report_story("brooklin-double-stop")
    other, reverted = story.counterpart, story.reverted
    assert other is not None and reverted is not None
    assert reverted.label not in {d.label for d in other.deviations}
    assert {d.label for d in other.deviations} == {d.label for d in story.deviations} - {
        reverted.label
    }
    failing = story.violations[0].checker
    assert all(v.status == "ok" for v in other.verdicts if v.checker == failing)
    assert "holds" in story.counterpart_note


def test_mermaid_itself_renders_every_diagram_and_rejects_a_broken_one(tmp_path: Path) -> None:
    diagrams = []
    for name in REPORTS:
        story = report_story(name)
        diagrams += [mermaid(story), mermaid(story, show_all=True)]
    broken = "sequenceDiagram\n    participant stop-task.1\n    Note over stop-task.1: a; b\n"
    results = render_mermaid([*diagrams, broken], tmp_path)
    assert all(r.startswith("OK ") for r in results[:-1]), results
    assert results[-1].startswith("ERR "), "the check can fail"


@settings(max_examples=1, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40), min_size=30, max_size=30))
def test_any_text_through_mermaid_text_renders(texts: list[str]) -> None:
    """Whatever an op, actor or checker says, the escaped text is a diagram Mermaid renders."""
    import tempfile

    history = History()
    for i, text in enumerate(texts):
        history.append(i, text if text.strip() else "x", "op", say=text)
    story = Story(
        title="any",
        history=history,
        verdicts=[VerdictView(checker="c;#<x>", status="violated", op_index=3, message=texts[0])],
    )
    with tempfile.TemporaryDirectory() as tmp:
        (result,) = render_mermaid([mermaid(story)], Path(tmp))
    assert result.startswith("OK "), result


def test_the_html_in_headless_chromium_shows_lanes_violation_and_diff_without_network(
    tmp_path: Path,
) -> None:
    story = report_story("brooklin-double-stop")
    page = tmp_path / "brooklin.html"
    page.write_text(render_html(story), encoding="utf-8")
    dom, requests = load(page)
    assert requests == []
    shown = {op.actor for op in story.visible_ops()}
    for actor in shown:
        assert f'class="lane" data-actor="{actor}"' in dom, actor
    violating = story.violations[0].op_index
    assert f'class="op violation" data-index="{violating}"' in dom
    assert 'id="diff"' in dom and 'id="parted"' in dom
    assert f'data-drawn="{len(story.visible_ops())}"' in dom, "the script drew every op"
    assert "compressed" in dom


def test_the_network_check_sees_a_page_that_does_ask(tmp_path: Path) -> None:
    page = tmp_path / "asks.html"
    page.write_text('<html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    _, requests = load(page, budget_ms=2000)
    assert requests == ["http://127.0.0.1:9/x.png"]


def test_report_command_writes_every_format_and_reads_a_wall_clock_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "repro",
                "lost-update",
                "--variant",
                "buggy",
                "--choices",
                "4:0=1",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        == 1
    )
    result = json.loads(capsys.readouterr().out)
    assert Path(result["report_md"]).exists() and Path(result["report_html"]).exists()
    assert main(["report", result["counterexample"], "--out", str(tmp_path / "r"), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["reports"]
    assert {"md", "html", "perfetto"} <= set(entry)
    history = History()
    history.append(0, "driver", "query.start", run=1)
    history.append(1250, "spark", "sink.row", window="w0")
    real = tmp_path / "real.jsonl"
    real.write_text(history.to_jsonl())
    assert main(["report", str(real), "--format", "md", "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "real.md").read_text()
    assert "real run" in md and "wall ms" in md
    assert main(["report", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_progress_says_rate_estimate_and_time_left_and_stays_silent_off_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from raceproof.cli.commands.common import Progress

    progress = Progress("prove lost-update/fix-cas", True, count_key="runs")
    assert not progress.enabled, "stderr under pytest is not a terminal"
    progress({"schedules": 10, "runs": 12, "estimate": 48})
    line = progress.line()
    assert line.startswith("prove lost-update/fix-cas  schedules 10  runs 12  ")
    assert "% of 48" in line and "left" in line and "/s" in line
    progress({"examples": 5, "status": "violated"})
    explore = Progress("explore", False, total=100)
    explore({"examples": 5, "status": "violated"})
    assert "shrinking" in explore.line() and "% of 100" in explore.line()
    progress.done()
    explore.done()
    assert capsys.readouterr().err == ""


def test_a_status_line_shows_steps_on_a_terminal_and_logs_them_elsewhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from raceproof.cli.commands.common import StatusLine

    logged = StatusLine("check", True, total=3)
    assert not logged.progress.enabled, "stderr under pytest is not a terminal"
    logged("[1/3] lost-update / buggy explore: found")
    logged("[2/3] lost-update / fix-cas prove: ok")
    logged.done()
    assert capsys.readouterr().err.splitlines() == [
        "[1/3] lost-update / buggy explore: found",
        "[2/3] lost-update / fix-cas prove: ok",
    ]
    quiet = StatusLine("check", False)
    quiet("nothing")
    quiet.done()
    assert capsys.readouterr().err == ""
    # On a terminal the steps drive one progress line: done against the total, the latest step.
    live = StatusLine("spark-check", True, total=4, says_start=True)
    live.progress.enabled = True  # what a terminal would give, without starting rich's display
    live("starting a local Spark session ...")
    live("[1/3] windowed-count: drain ...")
    line = live.progress.line()
    assert "done 1" in line and "25% of 4" in line and "windowed-count: drain" in line
    live.progress.enabled = False
    live.done()
