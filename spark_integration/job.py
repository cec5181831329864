"""The real job under test: the user's pipeline between a deterministic file source and a recording sink.

The file source is made deterministic (one file per micro-batch, renamed into
place with distinct mtimes, ``maxFilesPerTrigger=1``). The pipeline
(``spark_integration.pipeline``) builds the query from it. The ``foreachBatch``
sink records every row with its batch id, then calls the pipeline's own sink.
By default it does **not** deduplicate, so a replayed batch shows up as a
duplicate; ``keyed_sink`` is the guard that writes each batch to its own file,
so a re-run replaces what the first attempt wrote. What happens is captured as
the history ops the shared checkers read (``pipeline``, ``input.record``,
``input.file``, ``query.start``, ``query.stop``, ``query.failed``,
``sink.row``, ``checkpoint.batch``, ``state.row``, ``drain.request``,
``expect.row``).
"""

from __future__ import annotations

import json
import re
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raceproof.sim.errors import said
from raceproof.sim.history import History
from raceproof.spark_integration.faults import (
    BatchAbandon,
    BatchGate,
    ProcessStopped,
    TransientSinkFailure,
)
from raceproof.spark_integration.pipeline import (
    Pipeline,
    PipelineRaised,
    Record,
    calling_user,
    user_frames,
)
from raceproof.spark_integration.preflight import returned_rows, returned_writer
from raceproof.spark_integration.sandbox import Sandbox

PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)): (.*)$")
WRAPPERS = ("FOREACH_BATCH_USER_FUNCTION_ERROR", "Py4JJavaError", "PythonException")


def short_error(exc: BaseException) -> str:
    """The cause of a Spark error, whole: the user's Python exception when Spark wrapped one.

    Spark wraps what a Python function raised (``FOREACH_BATCH_USER_FUNCTION_ERROR``,
    py4j's ``Py4JJavaError``, a worker's ``PythonException``) around the Python traceback's
    text; the last Python exception line of that text is the user's cause, and is what
    this returns. Otherwise the Java error's own line (not py4j's preamble, not the stack).
    Never cut: a long cause is wrapped where it is printed (``wrapped``).
    """
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last)" in text or any(w in text for w in WRAPPERS):
        python = [
            line
            for line in lines
            if PYTHON_ERROR.match(line) and not line.startswith(("py4j.", "pyspark.", "org."))
        ]
        if python:
            return python[-1]
    java = [line.lstrip(": ") for line in lines if line.startswith(": ") or "Exception:" in line]
    return (java or lines or [type(exc).__name__])[0]


