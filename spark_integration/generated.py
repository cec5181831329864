"""Realistic input for a real pipeline, drawn from the choice source, judged by the watermark's meaning, shrunk.

Real streams deliver records late, out of order and twice. ``draw_script``
draws an input script (micro-batches of ``(key, event second)`` events) from
``raceproof.sim.choices.RandomSource(seed)``: several records per key per
batch, events out of order within a batch, records late within the
pipeline's declared lateness (``Pipeline.max_lateness_s``), records late
beyond it, and duplicates. A script is plain JSON (``[[["a", 12], ...], ...]``),
recorded in the trial, so ``spark-check --experiment generated-input --seed N``
reproduces a trial and ``--script JSON`` replays one.

What a correct pipeline must output follows Spark's documented watermark
semantics (Structured Streaming Programming Guide, "Handling Late Data and
Watermarking", and "Semantic Guarantees of Aggregation with Watermarking",
pyspark 4.0): the watermark for a micro-batch is the maximum event time seen
in the earlier batches minus the delay; data less than the delay late is
guaranteed to be aggregated, and in append mode a window's state is final
and later data for it is dropped once the watermark passes the window's end.
``kept`` applies that rule with the declared lateness as the delay
(``Pipeline.final_at`` says when a record's state is final: its window's end
for a windowed aggregation): the records it keeps *must* be aggregated. The
guide says the guarantee "is strict only in one direction": data later than
the delay "may or may not get aggregated". So the reference is a set of
acceptable rows per key (``acceptable``: ``expected`` over the must-keep
records plus every subset of the may-drop ones), and the checker
``within_watermark_reference`` accepts any of them. A watermark shorter than
the data's lateness drops records that must be kept: a count below every
acceptable one.

``shrink_script`` removes batches, then single events, while the trial stays
violated on the same checker: what is left is a short script that is printed
and replays.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import combinations
from typing import Any

from raceproof.sim.checkers import Checker, CheckerResult, checker, ok, violated
from raceproof.sim.choices import RandomSource
from raceproof.sim.dataflow import describe as describe_key
from raceproof.sim.dataflow import key_fields, row_key, row_of
from raceproof.sim.history import History
from raceproof.spark_integration.pipeline import Pipeline, Record, second_of

Event = tuple[str, int]
Script = list[list[Event]]

KEYS = ("a", "b", "c")
BATCHES = 5
STEP_S = 10  # how far event time moves on per batch


def draw_script(seed: int, lateness_s: int, *, batches: int = BATCHES) -> Script:
    """Batches of events: on time, out of order, late within and beyond ``lateness_s``, duplicated."""
    source = RandomSource(seed)
    script: Script = []
    newest = 0
    for number in range(batches):
        clock = STEP_S * (number + 1)
        events: list[Event] = []
        for _ in range(source.draw_int("events", 1, 4)):
            key = source.choose("key", KEYS)
            kind = source.choose("kind", ("on-time", "late", "late", "too-late", "duplicate"))
            if kind == "late" and newest > 0:
                late_by = source.draw_int("late by", (lateness_s + 1) // 2, max(1, lateness_s))
                second = max(1, newest - late_by)
            elif kind == "too-late" and newest > lateness_s + 2 * STEP_S:
                second = newest - lateness_s - STEP_S - source.draw_int("beyond by", 1, STEP_S)
            elif kind == "duplicate" and events:
                key, second = events[source.draw_int("which", 0, len(events) - 1)]
            else:
                second = clock + source.draw_int("skew", 0, STEP_S - 1)
            events.append((key, second))
        script.append(events)  # drawn order: out of event-time order within and across batches
        newest = max([newest, *(second for _, second in events)])
    return script


def kept(
    pipeline: Pipeline, batches: list[list[Record]], delay_s: int
) -> tuple[list[Record], list[Record]]:
    """(must keep, may drop): whether a record's state is final under the watermark of its batch."""
    result: list[Record] = []
    late: list[Record] = []
    newest: int | None = None
    for records in batches:
        watermark = None if newest is None else newest - delay_s
        for record in records:
            if watermark is None or pipeline.final_at(record) > watermark:
                result.append(record)
            else:
                late.append(record)
        seconds = [second_of(str(r["ts"])) for r in records if "ts" in r]
        if seconds:
            newest = max([*([newest] if newest is not None else []), *seconds])
    return result, late


MAX_MAY_DROP = 10  # subsets enumerated: 2**10 reference calls at most


