"""The models' checkers called directly on small histories, each with and without its violation.

Kafka Streams (KAFKA-8187): a checkpoint or seek at offset C is sound only if
the store in that directory holds offsets 0..C-1 (C exactly at the store's
end is the boundary); an offset read from a directory generation that is no
longer current is stale; after the *last* restore every changelog record
below its end offset must be in the store.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.models.kafka_streams.checkers import (
    LOST,
    SOUNDNESS,
    STALE,
    checkpoint_soundness,
    no_record_lost,
    no_stale_read,
)
from raceproof.sim import History


def _use(kind: str, offset: int, store_from: int | None, store_to: int, **more: object) -> History:
    history = History()
    history.append(0, "streams", "noise", offset=offset)  # another kind is never read
    history.append(
        1,
        "threadA",
        kind,
        task="0_1",
        offset=offset,
        store_from=store_from,
        store_to=store_to,
        **more,
    )
    return history


@given(st.sampled_from(["checkpoint.write", "seek"]), st.integers(0, 50), st.integers(0, 60))
def test_soundness_holds_exactly_when_the_store_covers_the_offset(
    kind: str, offset: int, store_to: int
) -> None:
    verdict = checkpoint_soundness(_use(kind, offset, 0, store_to))
    assert verdict.status == ("ok" if offset == 0 or store_to >= offset else "violated")
    if verdict.status == "violated":
        assert verdict.checker == SOUNDNESS and verdict.op_index == 1
        verb = "wrote a checkpoint at" if kind == "checkpoint.write" else "seeked to"
        assert verdict.message == (
            f"threadA {verb} offset {offset} of 0_1 but the store in that directory holds "
            f"offsets 0..{store_to - 1}"
        )


@given(st.sampled_from(["checkpoint.write", "seek"]), st.integers(1, 50), st.integers(1, 5))
def test_a_store_not_from_zero_or_empty_is_unsound(kind: str, offset: int, start: int) -> None:
    late = checkpoint_soundness(_use(kind, offset, start, offset + 10))
    assert late.status == "violated" and f"holds offsets {start}..{offset + 9}" in late.message
    empty = checkpoint_soundness(_use(kind, offset, None, 0))
    assert empty.status == "violated" and empty.message.endswith("holds nothing")
    assert checkpoint_soundness(_use(kind, 0, None, 0)).status == "ok"  # offset 0 needs nothing


def test_the_first_unsound_op_is_reported() -> None:
    history = _use("seek", 3, 0, 5)
    history.append(2, "threadB", "checkpoint.write", task="0_1", offset=4, store_from=0, store_to=2)
    history.append(3, "threadB", "seek", task="0_1", offset=9, store_from=0, store_to=1)
    verdict = checkpoint_soundness(history)
    assert verdict.op_index == 2 and "threadB wrote a checkpoint at offset 4" in verdict.message


@given(st.sampled_from(["checkpoint.write", "seek"]), st.integers(0, 3), st.integers(0, 3))
def test_a_stale_generation_is_caught(kind: str, loaded: int, current: int) -> None:
    history = _use(kind, 7, 0, 7, loaded_generation=loaded, generation=current)
    verdict = no_stale_read(history)
    assert verdict.status == ("ok" if loaded == current else "violated")
    if loaded != current:
        assert verdict.checker == STALE and verdict.op_index == 1
        assert verdict.message == (
            f"threadA used offset 7 of 0_1 loaded from directory generation {loaded} in "
            f"generation {current} (the directory was deleted and re-created)"
        )
    assert no_stale_read(_use(kind, 7, 0, 7, generation=current)).status == "ok"  # never loaded


def _restored(appended: int, end: int, keys: list[str], restores: int = 1) -> History:
    history = History()
    for offset in range(appended):
        history.append(offset, "changelog", "changelog.append", offset=offset, key=f"k{offset}")
    for number in range(restores):
        history.append(
            100 + number,
            "threadB",
            "restore.done",
            end_offset=end if number == restores - 1 else 0,
            keys=keys if number == restores - 1 else [],
            checkpoint=3,
        )
    return history


@given(st.integers(0, 12), st.integers(0, 14), st.data())
def test_every_record_below_the_end_must_be_restored(
    appended: int, end: int, data: st.DataObject
) -> None:
    owed = [f"k{o}" for o in range(min(appended, end))]
    lost = data.draw(st.lists(st.sampled_from(owed), unique=True)) if owed else []
    keys = [k for k in owed if k not in lost] + [f"k{end + 1}"]
    history = _restored(appended, end, keys, restores=data.draw(st.integers(1, 2)))
    verdict = no_record_lost(history)
    assert verdict.checker == LOST
    if not lost:
        assert verdict.status == "ok"
        return
    lost.sort(key=lambda k: int(k[1:]))
    assert verdict.status == "violated" and verdict.op_index == len(history) - 1
    shown = ", ".join(lost[:8]) + (" ..." if len(lost) > 8 else "")
    assert verdict.message == (
        f"the restored store lacks {len(lost)} of {len(owed)} records (offsets {lost[0][1:]}.."
        f"{lost[-1][1:]}: {shown}); it restored from checkpoint 3"
    )


@pytest.mark.parametrize("lost", [8, 9])
def test_more_than_eight_lost_records_are_shown_as_eight_and_dots(lost: int) -> None:
    verdict = no_record_lost(_restored(12, 12, [f"k{o}" for o in range(lost, 12)]))
    shown = ", ".join(f"k{o}" for o in range(8)) + (" ..." if lost > 8 else "")
    assert f": {shown}); it restored" in verdict.message


def test_no_restore_is_unknown() -> None:
    verdict = no_record_lost(_restored(3, 0, [], restores=0))
    assert (
        verdict.status == "unknown" and verdict.message == "the run ended before the final restore"
    )


def test_a_store_with_no_end_holds_nothing_past_zero() -> None:
    history = History()
    history.append(0, "threadA", "seek", task="0_1", offset=1, store_from=0)  # no store_to
    verdict = checkpoint_soundness(history)
    assert verdict.status == "violated" and verdict.message.endswith("holds offsets 0..-1")
