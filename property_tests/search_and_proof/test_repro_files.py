"""Counterexample files (``sim/repro.py``) written and read directly, field by field.

The command-line tests reach these functions through whole searches; here a
small counterexample is built by hand, saved and loaded back, and every check
``load`` makes is hit on its own, at its boundary (a value equal to its option
count, two options, a bool where a count belongs, a file one byte too big), with
the exact message a user reads.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim.choices import Choice, encode_blob
from raceproof.sim.history import History
from raceproof.sim.repro import (
    FORMAT,
    FORMAT_VERSION,
    MAX_FILE_BYTES,
    Counterexample,
    CounterexampleError,
    load,
    save,
    write_atomically,
)


def _example(choices: list[Choice]) -> Counterexample:
    history = History()
    history.append(0, "a", "write", value=1)
    history.append(3, "b", "read", value=None)
    return Counterexample(
        scenario="lost-update",
        variant="buggy",
        config={"clients": 2},
        choices=choices,
        trace_hash=history.trace_hash(),
        verdict={"status": "violated", "checker": "x"},
        history=history,
        tool_version="0.1.0",
        git_commit="abc",
        strategy="random",
    )


CHOICES = st.lists(
    st.integers(2, 5).flatmap(
        lambda n: st.builds(
            Choice, st.sampled_from(["sched", "fault.x"]), st.just(n), st.integers(0, n - 1)
        )
    ),
    max_size=6,
)


@given(CHOICES)
def test_a_saved_counterexample_loads_back_the_same(choices: list[Choice]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "two" / "deep" / "cx.json"
        example = _example(choices)
        save(path, example)
        assert load(path).to_json() == example.to_json()
        assert [p.name for p in path.parent.iterdir()] == ["cx.json"]  # no temporary left
        raw = json.loads(path.read_text())
        assert list(raw) == sorted(raw)  # keys sorted: a stable, diffable file
        assert raw["format"] == FORMAT and raw["format_version"] == FORMAT_VERSION
        assert raw["deviations"] == sum(1 for c in choices if c.value)
        assert raw["blob"] == encode_blob([c.value for c in choices]) == example.blob
        assert raw["choices"] == [[c.label, c.n, c.value] for c in choices]
        assert example.values == [c.value for c in choices]
        assert raw["timeline"][1] == {
            "index": 1,
            "time_ms": 3,
            "actor": "b",
            "kind": "read",
            "fields": {"value": None},
        }
        assert path.read_text().endswith("}\n") and '\n "blob"' in path.read_text()


def test_a_written_file_gets_the_mode_of_any_new_file(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_atomically(tmp_path / "f.json", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "f.json").stat().st_mode) == 0o644
    assert (tmp_path / "f.json").read_text() == "x"


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        write_atomically(tmp_path / "f.json", 5)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def _written(tmp_path: Path, edit: Any) -> Path:
    raw = _example([Choice("sched", 3, 2), Choice("fault.x", 2, 0)]).to_json()
    edit(raw)
    path = tmp_path / "cx.json"
    path.write_text(json.dumps(raw))
    return path


def _error(tmp_path: Path, edit: Any) -> str:
    with pytest.raises(CounterexampleError) as caught:
        load(_written(tmp_path, edit))
    return str(caught.value).removeprefix(f"{tmp_path / 'cx.json'}: ")


FIELDS = {
    "scenario": str,
    "variant": str,
    "config": dict,
    "verdict": dict,
    "tool_version": str,
    "git_commit": str,
    "strategy": str,
    "trace_hash": str,
    "blob": str,
    "choices": list,
    "timeline": list,
    "format_version": int,
}


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_each_field_is_required_and_typed(tmp_path: Path, name: str) -> None:
    assert _error(tmp_path, lambda raw: raw.pop(name)) == f"missing field {name!r}"
    wrong = True if FIELDS[name] is int else 7
    assert _error(tmp_path, lambda raw: raw.update({name: wrong})) == (
        f"field {name!r} has the wrong type ({type(wrong).__name__})"
    )


def test_the_file_itself_is_checked(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    with pytest.raises(CounterexampleError, match=r"none\.json: no such file$"):
        load(missing)
    with pytest.raises(CounterexampleError, match=r": not a regular file$"):
        load(tmp_path)
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(CounterexampleError) as caught:
        load(big)
    assert str(caught.value) == (
        f"{big}: {MAX_FILE_BYTES + 1} bytes, more than raceproof reads from one file "
        f"({MAX_FILE_BYTES} bytes at most)"
    )
    with big.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES)  # exactly the limit is read (and is not JSON)
    with pytest.raises(CounterexampleError, match="not valid JSON"):
        load(big)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{")
    with pytest.raises(CounterexampleError, match=r"bin\.json: cannot read it \("):
        load(binary)
    with pytest.raises(
        CounterexampleError, match=r"bin\.json/x: cannot read it \(Not a directory\)$"
    ):
        load(binary / "x")  # its stat fails: a file is not a folder


def test_the_json_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "cx.json"
    path.write_text('{"format": ')
    with pytest.raises(CounterexampleError) as caught:
        load(path)
    assert str(caught.value) == (
        f"{path}: not valid JSON (Expecting value at line 1); truncated or corrupt?"
    )
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CounterexampleError, match=r": (JSON nested too deeply|not a raceproof)"):
        load(path)
    for text in ("[]", '{"format": "other"}', "{}"):
        path.write_text(text)
        with pytest.raises(CounterexampleError) as caught:
            load(path)
        assert str(caught.value) == f"{path}: not a raceproof counterexample file"


def test_the_version_is_checked(tmp_path: Path) -> None:
    assert _error(tmp_path, lambda raw: raw.update(format_version=2)) == (
        f"format version 2, this raceproof reads version {FORMAT_VERSION}"
    )


@pytest.mark.parametrize(
    "choice",
    [
        ["sched", 3, 3],  # a value equal to its option count
        ["sched", 3, -1],
        ["sched", 1, 0],  # fewer than two options
        ["sched", True, 0],
        ["sched", 3, False],
        [5, 3, 1],
        ["sched", 3],
        ["sched", 3, 1, 0],
        ["sched", 2.5, 0],  # a float option count
        ["x" * 100, 3, 5],  # a long one is cut at 60 characters
        "sched",
    ],
)
def test_a_malformed_choice_is_named(tmp_path: Path, choice: object) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["choices"][1] = choice

    assert _error(tmp_path, edit) == (
        "choice #1 is malformed (want [label, options >= 2, value]): " + repr(choice)[:60]
    )


def test_the_smallest_choices_are_accepted(tmp_path: Path) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["choices"] = [["a", 2, 1], ["b", 2, 0]]
        raw["blob"] = "2:0=1"

    assert load(_written(tmp_path, edit)).values == [1, 0]


def test_the_blob_must_decode_and_match(tmp_path: Path) -> None:
    assert _error(tmp_path, lambda raw: raw.update(blob="2:0=1")) == (
        "blob '2:0=1' does not match the choices"
    )
    long = "100:" + ",".join(f"{i}=1" for i in range(30))  # decodes, does not match
    assert _error(tmp_path, lambda raw: raw.update(blob=long)) == (
        f"blob {long[:60]!r} does not match the choices"
    )
    message = _error(tmp_path, lambda raw: raw.update(blob="nonsense"))
    assert "nonsense" in message and not message.startswith("blob")


def test_the_timeline_must_hash_to_its_trace_hash(tmp_path: Path) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["timeline"][0]["fields"]["value"] = 2

    assert _error(tmp_path, edit) == "the timeline does not hash to its trace_hash (edited?)"

    def bad(raw: dict[str, Any]) -> None:
        raw["timeline"][0] = {"index": 0}

    assert _error(tmp_path, bad).startswith("timeline is malformed (")
