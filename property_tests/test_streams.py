"""KAFKA-8187: the JIRA's story, search from scratch, and which fix closes which window."""

from __future__ import annotations

import pytest

from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, KeyedReplaySource, ReplaySource, deviations, explore

SCENARIO = get("streams-checkpoint-resurrection")
STORY = dict(SCENARIO.report_script or {})
# The two ways the stale standby does harm, after the directory was deleted:
# The task moves to A, and B handles that rebalance first: closing its stale standby writes
# the stale offset back, re-creating the directory, and A then loads it.
WRITE_BACK = {**STORY, ("rebalance2.standby", 0): 1, ("rebalance2.first", 0): 1}
SURVIVE_AND_INIT = STORY  # the task stays on B: B initializes it there, from the stale offset


def run(variant: str, script: dict[tuple[str, int], int]):  # type: ignore[no-untyped-def]
    return SCENARIO.runner(variant, SCENARIO.config)(KeyedReplaySource(script))


def violated(outcome) -> set[str]:  # type: ignore[no-untyped-def]
    return {v.checker for v in outcome.verdicts if v.status == "violated"}


def test_the_jira_story_loses_the_records_before_the_stale_offset() -> None:
    outcome = run("buggy", STORY)
    assert violated(outcome) == {"checkpoint-soundness", "no-stale-read", "no-record-lost"}
    lost = next(v for v in outcome.verdicts if v.checker == "no-record-lost")
    assert "lacks 2 of" in lost.message and "offsets 0..1: r0, r1" in lost.message
    kinds = [op.kind for op in outcome.history]
    # The directory is deleted, then re-created by the stale standby's initialization.
    deleted = kinds.index("dir.delete")
    assert "dir.create" in kinds[deleted:]
    assert (
        outcome.virtual_ms > 2 * SCENARIO.config.cleanup_delay_ms
    )  # ten-minute delays cost nothing


def test_the_fifo_schedule_is_safe_for_every_variant() -> None:
    for variant in SCENARIO.variants:
        outcome = SCENARIO.runner(variant, SCENARIO.config)(ReplaySource([], strict=False))
        assert outcome.status == "ok", variant


@pytest.mark.parametrize(
    ("variant", "write_back", "survive_and_init"),
    [
        ("buggy", True, True),
        ("fix-checkpoint-under-lock", False, True),  # closes the write-back only
        ("fix-standby-running", False, False),
        ("fix-load-after-lock", False, False),
    ],
)
def test_which_window_each_fix_closes(
    variant: str, write_back: bool, survive_and_init: bool
) -> None:
    assert bool(violated(run(variant, WRITE_BACK))) is write_back
    assert bool(violated(run(variant, SURVIVE_AND_INIT))) is survive_and_init


def test_the_write_back_resurrects_the_directory_with_a_stale_checkpoint() -> None:
    ops = run("buggy", WRITE_BACK).history.ops
    write_back = next(op for op in ops if op.kind == "checkpoint.write" and op.actor == "B")
    assert write_back.get("holds_lock") is False
    assert write_back.get("loaded_generation") != write_back.get("generation")
    assert write_back.get("store_from") is None  # a checkpoint in a directory with no store


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
def test_search_finds_the_resurrection_from_scratch(strategy: str) -> None:
    report = explore(
        SCENARIO.runner("buggy", SCENARIO.config), strategy, seed=0, budget=Budget(examples=2_000)
    )
    assert report.verdict == "violated" and report.shrunk is not None
    story = run("buggy", STORY)
    assert deviations(report.shrunk.values) <= deviations(story.values)
    assert len(report.shrunk.history) <= len(story.history)
