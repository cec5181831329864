"""Brooklin double-STOP: the report's story, the facts the model is pinned to, and which fixes hold.

Each ``test_fact_*`` is a short scripted run showing one behaviour of the
real code (docs/models/brooklin.md cites the source of each); the others
check the verdicts the README states.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.toy_model import history_fingerprint
from raceproof.models.brooklin import WORK_CHECKERS, BrooklinConfig
from raceproof.scenarios.catalogue import get
from raceproof.sim import (
    Budget,
    ChoiceSource,
    KeyedReplaySource,
    RandomSource,
    ReplaySource,
    RunOutcome,
    deviations,
    explore,
    prove,
    run_checkers,
)
from raceproof.sim.history import History, Op

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
        (20043, "stop-task2", "B", "STOPPING", "STOPPED"),
        (21047, "stop-task3", "B", "STOPPED", "STOPPED"),  # from the resume's assignment
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
        SCENARIO.config,
        streams=("A",),
        resumed=(),
        task_stop_ms=(70_000,),
        force_stop_on_failure=force,
        stop_timeout_ms=200_000,
    )
    outcome = fifo("fix-zk-lookup", config)
    assert outcome.history.of_kind("tokens.unclaimed")
    assert outcome.history.of_kind("final")[-1].get("statuses") == {"A": final_a}


def test_fact_the_merged_fix_holds_with_round_trips_alone() -> None:
    config = dataclasses.replace(SCENARIO.prove_config, gc_pause_ms=(0,))
    report = prove(SCENARIO.runner("fix-zk-lookup", config, RESUME), budget=Budget(examples=50_000))
    # Equivalence classes under the partial-order reduction (150 here; the full walk has more).
    assert report.verdict == "ok" and report.complete and report.schedules > 100


LEADER_THREADS = ("leader", "leader-zk-events")  # and every stop-task<N>


def on_leader(op: Op) -> bool:
    return op.actor in LEADER_THREADS or op.actor.startswith("stop-task")


def pause_window(ops: list[Op]) -> tuple[int, int]:
    paused = next(op for op in ops if op.kind == "node.paused")
    assert paused.actor == "leader-jvm"
    return paused.time_ms, int(paused.get("until_ms"))  # type: ignore[arg-type]


# Found by `raceproof prove brooklin-double-stop --variant fix-zk-lookup` on the proof
# configuration (stops exactly 10 s apart, 1 s JVM pauses): draws 1, 23, 26, 30 and 33 take
# option 1, every other draw option 0 (44 draws).
JVM_PAUSE_OPENS_974 = {1: 1, 23: 1, 26: 1, 30: 1, 33: 1, 43: 0}


def replay_positions(variant: str, positions: dict[int, int]):  # type: ignore[no-untyped-def]
    values = [positions.get(i, 0) for i in range(max(positions) + 1)]
    return SCENARIO.runner(variant, SCENARIO.prove_config)(ReplaySource(values, strict=True))


def test_fact_a_gc_pause_stops_every_leader_thread_and_no_other_host() -> None:
    outcome = replay_positions("fix-zk-lookup", JVM_PAUSE_OPENS_974)
    ops = outcome.history.ops
    start_ms, end_ms = pause_window(ops)
    inside = [op for op in ops if start_ms < op.time_ms < end_ms]
    assert not [op for op in inside if on_leader(op)]  # the whole JVM stood still
    later = [op for op in ops if op.kind == "node.paused"][1]
    during = [op for op in ops if later.time_ms < op.time_ms < int(later.get("until_ms"))]  # type: ignore[arg-type]
    assert not [op for op in during if on_leader(op)]
    assert {"rest@host1", "rest@host2"} <= {op.actor for op in during}  # other JVMs did not


def lose_connection_in(config: BrooklinConfig) -> list[Op]:
    """The proof configuration's run whose first stop task's write meets a 10 s connection loss."""
    config = dataclasses.replace(config, gc_pause_ms=(0,), zk_connection_loss_ms=(0, 10_000))
    run = SCENARIO.runner("fix-zk-lookup", config)
    source = KeyedReplaySource({("fault.zk-connection-loss.stop-task1", 0): 1})
    return run(source).history.ops


def test_fact_a_connection_loss_fails_the_call_on_the_wire_and_the_stop_task_dies() -> None:
    """Helix retryUntilConnected with operationRetryTimeout -1: the cut call throws
    ZkTimeoutException; it escapes PollUtils.poll and the unread Future: the task writes nothing.
    Calls made during the loss wait for the reconnection; the next assignment's task stops A."""
    ops = lose_connection_in(SCENARIO.prove_config)
    lost = next(op for op in ops if op.kind == "zk.connection-lost")
    died = next(op for op in ops if op.kind == "stop-task.died")
    assert died.actor == "stop-task1" and died.time_ms == lost.time_ms + 2  # one round trip
    assert "retry timeout (-1 milli seconds)" in str(died.get("error"))
    assert not [op for op in ops if op.kind == "status.write" and op.actor == "stop-task1"]
    back = next(op for op in ops[lost.index :] if op.get("state") == "connected")
    assert back.time_ms == lost.time_ms + 10_000  # reconnected inside the 30 s session
    calls = [op for op in ops[died.index + 1 : back.index] if on_leader(op)]
    assert calls == [] and not any(op.kind == "zk.session-expired" for op in ops)
    [a_stopped] = [
        op
        for op in ops
        if op.kind == "status.write" and op.get("entity") == "A" and op.get("to") == "STOPPED"
    ]
    assert a_stopped.actor == "stop-task2" and a_stopped.time_ms > back.time_ms  # stop(B)'s task
    assert trail(History(ops), "A")[-1] == "READY"  # and the resume holds


