"""A CI log stays quiet: ``check`` says one line per scenario/variant off a terminal, a story once.

Why this module exists: with stderr not a terminal (every CI log) ``check`` printed a
line per part and per proof unit (2,501 ``prove: unit ...`` lines in one ``make
demo``), then a line per check (81, with the table's 26 rows and pip's lines over
issue 47's 120 lines), and a broken fix printed its shrunk timeline four times (once
per strategy and for the proof), the JUnit file four times too. Now off a terminal
stderr holds one line per scenario/variant, its checks' results together, and the
timeline is printed once, with the strategies that also found it listed under it; the
JUnit file holds it once, the other failures naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from property_tests.gate_and_cli.test_full_disk import BROKEN_FIX as FOUND_BY_ALL

BIN = Path(sys.executable).parent

# A fix that does not hold, in 3 parts per search: every strategy and the proof find it.
BROKEN_FIX = FOUND_BY_ALL.replace("default_examples=20", "default_examples=600")


def test_check_off_a_terminal_says_one_line_per_variant_and_each_story_once(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN_FIX)
    argv = ["check", "broken-fix", "--scenarios", "broken.py", "--junit", "j.xml"]
    done = subprocess.run(
        [str(BIN / "raceproof"), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1, done.stderr[-2000:]
    # 4 checks (3 searches of 3 parts each, and the proof) of one variant: one line, no part, no unit.
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("[1/1] broken-fix / ") and "unit" not in done.stderr
    assert all(f"{kind} violated" in lines[0] for kind in ("random", "hypothesis", "pct", "prove"))
    assert done.stdout.count("shrunk timeline:\n") == 1  # the story, once
    also = [line for line in done.stdout.splitlines() if line.startswith("also found by: ")]
    assert len(also) == 1 and all(word in also[0] for word in ("hypothesis", "pct", "proof"))
    assert done.stdout.count("  wrote  value=") == 2  # its two writes, in one timeline
    junit = (tmp_path / "j.xml").read_text()
    assert junit.count("<failure") == 4
    assert junit.count("shrunk timeline:\n") == 1 and junit.count("(printed once)") == 3


CHECKS = [
    ("lost-update", "buggy", "random"),
    ("lost-update", "buggy", "pct"),
    ("lost-update", "fix-cas", "random"),
    ("lost-update", "fix-cas", "pct"),
    ("lost-update", "fix-cas", "prove"),
]


def test_a_variant_gets_one_line_when_its_last_check_is_done() -> None:
    from raceproof.cli.commands.common import VariantLines

    variants = VariantLines(CHECKS)
    # In the order a pool may finish them: the proof first, the variants interleaved.
    assert variants.check_done("lost-update", "fix-cas", "prove", "ok 46 sched") is None
    assert variants.check_done("lost-update", "buggy", "pct", "violated@1") is None
    assert variants.check_done("lost-update", "fix-cas", "random", "ok@2000") is None
    told = variants.check_done("lost-update", "buggy", "random", "violated@2")
    assert told == "[1/2] lost-update / buggy: random violated@2, pct violated@1"
    told = variants.check_done("lost-update", "fix-cas", "pct", "ok@2000")
    assert told == "[2/2] lost-update / fix-cas: random ok@2000, pct ok@2000, prove ok 46 sched"


def test_off_a_terminal_check_logs_only_its_variant_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from raceproof.cli.commands.common import StatusLine

    say = StatusLine("check", True, total=5, quiet=True)
    assert not say.progress.enabled, "stderr under pytest is not a terminal"
    say("[1/5] lost-update / buggy random done (1 parts): violated@2")  # a step: not logged
    say.log("[1/2] lost-update / buggy: random violated@2, pct violated@1")
    say.done()
    assert capsys.readouterr().err.splitlines() == [
        "[1/2] lost-update / buggy: random violated@2, pct violated@1"
    ]
    # On a terminal the progress line shows the steps; with --json nothing is printed.
    live = StatusLine("check", True, total=5, quiet=True)
    live.progress.enabled = True  # what a terminal would give, without starting rich's display
    live.log("[1/2] lost-update / buggy: random violated@2, pct violated@1")
    live.progress.enabled = False
    StatusLine("check", False, quiet=True).log("nothing with --json")
    assert capsys.readouterr().err == ""


def test_spark_check_off_a_terminal_says_a_line_per_experiment_judged_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No "starting a local Spark session ...", no baseline or experiment as it starts: the
    verdict of each experiment once judged. Spark itself is stubbed: no JVM starts."""
    from raceproof.cli.commands import spark_check
    from raceproof.cli.main import main
    from raceproof.spark_integration import experiments, results, session

    monkeypatch.setattr(session, "session_running", lambda: False)
    monkeypatch.setattr(session, "spark_session", lambda settings: object())
    monkeypatch.setattr(session, "stop_session", lambda: None)
    ok = SimpleNamespace(to_json=lambda: {"verdict": "ok"})
    monkeypatch.setattr(experiments, "baseline", lambda spark, pipeline: ok)
    judged = {"drain": "violated", "second-start": "ok"}
    monkeypatch.setattr(
        results, "run_experiment", lambda spark, name, pipeline, **_: {"verdict": judged[name]}
    )
    monkeypatch.setattr(spark_check, "render", lambda args, result: len(result.rows))
    argv = ["spark-check", "--experiment", "drain", "--experiment", "second-start"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        "[1/2] windowed-count: second-start: ok",  # the plan's (the table's) order
        "[2/2] windowed-count: drain: violated",
    ]


def test_a_variant_line_says_the_merged_check_not_the_part_that_ended_last() -> None:
    """On ``-j N`` a search's part after its finding may end last with ``ok``: the line says
    the check as the table merges it (the finding, the examples up to it), and a search
    that found nothing its examples over every part."""
    from dataclasses import replace

    from raceproof.cli.commands.check import checked
    from raceproof.gate import expectations as gate
    from raceproof.gate import parts
    from raceproof.scenarios.catalogue import get

    ci = gate.PROFILES["ci"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parts, "PART_EXAMPLES", 3)
        plan = parts.parts_for([get("lost-update")], ci, examples=6)
    ran = {(p.variant, p.kind, p.index): parts.run_part(p, ci, None) for p in plan}
    found = ran["buggy", "random", 0]
    assert found.search is not None and found.search.verdict == "violated"
    held = ran["fix-cas", "random", 1]  # a later part that found nothing, as buggy's part 2
    later = replace(held, part=ran["buggy", "random", 1].part)
    assert checked([found, later]) == checked([later, found]) == f"violated@{found.search.examples}"
    fix = [ran["fix-cas", "random", i] for i in (1, 0)]
    assert checked(fix) == "ok@6"
    proof = ran["fix-cas", "prove", 0]
    assert proof.check is not None and checked([proof]) == proof.check.cell
