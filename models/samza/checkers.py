"""SEP-31's invariants as pure functions of a history.

Ops read: ``drain.inject`` (``ssp``, ``marker_offset``), ``process`` (``ssp``,
``offset``, ``seq``), ``drain.notified`` / ``drain.enter`` (``run_id``),
``ssp.drained`` (``producers``, ``expected``), ``commit`` (``mode``,
``draining``), ``task.shutdown`` (``commit_pending``), ``drain.timeout``, and
``final`` (``intermediate_left``, ``source_committed``, ``unfired_pane_seqs``,
``run_id`` of the new deployment).
"""

from __future__ import annotations

from raceproof.sim import CheckerResult, History, checker, ok, unknown, violated

CURRENT_RUN = "run1"
COMPLETE, ISOLATION, AGGREGATION, COMMITS, LIVENESS = (
    "drain-completeness",
    "run-isolation",
    "drain-aggregation",
    "commit-discipline",
    "drain-liveness",
)


@checker(COMPLETE)
def drain_completeness(history: History) -> CheckerResult:
    """Nothing is left for the new deployment: sources processed up to their marker and
    committed past it, nothing after a marker processed, every intermediate partition
    consumed to its end, every window pane fired."""
    finals = history.of_kind("final")
    if not finals:
        return unknown(COMPLETE, "the run ended before the upgrade")
    final = finals[-1]
    left = {
        ssp: seqs for ssp, seqs in sorted((final.get("intermediate_left") or {}).items()) if seqs
    }
    if left:
        count = sum(len(seqs) for seqs in left.values())
        return violated(
            COMPLETE,
            final.index,
            f"{count} intermediate messages left for the new deployment, "
            f"which cannot deserialize them: {left}",
        )
    unfired = final.get("unfired_pane_seqs") or []
    if unfired:
        return violated(
            COMPLETE,
            final.index,
            f"window panes never fired; the aggregates of messages {unfired} are lost",
        )
    markers: dict[str, tuple[int, int]] = {}
    for op in history.of_kind("drain.inject"):
        markers[str(op.get("ssp"))] = (int(op.get("marker_offset")), op.index)
    processed: dict[str, set[int]] = {}
    for op in history.of_kind("process"):
        ssp, offset = str(op.get("ssp")), int(op.get("offset"))
        processed.setdefault(ssp, set()).add(offset)
        marker = markers.get(ssp)
        if marker is not None and offset >= marker[0] and op.index > marker[1]:
            return violated(
                COMPLETE,
                op.index,
                f"{ssp} offset {offset} processed after its drain marker at {marker[0]}",
            )
    committed = final.get("source_committed") or {}
    for ssp, (marker_offset, _) in sorted(markers.items()):
        missing = sorted(set(range(marker_offset)) - processed.get(ssp, set()))
        if missing:
            return violated(
                COMPLETE,
                final.index,
                f"{ssp}: offsets {missing} before the drain marker were never processed",
            )
        if int(committed.get(ssp, 0)) < marker_offset:
            return violated(
                COMPLETE,
                final.index,
                f"{ssp}: last checkpoint {committed.get(ssp)} is before the drain "
                f"marker at {marker_offset}",
            )
    return ok(COMPLETE)


@checker(ISOLATION)
def run_isolation(history: History) -> CheckerResult:
    """Only the current run's notifications and DrainMessages have an effect."""
    for op in history.of_kind("drain.notified", "drain.enter"):
        if op.get("run_id") != CURRENT_RUN:
            return violated(
                ISOLATION,
                op.index,
                f"{op.actor} obeyed a drain of run {op.get('run_id')} while "
                f"{CURRENT_RUN} is running",
            )
    return ok(ISOLATION)


@checker(AGGREGATION)
def drain_aggregation(history: History) -> CheckerResult:
    """An intermediate partition is drained only after DrainMessages from every upstream task."""
    for op in history.of_kind("ssp.drained"):
        expected = op.get("expected")
        producers = op.get("producers") or []
        if expected is not None and len(producers) != int(expected):
            return violated(
                AGGREGATION,
                op.index,
                f"{op.get('ssp')} declared drained after DrainMessages from "
                f"{producers}, but {expected} upstream tasks produce to it",
            )
    return ok(AGGREGATION)


@checker(COMMITS)
def commit_discipline(history: History) -> CheckerResult:
    """No async commit while draining; no task exits with a commit pending."""
    for op in history.of_kind("commit", "task.shutdown"):
        if op.kind == "commit" and op.get("mode") == "async" and op.get("draining"):
            return violated(
                COMMITS, op.index, f"{op.actor} committed asynchronously while draining"
            )
        if op.kind == "task.shutdown" and op.get("commit_pending"):
            return violated(COMMITS, op.index, f"{op.actor} shut down with a commit pending")
    return ok(COMMITS)


@checker(LIVENESS)
def drain_liveness(history: History) -> CheckerResult:
    """The drain finishes within the scenario's bound (hitting it is this checker's violation)."""
    timeouts = history.of_kind("drain.timeout")
    if timeouts:
        op = timeouts[-1]
        return violated(
            LIVENESS,
            op.index,
            f"the drain did not finish within {op.get('after_ms')} ms; "
            f"still running: {op.get('tasks_running')}",
        )
    if history.of_kind("final"):
        return ok(LIVENESS)
    return unknown(LIVENESS, "the run ended before the drain finished or timed out")


CHECKERS = (drain_completeness, run_isolation, drain_aggregation, commit_discipline, drain_liveness)