def wrapped(text: str, *, width: int = 100, indent: str = "    ") -> str:
    """``text`` wrapped at spaces to ``width`` columns, no word cut, continuation indented."""
    return textwrap.fill(
        text,
        width=width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


@dataclass
class UserRaised:
    """What the user's own sink raised inside foreachBatch: its message and its own frames."""

    message: str
    frames: str


class Recorder:
    """Builds the history of a real run: time is wall ms since the trial began."""

    def __init__(self) -> None:
        self.history = History()
        self.started = time.monotonic()

    def log(self, actor: str, kind: str, **fields: Any) -> None:
        last = self.history.ops[-1].time_ms if self.history.ops else 0
        now = int((time.monotonic() - self.started) * 1000)
        self.history.append(max(last, now), actor, kind, **fields)


class PipelineJob:
    """One pipeline in one sandbox: input files, starts and stops, the recording sink, capture."""

    def __init__(
        self,
        spark: Any,
        sandbox: Sandbox,
        recorder: Recorder,
        pipeline: Pipeline,
        *,
        keyed_sink: bool = False,
    ) -> None:
        self.spark = spark
        self.sandbox = sandbox
        self.recorder = recorder
        self.pipeline = pipeline
        self.keyed_sink = keyed_sink
        self.after_rows: Callable[[Any, int, int], None] | None = None  # (batch, id, rows)
        self.gate: BatchGate | None = None  # a fault at a named point of a batch
        self.abandon: BatchAbandon | None = None  # the process stops before Spark commits a batch
        self.transient: TransientSinkFailure | None = None  # the user's sink fails once mid-batch
        self.records_written: list[Record] = []
        self.user_raised: UserRaised | None = None  # what the user's sink raised, whole
        self.injected: str | None = None  # the fault raceproof raised in a batch, said as its own
        self._rows_logged = 0
        self._batch_files_logged: set[str] = set()
        self._batches_logged: set[int] = set()
        # What the checkers judge is what the sink *stores*: raceproof's recording as it is in
        # append mode; otherwise (update or complete mode, or the pipeline's own sink) each
        # delivery is a ``batch.row`` and the stored rows become ``sink.row`` at the end.
        self.judges_store = pipeline.reads_own_output() or pipeline.store_rule() != "append"
        self.row_kind = "batch.row" if self.judges_store else "sink.row"
        recorder.log(
            "driver",
            "pipeline",
            name=pipeline.name,
            key=list(pipeline.key_fields),
            output_mode=pipeline.output_mode,
        )

    def add_input(self, events: list[tuple[str, int]], *, sentinel: bool = False) -> None:
        """One micro-batch file holding the records of these (key, event second) events."""
        records: list[Record] = []
        for key, second in events:
            given = calling_user("records(key, second)", self.pipeline.records, key, second)
            records.extend(returned_rows("records(key, second)", given))
        for record in records:
            self.recorder.log("driver", "input.record", record=record, sentinel=sentinel)
        if not sentinel:
            self.records_written.extend(records)
        if self.pipeline.sources:
            self._add_to_sources(records)
            return
        self._write_file(records, "")

    def _write_file(self, records: list[Record], source: str) -> None:
        """One input file of ``records`` (in ``source``'s folder, if named), logged with the
        state key each record is counted under."""
        lines = [json.dumps(r, sort_keys=True) for r in records]
        path = self.sandbox.write_input(lines, source=source)
        keys = (
            [
                list(key)
                for r in records
                for key in calling_user("count_keys(record)", self.pipeline.count_keys, r)
            ]
            if self.pipeline.state_counts
            else []
        )
        where = {"source": source} if source else {}
        self.recorder.log(
            "driver", "input.file", file=path.name, records=records, keys=keys, **where
        )

    def _add_to_sources(self, records: list[Record]) -> None:
        """One file per declared source (an empty one too: each micro-batch reads one file of
        every source, so the sources' batches stay aligned with the script's)."""
        names = self.pipeline.sources
        by_source: dict[str, list[Record]] = {name: [] for name in names}
        for record in records:
            name = calling_user("source_of(record)", self.pipeline.source_of, record)
            if name not in by_source:
                raise PipelineRaised(
                    f"pipeline error: source_of({record}) returned {name!r}, not one of its "
                    f"sources ({', '.join(names)})"
                )
            by_source[name].append(record)
        for name, chosen in by_source.items():
            self._write_file(chosen, name)

    def request_drain(self, procedure: str) -> None:
        """Log the drain request and what the reference says every record written before it gives."""
        self.recorder.log("driver", "drain.request", procedure=procedure)
        expected = calling_user(
            "expected(records)", self.pipeline.expected, list(self.records_written)
        )
        for row in returned_rows("expected(records)", expected):
            self.recorder.log("reference", "expect.row", row=row)

    def _source(self, folder: Path) -> Any:
        return (
            self.spark.readStream.schema(self.pipeline.schema)
            .option("maxFilesPerTrigger", 1)
            .json(str(folder))
        )

    def _query(self) -> Any:
        names = self.pipeline.sources
        frame = (
            {name: self._source(self.sandbox.input / name) for name in names}
            if names
            else self._source(self.sandbox.input)
        )
        built = calling_user("query(source)", self.pipeline.query, frame)
        if not hasattr(type(built), "writeStream") or not hasattr(type(built), "isStreaming"):
            raise PipelineRaised(
                f"pipeline error: query(source) returned {type(built).__name__}, not a streaming "
                "DataFrame (build the query on the source DataFrame and return it; raceproof "
                "starts it)"
            )
        if not built.isStreaming:
            raise PipelineRaised(
                "pipeline error: query(source) returned a batch DataFrame, not one built on the "
                "streaming source it was given"
            )
        return built

    def _sink(self, batch: Any, batch_id: int) -> None:
        """``foreachBatch``'s function, on py4j's callback thread: ``_write_batch``, whatever the
        user's code in it leaves by failing the batch.

        py4j answers the JVM for an ``Exception`` only: a ``sys.exit()`` in the user's
        ``sink`` or ``output``, or a ``KeyboardInterrupt`` or ``GeneratorExit`` it raised
        itself (no signal reaches this thread: Python runs signal handlers in the main
        thread), ended the callback thread with no answer, and Spark waited for the batch
        for ever (``spark-check`` hung). It goes on as a ``RuntimeError`` naming it, so the
        batch fails and the check says what the pipeline raised (exit 4).
        """
        try:
            self._write_batch(batch, batch_id)
        except BaseException as exc:
            if isinstance(exc, Exception):
                raise
            if self.user_raised is None:
                named = f"{type(exc).__name__}: {said(exc)}".removesuffix(": ")
                self.user_raised = UserRaised(
                    f"the pipeline's code in foreachBatch (batch {batch_id}) raised {named}",
                    user_frames(exc),
                )
            raise RuntimeError(self.user_raised.message) from exc

    def _write_batch(self, batch: Any, batch_id: int) -> None:
        gate = self.gate
        if gate is not None:
            gate.at(batch_id, 0)  # offsets/<batch_id> is written, commits/<batch_id> is not
        collected = batch.collect()
        delivery = self._next_delivery()
        rows = [
            json.dumps(
                {"batch": batch_id, "delivery": delivery, "row": self.pipeline.output(row)},
                sort_keys=True,
            )
            for row in collected
        ]
        if self.keyed_sink:
            target = self.sandbox.inside(f"sink/batch-{batch_id:06d}.jsonl")
            staged = self.sandbox.inside(f"sink/.batch-{batch_id:06d}.tmp")
            with staged.open("w") as handle:
                for done, line in enumerate(rows, 1):
                    handle.write(line + "\n")
                    if gate is not None:
                        gate.at(batch_id, done)
            staged.replace(target)
        else:
            with self.sandbox.sink_file.open("a") as handle:
                for done, line in enumerate(rows, 1):
                    handle.write(line + "\n")
                    handle.flush()
                    if gate is not None:
                        gate.at(batch_id, done)
        transient = self.transient
        if transient is not None and transient.armed(batch_id, len(collected)):
            # The user's sink writes the first half of the batch and then fails (raises), as a
            # sink whose connection drops mid-batch does; Spark fails the batch, a restart re-runs it.
            written = len(collected) // 2
            half = batch.sparkSession.createDataFrame(collected[:written], batch.schema)
            batch = half
        try:
            self.pipeline.sink(batch, batch_id)
        except BaseException as exc:  # the user's sink (sys.exit() too): the batch fails (_sink)
            named = f"{type(exc).__name__}: {said(exc)}".removesuffix(": ")
            self.user_raised = UserRaised(
                f"the pipeline's sink(batch, {batch_id}) raised {named}", user_frames(exc)
            )
            self.recorder.log(
                "sink",
                "sink.raised",
                batch=batch_id,
                error=self.user_raised.message,
                frames=self.user_raised.frames,
            )
            raise
        if transient is not None and transient.reached_batch == batch_id and transient.fire():
            self.recorder.log(
                "nemesis",
                "fault.sink-raised",
                batch=batch_id,
                rows_written=len(collected) // 2,
                rows=len(collected),
            )
            raise self._injected(transient.failure())
        if self.after_rows is not None:
            self.after_rows(batch, batch_id, len(rows))
        # What checkpoint fencing compares with: the last batch the sink committed.
        self.sandbox.inside("sink/last_batch").write_text(str(batch_id))
        if self.abandon is not None:
            try:
                self.abandon.after(batch_id, len(rows), self.sandbox)
            except ProcessStopped as stopped:
                raise self._injected(stopped) from None

    def _injected(self, fault: Exception) -> Exception:
        """``fault``, raised by raceproof in the batch, remembered so the query's failure is
        said as raceproof's injected fault, not as Spark's wrapper of an unknown error."""
        self.injected = (
            f"raceproof's injected fault: {str(fault).removeprefix('raceproof fault: ')}"
        )
        return fault

    def _next_delivery(self) -> int:
        """This call of the sink's number in the trial (in the sandbox, so a second driver
        process counts on): a batch id delivered by two calls was replayed."""
        counter = self.sandbox.inside("sink") / "deliveries"
        number = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(number))
        return number

    def start(self, *, available_now: bool = False, client: str = "driver") -> Any:
        frame = self._query()
        if self.pipeline.writes_own_stream():
            writer = calling_user("write_stream(frame)", self.pipeline.write_stream, frame)
            writer = returned_writer("write_stream(frame)", writer)
            writer = writer.outputMode(self.pipeline.output_mode)
        else:
            writer = frame.writeStream.outputMode(self.pipeline.output_mode).foreachBatch(
                self._sink
            )
        writer = writer.option("checkpointLocation", str(self.sandbox.checkpoint))
        writer = (
            writer.trigger(availableNow=True)
            if available_now
            else writer.trigger(processingTime="0 seconds")
        )
        try:
            query = writer.start()
        except Exception as exc:
            if type(exc).__name__ not in ("AnalysisException", "IllegalArgumentException"):
                raise
            raise PipelineRaised(
                f"pipeline error: Spark rejected the query: {short_error(exc)}", user_frames(exc)
            ) from exc
        self.recorder.log(
            client,
            "query.start",
            run=str(query.runId),
            trigger="availableNow" if available_now else "processAllAvailable",
        )
        return query

    def stop(self, query: Any, *, client: str = "driver") -> None:
        query.stop()
        self.recorder.log(client, "query.stop", run=str(query.runId))

    def process(self, query: Any, *, available_now: bool = False) -> str | None:
        """Wait until ``query`` has processed what is available; the error if it failed (logged)."""
        try:
            if available_now:
                query.awaitTermination(300)
            else:
                query.processAllAvailable()
        except Exception as exc:  # a StreamingQueryException: the query died and said so
            cause = self.user_raised.message if self.user_raised else short_error(exc)
            frames = self.user_raised.frames if self.user_raised else ""
            if self.injected is not None and self.user_raised is None:
                cause = self.injected
            self.user_raised, self.injected = None, None
            self.recorder.log(
                "spark", "query.failed", run=str(query.runId), error=cause, frames=frames
            )
            where = frames.rstrip().splitlines()[:-1]  # the last line repeats the cause
            return "\n".join([cause, *where]) if where else cause
        return None

    def run(self, *, available_now: bool = False) -> str | None:
        """Start, process everything available, stop; the error if the query failed."""
        query = self.start(available_now=available_now)
        try:
            return self.process(query, available_now=available_now)
        finally:
            self.stop(query)

    def capture(self) -> None:
        """New sink rows and newly committed batches since the last capture, as history ops."""
        if self.sandbox.sink_file.exists():
            lines = self.sandbox.sink_file.read_text().splitlines()
            for line in lines[self._rows_logged :]:
                self.recorder.log("sink", self.row_kind, **json.loads(line))
            self._rows_logged = len(lines)
        for path in sorted(self.sandbox.inside("sink").glob("batch-*.jsonl")):
            if path.name not in self._batch_files_logged:
                self._batch_files_logged.add(path.name)
                for line in path.read_text().splitlines():
                    self.recorder.log("sink", self.row_kind, **json.loads(line))
        for batch in committed_batches(self.sandbox):
            if batch not in self._batches_logged:
                self._batches_logged.add(batch)
                self.recorder.log(
                    "spark", "checkpoint.batch", batch=batch, files=batch_files(self.sandbox, batch)
                )

    def capture_store(self) -> None:
        """What the sink stores now, as ``sink.row`` ops (once, when a trial is judged).

        The pipeline's own rows (``read_output``) if it has a sink of its own; otherwise
        raceproof's recording read by the store rule (``Pipeline.store_rule``, the output
        mode's meaning): ``upsert`` keeps the last row per key, ``snapshot`` the last batch's. Each stored row is attributed
        to the batch that delivered it: the n-th copy of a key to its n-th delivery, so a
        duplicated row names the batch that was re-run.
        """
        if not self.judges_store:
            return
        fields = self.pipeline.key_fields
        deliveries: dict[tuple[str, ...], list[tuple[int, Any]]] = {}
        delivered: list[tuple[int, dict[str, Any]]] = []
        for op in self.recorder.history.of_kind("batch.row"):
            row = dict(op.get("row") or {})
            key = tuple(str(row.get(f)) for f in fields)
            deliveries.setdefault(key, []).append((int(op.get("batch")), op.get("delivery")))
            delivered.append((int(op.get("batch")), row))
        if self.pipeline.reads_own_output():
            stored = calling_user("read_output(spark)", self.pipeline.read_output, self.spark)
            rows = returned_rows("read_output(spark)", stored, none_ok=True)
        elif self.pipeline.store_rule() == "snapshot":
            last = delivered[-1][0] if delivered else None
            rows = list(
                {
                    tuple(str(r.get(f)) for f in fields): r for b, r in delivered if b == last
                }.values()
            )
        else:  # "upsert": each delivered row replaces the key's last one
            rows = list({tuple(str(r.get(f)) for f in fields): r for _, r in delivered}.values())
        seen: dict[tuple[str, ...], int] = {}
        for row in sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str)):
            key = tuple(str(row.get(f)) for f in fields)
            copy = seen.get(key, 0)
            seen[key] = copy + 1
            batches = deliveries.get(key, [])
            batch, delivery = batches[min(copy, len(batches) - 1)] if batches else (-1, None)
            self.recorder.log(
                "sink", "sink.row", batch=batch, delivery=delivery, row=row, stored=True
            )

    def capture_state(self) -> None:
        """Each committed batch's state store rows, through Spark's state data source."""
        for batch in committed_batches(self.sandbox):
            frame = (
                self.spark.read.format("statestore")
                .option("batchId", batch)
                .load(str(self.sandbox.checkpoint))
            )
            for key, count in sorted(self.pipeline.state_count(r) for r in frame.collect()):
                self.recorder.log("spark", "state.row", batch=batch, key=list(key), count=count)


