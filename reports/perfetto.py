"""Chrome trace event JSON: a run opened in Perfetto (ui.perfetto.dev) or chrome://tracing.

The trace event format (Google's "Trace Event Format" document): a JSON
object with ``traceEvents``; every event has ``name``, ``ph`` (phase), ``ts``
(microseconds), ``pid`` and ``tid``. Here one process is the run and each
actor is a thread (``M`` metadata events name them, in the story's actor
order). Each op is a complete slice (``X``) of its own: the ops logged at one
ms share that ms in equal parts, in history order, so ``ts // 1000`` is always
the op's ``time_ms`` and nothing overlaps. Deviations from FIFO and faults are
instant events (``i``); the violation is the end (``f``, bound to the
violating op's slice) of a flow arrow that starts at the deciding deviation,
or at the first op when no deviation is placed.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from raceproof.reports.story import Story, is_fault, is_noise
from raceproof.sim.history import Op

PID = 1
CHOICES_TID = 0  # the track of the deviations from FIFO
US_PER_MS = 1000


def trace_events(story: Story, show_all: bool = True) -> dict[str, Any]:
    """The whole trace object (every op by default: Perfetto filters and zooms by itself)."""
    ops = story.visible_ops(show_all)
    tids = {actor: i + 1 for i, actor in enumerate(story.actors())}
    events = _track_names(story, tids)
    start_of = _op_events(events, ops, tids)
    _deviation_events(events, story, ops, start_of)
    _violation_events(events, story, tids, start_of)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "title": story.title,
            "clock": story.clock,
            "unit": story.unit,
            "status": story.status,
            "repro": story.repro or "",
        },
    }


def _track_names(story: Story, tids: dict[str, int]) -> list[dict[str, Any]]:
    """The metadata events: the trace's title, the deviations' track, one track per actor."""
    events: list[dict[str, Any]] = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": PID,
            "tid": 0,
            "args": {"name": f"{story.title} ({story.unit})"},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "pid": PID,
            "tid": CHOICES_TID,
            "args": {"name": "deviations from FIFO"},
        },
    ]
    for actor, tid in tids.items():
        events.append(
            {"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": actor}}
        )
        events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": PID,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )
    return events


def _op_events(events: list[dict[str, Any]], ops: list[Op], tids: dict[str, int]) -> dict[int, int]:
    """One slice per op (ops of one ms share it), an instant per fault; op index -> its ts."""
    per_ms = Counter(op.time_ms for op in ops)
    slot: Counter[int] = Counter()
    start_of: dict[int, int] = {}
    for op in ops:
        share = US_PER_MS // per_ms[op.time_ms] or 1
        ts = op.time_ms * US_PER_MS + min(slot[op.time_ms] * share, US_PER_MS - 1)
        slot[op.time_ms] += 1
        start_of[op.index] = ts
        category = "fault" if is_fault(op) else "noise" if is_noise(op) else "op"
        args = {
            "index": op.index,
            "time_ms": op.time_ms,
            **{f"field.{k}": v for k, v in op.fields.items()},
        }
        events.append(
            {
                "name": op.kind,
                "cat": category,
                "ph": "X",
                "ts": ts,
                "dur": max(1, share - 1),
                "pid": PID,
                "tid": tids[op.actor],
                "args": args,
            }
        )
        if is_fault(op):
            events.append(
                {
                    "name": f"fault: {op.kind}",
                    "cat": "fault",
                    "ph": "i",
                    "s": "t",
                    "ts": ts,
                    "pid": PID,
                    "tid": tids[op.actor],
                    "args": args,
                }
            )
    return start_of


def _deviation_events(
    events: list[dict[str, Any]], story: Story, ops: list[Op], start_of: dict[int, int]
) -> None:
    """An instant on the deviations' track at each deviation from FIFO."""
    for d in story.deviations:
        at = start_of.get(d.before_op) if d.before_op is not None else None
        ts = at if at is not None else (start_of[ops[0].index] if ops else 0)
        events.append(
            {
                "name": f"⚡ {d.sentence()}",
                "cat": "deviation",
                "ph": "i",
                "s": "p",
                "ts": ts,
                "pid": PID,
                "tid": CHOICES_TID,
                "args": d.to_json(),
            }
        )


def _violation_events(
    events: list[dict[str, Any]], story: Story, tids: dict[str, int], start_of: dict[int, int]
) -> None:
    """Per violation: a flow arrow from where it was decided to the op that broke, and a mark."""
    for number, verdict in enumerate(story.violations, start=1):
        if verdict.op_index is None or verdict.op_index not in start_of:
            continue
        end_op = story.history[verdict.op_index]
        origin = _origin(story, start_of)
        if origin is None:
            continue
        origin_ts, origin_tid = origin
        name = f"✗ {verdict.checker}"
        events.append(
            {
                "name": name,
                "cat": "violation",
                "ph": "s",
                "id": number,
                "ts": origin_ts,
                "pid": PID,
                "tid": origin_tid,
            }
        )
        events.append(
            {
                "name": name,
                "cat": "violation",
                "ph": "f",
                "bp": "e",
                "id": number,
                "ts": start_of[end_op.index],
                "pid": PID,
                "tid": tids[end_op.actor],
                "args": {"message": verdict.message},
            }
        )
        events.append(
            {
                "name": name,
                "cat": "violation",
                "ph": "i",
                "s": "t",
                "ts": start_of[end_op.index],
                "pid": PID,
                "tid": tids[end_op.actor],
                "args": {"message": verdict.message, "op_index": end_op.index},
            }
        )


def _origin(story: Story, start_of: dict[int, int]) -> tuple[int, int] | None:
    """Where the violation's arrow starts: the op after the deciding deviation, else the first op."""
    tids = {actor: i + 1 for i, actor in enumerate(story.actors())}
    deciding = story.reverted or (story.deviations[-1] if story.deviations else None)
    if deciding is not None and deciding.before_op in start_of:
        op = story.history[deciding.before_op]
        return start_of[op.index], tids[op.actor]
    if not start_of:
        return None
    first = min(start_of)
    return start_of[first], tids[story.history[first].actor]


def perfetto_json(story: Story, show_all: bool = True) -> str:
    return json.dumps(trace_events(story, show_all), sort_keys=True, ensure_ascii=False) + "\n"
