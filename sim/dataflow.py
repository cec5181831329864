"""Checkers for dataflows that aggregate records into windows: simulated or real (Spark).

Ops read:
- ``input.record``: ``key``, ``window`` (the window the record falls in),
  ``sentinel`` (true for the drain procedure's watermark-advancing event);
- ``sink.row``: ``batch``, ``key``, ``window``, ``count`` (one emitted row);
- ``drain.request``: the moment a drain (stop with everything emitted) began.

One copy serves the models and the real Spark runs.
"""

from __future__ import annotations

from sim.checkers import Checker, Verdict, checker, ok, violated
from sim.history import History


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