def committed_batches(sandbox: Sandbox) -> list[int]:
    commits = sandbox.checkpoint / "commits"
    if not commits.exists():
        return []
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())


def _log_offset(sandbox: Sandbox, batch: int, source: int = 0) -> int:
    """A file source's log offset a micro-batch ended at (-1 before the first, or none)."""
    entry = sandbox.checkpoint / "offsets" / str(batch)
    if batch < 0 or not entry.exists():
        return -1
    lines = entry.read_text().splitlines()  # version, metadata, then one line per source
    if len(lines) <= 2 + source or not lines[2 + source].strip().startswith("{"):
        return -1
    return int(json.loads(lines[2 + source]).get("logOffset", -1))


def batch_files(sandbox: Sandbox, batch: int) -> list[str]:
    """The input files ``batch`` read: each source's log entries between its offsets.

    Micro-batch ids and the file source's log offsets differ as soon as Spark
    runs a batch without new data (to advance the watermark), so the files
    come from ``offsets/`` (where each batch ended, one line per source) and
    ``sources/N/``.
    """
    names = []
    sources = sandbox.checkpoint / "sources"
    count = sum(1 for p in sources.iterdir() if p.name.isdigit()) if sources.exists() else 0
    for source in range(max(count, 1)):
        first = _log_offset(sandbox, batch - 1, source) + 1
        for offset in range(first, _log_offset(sandbox, batch, source) + 1):
            entry = sources / str(source) / str(offset)
            if entry.exists():
                for line in entry.read_text().splitlines()[1:]:
                    if line.strip():
                        names.append(json.loads(line)["path"].rsplit("/", 1)[-1])
    return sorted(names)
