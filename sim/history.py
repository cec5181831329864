"""History: the one currency between simulation, real runs, checkers and reports.

An op is (index, time_ms, actor, kind, fields). A history is append-only and
is written as canonical JSON Lines (sorted keys, no spaces, UTF-8); the SHA-256
of those bytes is the run's trace hash. Nothing here knows about SimPy: the
real ZooKeeper and Spark runs produce histories of the very same shape.

No plain ``assert``: time going backwards or off integers is a ``KernelError``;
a model's non-JSON field is a ``TypeError``/``ValueError``, and ops out of order
(a file read back) a ``ValueError``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from raceproof.sim import user_files
from raceproof.sim.errors import KernelError

JSONValue = Any


def canonical_json(value: JSONValue) -> str:
    """The one serialisation used for hashing: sorted keys, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_SCALARS = frozenset({str, int, bool, type(None)})  # exact types: no need to look further


_IMMUTABLE = _SCALARS | {float}


def copy_json(value: JSONValue) -> JSONValue:
    """A deep copy of a JSON-like value: ``copy.deepcopy``'s result, without its memo.

    Scalars are shared (they are immutable), dicts and lists are copied level by
    level; anything else (a tuple, bytes, a user's object) goes to ``deepcopy``.
    The store copies every value in and out with it: a model's state is mostly
    small dicts of scalars, which ``deepcopy`` copies at several times the cost.
    """
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:  # a scalar item is shared without a call: most items are scalars
        immutable = _IMMUTABLE
        return {k: v if type(v) in immutable else copy_json(v) for k, v in value.items()}
    if kind is list:
        return [item if type(item) in _IMMUTABLE else copy_json(item) for item in value]
    return copy.deepcopy(value)


def _check_json_value(value: JSONValue, where: str) -> None:
    if type(value) in _SCALARS or value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not (value == value and value not in (float("inf"), float("-inf"))):
            raise ValueError(f"{where}: floats in a history must be finite")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_json_value(item, where)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: dict keys must be strings, got {key!r}")
            if type(item) not in _SCALARS:  # every op's fields: mostly scalars, checked here
                _check_json_value(item, where)
        return
    raise TypeError(f"{where}: {type(value).__name__} is not a JSON value: {value!r}")


@dataclass(frozen=True)
class Op:
    """One thing that happened: who did what, when, with which data."""

    index: int
    time_ms: int
    actor: str
    kind: str
    fields: Mapping[str, JSONValue]

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "index": self.index,
            "time_ms": self.time_ms,
            "actor": self.actor,
            "kind": self.kind,
            "fields": dict(self.fields),
        }

    def line(self) -> str:
        return canonical_json(self.to_json())

    def get(self, name: str, default: JSONValue = None) -> JSONValue:
        return self.fields.get(name, default)

    def describe(self) -> str:
        """``t=1200ms  leader  write  stream=A status=STOPPED``."""
        body = " ".join(f"{k}={_short(v)}" for k, v in sorted(self.fields.items()))
        return f"#{self.index:<4} t={self.time_ms}ms  {self.actor}  {self.kind}  {body}".rstrip()


_new_op = object.__new__


def _short(value: JSONValue) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= 60 else text[:57] + "..."


class History:
    """An append-only list of ops; the hash of its canonical form is the trace hash."""

    def __init__(self, ops: Iterable[Op] = ()) -> None:
        self.ops: list[Op] = []
        for op in ops:
            if op.index != len(self.ops):  # ops read from a file: bad input, not a kernel bug
                raise ValueError(f"op index {op.index} out of order")
            self.ops.append(op)

    def append(self, time_ms: int, actor: str, kind: str, **fields: JSONValue) -> Op:
        return self.add(time_ms, actor, kind, fields)

    def add(self, time_ms: int, actor: str, kind: str, fields: dict[str, JSONValue]) -> Op:
        """``append`` given its keyword arguments' dict, which the op keeps (``World.log``'s own)."""
        if not (type(time_ms) is int and time_ms >= 0):
            raise KernelError(f"time_ms must be an int, got {time_ms!r}")
        if self.ops and time_ms < self.ops[-1].time_ms:
            raise KernelError("history time went backwards")
        if not (actor and kind):
            raise ValueError("an op needs an actor and a kind")
        for item in fields.values():  # a keyword arguments' dict: the keys are strings already
            if type(item) not in _SCALARS:
                _check_json_value(item, f"op {kind!r}")
        # ``Op(...)`` without the frozen dataclass's one ``object.__setattr__`` per field:
        # the same object, made once per logged op.
        op = _new_op(Op)
        op.__dict__.update(
            index=len(self.ops), time_ms=time_ms, actor=actor, kind=kind, fields=fields
        )
        self.ops.append(op)
        return op

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __getitem__(self, index: int) -> Op:
        return self.ops[index]

    def of_kind(self, *kinds: str) -> list[Op]:
        return [op for op in self.ops if op.kind in kinds]

    def to_jsonl(self) -> str:
        return "".join(op.line() + "\n" for op in self.ops)

    def trace_hash(self) -> str:
        digest = hashlib.sha256()
        for op in self.ops:
            digest.update(op.line().encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()

    @classmethod
    def from_jsonl(cls, text: str) -> History:
        """Parse canonical JSON Lines; ValueError naming the bad line otherwise."""
        ops = []
        for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+0085 etc.
            if not line.strip():
                continue
            try:
                raw = user_files.loads(line, f"line {number}", ValueError)  # depth, numbers
                ops.append(op_from_json(raw))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"history line {number}: {exc}") from None
        return cls(ops)

    def render(self, limit: int | None = None) -> str:
        """A plain-text timeline, one op a line."""
        ops = self.ops if limit is None else self.ops[-limit:]
        return "\n".join(op.describe() for op in ops)


def op_from_json(raw: Mapping[str, JSONValue]) -> Op:
    if not isinstance(raw, Mapping):
        raise TypeError("an op must be a JSON object")
    missing = {"index", "time_ms", "actor", "kind", "fields"} - set(raw)
    if missing:
        raise KeyError(f"op lacks {sorted(missing)}")
    if not isinstance(raw["index"], int) or not isinstance(raw["time_ms"], int):
        raise TypeError("op index and time_ms must be integers")
    if not isinstance(raw["fields"], Mapping):
        raise TypeError("op fields must be an object")
    return Op(
        index=raw["index"],
        time_ms=raw["time_ms"],
        actor=str(raw["actor"]),
        kind=str(raw["kind"]),
        fields=raw["fields"],
    )


def first_divergence(left: History, right: History) -> int | None:
    """Index of the first op that differs (or where one history ends), None if equal."""
    for index in range(min(len(left), len(right))):
        if left.ops[index].line() != right.ops[index].line():
            return index
    if len(left) != len(right):
        return min(len(left), len(right))
    return None
