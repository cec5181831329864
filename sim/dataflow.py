"""Checkers for dataflows that aggregate records into windows: simulated or real (Spark).

Ops read:
- ``input.record``: ``key``, ``window`` (the window the record falls in),
  ``sentinel`` (true for the drain procedure's watermark-advancing event);
- ``sink.row``: ``batch``, ``key``, ``window``, ``count`` (one emitted row);
- ``drain.request``: the moment a drain (stop with everything emitted) began.

One copy serves the models and the real Spark runs.
"""

from __future__ import annotations

from raceproof.sim.checkers import Checker, Verdict, checker, ok, unknown, violated
from raceproof.sim.history import History


def no_duplicate_emission(name: str = "no-duplicate-emission") -> Checker:
    """No (window, key) row is emitted twice (a sink that does not deduplicate sees it)."""

    @checker(name)
    def check(history: History) -> Verdict:
        seen: dict[tuple[str, str], int] = {}
        for op in history.of_kind("sink.row"):
            row = (str(op.get("window")), str(op.get("key")))
            if row in seen:
                return violated(name, op.index, f"window {row[0]} key {row[1]} emitted again in batch "
                                f"{op.get('batch')} (first at op #{seen[row]}): a replayed batch")  # fmt: skip
            seen[row] = op.index
        return ok(name)

    return check


def drain_emits_every_window(name: str = "drain-completeness") -> Checker:
    """After a drain, every window with input that arrived before it was emitted, with its full count."""

    @checker(name)
    def check(history: History) -> Verdict:
        requests = history.of_kind("drain.request")
        if not requests:
            return ok(name)
        drain_at = requests[0].index
        expected: dict[tuple[str, str], int] = {}
        for op in history.ops[:drain_at]:
            if op.kind == "input.record" and not op.get("sentinel"):
                row = (str(op.get("window")), str(op.get("key")))
                expected[row] = expected.get(row, 0) + 1
        emitted: dict[tuple[str, str], int] = {}
        for op in history.of_kind("sink.row"):
            emitted[(str(op.get("window")), str(op.get("key")))] = int(op.get("count"))
        missing = sorted(row for row in expected if row not in emitted)
        if missing:
            shown = ", ".join(f"{w} key {k}" for w, k in missing[:6])
            return violated(name, len(history) - 1, f"{len(missing)} windows with input before the drain "
                            f"were never emitted: {shown}")  # fmt: skip
        wrong = sorted(row for row, count in expected.items() if emitted[row] != count)
        if wrong:
            w, k = wrong[0]
            return violated(name, len(history) - 1, f"window {w} key {k} emitted count {emitted[(w, k)]}, "
                            f"but {expected[(w, k)]} records fell in it")  # fmt: skip
        return ok(name)

    return check


def state_matches_inputs(name: str = "replay-equivalence") -> Checker:
    """The state after each batch equals the fold of the inputs that batch and earlier ones read.

    Reads ``input.file`` (``file``, ``records``: [key, window] pairs),
    ``checkpoint.batch`` (``batch``, ``files`` it read) and ``state.row``
    (``batch``, ``window``, ``key``, ``count``: the store after that batch).
    Every stored count must equal the recomputed one, and every recomputed
    (window, key) must be in the store or already emitted by the sink.
    """

    @checker(name)
    def check(history: History) -> Verdict:
        records_of = {
            str(op.get("file")): op.get("records") or [] for op in history.of_kind("input.file")
        }
        files_of = {
            int(op.get("batch")): op.get("files") or []
            for op in history.of_kind("checkpoint.batch")
        }
        state: dict[int, dict[tuple[str, str], tuple[int, int]]] = {}
        for op in history.of_kind("state.row"):
            state.setdefault(int(op.get("batch")), {})[
                (str(op.get("window")), str(op.get("key")))
            ] = (int(op.get("count")), op.index)
        emitted_at: dict[tuple[str, str], int] = {}
        for op in history.of_kind("sink.row"):
            row = (str(op.get("window")), str(op.get("key")))
            emitted_at[row] = min(emitted_at.get(row, 1 << 60), int(op.get("batch")))
        if not state:
            return unknown(name, "no state was read")
        expected: dict[tuple[str, str], int] = {}
        for batch in range(max(max(files_of, default=-1), max(state)) + 1):
            for file in files_of.get(batch, []):
                for key, window in records_of.get(str(file), []):
                    expected[(str(window), str(key))] = expected.get((str(window), str(key)), 0) + 1
            stored = state.get(batch)
            if stored is None:
                continue
            for (window, key), (count, index) in sorted(stored.items()):
                if expected.get((window, key), 0) != count:
                    return violated(name, index, f"after batch {batch} the store holds count {count} for "
                                    f"window {window} key {key}; the inputs read so far give "
                                    f"{expected.get((window, key), 0)}")  # fmt: skip
            for row, count in sorted(expected.items()):
                if row not in stored and emitted_at.get(row, 1 << 60) > batch:
                    return violated(name, len(history) - 1, f"after batch {batch} window {row[0]} key "
                                    f"{row[1]} ({count} records read) is neither in the store nor emitted")  # fmt: skip
        return ok(name)

    return check