def acceptable(
    pipeline: Pipeline, must: list[Record], maybe: list[Record]
) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    """Per output key, every row a correct run may give: ``must`` plus any subset of ``maybe``.

    A key only the ``maybe`` records give is optional (its list holds ``None`` too).
    """
    maybe = maybe[:MAX_MAY_DROP]
    fields = pipeline.key_fields
    rows: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    required = {row_key(r, fields) for r in pipeline.expected(list(must))}
    for size in range(len(maybe) + 1):
        for subset in combinations(maybe, size):
            for row in pipeline.expected([*must, *subset]):
                options = rows.setdefault(row_key(row, fields), [])
                if row not in options:
                    options.append(row)
    return {k: v if k in required else [*v, {"optional": True}] for k, v in rows.items()}


def within_watermark_reference(name: str = "watermark-reference") -> Checker:
    """After the drain, every key's last stored row is one the watermark's semantics allow.

    Reads ``expect.acceptable`` (``key``, ``rows``: the rows a correct run may give for it)
    and the stored ``sink.row`` ops; a key that must be there and is not, a row no subset
    of the may-drop records gives, or a key no record gives, is a violation.
    """

    @checker(name)
    def check(history: History) -> CheckerResult:
        fields = key_fields(history)
        allowed = {
            tuple(str(p) for p in op.get("key") or []): list(op.get("rows") or [])
            for op in history.of_kind("expect.acceptable")
        }
        if not allowed:
            return ok(name)
        emitted: dict[tuple[str, ...], dict[str, Any]] = {}
        for op in history.of_kind("sink.row"):
            emitted[row_key(row_of(op), fields)] = row_of(op)
        end = len(history) - 1
        for key, rows in sorted(allowed.items()):
            got = emitted.get(key)
            if got is None and {"optional": True} not in rows:
                return violated(
                    name,
                    end,
                    f"{describe_key(key, fields)} was never emitted; "
                    f"the records that must be kept give {rows[0]}",
                )
            if got is not None and got not in rows:
                shown = " or ".join(str(r) for r in rows if r != {"optional": True})
                return violated(
                    name,
                    end,
                    f"{describe_key(key, fields)} emitted {got}; the "
                    f"watermark's semantics allow {shown}",
                )
        for key in sorted(set(emitted) - set(allowed)):
            if "__sentinel__" not in key:
                return violated(
                    name,
                    end,
                    f"{describe_key(key, fields)} emitted {emitted[key]}, "
                    "a row no input record gives",
                )
        return ok(name)

    return check


def script_json(script: Script) -> str:
    return json.dumps([[[k, s] for k, s in batch] for batch in script], separators=(",", ":"))


def parse_script(text: str) -> Script:
    """A script from its JSON; ValueError naming what is wrong."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--script is not JSON: {exc}") from None
    ok = isinstance(raw, list) and all(
        isinstance(batch, list)
        and all(
            isinstance(e, list)
            and len(e) == 2
            and isinstance(e[0], str)
            and isinstance(e[1], int)
            and not isinstance(e[1], bool)
            and 0 <= e[1] < 10**8
            for e in batch
        )
        for batch in raw
    )
    if not ok or not raw:
        raise ValueError(
            '--script must be a non-empty JSON list of batches [[["key", second], ...]]'
        )
    return [[(str(k), int(s)) for k, s in batch] for batch in raw]


def shrink_script(
    script: Script, fails: Callable[[Script], bool], *, budget: int = 40
) -> tuple[Script, int]:
    """The smallest script found (batches, then events removed) on which ``fails`` still holds.

    ``budget`` bounds the trials (each is a Spark run); returns the script and the trials run.
    """
    best, trials = script, 0
    changed = True
    while changed and trials < budget:
        changed = False
        candidates: list[Script] = [best[:i] + best[i + 1 :] for i in range(len(best))]
        candidates += [
            [b if j != i else b[:e] + b[e + 1 :] for j, b in enumerate(best)]
            for i, batch in enumerate(best)
            for e in range(len(batch))
        ]
        for candidate in candidates:
            candidate = [b for b in candidate if b]
            if not candidate or trials >= budget:
                continue
            trials += 1
            if fails(candidate):
                best, changed = candidate, True
                break
    return best, trials


def describe(script: Script) -> str:
    """One line per batch: ``batch 0: a@12 b@3``."""
    return "; ".join(
        f"batch {i}: " + " ".join(f"{k}@{s}" for k, s in batch) for i, batch in enumerate(script)
    )


def trial_input(run: Any, script: Script) -> None:
    """Write ``script`` as the trial's input files and log it (``input.script``)."""
    run.recorder.log("driver", "input.script", script=script_json(script))
    for events in script:
        run.job.add_input(events)
