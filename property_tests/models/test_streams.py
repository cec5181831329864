"""KAFKA-8187 on the faithful 2.1.1 model: the window the code has, and which fix closes it.

The scripted stories are keyed by (label, occurrence); every option not named
is choice 0. Facts each test pins are cited in docs/models/kafka_streams.md.
"""

from __future__ import annotations

import pytest

from raceproof.models.kafka_streams import StreamsConfig
from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, KeyedReplaySource, ReplaySource, deviations, explore

SCENARIO = get("streams-checkpoint-resurrection")
STORY = dict(SCENARIO.report_script or {})  # the JIRA's first half, then the window
WINDOW = {("rebalance2.at", 0): 2, ("cleaner.delete_ms", 0): 1}  # a pass still running
# 1_0 leaves the instance at the first rebalance and comes back at the second: no bug needed.
AWAY_AND_BACK = {("rebalance1.standby", 0): 1, **WINDOW}
# The JIRA's first half with the second rebalance long after the cleaner deleted the directory.
JIRA_LATE = {("rebalance1.first", 0): 1, ("rebalance2.at", 0): 1}
# The JIRA's first half, the second rebalance before the cleaner may delete.
JIRA_EARLY = {("rebalance1.first", 0): 1}


def run(variant: str, script: dict[tuple[str, int], int]):  # type: ignore[no-untyped-def]
    return SCENARIO.runner(variant, SCENARIO.config)(KeyedReplaySource(script))


def violated(outcome) -> set[str]:  # type: ignore[no-untyped-def]
    return {v.checker for v in outcome.verdicts if v.status == "violated"}


def ops(outcome, kind: str, **fields):  # type: ignore[no-untyped-def]
    return [
        op
        for op in outcome.history.ops
        if op.kind == kind and all(op.get(k) == v for k, v in fields.items())
    ]


# -- facts ------------------------------------------------------------------------------
def test_a_created_standby_is_closed_and_dropped_at_revocation_without_a_checkpoint() -> None:
    """AssignedTasks.suspend closes `created`; StandbyTask.close returns when not initialized."""
    outcome = run("buggy", JIRA_EARLY)
    assert ops(outcome, "lock.fail", task="1_0", owner="A")  # B's standby stays created
    revoked = ops(outcome, "rebalance", number=2)[0].index
    closes = [op for op in ops(outcome, "standby.close", task="1_0") if op.actor == "B"]
    assert closes and closes[0].index > revoked
    assert closes[0].get("initialized") is False and closes[0].get("wrote_checkpoint") is False
    # Nothing B did between its lock failure and the close wrote a checkpoint for 1_0.
    failed = ops(outcome, "lock.fail", task="1_0")[0].index
    assert not [
        op
        for op in ops(outcome, "checkpoint.write", task="1_0")
        if op.actor == "B" and failed < op.index < closes[0].index
    ]
    # The second assignment constructs a new task object: it reads .checkpoint again.
    loads = [op for op in ops(outcome, "checkpoint.load", task="1_0") if op.actor == "B"]
    assert len(loads) == 2 and loads[1].index > closes[0].index


def test_the_buggy_thread_goes_running_with_its_standby_uninitialized() -> None:
    outcome = run("buggy", JIRA_EARLY)
    failed = ops(outcome, "lock.fail", task="1_0")[0]
    running = [
        op
        for op in ops(outcome, "thread.state", state="RUNNING")
        if op.actor == "B" and op.index > failed.index
    ]
    assert running and not [
        op
        for op in ops(outcome, "standby.init", task="1_0")
        if op.actor == "B" and failed.index < op.index < running[0].index
    ]
    fixed = run("fix-standby-running", JIRA_EARLY)  # PR #6818: retries until A releases
    init = next(op for op in ops(fixed, "standby.init", task="1_0") if op.actor == "B")
    b_running = [op for op in ops(fixed, "thread.state", state="RUNNING") if op.actor == "B"]
    assert b_running and b_running[-1].index > init.index


def test_a_checkpoint_write_into_a_deleted_directory_fails_and_creates_nothing() -> None:
    """OffsetCheckpoint.write opens .checkpoint.tmp with a FileOutputStream: no mkdir."""
    from raceproof.models.kafka_streams.state_dir import StateDirectory, task_dir
    from raceproof.sim import World

    world = World(ReplaySource([], strict=False))
    dirs = StateDirectory(world, 600_000, (100,))
    dirs.directory_for_task("A", "1_0")
    assert dirs.write_checkpoint("A", "1_0", 5)
    dirs.fs.rmtree(task_dir("1_0"))
    assert not dirs.write_checkpoint("A", "1_0", 7)
    assert not dirs.fs.isdir(task_dir("1_0"))
    failed = [op for op in world.history.ops if op.kind == "checkpoint.fail"]
    assert failed and failed[0].get("level") == "WARN"


