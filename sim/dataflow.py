"""Checkers for dataflows whose output rows are identified by a declared key: simulated or real (Spark).

Ops read:
- ``pipeline``: ``name``, ``key`` (the names of the fields that identify an
  output row; ``["window", "key"]`` when a history has no such op);
- ``sink.row``: ``batch``, ``row`` (the emitted row's fields), on a real sink
  ``delivery`` (which call of the sink delivered it: a batch id delivered twice
  is a replay);
- ``drain.request``: the moment a drain (stop with everything emitted) began;
- ``expect.row``: ``row``, a row the reference says the inputs written before
  the drain must give (written right after ``drain.request``);
- ``input.file`` (``file``, ``keys``: the state key each of its records is
  counted under), ``checkpoint.batch`` (``batch``, ``files`` it read) and
  ``state.row`` (``batch``, ``key``, ``count``: the store after that batch).

The checkers never call the pipeline: what its reference function said is in
the history, so each checker is a pure function of it. One copy serves the
models and the real Spark runs.
"""

from __future__ import annotations

from typing import Any

from raceproof.sim.checkers import Checker, CheckerResult, checker, ok, unknown, violated
from raceproof.sim.history import History, Op

DEFAULT_KEY = ("window", "key")
RowKey = tuple[str, ...]


def key_fields(history: History) -> tuple[str, ...]:
    """The fields that identify an output row, as the history's ``pipeline`` op declares them."""
    declared = history.of_kind("pipeline")
    if not declared:
        return DEFAULT_KEY
    return tuple(str(f) for f in declared[0].get("key") or [])


def row_of(op: Op) -> dict[str, Any]:
    row = op.get("row")
    return dict(row) if isinstance(row, dict) else {}


def row_key(row: dict[str, Any], fields: tuple[str, ...]) -> RowKey:
    return tuple(str(row.get(f)) for f in fields)


def describe(key: RowKey, fields: tuple[str, ...]) -> str:
    if len(fields) != len(key):
        raise ValueError(f"describe: a row key {key} for the fields {fields}")
    return " ".join(f"{field}={key[i]}" for i, field in enumerate(fields))


def no_duplicate_emission(name: str = "no-duplicate-emission") -> Checker:
    """No output row (by the pipeline's key) is emitted twice: a sink that does not deduplicate sees it."""

    @checker(name)
    def check(history: History) -> CheckerResult:
        fields = key_fields(history)
        seen: dict[RowKey, Op] = {}
        for op in history.of_kind("sink.row"):
            key = row_key(row_of(op), fields)
            first = seen.get(key)
            if first is not None:
                why = _why_again(first, op)
                return violated(
                    name,
                    op.index,
                    f"{describe(key, fields)} emitted again in batch "
                    f"{op.get('batch')} (first at op #{first.index}): {why}",
                )
            seen[key] = op
        return ok(name)

    return check


def _why_again(first: Op, again: Op) -> str:
    """Why a key was emitted twice: a replay, or the query's own output within one batch.

    A real sink's row carries ``delivery`` (which call of the sink delivered it): the same
    batch id delivered by two calls is that batch replayed (a retry, a restarted process).
    Without it, the same batch id is taken for one delivery.
    """
    batch = again.get("batch")
    if str(first.get("batch")) != str(batch):
        return "a replayed batch"
    if first.get("delivery") is not None and first.get("delivery") != again.get("delivery"):
        return f"batch {batch} delivered again: a replay of it"
    return "twice within that one batch, no replay"


def drain_emits_every_window(name: str = "drain-completeness") -> Checker:
    """After a drain, every row the reference expects from the inputs before it was emitted, as expected."""

    @checker(name)
    def check(history: History) -> CheckerResult:
        requests = history.of_kind("drain.request")
        if not requests:
            return ok(name)
        fields = key_fields(history)
        expected = {
            row_key(row_of(op), fields): row_of(op)
            for op in history.of_kind("expect.row")
            if op.index > requests[0].index
        }
        emitted: dict[RowKey, dict[str, Any]] = {}
        for op in history.of_kind("sink.row"):
            row = row_of(op)
            emitted[row_key(row, fields)] = row  # the last emission of a key stands
        missing = sorted(key for key in expected if key not in emitted)
        if missing:
            shown = ", ".join(describe(key, fields) for key in missing[:6])
            return violated(
                name,
                len(history) - 1,
                f"{len(missing)} of {len(expected)} rows expected "
                f"from the input before the drain were never emitted: {shown}",
            )
        for key, row in sorted(expected.items()):
            got = emitted[key]
            wrong = sorted(f for f in row if f not in fields and got.get(f) != row[f])
            if wrong:
                f = wrong[0]
                return violated(
                    name,
                    len(history) - 1,
                    f"{describe(key, fields)} emitted {f}="
                    f"{got.get(f)}, but the reference gives {row[f]}",
                )
        return ok(name)

    return check


def state_matches_inputs(name: str = "replay-equivalence") -> Checker:
    """The state after each batch equals the fold of the inputs that batch and earlier ones read.

    Every stored count must equal the number of records read so far under its
    state key, and every state key with records read must be in the store or
    already emitted by the sink (as an output row with the same key).
    """

    @checker(name)
    def check(history: History) -> CheckerResult:
        fields = key_fields(history)
        keys_of = {
            str(op.get("file")): [tuple(str(p) for p in k) for k in op.get("keys") or []]
            for op in history.of_kind("input.file")
        }
        files_of = {
            int(op.get("batch")): op.get("files") or []
            for op in history.of_kind("checkpoint.batch")
        }
        state: dict[int, dict[RowKey, tuple[int, int]]] = {}
        for op in history.of_kind("state.row"):
            key = tuple(str(p) for p in op.get("key") or [])
            state.setdefault(int(op.get("batch")), {})[key] = (int(op.get("count")), op.index)
        emitted_at: dict[RowKey, int] = {}
        for op in history.of_kind("sink.row"):
            key = row_key(row_of(op), fields)
            batch = int(op.get("batch"))
            emitted_at[key] = min(emitted_at.get(key, batch), batch)  # its first emission
        if not state:
            return unknown(name, "no state was read")
        expected: dict[RowKey, int] = {}
        for batch in range(max([*files_of, *state]) + 1):
            for file in files_of.get(batch, []):
                for key in keys_of.get(str(file), []):
                    expected[key] = expected.get(key, 0) + 1
            stored = state.get(batch)
            if stored is None:
                continue
            for key, (count, index) in sorted(stored.items()):
                if expected.get(key, 0) != count:
                    return violated(
                        name,
                        index,
                        f"after batch {batch} the store holds count {count} for "
                        f"{' '.join(key)}; the inputs read so far give "
                        f"{expected.get(key, 0)}",
                    )
            for key, count in sorted(expected.items()):
                emitted = emitted_at.get(key)
                if key not in stored and (emitted is None or emitted > batch):
                    return violated(
                        name,
                        len(history) - 1,
                        f"after batch {batch} {' '.join(key)} "
                        f"({count} records read) is neither in the store nor emitted",
                    )
        return ok(name)

    return check
