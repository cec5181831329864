"""Brooklin double-STOP: the report's story, the facts the model is pinned to, and which fixes hold.

Each ``test_fact_*`` is a short scripted run showing one behaviour of the
real code (docs/models/brooklin.md cites the source of each); the others
check the verdicts the README states.
"""

from __future__ import annotations

import dataclasses

import pytest

from raceproof.models.brooklin import WORK_CHECKERS, BrooklinConfig
from raceproof.scenarios.catalogue import get
from raceproof.sim import (
    Budget,
    KeyedReplaySource,
    ReplaySource,
    deviations,
    explore,
    prove,
    run_checkers,
)
from raceproof.sim.history import History

SCENARIO = get("brooklin-double-stop")
REDUNDANT = get("brooklin-redundant-stop")
RESUME = "acknowledged-resume-holds"


def trail(history: History, entity: str) -> list[str]:
    return [
        str(op.get("to")) for op in history.of_kind("status.write") if op.get("entity") == entity
    ]


def writes(history: History) -> list[tuple[int, str, str, str, str]]:
    return [
        (op.time_ms, op.actor, str(op.get("entity")), str(op.get("from")), str(op.get("to")))
        for op in history.of_kind("status.write")
    ]


def fifo(variant: str, config: BrooklinConfig | None = None):  # type: ignore[no-untyped-def]
    run = SCENARIO.runner(variant, SCENARIO.config if config is None else config)
    return run(ReplaySource([], strict=False))


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


@pytest.mark.parametrize("variant", ["fix-zk-lookup", "fix-conditional-write", "fix-stop-dedupe"])
def test_every_fix_survives_the_report_timeline(variant: str) -> None:
    outcome = report_outcome(variant)
    assert outcome.status == "ok"
    assert trail(outcome.history, "A")[-1] == "READY"


def test_fact_fifo_buggy_run_stops_b_twice_which_is_work_not_data_loss() -> None:
    outcome = fifo("buggy")
    assert [(v.checker, v.status) for v in outcome.verdicts] == [
        ("legal-transitions", "ok"),
        (RESUME, "ok"),
        ("no-lost-update", "ok"),  # STOPPED over STOPPED loses nothing
    ]
    assert writes(outcome.history)[-2:] == [
        (20031, "stop-task2", "B", "STOPPING", "STOPPED"),
        (21041, "stop-task3", "B", "STOPPED", "STOPPED"),  # from the resume's assignment
    ]
    redundant = outcome.history.of_kind("status.write")[-1]
    assert redundant.get("version_read") != redundant.get("version_overwritten")
    [work] = run_checkers(outcome.history, WORK_CHECKERS)
    assert work.status == "violated" and "stop of A again" in work.message


def test_fact_the_cached_object_is_stopped_after_the_stop_tasks_write() -> None:
    """Buggy, stops 30 s apart: no refresh between LDA#1 and stop-task1's write, so the
    object it sets STOPPED is the cached one, and the next assignment does not see A stopping."""
    config = dataclasses.replace(SCENARIO.config, stop_gap_ms=(30_000,), resumed=())
    ops = fifo("buggy", config).history.ops
    mutate = next(op for op in ops if op.kind == "object.set-status" and op.get("entity") == "A")
    assert mutate.actor == "stop-task1" and mutate.get("cached") is True
    later = [op for op in ops[mutate.index :] if op.kind in ("assign", "cache.read")]
    assert later and all("A" not in (op.get("stopping") or []) for op in later)
    assert trail(fifo("buggy", config).history, "A") == ["STOPPING", "STOPPED"]


def test_fact_974_reads_into_the_cache_and_sets_that_object() -> None:
    ops = fifo("fix-zk-lookup").history.ops
    mutate = next(op for op in ops if op.kind == "object.set-status")
    assert mutate.get("cached") is True
    read = max(op.index for op in ops[: mutate.index] if op.kind == "zk.read")
    assert ops[read].actor == mutate.actor and ops[read].get("status") == "STOPPING"


def test_fact_a_notification_queues_both_events_and_duplicates_are_dropped() -> None:
    ops = fifo("buggy").history.ops
    handled = [str(op.get("event"))[:6] for op in ops if op.kind == "event.handle"]
    assert handled[:2] == ["HANDLE", "LEADER"]
    assert handled.count("HANDLE") == 3  # stop A, stop B, resume A: each delivered in order


