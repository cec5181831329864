"""The coordinator runtime's invariants as pure functions of a history.

Ops read: ``event.poll`` / ``event.done`` (``partition``), ``replay`` and
``revert`` (``partition``, ``batch`` / ``batches``), ``log.append``
(``partition``, ``batch``, ``offset``), ``write.ack`` (``partition``,
``batch``, ``offset``, ``hwm``), ``last-written`` (``partition``, ``offset``).
"""

from __future__ import annotations

from raceproof.sim import CheckerResult, History, checker, ok, violated

IN_FLIGHT, AGREEMENT, ACK, LAST_WRITTEN = (
    "one-event-in-flight",
    "log-matches-state",
    "ack-after-hwm",
    "last-written-increases",
)


@checker(IN_FLIGHT)
def one_event_in_flight(history: History) -> CheckerResult:
    """At most one event per partition is in flight, from poll to done."""
    busy: dict[int, int] = {}
    for op in history.of_kind("event.poll", "event.done"):
        partition = int(op.get("partition"))
        if op.kind == "event.poll":
            if partition in busy:
                return violated(
                    IN_FLIGHT,
                    op.index,
                    f"partition {partition} polled again while the "
                    f"event polled at op #{busy[partition]} is in flight",
                )
            busy[partition] = op.index
        else:
            busy.pop(partition, None)
    return ok(IN_FLIGHT)


@checker(AGREEMENT)
def log_matches_state(history: History) -> CheckerResult:
    """With no event in flight for a partition, its replayed and not reverted batches are its log."""
    state: dict[int, list[str]] = {}
    log: dict[int, list[str]] = {}
    in_flight: set[int] = set()

    def compare(partition: int, index: int) -> CheckerResult | None:
        mine, theirs = state.get(partition, []), log.get(partition, [])
        if mine == theirs:
            return None
        phantom = [b for b in theirs if b not in mine]
        missing = [b for b in mine if b not in theirs]
        if phantom:
            why = f"the log holds {phantom} which the state does not (a phantom record)"
        elif missing:
            why = f"the state holds {missing} which the log does not"
        else:
            why = f"the log's order {theirs} differs from the replay order {mine}"
        return violated(
            AGREEMENT,
            index,
            f"partition {partition}: {why}; replaying the log would not rebuild the state",
        )

    for op in history.ops:
        partition = op.get("partition")
        if op.kind == "event.poll":
            in_flight.add(int(partition))
        elif op.kind == "replay":
            state.setdefault(int(partition), []).append(str(op.get("batch")))
        elif op.kind == "revert":
            reverted = set(op.get("batches") or [])
            state[int(partition)] = [b for b in state.get(int(partition), []) if b not in reverted]
        elif op.kind == "log.append":
            log.setdefault(int(partition), []).append(str(op.get("batch")))
            if int(partition) not in in_flight and (found := compare(int(partition), op.index)):
                return found
        elif op.kind == "event.done":
            in_flight.discard(int(partition))
            if found := compare(int(partition), op.index):
                return found
    return ok(AGREEMENT)


@checker(ACK)
def ack_after_hwm(history: History) -> CheckerResult:
    """A write is acknowledged only when HWM >= its offset + 1, at the offset where its batch is."""
    placed: dict[tuple[int, int], str] = {}
    for op in history.ops:
        if op.kind == "log.append":
            placed[(int(op.get("partition")), int(op.get("offset")))] = str(op.get("batch"))
        elif op.kind == "write.ack":
            partition, offset = int(op.get("partition")), int(op.get("offset"))
            if int(op.get("hwm")) < offset + 1:
                return violated(
                    ACK,
                    op.index,
                    f"{op.get('batch')} acknowledged at offset {offset} "
                    f"before the HWM ({op.get('hwm')}) covered it",
                )
            if placed.get((partition, offset)) != op.get("batch"):
                return violated(
                    ACK,
                    op.index,
                    f"{op.get('batch')} acknowledged at offset {offset} of "
                    f"partition {partition}, where the log holds {placed.get((partition, offset))}",
                )
    return ok(ACK)


@checker(LAST_WRITTEN)
def last_written_increases(history: History) -> CheckerResult:
    """lastWrittenOffset strictly increases per partition."""
    last: dict[int, int] = {}
    for op in history.of_kind("last-written"):
        partition, offset = int(op.get("partition")), int(op.get("offset"))
        if partition in last and offset <= last[partition]:
            return violated(
                LAST_WRITTEN,
                op.index,
                f"partition {partition}: lastWrittenOffset went from {last[partition]} to {offset}",
            )
        last[partition] = offset
    return ok(LAST_WRITTEN)


CHECKERS = (one_event_in_flight, log_matches_state, ack_after_hwm, last_written_increases)
