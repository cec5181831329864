"""History: canonical JSON Lines, the trace hash, parsing, first divergence, checkers."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim import (
    CheckerResult,
    History,
    checker,
    first_divergence,
    first_violation,
    ok,
    violated,
)
from raceproof.sim.checkers import _named
from raceproof.sim.errors import KernelError
from raceproof.sim.history import Op, canonical_json, op_from_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def test_canonical_form_and_trace_hash() -> None:
    history = History()
    history.append(0, "leader", "write", stream="A", status="STOPPED")
    history.append(5, "host2", "resume", stream="A")
    text = history.to_jsonl()
    assert text == (
        '{"actor":"leader","fields":{"status":"STOPPED","stream":"A"},"index":0,"kind":"write","time_ms":0}\n'
        '{"actor":"host2","fields":{"stream":"A"},"index":1,"kind":"resume","time_ms":5}\n'
    )
    assert history.trace_hash() == hashlib.sha256(text.encode()).hexdigest()


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b"]), json_values), max_size=8))
def test_jsonl_round_trips_to_the_same_hash(rows: list[tuple[int, str, object]]) -> None:
    history = History()
    time_ms = 0
    for step, actor, value in rows:
        time_ms += step
        history.append(time_ms, actor, "op", value=value)
    again = History.from_jsonl(history.to_jsonl())
    assert again.to_jsonl() == history.to_jsonl()
    assert again.trace_hash() == history.trace_hash()


def test_history_rejects_what_is_not_json_or_goes_back_in_time() -> None:
    history = History()
    with pytest.raises(TypeError, match="not a JSON value"):
        history.append(0, "a", "op", value={1, 2})
    with pytest.raises(KernelError, match="must be an int"):
        history.append(1.5, "a", "op")  # type: ignore[arg-type]
    history.append(10, "a", "op")
    with pytest.raises(KernelError, match="went backwards"):
        history.append(9, "a", "op")


def test_from_jsonl_names_the_bad_line() -> None:
    with pytest.raises(ValueError, match="history line 2"):
        History.from_jsonl(
            '{"index":0,"time_ms":0,"actor":"a","kind":"k","fields":{}}\n{"index":1\n'
        )


def test_first_divergence() -> None:
    left, right = History(), History()
    for h in (left, right):
        h.append(0, "a", "x")
        h.append(1, "a", "y", v=1)
    assert first_divergence(left, right) is None
    right.append(2, "a", "z")
    assert first_divergence(left, right) == 2
    left.append(2, "a", "z", extra=True)
    assert first_divergence(left, right) == 2


def test_checkers_name_themselves_and_the_earliest_violation_wins() -> None:
    @checker("late")
    def late(history: History) -> CheckerResult:
        return violated("late", 7, "late problem")

    @checker("early")
    def early(history: History) -> CheckerResult:
        return violated("early", 2, "early problem")

    @checker("fine")
    def fine(history: History) -> CheckerResult:
        return ok("fine")

    verdicts = [late(History()), fine(History()), early(History())]
    found = first_violation(verdicts)
    assert found is not None and found.checker == "early"

    @checker("liar")
    def liar(history: History) -> CheckerResult:
        return ok("someone-else")

    with pytest.raises(TypeError, match="checker liar returned"):
        liar(History())


def test_files_written_atomically_get_the_mode_of_any_new_file(tmp_path: Path) -> None:
    import os

    from raceproof.sim.repro import write_atomically

    umask = os.umask(0o022)
    try:
        target = tmp_path / "out" / "counterexample.json"
        write_atomically(target, "{}\n")
        assert target.read_text(encoding="utf-8") == "{}\n"
        assert target.stat().st_mode & 0o777 == 0o644
        assert [p.name for p in target.parent.iterdir()] == ["counterexample.json"]
    finally:
        os.umask(umask)


# -- what an op may hold, and how it reads -------------------------------------------------
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_only_finite_floats_go_into_a_history(value: float) -> None:
    history = History()
    if value != value or value in (float("inf"), float("-inf")):
        with pytest.raises(ValueError, match=r"^op 'op': floats in a history must be finite"):
            history.append(0, "a", "op", nested=[{"v": value}])
        assert len(history) == 0
    else:
        history.append(0, "a", "op", nested=[{"v": value}], pair=(1, value))
        assert history[0].get("nested") == [{"v": value}]


def test_what_is_not_json_is_named_wherever_it_is_nested() -> None:
    history = History()
    with pytest.raises(TypeError, match=r"^op 'w': dict keys must be strings, got 1"):
        history.append(0, "a", "w", d={"ok": {1: "x"}})
    with pytest.raises(TypeError, match=r"^op 'w': set is not a JSON value: \{3\}"):
        history.append(0, "a", "w", items=[1, (2, {3})])
    with pytest.raises(ValueError, match="needs an actor and a kind"):
        history.append(0, "", "w")
    with pytest.raises(ValueError, match="needs an actor and a kind"):
        history.append(0, "a", "")
    with pytest.raises(KernelError, match="must be an int"):
        history.append(-1, "a", "w")
    assert len(history) == 0
    history.append(0, "a", "w", flag=True, none=None, text="t", number=-3)
    with pytest.raises(ValueError, match="op index 1 out of order"):
        History(
            [
                history[0],
                Op(index=1, time_ms=0, actor="a", kind="w", fields={}),
                Op(index=1, time_ms=0, actor="a", kind="w", fields={}),
            ]
        )


def test_an_op_reads_as_one_line_with_long_values_cut() -> None:
    history = History()
    history.append(1200, "leader", "write", stream="A", status="STOPPED")
    history.append(1200, "leader", "end")
    history.append(1300, "host", "put", value="x" * 60, data=["y" * 70])
    assert history[0].describe() == "#0    t=1200ms  leader  write  status=STOPPED stream=A"
    assert history[1].describe() == "#1    t=1200ms  leader  end"  # no trailing blanks
    long_line = history[2].describe()
    assert f"value={'x' * 60}" in long_line  # 60 characters: kept whole
    assert 'data=["' + "y" * 55 + "..." in long_line and "y" * 56 not in long_line  # 57 + ...
    assert history.render() == "\n".join(op.describe() for op in history)
    assert history.render(limit=2) == "\n".join(op.describe() for op in history.ops[1:])
    assert history.render(limit=1) == history[2].describe()
    assert [op.index for op in history.of_kind("write", "put")] == [0, 2]
    assert history[0].get("missing", "default") == "default"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "an op must be a JSON object"),
        ('{"index": 0, "time_ms": 0, "kind": "k"}', "op lacks \\['actor', 'fields'\\]"),
        (
            '{"index": "0", "time_ms": 0, "actor": "a", "kind": "k", "fields": {}}',
            "op index and time_ms must be integers",
        ),
        (
            '{"index": 0, "time_ms": 0.5, "actor": "a", "kind": "k", "fields": {}}',
            "op index and time_ms must be integers",
        ),
        (
            '{"index": 0, "time_ms": 0, "actor": "a", "kind": "k", "fields": []}',
            "op fields must be an object",
        ),
        ("{not json", "Expecting property name"),
    ],
)
def test_a_bad_history_line_is_named_with_what_is_wrong(line: str, message: str) -> None:
    good = '{"index":0,"time_ms":0,"actor":"a","kind":"k","fields":{}}'
    with pytest.raises(ValueError, match=f"^history line 3: .*{message}"):
        History.from_jsonl(f"{good}\n\n{line}\n")
    parsed = History.from_jsonl(f"{good}\n\n")
    assert len(parsed) == 1 and parsed[0] == Op(index=0, time_ms=0, actor="a", kind="k", fields={})


def test_an_op_read_from_a_file_is_checked_field_by_field() -> None:
    good = {"index": 0, "time_ms": 5, "actor": "a", "kind": "k", "fields": {"x": 1}}
    assert (
        op_from_json(good).line()
        == Op(index=0, time_ms=5, actor="a", kind="k", fields={"x": 1}).line()
    )
    cases = [
        ([], TypeError, r"^an op must be a JSON object$"),
        ({"index": 0}, KeyError, r"op lacks \['actor', 'fields', 'kind', 'time_ms'\]"),
        ({**good, "time_ms": "5"}, TypeError, r"^op index and time_ms must be integers$"),
        ({**good, "fields": [1]}, TypeError, r"^op fields must be an object$"),
    ]
    for raw, error, message in cases:
        with pytest.raises(error, match=message):
            op_from_json(raw)  # type: ignore[arg-type]


def test_a_history_keeps_text_as_written_and_refuses_ops_out_of_order() -> None:
    assert canonical_json({"b": "é", "a": [1]}) == '{"a":[1],"b":"é"}'
    history = History()
    history.append(5, "a", "k")
    with pytest.raises(KernelError, match=r"^history time went backwards"):
        history.append(4, "a", "k")
    with pytest.raises(ValueError, match=r"^an op needs an actor and a kind"):
        history.append(5, "", "k")
    with pytest.raises(ValueError, match=r"^op 'k': floats in a history must be finite"):
        history.append(5, "a", "k", x=float("-inf"))


def test_a_checker_is_named_from_its_function_and_keeps_names_it_was_given() -> None:
    @checker
    def _lost_update_(history: History) -> CheckerResult:
        return violated("lost", 0)

    @checker("outer")
    def delegating(history: History) -> CheckerResult:
        return violated("inner", 0, "found by a checker it calls")

    assert _lost_update_(History()).checker == "lost-update"
    with pytest.raises(TypeError, match=r"^checker outer returned CheckerResult\(checker='inner'"):
        delegating(History())  # a verdict under another checker's name is a bug in the checker
    for bad in ("", 5):
        with pytest.raises(ValueError, match=r"^a checker needs a name"):
            _named(bad)  # type: ignore[arg-type]


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_history_values_of_sixty_one_characters_are_cut() -> None:
    history = History()
    history.append(0, "a", "put", value="z" * 61)
    assert history[0].describe().endswith("value=" + "z" * 57 + "...")
