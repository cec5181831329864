"""Realistic input for a real pipeline, drawn from the choice source, judged by the set of outputs Spark may give, shrunk.

Real streams deliver records late, out of order and twice. ``draw_script``
draws an input script (micro-batches of ``(key, event second)`` events) from
``raceproof.sim.choices.RandomSource(seed)``: several records per key per
batch, events out of order within a batch, duplicates, and lateness at every
level that matters to Spark (below). A script is plain JSON
(``[[["a", 12], ...], ...]``), recorded in the trial, so ``spark-check
--experiment generated-input --seed N`` reproduces a trial and ``--script
JSON`` replays one.

What Spark may output follows its documented watermark semantics (Structured
Streaming Programming Guide, "Handling Late Data and Watermarking" and
"Semantic Guarantees of Aggregation with Watermarking"): the watermark is
the maximum event time seen minus the delay; data less late than the delay
is guaranteed to be kept, data later than that "may or may not get
aggregated" (the guarantee "is strict only in one direction"). Spark filters
late rows by the *previous* micro-batch's watermark (the one its eviction
used), so a record one batch behind the newest is dropped only by a watermark
shorter than its lateness. ``kept`` splits the records with the declared
lateness (``Pipeline.max_lateness_s``) as the delay and the watermark of the
batch before each record's (the largest Spark may use): a record whose state
is not final under it (``Pipeline.final_at``: its window's end for a windowed
aggregation) *must* be kept; every other one may go either way. The
reference is the set of whole outputs Spark may legally give
(``legal_outputs``: ``expected`` over the must-keep records plus every subset
of the may-drop ones, the drain's sentinel records included as one more
optional unit), so a late record that moves a session's start or adds a
join's pair is judged by what it does to the whole output, and a row the
reference gives twice (a repeated input event joined twice) may be stored
twice. ``within_watermark_reference`` accepts a stored output equal to one
of them.

The generator draws three levels of lateness: behind the newest event time
(within the lateness: must be kept), one batch behind (behind the newest
event time of the batch before last, which a short watermark drops), and
beyond the state's retention (may be dropped). Every script holds a *probe*:
one batch that moves event time on by nothing (a stall), then the latest
record the declared lateness still requires to be kept, so a watermark
shorter than the lateness is caught at every seed, not one in two.

``shrink_script`` removes batches, then single events, while the trial stays
violated on the same checker: what is left is a short script that is printed
and replays.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from functools import partial
from itertools import product
from typing import Any

from raceproof.sim import user_files
from raceproof.sim.checkers import Checker, CheckerResult, checker, ok, unknown, violated
from raceproof.sim.choices import RandomSource
from raceproof.sim.dataflow import describe as describe_key
from raceproof.sim.dataflow import key_fields, row_key, row_of
from raceproof.sim.history import History
from raceproof.spark_integration.pipeline import Pipeline, Record, calling_user
from raceproof.spark_integration.trial import Trial, TrialRun

Event = tuple[str, int]
Script = list[list[Event]]
# Of the records one (key, second) event becomes: (the earliest final_at, the latest event
# second, whether they give an output row by themselves).
Timing = Callable[[str, int], tuple[int, int, bool]]

KEYS = ("a", "b", "c")
BATCHES = 5
STEP_S = 10  # how far event time moves on per batch
KINDS = ("on-time", "late", "one-batch-behind", "beyond-retention", "duplicate")
PROBE_KEY = "p"  # a key no other event has: the probe's output is a row of its own


def _one_record(key: str, second: int) -> tuple[int, int, bool]:
    return second, second, True


def draw_script(
    seed: int,
    lateness_s: int,
    *,
    batches: int = BATCHES,
    timing: Timing | None = None,
    routes: Callable[[str], str] | None = None,
) -> Script:
    """Batches of events: on time, late at each level, duplicated, out of order, with a probe.

    ``timing(key, second)``: (the earliest ``final_at``, the latest event second, whether
    they give a row by themselves) of the records the event becomes (default: one record
    at ``second``, which does). One drawn batch is a stall (no record newer than the newest
    so far); the next holds the probe, the earliest event that gives a row and whose state
    the declared lateness still keeps open: a watermark shorter than the lateness drops
    it, since Spark filters by the previous batch's watermark. ``routes(key)``: the source
    a key's records are read from, for a pipeline of several sources; three more batches then
    make one source lag the other (``_lag_batches``).
    """
    span = timing or _one_record
    source = RandomSource(seed)
    script: Script = []
    newest = older = 0  # the newest event second seen so far, and as of the batch before last
    stall = source.draw_int("stall batch", 1, max(1, batches - 2))
    for number in range(batches):
        clock = STEP_S * (number + 1)
        events: list[Event] = []
        for _ in range(source.draw_int("events", 1, 4)):
            key = source.choose("key", KEYS)
            kind = source.choose("kind", KINDS)
            event = _drawn(source, kind, key, events, clock, newest, older, lateness_s)
            if number == stall:  # the stall moves event time on by nothing
                key, second = event
                while second > 1 and span(key, second)[1] > newest:
                    second -= 1
                event = key, second
            events.append(event)
        if number == stall + 1 and newest > 0:
            events.append(_probe(newest, lateness_s, span))
        script.append(events)  # drawn order: out of event-time order within and across batches
        older, newest = newest, max([newest, *(span(k, second)[1] for k, second in events)])
    if routes is not None:
        script += _lag_batches(script, lateness_s, routes, span)
    return script


def _lag_batches(
    script: Script, lateness_s: int, routes: Callable[[str], str], span: Timing
) -> Script:
    """Three batches that make one source lag another, for a pipeline of several sources.

    The first two move one source's event time far ahead (past the other's newest by the
    lateness and two steps; two batches, since Spark filters late rows by the watermark of
    the batch before the one before); the third brings the lagging source's own newest
    event again: as late as nothing behind its own stream, so it must be kept. Spark's default
    policy (the least watermark of the sources) keeps it; ``multipleWatermarkPolicy=max``
    (the greatest) drops it. No batches when every key goes to one source.
    """
    by_source: dict[str, list[str]] = {}
    for key in (*KEYS, PROBE_KEY):
        by_source.setdefault(routes(key), []).append(key)
    if len(by_source) < 2:
        return []
    (ahead, *_), (behind, *_) = list(by_source.values())[:2]
    seconds = [
        span(k, s)[1] for batch in script for k, s in batch if k in by_source[routes(behind)]
    ]
    slow = max(seconds, default=STEP_S)
    newest = max((span(k, s)[1] for batch in script for k, s in batch), default=slow)
    far = newest + lateness_s + 2 * STEP_S
    return [[(ahead, far)], [(ahead, far + 1)], [(behind, slow)]]


def _drawn(
    source: RandomSource,
    kind: str,
    key: str,
    events: list[Event],
    clock: int,
    newest: int,
    older: int,
    lateness_s: int,
) -> Event:
    """One event of ``kind``; a kind that cannot apply yet (no newest time) is on time."""
    if kind == "late" and newest > 0:
        return key, max(1, newest - source.draw_int("late by", 1, max(1, lateness_s)))
    if kind == "one-batch-behind" and older > 0:
        return key, max(1, older - source.draw_int("behind by", 1, max(1, lateness_s)))
    if kind == "beyond-retention" and newest > lateness_s + 2 * STEP_S:
        return key, newest - lateness_s - STEP_S - source.draw_int("beyond by", 1, STEP_S)
    if kind == "duplicate" and events:
        return events[source.draw_int("which", 0, len(events) - 1)]
    return key, clock + source.draw_int("skew", 0, STEP_S - 1)


PROBE_REACH_S = 60  # how far before the lateness the probe looks: a window's size, a session's gap


def _probe(newest: int, lateness_s: int, span: Timing) -> Event:
    """The earliest event the declared lateness keeps open after a stall: late, yet must be kept.

    Its state is final at ``final_at``, which may lie past its own second (a window's end, a
    session's end: its second plus the gap), so the earliest such event can be more than the
    lateness behind: a session record ``lateness + gap - 1`` seconds behind the newest is
    still open. The search starts ``PROBE_REACH_S`` before the lateness (it started at the
    lateness, which missed a session window whose watermark was shorter than its gap needs).
    """
    for second in range(max(1, newest - lateness_s - PROBE_REACH_S), newest + 1):
        final, _, gives_rows = span(PROBE_KEY, second)
        if final > newest - lateness_s and gives_rows:
            return PROBE_KEY, second
    return PROBE_KEY, newest


def kept(
    pipeline: Pipeline, batches: list[list[Record]], delay_s: int
) -> tuple[list[Record], list[Record]]:
    """(must keep, may drop): whether a record's state is final under the watermark of its batch.

    The watermark a record is judged by is its own source's: the newest event time of that
    source in every earlier batch minus ``delay_s`` (the declared lateness is each source's:
    a record as late as that behind its own stream must be kept, whatever another source
    did); a source with no data yet is judged by the least watermark of the others (Spark's
    default ``multipleWatermarkPolicy=min`` counts only sources with data). That is the
    largest watermark Spark's default policy may filter by (it uses the previous batch's),
    so what this keeps Spark must keep; ``multipleWatermarkPolicy=max`` drops more, and is
    caught when one source lags another (``draw_script``'s lag batches).
    """
    result: list[Record] = []
    late: list[Record] = []
    newest: dict[str, int] = {}  # each source's newest event second so far
    for records in batches:
        marks = {name: second - delay_s for name, second in newest.items()}
        least = min(marks.values(), default=None)
        for record in records:
            final = calling_user("final_at(record)", pipeline.final_at, record)
            watermark = marks.get(source_name(pipeline, record), least)
            if watermark is None or final > watermark:
                result.append(record)
            else:
                late.append(record)
        for record in records:
            name, second = source_name(pipeline, record), pipeline.event_second(record)
            newest[name] = max(newest.get(name, second), second)
    return result, late


def source_name(pipeline: Pipeline, record: Record) -> str:
    """The source a record is read from (``""`` for a pipeline of one source)."""
    if not pipeline.sources:
        return ""
    return str(calling_user("source_of(record)", pipeline.source_of, record))


MAX_OUTPUTS = 16384  # reference calls at most: beyond it the list of legal outputs is incomplete


def _canonical(row: Any) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def legal_outputs(
    pipeline: Pipeline,
    must: list[Record],
    maybe: list[Record],
    sentinel: list[Record] | None = None,
) -> tuple[list[list[dict[str, Any]]], bool]:
    """Every output Spark may legally give (rows sorted), and whether the list is complete.

    ``must`` plus any subset of ``maybe`` (identical records counted: 0..n copies of one
    record), plus the drain's ``sentinel`` records or not. A may-drop record that changes
    nothing, added alone or taken out of all of them (a late copy of an id already kept),
    is left out of the enumeration. The list is incomplete past ``MAX_OUTPUTS`` subsets.
    """

    def output(records: list[Record]) -> list[dict[str, Any]]:
        given = calling_user("expected(records)", pipeline.expected, [*must, *records])
        return sorted((dict(r) for r in given), key=_canonical)

    units = Counter(_canonical(r) for r in maybe)
    records_of = {_canonical(r): r for r in maybe}
    alone, everything = output([]), output(list(maybe))
    for text in list(units):
        rest = [r for r in maybe if _canonical(r) != text]
        if output([records_of[text]]) == alone and output(rest) == everything:
            del units[text]  # inert: whether Spark keeps it or not, the output is the same
    choices: list[range] = [range(n + 1) for n in units.values()]
    if sentinel:
        choices.append(range(2))
    total = 1
    for choice in choices:
        total *= len(choice)
    outputs: dict[str, list[dict[str, Any]]] = {}
    for number, picked in enumerate(product(*choices)):
        if number >= MAX_OUTPUTS:
            break
        chosen = [
            records_of[text]
            for text, copies in zip(units, picked, strict=False)
            for _ in range(copies)
        ]
        if sentinel and picked[-1]:
            chosen += sentinel
        rows = output(chosen)
        outputs.setdefault(_canonical(rows), rows)
    return [outputs[k] for k in sorted(outputs)], total <= MAX_OUTPUTS


def log_reference(
    log: Callable[..., None],
    pipeline: Pipeline,
    must: list[Record],
    maybe: list[Record],
    sentinel: list[Record],
) -> None:
    """The ``expect.legal`` op: every output Spark may give, how the sink stores rows."""
    outputs, complete = legal_outputs(pipeline, must, maybe, sentinel)
    log(
        "reference",
        "expect.legal",
        outputs=outputs,
        complete=complete,
        store=pipeline.store_rule(),
        must=len(must),
        maybe=len(maybe),
    )


def within_watermark_reference(name: str = "watermark-reference") -> Checker:
    """After the drain, what the sink stores is one of the outputs Spark may legally give.

    Reads ``expect.legal`` (``outputs``: every legal output, ``store``: the sink's store
    rule) and the stored ``sink.row`` ops. An ``append`` sink's rows are a multiset (a row
    the reference gives twice may be stored twice, no more); an upserting or snapshot sink
    stores each row once. A stored output equal to none of them is a violation naming the
    first key that differs, what was stored there and what Spark may give there instead.
    """

    @checker(name)
    def check(history: History) -> CheckerResult:
        declared = history.of_kind("expect.legal")
        if not declared:
            return ok(name)
        (reference,) = declared[-1:]
        appends = reference.get("store") == "append"
        outputs = [_multiset(list(out), appends=appends) for out in reference.get("outputs") or []]
        stored_ops = history.of_kind("sink.row")
        stored = Counter(_canonical(row_of(op)) for op in stored_ops)
        if any(stored == out for out in outputs):
            return ok(name)
        if not reference.get("complete", True):
            return unknown(
                name,
                "the stored output is none of the first "
                f"{len(outputs)} legal ones, and there are more (too many records may be dropped)",
            )
        return violated(name, len(history) - 1, _difference(history, stored, outputs))

    return check


def _multiset(rows: list[Any], *, appends: bool) -> Counter[str]:
    texts = [_canonical(r) for r in rows]
    return Counter(texts) if appends else Counter(set(texts))


def _difference(history: History, stored: Counter[str], outputs: list[Counter[str]]) -> str:
    """The first key where the stored output differs from the nearest legal one, both shown."""
    fields = key_fields(history)
    nearest = min(outputs, key=lambda out: sum(((stored - out) + (out - stored)).values()))
    differing = (stored - nearest) + (nearest - stored)

    def key_of(text: str) -> tuple[str, ...]:
        return row_key(json.loads(text), fields)

    key = min(key_of(t) for t in differing)

    def at_key(rows: Counter[str]) -> str:
        texts = sorted(t for t in rows.elements() if key_of(t) == key)
        return "[" + ", ".join(texts) + "]" if texts else "nothing"

    batches = [
        op.get("batch") for op in history.of_kind("sink.row") if row_key(row_of(op), fields) == key
    ]
    where = ""
    if len(batches) > 1:
        one = len(set(map(str, batches))) == 1
        where = (
            f" (in batch {batches[0]}, twice within one batch)"
            if one
            else (f" (in batches {', '.join(map(str, batches))})")
        )
    allowed = sorted({at_key(out) for out in outputs})
    shown = " or ".join(allowed[:4]) + (
        f" (or {len(allowed) - 4} more)" if len(allowed) > 4 else ""
    )
    return (
        f"{describe_key(key, fields)}: the sink stored {at_key(stored)}{where}; "
        f"Spark's watermark semantics allow {shown} there"
    )


def script_json(script: Script) -> str:
    return json.dumps([[[k, s] for k, s in batch] for batch in script], separators=(",", ":"))


def parse_script(text: str) -> Script:
    """A script from its JSON; ValueError naming what is wrong."""
    # Nesting, NaN/inf and huge integers are refused as in every JSON raceproof reads.
    raw = user_files.loads(text, "--script", ValueError)
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
    script: Script, fails: Callable[[Script], bool], *, max_trials: int = 40
) -> tuple[Script, int]:
    """The smallest script found (batches, then events removed) on which ``fails`` still holds.

    ``max_trials`` bounds the trials (each is a Spark run); returns the script and the trials run.
    """
    best, trials = script, 0
    changed = True
    while changed and trials < max_trials:
        changed = False
        candidates: list[Script] = [best[:i] + best[i + 1 :] for i in range(len(best))]
        candidates += [
            [b if j != i else b[:e] + b[e + 1 :] for j, b in enumerate(best)]
            for i, batch in enumerate(best)
            for e in range(len(batch))
        ]
        for candidate in candidates:
            candidate = [b for b in candidate if b]
            if not candidate or trials >= max_trials:
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


def generated_input(
    spark: Any,
    pipeline: Pipeline,
    guarded: bool,
    *,
    seed: int = 0,
    script: Script | None = None,
) -> Trial:
    """A drawn input script (late at every level, out of order, duplicated), run, drained,
    judged against every output Spark's watermark semantics allow."""
    lateness = int(pipeline.max_lateness_s or 0)
    if script is None:
        routes = partial(_route, pipeline) if len(pipeline.sources) > 1 else None
        script = draw_script(seed, lateness, timing=partial(_event_timing, pipeline), routes=routes)
    with TrialRun(spark, pipeline) as run:
        run.recorder.log("driver", "input.seed", seed=seed)
        trial_input(run, script)
        failure = run.job.run()
        batches = [
            [
                r
                for key, second in events
                for r in calling_user("records(key, second)", pipeline.records, key, second)
            ]
            for events in script
        ]
        must, maybe = kept(pipeline, batches, lateness)
        failure = failure or run.drain()
        log_reference(run.recorder.log, pipeline, must, maybe, pipeline.sentinel_records())
        run.note(
            f"seed {seed}, {sum(map(len, script))} events in {len(script)} batches, "
            f"{len(maybe)} records behind the {lateness} s lateness (may be dropped); "
            f"script {script_json(script)}"
        )
        checks = [within_watermark_reference()]
        return run.judge(checks, failing_at_end=failure is not None)


def _route(pipeline: Pipeline, key: str) -> str:
    """The source the records of ``key`` go to (its first record's, at the script's first second)."""
    records = calling_user("records(key, second)", pipeline.records, key, STEP_S)
    return source_name(pipeline, records[0]) if records else ""


def _event_timing(pipeline: Pipeline, key: str, second: int) -> tuple[int, int, bool]:
    """(the earliest final_at, the latest event second, whether they give a row) of an
    event's records: what the generator's probe needs."""
    records = calling_user("records(key, second)", pipeline.records, key, second)
    finals = [calling_user("final_at(record)", pipeline.final_at, r) for r in records]
    rows = calling_user("expected(records)", pipeline.expected, list(records))
    return (
        min(finals, default=second),
        max(map(pipeline.event_second, records), default=second),
        bool(rows),
    )
