"""Each checker on small generated histories, with and without a planted violation.

The dataflow checkers (``sim/dataflow.py``) were exercised only through the
slow real-Spark tests; here each one is called directly on histories built op
by op in the shapes ``spark_integration/job.py`` writes (a ``pipeline`` op
declaring the output key, ``sink.row`` with ``batch`` and ``row``,
``expect.row`` after ``drain.request``, ``input.file`` with ``keys``,
``checkpoint.batch`` with ``files``, ``state.row`` with ``batch``, ``key`` and
``count``), so an injected bug in a checker (``make mutation``) fails a fast
test. Boundaries get their own cases: a reference row before the drain
marker, a file read twice (a repeated offset), a row emitted in an earlier
batch, a run with no state at all, a history with no ``pipeline`` op (the
default key) and a declared key other than the default.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.sim.checkers import (
    CheckerResult,
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

Pair = tuple[str, str]  # (window, key): a row's identity under the default key
ROWS = st.lists(st.tuples(st.sampled_from("wxyz"), st.sampled_from("ab")), unique=True, max_size=8)


def _history(declared: bool, key: list[str] | None = None) -> History:
    """An empty history; with ``declared`` it opens with a ``pipeline`` op naming the output key.

    Declaring the default key (``["window", "key"]``) and declaring nothing must
    give the same verdicts, so the properties draw ``declared``.
    """
    history = History()
    if declared or key is not None:
        history.append(
            0,
            "driver",
            "pipeline",
            name="windowed-count",
            key=key if key is not None else ["window", "key"],
        )
    return history


def _sink(history: History, time_ms: int, batch: int, row: dict[str, str | int]) -> int:
    return history.append(time_ms, "sink", "sink.row", batch=batch, row=dict(row)).index


# -- no-duplicate-emission --------------------------------------------------------------
@given(ROWS, st.booleans())
def test_distinct_rows_are_not_duplicates(rows: list[Pair], declared: bool) -> None:
    history = _history(declared)
    for batch, (window, key) in enumerate(rows):
        _sink(history, batch, batch, {"window": window, "key": key, "count": 1})
    assert no_duplicate_emission()(history) == ok("no-duplicate-emission")


@given(ROWS.filter(bool), st.booleans(), st.data())
def test_a_repeated_row_is_caught_where_it_repeats(
    rows: list[Pair], declared: bool, data: st.DataObject
) -> None:
    history = _history(declared)
    at = [
        _sink(history, batch, batch, {"window": window, "key": key, "count": 1})
        for batch, (window, key) in enumerate(rows)
    ]
    first = data.draw(st.integers(0, len(rows) - 1))
    history.append(
        99, "noise", "expect.row", row={"window": "w", "key": "a"}
    )  # other kinds ignored
    window, key = rows[first]
    # A replay may emit a different count: only the key fields identify the row.
    again = _sink(history, 100, 7, {"window": window, "key": key, "count": 5})
    verdict = no_duplicate_emission("dup")(history)
    assert verdict.status == "violated" and verdict.checker == "dup"
    assert verdict.op_index == again
    why = "twice within that one batch, no replay" if first == 7 else "a replayed batch"
    assert verdict.message == (
        f"window={window} key={key} emitted again in batch 7 (first at op #{at[first]}): {why}"
    )


@given(st.integers(0, 50), st.booleans())
def test_a_batch_delivered_twice_is_called_a_replay_and_one_delivery_is_not(
    batch: int, replayed: bool
) -> None:
    """A real sink's rows carry the sink call that delivered them (``delivery``)."""
    history = _history(True)
    row = {"window": "w", "key": "a", "count": 1}
    history.append(0, "sink", "sink.row", batch=batch, delivery=3, row=row)
    again = history.append(
        1, "sink", "sink.row", batch=batch, delivery=4 if replayed else 3, row=row
    )
    verdict = no_duplicate_emission()(history)
    assert verdict.op_index == again.index
    why = f"batch {batch} delivered again: a replay of it" if replayed else "no replay"
    assert verdict.message.endswith(why), verdict.message


@given(st.booleans())
def test_the_same_key_in_another_window_is_not_a_duplicate(declared: bool) -> None:
    history = _history(declared)
    _sink(history, 0, 0, {"window": "w1", "key": "a", "count": 1})
    _sink(history, 1, 1, {"window": "w2", "key": "a", "count": 1})
    _sink(history, 2, 1, {"window": "w1", "key": "b", "count": 1})
    assert no_duplicate_emission()(history).status == "ok"
    _sink(history, 3, 2, {"window": "w2", "key": "a", "count": 1})
    assert no_duplicate_emission()(history).op_index == len(history) - 1


