"""Counterexample files: everything needed to replay a failure, and nothing half-written.

A counterexample file is one JSON object: format and format version, tool
version, git commit, scenario, variant and its configuration, the recorded
choices (label, option count, value), their blob, the trace hash, the verdict,
and the timeline (the history's ops). Loading validates all of it and raises
``CounterexampleError`` naming what is wrong; writing goes through a temporary
file and a rename, so a reader never sees half a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raceproof.sim.choices import MAX_DRAWS, Choice, decode_blob, deviations, encode_blob
from raceproof.sim.history import History, op_from_json
from raceproof.sim.user_files import (
    MAX_FILE_BYTES,
    MAX_JSON_DEPTH,
    json_depth,
    read_json,
    read_json_lines,
    write_atomically,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "Counterexample",
    "CounterexampleError",
    "json_depth",
    "load",
    "read_json",
    "read_json_lines",
    "save",
    "write_atomically",
]

FORMAT = "raceproof-counterexample"
FORMAT_VERSION = 1


class CounterexampleError(ValueError):
    """A counterexample file that cannot be used; the message says why."""


@dataclass
class Counterexample:
    scenario: str
    variant: str
    config: dict[str, Any]
    choices: list[Choice]
    trace_hash: str
    verdict: dict[str, Any]
    history: History
    tool_version: str
    git_commit: str
    strategy: str

    @property
    def values(self) -> list[int]:
        return [c.value for c in self.choices]

    @property
    def blob(self) -> str:
        return encode_blob(self.values)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "tool_version": self.tool_version,
            "git_commit": self.git_commit,
            "scenario": self.scenario,
            "variant": self.variant,
            "config": self.config,
            "strategy": self.strategy,
            "deviations": deviations(self.values),
            "blob": self.blob,
            "choices": [[c.label, c.n, c.value] for c in self.choices],
            "trace_hash": self.trace_hash,
            "verdict": self.verdict,
            "timeline": [op.to_json() for op in self.history],
        }


def save(path: Path, counterexample: Counterexample) -> None:
    write_atomically(path, json.dumps(counterexample.to_json(), indent=1, sort_keys=True) + "\n")


def _field(raw: dict[str, Any], name: str, kind: type | tuple[type, ...], path: Path) -> Any:
    if name not in raw:
        raise CounterexampleError(f"{path}: missing field {name!r}")
    value = raw[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise CounterexampleError(
            f"{path}: field {name!r} has the wrong type ({type(value).__name__})"
        )
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load(path: Path) -> Counterexample:
    """Read and validate a counterexample file."""
    raw = read_json(path, CounterexampleError)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CounterexampleError(f"{path}: not a raceproof counterexample file")
    version = _field(raw, "format_version", int, path)
    if version != FORMAT_VERSION:
        raise CounterexampleError(
            f"{path}: format version {version}, this raceproof reads version {FORMAT_VERSION}"
        )
    choices_raw = _field(raw, "choices", list, path)
    if len(choices_raw) > MAX_DRAWS:
        raise CounterexampleError(f"{path}: {len(choices_raw)} choices, at most {MAX_DRAWS}")
    choices = []
    for index, item in enumerate(choices_raw):
        if (
            not isinstance(item, list)
            or len(item) != 3
            or not isinstance(item[0], str)
            or not all(_is_count(x) for x in item[1:])
            or not 0 <= item[2] < item[1]
            or item[1] < 2
        ):
            raise CounterexampleError(
                f"{path}: choice #{index} is malformed (want [label, options >= 2, value]): "
                f"{repr(item)[:60]}"
            )
        choices.append(Choice(item[0], item[1], item[2]))
    blob = _field(raw, "blob", str, path)
    try:
        decoded = decode_blob(blob)
    except ValueError as exc:
        raise CounterexampleError(f"{path}: {exc}") from None
    if decoded != [c.value for c in choices]:
        raise CounterexampleError(f"{path}: blob {blob[:60]!r} does not match the choices")
    counted = raw.get("deviations", deviations(decoded))  # a count, the choices' own
    if not _is_count(counted) or counted != deviations(decoded):
        raise CounterexampleError(
            f"{path}: field 'deviations' is {counted!r}, its choices hold {deviations(decoded)}"
        )
    timeline = _field(raw, "timeline", list, path)
    try:
        history = History(op_from_json(op) for op in timeline)
    except (KeyError, TypeError, ValueError, AssertionError, RecursionError) as exc:
        raise CounterexampleError(f"{path}: timeline is malformed ({exc})") from None
    trace_hash = _field(raw, "trace_hash", str, path)
    if history.trace_hash() != trace_hash:
        raise CounterexampleError(f"{path}: the timeline does not hash to its trace_hash (edited?)")
    return Counterexample(
        scenario=_field(raw, "scenario", str, path),
        variant=_field(raw, "variant", str, path),
        config=_field(raw, "config", dict, path),
        choices=choices,
        trace_hash=trace_hash,
        verdict=_field(raw, "verdict", dict, path),
        history=history,
        tool_version=_field(raw, "tool_version", str, path),
        git_commit=_field(raw, "git_commit", str, path),
        strategy=_field(raw, "strategy", str, path),
    )