def test_only_directory_for_task_recreates_a_deleted_directory() -> None:
    """In the window, the directory comes back through the thread's lock(), not a checkpoint."""
    outcome = run("buggy", STORY)
    deleted = ops(outcome, "dir.delete", task="1_0")[0]
    created = [op for op in ops(outcome, "dir.create", task="1_0") if op.index > deleted.index]
    assert created and created[0].actor == "B"
    assert not ops(outcome, "checkpoint.fail")  # nothing tried to write there in between


def test_the_cleaner_skips_a_locked_directory_and_runs_only_while_running() -> None:
    outcome = run("fix-standby-running", {("rebalance1.first", 0): 1, **WINDOW})
    runs = ops(outcome, "cleaner.run")
    assert runs and all("1_0" in op.get("locked") for op in runs[1:])  # B holds it from gen 1
    assert not ops(outcome, "dir.delete", task="1_0")
    # A rebalance in progress at a cleaner tick: the run is skipped.
    config = StreamsConfig(second_rebalance_at_ms=(1_199_800,), join_ms=500)
    late = SCENARIO.runner("buggy", config)(KeyedReplaySource({("rebalance1.first", 0): 1}))
    assert ops(late, "cleaner.skip")


def test_deleting_after_the_generation_is_harmless_the_stale_offset_dies_with_its_task() -> None:
    """The JIRA's story: directory deleted during the generation, next rebalance: no loss."""
    outcome = run("buggy", JIRA_LATE)
    assert ops(outcome, "dir.delete", task="1_0")
    assert outcome.status == "ok"
    loads = [op for op in ops(outcome, "checkpoint.load", task="1_0") if op.actor == "B"]
    assert loads[-1].get("offset") is None  # the re-created directory has no checkpoint


# -- the window and the fixes -------------------------------------------------------------
def test_the_window_loses_the_records_below_the_stale_offset() -> None:
    outcome = run("buggy", STORY)
    assert violated(outcome) == {"checkpoint-soundness", "no-stale-read", "no-record-lost"}
    lost = next(v for v in outcome.verdicts if v.checker == "no-record-lost")
    assert "lacks 2 of" in lost.message and "offsets 0..1: r0, r1" in lost.message
    load = [op for op in ops(outcome, "checkpoint.load", task="1_0") if op.actor == "B"][-1]
    delete = ops(outcome, "dir.delete", task="1_0")[0]
    seek = [op for op in ops(outcome, "seek", task="1_0") if op.actor == "B"][-1]
    assert load.index < delete.index < seek.index  # read before the lock, deleted in between
    assert seek.get("offset") == 2 and seek.get("store_from") is None


def test_the_fifo_schedule_is_safe_for_every_variant() -> None:
    for variant in SCENARIO.variants:
        outcome = SCENARIO.runner(variant, SCENARIO.config)(ReplaySource([], strict=False))
        assert outcome.status == "ok", variant


@pytest.mark.parametrize(
    ("variant", "jira_then_window", "away_and_back"),
    [
        ("buggy", True, True),
        ("fix-checkpoint-under-lock", True, True),  # every write is already under the lock
        ("fix-standby-running", False, True),  # closes the bug's exposure, not the window
        ("fix-load-after-lock", False, False),
    ],
)
def test_which_path_each_fix_closes(
    variant: str, jira_then_window: bool, away_and_back: bool
) -> None:
    assert bool(violated(run(variant, STORY))) is jira_then_window
    assert bool(violated(run(variant, AWAY_AND_BACK))) is away_and_back


def test_a_fast_cleaner_pass_or_the_other_listing_order_closes_the_window() -> None:
    assert run("buggy", {("rebalance1.first", 0): 1, ("rebalance2.at", 0): 2}).status == "ok"
    reversed_order = {**STORY, ("cleaner.order", 1): 1}
    assert run("buggy", reversed_order).status == "ok"


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
def test_search_finds_the_window_from_scratch(strategy: str) -> None:
    report = explore(
        SCENARIO.runner("buggy", SCENARIO.config), strategy, seed=0, budget=Budget(examples=2_000)
    )
    assert report.verdict == "violated" and report.shrunk is not None
    assert deviations(report.shrunk.values) <= deviations(run("buggy", STORY).values)
