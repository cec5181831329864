"""Brooklin double-STOP: the report's story, search from scratch, and which fixes hold."""

from __future__ import annotations

import dataclasses

import pytest

from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, KeyedReplaySource, ReplaySource, deviations, explore, prove
from raceproof.sim.history import History

SCENARIO = get("brooklin-double-stop")
RESUME = "acknowledged-resume-holds"


def trail(history: History, entity: str) -> list[str]:
    return [
        str(op.get("to")) for op in history.of_kind("status.write") if op.get("entity") == entity
    ]


def report_outcome(variant: str):  # type: ignore[no-untyped-def]
    assert SCENARIO.report_script is not None
    run = SCENARIO.runner(variant, SCENARIO.config)
    return run(KeyedReplaySource(dict(SCENARIO.report_script)))


def test_the_report_timeline_loses_the_resume() -> None:
    outcome = report_outcome("buggy")
    assert outcome.status == "violated"
    assert trail(outcome.history, "A") == ["STOPPING", "STOPPED", "READY", "STOPPED"]
    culprit = outcome.history[next(v.op_index for v in outcome.verdicts if v.checker == RESUME)]
    # The *second* stop task (submitted for stop(B), snapshot {A, B}) overwrites the resume.
    assert culprit.actor == "stop-task2"
    assert dict(culprit.fields)["from"] == "READY"
    assert {v.checker for v in outcome.verdicts if v.status == "violated"} == {
        "legal-transitions",
        RESUME,
        "no-lost-update",
    }


@pytest.mark.parametrize("variant", ["fix-conditional-write", "fix-stop-dedupe"])
def test_the_closing_fixes_survive_the_report_timeline(variant: str) -> None:
    outcome = report_outcome(variant)
    assert outcome.status == "ok"
    assert trail(outcome.history, "A")[-1] == "READY"


def test_fifo_buggy_run_stops_a_stream_twice_but_keeps_the_resume() -> None:
    run = SCENARIO.runner("buggy", SCENARIO.config)
    outcome = run(ReplaySource([], strict=False))
    assert [(v.checker, v.status) for v in outcome.verdicts] == [
        ("legal-transitions", "ok"),
        (RESUME, "ok"),
        ("no-lost-update", "violated"),  # a third stop task writes B STOPPED over STOPPED
    ]
    writes = [
        (op.time_ms, op.actor, op.get("entity"), op.get("from"), op.get("to"))
        for op in outcome.history.of_kind("status.write")
    ]
    assert writes == [
        (0, "rest@host1", "A", "READY", "STOPPING"),
        (10000, "rest@host1", "B", "READY", "STOPPING"),
        (10010, "stop-task1", "A", "STOPPING", "STOPPED"),
        (11000, "rest@host2", "A", "STOPPED", "READY"),
        (20010, "stop-task2", "B", "STOPPING", "STOPPED"),
        (21010, "stop-task3", "B", "STOPPED", "STOPPED"),
    ]


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
@pytest.mark.parametrize("variant", ["buggy", "fix-zk-lookup"])
def test_search_finds_the_lost_resume_from_scratch(variant: str, strategy: str) -> None:
    run = SCENARIO.runner(variant, SCENARIO.config, RESUME)
    report = explore(run, strategy, seed=0, budget=Budget(examples=2_000))
    assert report.verdict == "violated"
    assert report.shrunk is not None
    report_run = report_outcome("buggy")
    assert deviations(report.shrunk.values) <= deviations(report_run.values)
    if variant == "buggy":  # the merged fix blocks the report's own story; it loses another way
        assert len(report.shrunk.history) <= len(report_run.history)
    assert trail(report.shrunk.history, "A") == ["STOPPING", "STOPPED", "READY", "STOPPED"]


def test_the_merged_fix_still_loses_a_resume_between_read_and_write() -> None:
    run = SCENARIO.runner("fix-zk-lookup", SCENARIO.config, RESUME)
    report = explore(run, "random", seed=0, budget=Budget(examples=2_000))
    assert report.shrunk is not None
    ops = report.shrunk.history.ops
    culprit = next(op for op in ops if op.kind == "status.write" and op.get("from") == "READY"
                   and op.get("to") == "STOPPED")  # fmt: skip
    fresh_read = max(
        op.index for op in ops[: culprit.index]
        if op.kind == "zk.read" and op.actor == culprit.actor and op.get("entity") == "A"
    )  # fmt: skip
    assert ops[fresh_read].get("status") == "STOPPING"  # the fresh read saw STOPPING...
    resume = next(op for op in ops if op.kind == "resume.ack")
    assert fresh_read < resume.index < culprit.index  # ...and the resume landed in between


def test_without_tokens_the_buggy_code_is_proven_safe() -> None:
    config = dataclasses.replace(SCENARIO.prove_config, tokens_enabled=False)
    report = prove(SCENARIO.runner("buggy", config), budget=Budget(examples=200_000))
    assert report.verdict == "ok" and report.complete
    assert report.schedules > 1


def test_prove_finds_the_lost_resume_in_the_merged_fix() -> None:
    run = SCENARIO.runner("fix-zk-lookup", SCENARIO.prove_config, RESUME)
    report = prove(run, budget=Budget(examples=200_000))
    assert report.verdict == "violated"
    assert report.shrunk is not None
    assert trail(report.shrunk.history, "A")[-2:] == ["READY", "STOPPED"]