def test_fact_a_stop_cut_by_a_connection_loss_stays_stopping_until_someone_writes_again() -> None:
    """One stream: no later assignment comes, so nothing retries the dead task. The caller's
    stop times out (DatastreamResources 408 after 90 s) and A is left STOPPING."""
    ops = lose_connection_in(dataclasses.replace(SCENARIO.prove_config, streams=("A",)))
    assert [op.kind for op in ops if op.kind in ("stop-task.died", "stop.timeout")] == [
        "stop-task.died",
        "stop.timeout",
    ]
    final = next(op for op in ops if op.kind == "final")
    assert final.get("statuses") == {"A": "STOPPING"}


def test_fact_the_token_poll_costs_a_count_children_round_trip_per_stream() -> None:
    """getNumUnclaimedTokensForDatastreams: one countChildren per stream of the task, each a
    round trip. A task's fresh read of A comes after k polls of 5 s, k + 1 polls' calls (one
    per stream it holds) and the read's exists + readData: nothing else takes time."""
    config = SCENARIO.prove_config
    ops = fifo("fix-zk-lookup", config).history.ops
    rtt, poll = config.zk_rtt_ms, config.token_poll_ms
    for op in (op for op in ops if op.kind == "stop-task.submit"):
        streams = list(op.get("streams"))  # type: ignore[arg-type]
        read = next(r for r in ops[op.index :] if r.kind == "zk.read" and r.actor == op.get("task"))
        elapsed = read.time_ms - op.time_ms - 2 * rtt
        calls = len(streams) * rtt
        assert elapsed % (poll + calls) == calls, (op.get("task"), streams, elapsed)
        assert elapsed // (poll + calls) >= 1  # it polled more than once


@pytest.mark.parametrize(
    "faults",
    [{"gc_pause_ms": (0, 1_000)}, {"gc_pause_ms": (0, 5_000)}],
    ids=["1s-pause", "5s-pause"],
)
def test_fact_974_holds_when_the_stop_tasks_polls_do_not_meet(faults: dict[str, Any]) -> None:
    """Stops 10.333 s apart: the two stop tasks' token polls never meet, so no pause separates
    one task's fresh read from another task's write, whatever its length."""
    config = dataclasses.replace(SCENARIO.prove_config, stop_gap_ms=(10_333,), **faults)
    report = prove(SCENARIO.runner("fix-zk-lookup", config, RESUME), budget=Budget(examples=50_000))
    assert report.verdict == "ok" and report.complete