# -- drain-completeness ---------------------------------------------------------------------
def _counts(records: list[Pair]) -> dict[Pair, int]:
    counts: dict[Pair, int] = {}
    for row in records:
        counts[row] = counts.get(row, 0) + 1
    return counts


def _drained(records: list[Pair], emit: dict[Pair, int], declared: bool = False) -> History:
    """Records, a drain, the reference's rows for the records (right after it), then the sink's rows."""
    history = _history(declared)
    for window, key in records:
        history.append(
            0, "driver", "input.record", record={"window": window, "key": key}, sentinel=False
        )
    # A reference row before the drain marker is not owed.
    history.append(1, "reference", "expect.row", row={"window": "early", "key": "z", "count": 1})
    history.append(2, "driver", "drain.request", procedure="stop")
    for (window, key), count in sorted(_counts(records).items()):
        history.append(
            2, "reference", "expect.row", row={"window": window, "key": key, "count": count}
        )
    for batch, ((window, key), count) in enumerate(sorted(emit.items())):
        _sink(history, 4, batch, {"window": window, "key": key, "count": count})
    return history


RECORDS = st.lists(st.tuples(st.sampled_from("wxy"), st.sampled_from("ab")), max_size=10)


@given(RECORDS, st.booleans())
def test_a_complete_drain_holds(records: list[Pair], declared: bool) -> None:
    history = _drained(records, _counts(records), declared)
    assert drain_emits_every_window()(history).status == "ok"
    # A row the reference does not expect (the sentinel's window) owes nothing either.
    _sink(history, 5, 9, {"window": "zz", "key": "s", "count": 1})
    assert drain_emits_every_window()(history).status == "ok"


@given(RECORDS.filter(bool), st.booleans(), st.data())
def test_a_row_never_emitted_is_caught(
    records: list[Pair], declared: bool, data: st.DataObject
) -> None:
    counts = _counts(records)
    dropped = data.draw(st.lists(st.sampled_from(sorted(counts)), min_size=1, unique=True))
    for row in dropped:
        del counts[row]
    history = _drained(records, counts, declared)
    verdict = drain_emits_every_window("drain")(history)
    assert verdict.status == "violated" and verdict.op_index == len(history) - 1
    missing = sorted(dropped)
    shown = ", ".join(f"window={w} key={k}" for w, k in missing[:6])
    assert verdict.message == (
        f"{len(missing)} of {len(_counts(records))} rows expected from the input before the "
        f"drain were never emitted: {shown}"
    )


@given(RECORDS.filter(bool), st.booleans(), st.data())
def test_a_wrong_count_is_caught(records: list[Pair], declared: bool, data: st.DataObject) -> None:
    truth = _counts(records)
    counts = dict(truth)
    for row in data.draw(st.lists(st.sampled_from(sorted(counts)), min_size=1, unique=True)):
        counts[row] = truth[row] + data.draw(st.sampled_from([-1, 1, 2]))
    history = _drained(records, counts, declared)
    verdict = drain_emits_every_window()(history)
    assert verdict.status == "violated" and verdict.op_index == len(history) - 1
    first = sorted(r for r, c in counts.items() if truth[r] != c)[0]
    assert verdict.message == (
        f"window={first[0]} key={first[1]} emitted count={counts[first]}, "
        f"but the reference gives {truth[first]}"
    )


def test_a_wrong_field_is_named_and_a_later_emission_stands() -> None:
    history = _history(False)
    history.append(0, "driver", "drain.request", procedure="stop")
    history.append(
        0, "reference", "expect.row", row={"window": "w", "key": "a", "count": 2, "sum": 7}
    )
    _sink(history, 1, 0, {"window": "w", "key": "a", "count": 2, "sum": 7})
    assert drain_emits_every_window()(history).status == "ok"
    _sink(history, 2, 1, {"window": "w", "key": "a", "count": 2, "sum": 9})  # the last one stands
    verdict = drain_emits_every_window()(history)
    assert verdict.message == "window=w key=a emitted sum=9, but the reference gives 7"
    _sink(history, 3, 2, {"window": "w", "key": "a", "count": 2, "sum": 7, "extra": 1})
    assert drain_emits_every_window()(history).status == "ok"  # fields the reference omits are free