def test_fact_a_stop_on_a_stopping_stream_notifies_the_leader_again() -> None:
    config = dataclasses.replace(SCENARIO.config, restopped=("B",), resumed=())
    ops = fifo("fix-stop-dedupe", config).history.ops
    renotify = next(op for op in ops if op.kind == "stop.renotify")
    assert renotify.actor == "rest@host3" and renotify.get("entity") == "B"
    rewrite = next(
        op for op in ops[renotify.index :] if op.kind == "status.write" and op.get("entity") == "B"
    )
    assert (rewrite.get("from"), rewrite.get("to")) == ("STOPPING", "STOPPING")
    refreshes = [op for op in ops[rewrite.index :] if op.kind == "cache.refresh"]
    assert refreshes, "the rewrite's notification reaches the leader"
    # The rewrite is a new STOPPING version, so even the dedupe fix processes B again.
    processed = [op for op in ops if op.kind == "stop.process" and "B" in op.get("streams")]
    assert len(processed) == 2


@pytest.mark.parametrize(("force", "final_a"), [(False, "STOPPING"), (True, "STOPPED")])
def test_fact_force_stop_on_failure_marks_streams_whose_tokens_were_not_claimed(
    force: bool, final_a: str
) -> None:
    """A follower that cannot stop its task in time never claims; tokens time out at 60 s."""
    config = dataclasses.replace(
        SCENARIO.config, streams=("A",), resumed=(), task_stop_ms=(70_000,),
        force_stop_on_failure=force, stop_timeout_ms=200_000,
    )  # fmt: skip
    outcome = fifo("fix-zk-lookup", config)
    assert outcome.history.of_kind("tokens.unclaimed")
    assert outcome.history.of_kind("final")[-1].get("statuses") == {"A": final_a}


def test_fact_the_merged_fix_holds_with_round_trips_alone() -> None:
    config = dataclasses.replace(SCENARIO.prove_config, gc_pause_ms=(0,))
    report = prove(SCENARIO.runner("fix-zk-lookup", config, RESUME), budget=Budget(examples=50_000))
    # Equivalence classes under the partial-order reduction (the full walk is over 1,000).
    assert report.verdict == "ok" and report.complete and report.schedules > 200


def test_fact_a_stall_between_read_and_write_opens_the_merged_fixs_window() -> None:
    run = SCENARIO.runner("fix-zk-lookup", SCENARIO.prove_config, RESUME)
    report = prove(run, budget=Budget(examples=50_000))
    assert report.verdict == "violated" and report.shrunk is not None
    ops = report.shrunk.history.ops
    culprit = next(op for op in ops if op.kind == "status.write" and op.get("from") == "READY"
                   and op.get("to") == "STOPPED")  # fmt: skip
    read = max(
        op.index for op in ops[: culprit.index]
        if op.kind == "zk.read" and op.actor == culprit.actor and op.get("entity") == "A"
    )  # fmt: skip
    assert ops[read].get("status") == "STOPPING"
    stalls = [op for op in ops[read : culprit.index] if op.kind.startswith("fault.")]
    assert [op.actor for op in stalls] == [culprit.actor]
    resume = next(op for op in ops if op.kind == "resume.ack")
    assert read < stalls[0].index < resume.index < culprit.index


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
@pytest.mark.parametrize("variant", ["buggy", "fix-zk-lookup"])
def test_search_finds_the_lost_resume_from_scratch(variant: str, strategy: str) -> None:
    run = SCENARIO.runner(variant, SCENARIO.config)  # every checker: the resume is what fires
    report = explore(run, strategy, seed=0, budget=Budget(examples=2_000))
    assert report.verdict == "violated"
    assert report.shrunk is not None and report.shrunk.violation is not None
    assert deviations(report.shrunk.values) <= deviations(report_outcome("buggy").values)
    assert trail(report.shrunk.history, "A") == ["STOPPING", "STOPPED", "READY", "STOPPED"]
    faults = [op for op in report.shrunk.history.ops if op.kind.startswith("fault.")]
    assert (variant == "fix-zk-lookup") == bool(faults)  # the merged fix needs a stall


def test_without_tokens_the_buggy_code_is_proven_safe() -> None:
    config = dataclasses.replace(SCENARIO.prove_config, tokens_enabled=False)
    report = prove(SCENARIO.runner("buggy", config), budget=Budget(examples=200_000))
    assert report.verdict == "ok" and report.complete
    assert report.schedules > 1


def test_the_redundant_stop_is_its_own_scenario() -> None:
    assert [c.checker_name for c in REDUNDANT.checkers] == ["each-stop-processed-once"]  # type: ignore[attr-defined]
    outcome = REDUNDANT.runner("fix-conditional-write", REDUNDANT.config)(
        ReplaySource([], strict=False)
    )
    assert outcome.status == "violated"  # the fresh read skips the write, not the work
