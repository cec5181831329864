"""Each checker on small generated histories, with and without a planted violation.

The dataflow checkers (``sim/dataflow.py``) were exercised only through the
slow real-Spark tests; here each one is called directly on histories built op
by op, so an injected bug in a checker (``make mutation``) fails a fast test.
Boundaries get their own cases: an op right at the drain marker, a file read
twice (a repeated offset), a row emitted in an earlier batch, a run with no
state at all.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.sim.checkers import (
    Verdict,
    checker,
    checker_name,
    first_violation,
    ok,
    quiescent,
    run_checkers,
    unknown,
    violated,
)
from raceproof.sim.dataflow import (
    drain_emits_every_window,
    no_duplicate_emission,
    state_matches_inputs,
)
from raceproof.sim.history import History

ROWS = st.lists(st.tuples(st.sampled_from("wxyz"), st.sampled_from("ab")), unique=True, max_size=8)


# -- no-duplicate-emission --------------------------------------------------------------
@given(ROWS)
def test_distinct_rows_are_not_duplicates(rows: list[tuple[str, str]]) -> None:
    history = History()
    for batch, (window, key) in enumerate(rows):
        history.append(batch, "sink", "sink.row", batch=batch, window=window, key=key, count=1)
    assert no_duplicate_emission()(history) == ok("no-duplicate-emission")


@given(ROWS.filter(bool), st.data())
def test_a_repeated_row_is_caught_where_it_repeats(
    rows: list[tuple[str, str]], data: st.DataObject
) -> None:
    history = History()
    for batch, (window, key) in enumerate(rows):
        history.append(batch, "sink", "sink.row", batch=batch, window=window, key=key, count=1)
    first = data.draw(st.integers(0, len(rows) - 1))
    history.append(99, "noise", "input.record", window="w", key="a")  # other kinds are ignored
    window, key = rows[first]
    again = history.append(100, "sink", "sink.row", batch=7, window=window, key=key, count=1)
    verdict = no_duplicate_emission("dup")(history)
    assert verdict.status == "violated" and verdict.checker == "dup"
    assert verdict.op_index == again.index
    assert verdict.message == (
        f"window {window} key {key} emitted again in batch 7 (first at op #{first}): a replayed batch"
    )


def test_the_same_key_in_another_window_is_not_a_duplicate() -> None:
    history = History()
    history.append(0, "sink", "sink.row", batch=0, window="w1", key="a", count=1)
    history.append(1, "sink", "sink.row", batch=1, window="w2", key="a", count=1)
    history.append(2, "sink", "sink.row", batch=1, window="w1", key="b", count=1)
    assert no_duplicate_emission()(history).status == "ok"


# -- drain-completeness ---------------------------------------------------------------------
def _drained(records: list[tuple[str, str]], emit: dict[tuple[str, str], int]) -> History:
    history = History()
    for window, key in records:
        history.append(0, "source", "input.record", window=window, key=key, sentinel=False)
    history.append(1, "source", "input.record", window="zz", key="s", sentinel=True)
    history.append(2, "controller", "drain.request")
    history.append(3, "source", "input.record", window="late", key="a", sentinel=False)
    for batch, ((window, key), count) in enumerate(sorted(emit.items())):
        history.append(4, "sink", "sink.row", batch=batch, window=window, key=key, count=count)
    return history


def _counts(records: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for row in records:
        counts[row] = counts.get(row, 0) + 1
    return counts


RECORDS = st.lists(st.tuples(st.sampled_from("wxy"), st.sampled_from("ab")), max_size=10)


@given(RECORDS)
def test_a_complete_drain_holds(records: list[tuple[str, str]]) -> None:
    # The sentinel and the record right after the drain marker are not owed.
    assert drain_emits_every_window()(_drained(records, _counts(records))).status == "ok"


@given(RECORDS.filter(bool), st.data())
def test_a_window_never_emitted_is_caught(
    records: list[tuple[str, str]], data: st.DataObject
) -> None:
    counts = _counts(records)
    dropped = data.draw(st.sampled_from(sorted(counts)))
    del counts[dropped]
    history = _drained(records, counts)
    verdict = drain_emits_every_window("drain")(history)
    assert verdict.status == "violated" and verdict.op_index == len(history) - 1
    missing = sorted(set(_counts(records)) - set(counts))
    shown = ", ".join(f"{w} key {k}" for w, k in missing[:6])
    assert verdict.message == (
        f"{len(missing)} windows with input before the drain were never emitted: {shown}"
    )


@given(RECORDS.filter(bool), st.data())
def test_a_wrong_count_is_caught(records: list[tuple[str, str]], data: st.DataObject) -> None:
    counts = _counts(records)
    row = data.draw(st.sampled_from(sorted(counts)))
    expected = counts[row]
    counts[row] = expected + data.draw(st.sampled_from([-1, 1, 2]))
    history = _drained(records, counts)
    verdict = drain_emits_every_window()(history)
    assert verdict.status == "violated" and verdict.op_index == len(history) - 1
    first = sorted(r for r, c in counts.items() if _counts(records)[r] != c)[0]
    assert verdict.message == (
        f"window {first[0]} key {first[1]} emitted count {counts[first]}, "
        f"but {_counts(records)[first]} records fell in it"
    )


def test_without_a_drain_nothing_is_owed_and_only_the_first_drain_counts() -> None:
    history = History()
    history.append(0, "source", "input.record", window="w", key="a", sentinel=False)
    assert drain_emits_every_window()(history).status == "ok"
    history.append(1, "controller", "drain.request")
    history.append(2, "source", "input.record", window="x", key="a", sentinel=False)
    history.append(3, "controller", "drain.request")
    history.append(4, "sink", "sink.row", batch=0, window="w", key="a", count=1)
    assert drain_emits_every_window()(history).status == "ok"  # x arrived after the first drain


def test_more_than_six_missing_windows_are_counted_but_six_shown() -> None:
    records = [(f"w{i}", "a") for i in range(8)]
    verdict = drain_emits_every_window()(_drained(records, {}))
    assert verdict.message.startswith("8 windows with input before the drain were never emitted: ")
    assert verdict.message.endswith("w0 key a, w1 key a, w2 key a, w3 key a, w4 key a, w5 key a")


# -- replay-equivalence -------------------------------------------------------------------
FILES = st.lists(
    st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("wx")), min_size=1, max_size=3),
    min_size=1, max_size=4,
)  # fmt: skip


def _replayed(
    files: list[list[tuple[str, str]]], reads: list[list[int]]
) -> tuple[History, list[dict[tuple[str, str], int]]]:
    """Files, batches reading them, and the true state after each batch."""
    history = History()
    for number, records in enumerate(files):
        history.append(
            0, "source", "input.file", file=f"f{number}", records=[list(r) for r in records]
        )
    states = []
    totals: dict[tuple[str, str], int] = {}
    for batch, read in enumerate(reads):
        history.append(1, "job", "checkpoint.batch", batch=batch, files=[f"f{n}" for n in read])
        for number in read:
            for key, window in files[number]:
                totals[(window, key)] = totals.get((window, key), 0) + 1
        states.append(dict(totals))
    return history, states


def _store(history: History, states: list[dict[tuple[str, str], int]]) -> None:
    for batch, state in enumerate(states):
        for (window, key), count in sorted(state.items()):
            history.append(2, "job", "state.row", batch=batch, window=window, key=key, count=count)


@given(FILES, st.data())
def test_a_store_that_folds_its_inputs_holds(
    files: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    # A file may be read by two batches (a repeated offset): the store counts it twice.
    reads = data.draw(
        st.lists(
            st.lists(st.integers(0, len(files) - 1), min_size=1, max_size=2), min_size=1, max_size=3
        )
    )
    history, states = _replayed(files, reads)
    _store(history, states)
    assert state_matches_inputs()(history).status == "ok"


@given(FILES, st.data())
def test_a_wrong_stored_count_is_caught_at_its_row(
    files: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    reads = [list(range(len(files)))]
    history, states = _replayed(files, reads)
    row = data.draw(st.sampled_from(sorted(states[0])))
    states[0][row] += data.draw(st.sampled_from([-1, 1]))
    _store(history, states)
    verdict = state_matches_inputs("rep")(history)
    assert verdict.status == "violated" and verdict.checker == "rep"
    bad = next(
        op for op in history.of_kind("state.row") if (op.get("window"), op.get("key")) == row
    )
    assert verdict.op_index == bad.index  # the only row that is wrong
    assert (
        f"after batch 0 the store holds count {states[0][row]} for window {row[0]} key {row[1]}"
        in verdict.message
    )


@given(FILES, st.data())
def test_a_lost_row_is_caught_unless_emitted_before(
    files: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    history, states = _replayed(files, [list(range(len(files)))])
    row = data.draw(st.sampled_from(sorted(states[0])))
    count = states[0].pop(row)
    emitted_in = data.draw(st.sampled_from([None, 0, 1]))
    states[0].setdefault(("other", "z"), 0)  # the store is read (holds something) for batch 0
    _store(history, states)
    if emitted_in is not None:
        history.append(
            3, "sink", "sink.row", batch=emitted_in, window=row[0], key=row[1], count=count
        )
    history.append(9, "kernel", "run.end", reason="finished")
    verdict = state_matches_inputs()(history)
    if emitted_in == 0:  # emitted by this batch: gone from the store legitimately
        assert verdict.status == "ok"
    else:
        assert verdict.status == "violated" and verdict.op_index == len(history) - 1
        assert verdict.message == (
            f"after batch 0 window {row[0]} key {row[1]} ({count} records read) is neither "
            "in the store nor emitted"
        )


def test_no_state_is_unknown_and_batches_without_state_are_skipped() -> None:
    history, _states = _replayed([[("a", "w")]], [[0], [0]])
    assert state_matches_inputs()(history) == unknown("replay-equivalence", "no state was read")
    history.append(2, "job", "state.row", batch=1, window="w", key="a", count=2)  # batch 0 unread
    assert state_matches_inputs()(history).status == "ok"
    history.append(2, "job", "state.row", batch=3, window="w", key="a", count=2)  # past the batches
    assert state_matches_inputs()(history).status == "ok"


# -- the checker toolkit -------------------------------------------------------------------
def test_first_violation_is_the_earliest_and_unplaced_ones_come_last() -> None:
    late, early = violated("a", 9, "late"), violated("b", 2, "early")
    nowhere = violated("c", None, "somewhere")
    assert first_violation([ok("x"), late, nowhere, early]) is early
    assert first_violation([nowhere, late]) is late
    assert first_violation([nowhere]) is nowhere
    assert first_violation([ok("x"), unknown("y", "?")]) is None
    assert first_violation([]) is None


def test_verdicts_are_frozen_values_and_a_violation_must_say_why() -> None:
    import dataclasses

    import pytest

    verdict = Verdict("a", "ok")
    assert (verdict.op_index, verdict.message) == (None, "")
    assert ok("a") == verdict and ok("a").message == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.status = "violated"  # type: ignore[misc]
    assert {verdict: 1}[Verdict("a", "ok")] == 1  # hashable, equal by value
    with pytest.raises(AssertionError, match=r"^a violation must say why$"):
        violated("a", 1, "")
    assert unknown("a", "?") == Verdict("a", "unknown", None, "?")


def test_verdicts_serialise_and_checkers_are_named() -> None:
    assert violated("a", 3, "why").to_json() == {
        "checker": "a", "status": "violated", "op_index": 3, "message": "why",
    }  # fmt: skip
    assert ok("a", "fine") == Verdict("a", "ok", None, "fine")

    @checker("named")
    def always(history: History) -> Verdict:
        """Doc."""
        return ok("named")

    assert (
        checker_name(always) == "named" and always.__name__ == "always" and always.__doc__ == "Doc."
    )
    assert run_checkers(History(), [always, always]) == [ok("named"), ok("named")]

    def plain(history: History) -> Verdict:
        return ok("plain")

    assert checker_name(plain) == "plain"

    @checker("liar")
    def liar(history: History) -> Verdict:
        return ok("someone-else")

    try:
        liar(History())
    except AssertionError as exc:
        assert str(exc) == f"checker liar returned {ok('someone-else')!r}"
    else:
        raise AssertionError("a checker returning another's verdict must be refused")


@settings(max_examples=20)
@given(st.lists(st.sampled_from(["quiescent", "finished", "steps", "time", None]), max_size=3))
def test_quiescent_reads_the_last_run_end(reasons: list[str | None]) -> None:
    history = History()
    for reason in reasons:
        history.append(0, "kernel", "run.end", reason=reason)
    assert quiescent(history) == (bool(reasons) and reasons[-1] in ("quiescent", "finished"))