def test_without_a_drain_nothing_is_owed_and_only_rows_after_the_first_drain_count() -> None:
    history = _history(False)
    history.append(0, "reference", "expect.row", row={"window": "w", "key": "a", "count": 1})
    assert drain_emits_every_window()(history).status == "ok"  # no drain: nothing owed
    history.append(1, "driver", "drain.request", procedure="stop")
    assert drain_emits_every_window()(history).status == "ok"  # w a came before the drain
    history.append(1, "reference", "expect.row", row={"window": "x", "key": "a", "count": 1})
    history.append(2, "driver", "drain.request", procedure="stop")
    history.append(2, "reference", "expect.row", row={"window": "y", "key": "a", "count": 1})
    verdict = drain_emits_every_window()(history)
    assert verdict.message.startswith("2 of 2 rows expected ")
    assert verdict.message.endswith("never emitted: window=x key=a, window=y key=a")
    _sink(history, 3, 0, {"window": "x", "key": "a", "count": 1})
    _sink(history, 3, 0, {"window": "y", "key": "a", "count": 1})
    assert drain_emits_every_window()(history).status == "ok"


def test_more_than_six_missing_rows_are_counted_but_six_shown() -> None:
    records = [(f"w{i}", "a") for i in range(8)]
    verdict = drain_emits_every_window()(_drained(records, {}))
    assert verdict.message.startswith(
        "8 of 8 rows expected from the input before the drain were never emitted: "
    )
    assert verdict.message.endswith(": " + ", ".join(f"window=w{i} key=a" for i in range(6)))


# -- replay-equivalence -------------------------------------------------------------------
FILES = st.lists(
    st.lists(st.tuples(st.sampled_from("wx"), st.sampled_from("ab")), min_size=1, max_size=3),
    min_size=1,
    max_size=4,
)


def _replayed(
    files: list[list[Pair]], reads: list[list[int]], declared: bool = False
) -> tuple[History, list[dict[Pair, int]]]:
    """Files (each record's state key), batches reading them, and the true state after each batch."""
    history = _history(declared)
    for number, keys in enumerate(files):
        history.append(
            0,
            "driver",
            "input.file",
            file=f"f{number}",
            records=[{"window": w, "key": k} for w, k in keys],
            keys=[[w, k] for w, k in keys],
        )
    states = []
    totals: dict[Pair, int] = {}
    for batch, read in enumerate(reads):
        history.append(1, "spark", "checkpoint.batch", batch=batch, files=[f"f{n}" for n in read])
        for number in read:
            for key in files[number]:
                totals[key] = totals.get(key, 0) + 1
        states.append(dict(totals))
    return history, states


def _store(history: History, states: list[dict[Pair, int]]) -> None:
    for batch, state in enumerate(states):
        for key, count in sorted(state.items()):
            history.append(2, "spark", "state.row", batch=batch, key=list(key), count=count)


@given(FILES, st.booleans(), st.data())
def test_a_store_that_folds_its_inputs_holds(
    files: list[list[Pair]], declared: bool, data: st.DataObject
) -> None:
    # A file may be read by two batches (a repeated offset): the store counts it twice.
    reads = data.draw(
        st.lists(
            st.lists(st.integers(0, len(files) - 1), min_size=1, max_size=2), min_size=1, max_size=3
        )
    )
    history, states = _replayed(files, reads, declared)
    _store(history, states)
    assert state_matches_inputs()(history).status == "ok"


@given(FILES, st.data())
def test_a_wrong_stored_count_is_caught_at_its_row(
    files: list[list[Pair]], data: st.DataObject
) -> None:
    history, states = _replayed(files, [list(range(len(files)))])
    row = data.draw(st.sampled_from(sorted(states[0])))
    truth = states[0][row]
    states[0][row] += data.draw(st.sampled_from([-1, 1]))
    _store(history, states)
    verdict = state_matches_inputs("rep")(history)
    assert verdict.status == "violated" and verdict.checker == "rep"
    bad = next(op for op in history.of_kind("state.row") if tuple(op.get("key")) == row)
    assert verdict.op_index == bad.index  # the only row that is wrong
    assert verdict.message == (
        f"after batch 0 the store holds count {states[0][row]} for {row[0]} {row[1]}; "
        f"the inputs read so far give {truth}"
    )


