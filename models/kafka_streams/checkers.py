"""KAFKA-8187's invariants as pure functions of a history.

Ops read: ``checkpoint.write`` and ``seek`` (``offset``, ``store_from``,
``store_to``: the changelog offsets the store in that directory has applied,
``loaded_generation``: the directory generation the offset came from,
``generation``: the directory's generation at use), ``changelog.append``
(``offset``, ``key``), and ``restore.done`` (``end_offset``, ``keys``).
"""

from __future__ import annotations

from raceproof.sim import CheckerResult, History, checker, ok, unknown, violated

SOUNDNESS, STALE, LOST = "checkpoint-soundness", "no-stale-read", "no-record-lost"


@checker(SOUNDNESS)
def checkpoint_soundness(history: History) -> CheckerResult:
    """A checkpoint or seek at offset C means the store in that directory has every offset below C."""
    for op in history.of_kind("checkpoint.write", "seek"):
        offset = int(op.get("offset") or 0)
        store_from, store_to = op.get("store_from"), int(op.get("store_to") or 0)
        if offset > 0 and not (store_from == 0 and store_to >= offset):
            held = "nothing" if store_from is None else f"offsets {store_from}..{store_to - 1}"
            return violated(
                SOUNDNESS,
                op.index,
                f"{op.actor} {'wrote a checkpoint at' if op.kind == 'checkpoint.write' else 'seeked to'} "
                f"offset {offset} of {op.get('task')} but the store in that directory holds {held}",
            )
    return ok(SOUNDNESS)


@checker(STALE)
def no_stale_read(history: History) -> CheckerResult:
    """Offsets used for a seek or a checkpoint come from the directory generation current at use."""
    for op in history.of_kind("checkpoint.write", "seek"):
        loaded, current = op.get("loaded_generation"), op.get("generation")
        if loaded is not None and loaded != current:
            return violated(
                STALE,
                op.index,
                f"{op.actor} used offset {op.get('offset')} of {op.get('task')} loaded from directory "
                f"generation {loaded} in generation {current} (the directory was deleted and re-created)",
            )
    return ok(STALE)


@checker(LOST)
def no_record_lost(history: History) -> CheckerResult:
    """After the final restore the store holds every record of the changelog."""
    restores = history.of_kind("restore.done")
    if not restores:
        return unknown(LOST, "the run ended before the final restore")
    restore = restores[-1]
    end = int(restore.get("end_offset"))
    wanted = {
        str(op.get("key")): int(op.get("offset"))
        for op in history.of_kind("changelog.append")
        if int(op.get("offset")) < end
    }
    missing = sorted(set(wanted) - set(restore.get("keys") or []), key=lambda k: wanted[k])
    if missing:
        shown = ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else "")
        return violated(
            LOST,
            restore.index,
            f"the restored store lacks {len(missing)} of {len(wanted)} records (offsets "
            f"{wanted[missing[0]]}..{wanted[missing[-1]]}: {shown}); it restored from checkpoint "
            f"{restore.get('checkpoint')}",
        )
    return ok(LOST)


CHECKERS = (checkpoint_soundness, no_stale_read, no_record_lost)