def test_fact_a_jvm_pause_between_two_stop_tasks_writes_loses_the_resume_under_974() -> None:
    outcome = replay_positions("fix-zk-lookup", JVM_PAUSE_OPENS_974)
    assert outcome.status == "violated"
    ops = outcome.history.ops
    culprit = next(
        op
        for op in ops
        if op.kind == "status.write" and op.get("from") == "READY" and op.get("to") == "STOPPED"
    )
    other = next(
        op
        for op in ops
        if op.kind == "status.write" and op.get("entity") == "A" and op.get("to") == "STOPPED"
    )
    assert other.actor.startswith("stop-task") and other.actor != culprit.actor
    reads = [op for op in ops[: other.index] if op.kind == "zk.read" and op.get("entity") == "A"]
    assert {op.actor for op in reads} == {culprit.actor, other.actor}  # both read STOPPING
    assert all(op.get("status") == "STOPPING" for op in reads)
    pauses = [op for op in ops if op.kind == "node.paused"]
    assert [int(op.get("duration_ms")) for op in pauses] == [1_000, 1_000]  # type: ignore[arg-type]
    assert pauses[1].time_ms - pauses[0].time_ms == 1_008  # 8 ms of leader work between them
    resume = next(op for op in ops if op.kind == "resume.ack")
    assert other.time_ms <= pauses[1].time_ms < resume.time_ms < culprit.time_ms


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
def test_search_finds_the_lost_resume_from_scratch(strategy: str) -> None:
    run = SCENARIO.runner("buggy", SCENARIO.config)  # every checker: the resume is what fires
    report = explore(run, strategy, seed=0, budget=Budget(examples=2_000))
    assert report.verdict == "violated"
    assert report.shrunk is not None and report.shrunk.violation is not None
    assert deviations(report.shrunk.values) <= deviations(report_outcome("buggy").values)
    assert trail(report.shrunk.history, "A") == ["STOPPING", "STOPPED", "READY", "STOPPED"]
    assert not [op for op in report.shrunk.history.ops if op.kind.startswith("fault.")]


def test_a_search_of_the_merged_fix_misses_what_its_proof_finds() -> None:
    """Why the catalogue judges fix-zk-lookup by its proof alone (found_by_proof): its window
    needs stops a multiple of 5 s apart and two pauses at given writes."""
    run = SCENARIO.runner("fix-zk-lookup", SCENARIO.config)
    assert explore(run, "random", seed=0, budget=Budget(examples=2_000)).verdict == "ok"
    assert SCENARIO.found_by_proof == frozenset({"fix-zk-lookup"})


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


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(sorted(SCENARIO.variants)))
def test_a_run_with_leader_faults_replays_to_the_same_trace(seed: int, variant: str) -> None:
    """Node pauses and connection losses are recorded choices: a random run replays exactly."""
    run = SCENARIO.runner(variant, SCENARIO.config)
    first = run(RandomSource(seed))
    again = run(ReplaySource(first.values, strict=True))
    assert again.trace_hash == first.trace_hash and again.status == first.status


def test_random_runs_do_pause_the_jvm_and_drop_the_connection() -> None:
    """...and no leader thread ever calls ZooKeeper while disconnected (that would raise)."""
    run = SCENARIO.runner("fix-zk-lookup", SCENARIO.config)
    kinds = {op.kind for seed in range(60) for op in run(RandomSource(seed)).history.ops}
    assert {"node.paused", "zk.connection-lost", "zk.session"} <= kinds
    assert "model.crash" not in kinds


def test_the_reduction_agrees_with_the_full_walk_under_a_leader_jvm_pause() -> None:
    """Held events keep the proof's reduction sound: the same final states as the full walk.

    (With a 10 s connection loss instead, the full walk of this configuration is over 40,000
    schedules: too long for the suite. Its first 40,000 reached exactly the final states of
    the reduced walk's 64.)
    """
    faults = {"gc_pause_ms": (0, 2_000)}
    config = dataclasses.replace(
        SCENARIO.prove_config,
        stop_gap_ms=(10_333,),  # 10 s (the proof configuration's) makes the full walk too long
        resume_think_ms=(8_000,),
        leader_notify_ms=(3_000,),
        task_stop_ms=(500,),
        **faults,
    )
    run = SCENARIO.runner("fix-zk-lookup", config)
    reached: dict[bool, set[Any]] = {True: set(), False: set()}
    counts: dict[bool, int] = {}
    for reduction in (True, False):

        def recording(source: ChoiceSource, reduction: bool = reduction) -> RunOutcome:
            outcome = run(source)
            verdicts = tuple(sorted((v.checker, v.status) for v in outcome.verdicts))
            reached[reduction].add((verdicts, history_fingerprint(outcome)))
            return dataclasses.replace(outcome, status="ok")

        report = prove(recording, budget=Budget(examples=20_000), reduction=reduction)
        assert report.complete
        counts[reduction] = report.schedules
    assert reached[True] == reached[False]
    kinds = {op[2] for _, history in reached[False] for op in history}
    assert "node.paused" in kinds  # the pauses were walked
    assert counts[True] < counts[False]