@given(FILES, st.booleans(), st.data())
def test_a_lost_row_is_caught_unless_emitted_before(
    files: list[list[Pair]], declared: bool, data: st.DataObject
) -> None:
    history, states = _replayed(files, [list(range(len(files)))], declared)
    row = data.draw(st.sampled_from(sorted(states[0])))
    count = states[0].pop(row)
    emitted_in = data.draw(st.sampled_from([None, 0, 1]))
    states[0].setdefault(("other", "z"), 0)  # the store is read (holds something) for batch 0
    _store(history, states)
    if emitted_in is not None:
        _sink(history, 3, emitted_in, {"window": row[0], "key": row[1], "count": count})
    history.append(9, "kernel", "run.end", reason="finished")
    verdict = state_matches_inputs()(history)
    if emitted_in == 0:  # emitted by this batch: gone from the store legitimately
        assert verdict.status == "ok"
    else:
        assert verdict.status == "violated" and verdict.op_index == len(history) - 1
        assert verdict.message == (
            f"after batch 0 {row[0]} {row[1]} ({count} records read) is neither "
            "in the store nor emitted"
        )


def test_no_state_is_unknown_and_batches_without_state_are_skipped() -> None:
    history, _states = _replayed([[("w", "a")]], [[0], [0]])
    assert state_matches_inputs()(history) == unknown("replay-equivalence", "no state was read")
    history.append(2, "spark", "state.row", batch=1, key=["w", "a"], count=2)  # batch 0 unread
    assert state_matches_inputs()(history).status == "ok"
    history.append(2, "spark", "state.row", batch=3, key=["w", "a"], count=2)  # past the batches
    assert state_matches_inputs()(history).status == "ok"
    history.append(2, "spark", "state.row", batch=4, key=["w", "a"], count=3)
    assert state_matches_inputs()(history).op_index == len(history) - 1


# -- a declared key other than the default --------------------------------------------------
ID_ROWS = st.lists(
    st.tuples(st.integers(0, 4), st.sampled_from("wx"), st.sampled_from("ab")), max_size=8
)


@given(ID_ROWS)
def test_a_declared_key_is_the_identity_of_a_row(rows: list[tuple[int, str, str]]) -> None:
    """Under ``key=["id"]`` a row repeats exactly when its id does, whatever its window and key."""
    history = _history(True, key=["id"])
    seen: dict[int, int] = {}
    repeat: tuple[int, int, int] | None = None  # (op index, first op index, batch)
    for batch, (ident, window, key) in enumerate(rows):
        index = _sink(history, batch, batch, {"id": ident, "window": window, "key": key})
        if ident in seen and repeat is None:
            repeat = (index, seen[ident], batch)
        seen.setdefault(ident, index)
    verdict = no_duplicate_emission()(history)
    if repeat is None:
        assert verdict.status == "ok"
    else:
        index, first, batch = repeat
        ident = rows[batch][0]
        assert verdict.op_index == index and verdict.message == (
            f"id={ident} emitted again in batch {batch} (first at op #{first}): a replayed batch"
        )


def test_a_declared_key_is_honoured_by_the_drain_and_state_checks() -> None:
    history = _history(True, key=["id"])
    history.append(
        0,
        "driver",
        "input.file",
        file="f0",
        records=[{"id": 1}, {"id": 1}, {"id": 2}],
        keys=[["1"], ["1"], ["2"]],
    )
    history.append(0, "driver", "drain.request", procedure="stop")
    for ident, total in ((1, 2), (2, 1), (3, 0)):
        history.append(0, "reference", "expect.row", row={"id": ident, "total": total})
    history.append(1, "spark", "checkpoint.batch", batch=0, files=["f0"])
    history.append(1, "spark", "state.row", batch=0, key=["1"], count=2)
    # id 2 left the store because batch 0 emitted it; the window field is no part of the key,
    # and a key is matched by its text ("2" is id 2), not compared as a value.
    _sink(history, 2, 0, {"id": "2", "total": 1, "window": "w"})
    _sink(history, 2, 0, {"id": 1, "total": 2, "window": "w"})
    assert state_matches_inputs()(history).status == "ok"
    assert no_duplicate_emission()(history).status == "ok"  # same window, different ids
    verdict = drain_emits_every_window()(history)
    assert verdict.message.endswith(
        "1 of 3 rows expected from the input before the drain were never emitted: id=3"
    )
    _sink(history, 3, 1, {"id": 3, "total": 1, "window": "x"})
    assert drain_emits_every_window()(history).message == (
        "id=3 emitted total=1, but the reference gives 0"
    )
    _sink(history, 3, 1, {"id": 1, "total": 2, "window": "x"})
    assert no_duplicate_emission()(history).message == (
        f"id=1 emitted again in batch 1 (first at op #{len(history) - 3}): a replayed batch"
    )


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

    verdict = CheckerResult("a", "ok")
    assert (verdict.op_index, verdict.message) == (None, "")
    assert ok("a") == verdict and ok("a").message == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.status = "violated"  # type: ignore[misc]
    assert {verdict: 1}[CheckerResult("a", "ok")] == 1  # hashable, equal by value
    with pytest.raises(ValueError, match=r"^a violation must say why(\n|$)"):
        violated("a", 1, "")
    assert unknown("a", "?") == CheckerResult(
        checker="a", status="unknown", op_index=None, message="?"
    )


def test_verdicts_serialise_and_checkers_are_named() -> None:
    assert violated("a", 3, "why").to_json() == {
        "checker": "a",
        "status": "violated",
        "op_index": 3,
        "message": "why",
    }
    assert ok("a", "fine") == CheckerResult(checker="a", status="ok", op_index=None, message="fine")

    @checker("named")
    def always(history: History) -> CheckerResult:
        """Doc."""
        return ok("named")

    assert (
        checker_name(always) == "named" and always.__name__ == "always" and always.__doc__ == "Doc."
    )
    assert run_checkers(History(), [always, always]) == [ok("named"), ok("named")]

    def plain(history: History) -> CheckerResult:
        return ok("plain")

    assert checker_name(plain) == "plain"

    @checker("liar")
    def liar(history: History) -> CheckerResult:
        return ok("someone-else")

    try:
        liar(History())
    except TypeError as exc:
        assert str(exc).splitlines()[0] == f"checker liar returned {ok('someone-else')!r}"
    else:
        raise AssertionError("a checker returning another's verdict must be refused")


@settings(max_examples=20)
@given(st.lists(st.sampled_from(["quiescent", "finished", "steps", "time", None]), max_size=3))
def test_quiescent_reads_the_last_run_end(reasons: list[str | None]) -> None:
    history = History()
    for reason in reasons:
        history.append(0, "kernel", "run.end", reason=reason)
    assert quiescent(history) == (bool(reasons) and reasons[-1] in ("quiescent", "finished"))


def test_replay_equivalence_counts_unread_keys_as_zero_and_unknown_files_as_empty() -> None:
    history, _ = _replayed([[("w", "a")]], [[0]])
    history.append(1, "spark", "checkpoint.batch", batch=1, files=["f0", "f9"])  # f9: no such op
    history.append(2, "spark", "state.row", batch=1, key=["w", "a"], count=2)
    assert state_matches_inputs()(history).status == "ok"  # f9 adds nothing
    history.append(2, "spark", "state.row", batch=1, key=["w", "z"], count=1)  # never read
    verdict = state_matches_inputs()(history)
    assert verdict.message == (
        "after batch 1 the store holds count 1 for w z; the inputs read so far give 0"
    )


def test_a_row_counts_as_emitted_from_its_first_emission_on() -> None:
    history, states = _replayed([[("w", "a")], [("w", "b")]], [[0], [1], [1]])
    for state in states:
        state.pop(("w", "a"))  # gone from the store after batch 0 ...
    _store(history, states)
    _sink(history, 3, 0, {"window": "w", "key": "a", "count": 1})  # ... emitted in batch 0
    _sink(history, 3, 2, {"window": "w", "key": "a", "count": 1})  # ... and again in batch 2
    assert state_matches_inputs()(history).status == "ok"


def test_the_dataflow_checkers_are_named_by_default_as_the_catalogue_lists_them() -> None:
    assert drain_emits_every_window()(History()) == ok("drain-completeness")
    assert state_matches_inputs()(History()).checker == "replay-equivalence"


def test_an_op_without_a_row_object_has_an_empty_row() -> None:
    from raceproof.sim.dataflow import row_of

    history = History()
    for row in (None, "text", ["pairs"], {"k": 1}):
        history.append(0, "spark", "sink.row", row=row)
    assert [row_of(op) for op in history] == [{}, {}, {}, {"k": 1}]
