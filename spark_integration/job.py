"""The real job under test: event-time windows with a watermark, a stateful count, a recording sink.

The file source is made deterministic (one file per micro-batch, renamed into
place with distinct mtimes, ``maxFilesPerTrigger=1``). The ``foreachBatch``
sink records every row with its batch id and does **not** deduplicate, so a
replayed batch shows up as a duplicate. What happens is captured as history
ops (``input.record``, ``query.start``, ``query.stop``, ``sink.row``,
``checkpoint.batch``) for the same checkers the models use.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sim.history import History
from spark_integration.sandbox import Sandbox

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
WINDOW_S = 10
WATERMARK_S = 10


def window_of(second: int) -> str:
    start = EPOCH + timedelta(seconds=second - second % WINDOW_S)
    return start.strftime("%Y-%m-%dT%H:%M:%S")


class Recorder:
    """Builds the history of a real run: time is wall ms since the trial began."""

    def __init__(self) -> None:
        self.history = History()
        self.started = time.monotonic()

    def log(self, actor: str, kind: str, **fields: Any) -> None:
        last = self.history.ops[-1].time_ms if self.history.ops else 0
        now = int((time.monotonic() - self.started) * 1000)
        self.history.append(max(last, now), actor, kind, **fields)


class WindowedCountJob:
    def __init__(self, spark: Any, sandbox: Sandbox, recorder: Recorder) -> None:
        self.spark = spark
        self.sandbox = sandbox
        self.recorder = recorder

    def add_input(self, records: list[tuple[str, int]], *, sentinel: bool = False) -> None:
        """One micro-batch file of (key, event second) records."""
        lines = []
        for key, second in records:
            ts = (EPOCH + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%S")
            lines.append(json.dumps({"key": key, "ts": ts}))
            self.recorder.log(
                "driver", "input.record", key=key, window=window_of(second), sentinel=sentinel
            )
        path = self.sandbox.write_input(lines)
        self.recorder.log("driver", "input.file", file=path.name, records=len(records))

    def _query(self) -> Any:
        from pyspark.sql import functions as F

        frame = (
            self.spark.readStream.schema("key STRING, ts TIMESTAMP")
            .option("maxFilesPerTrigger", 1)
            .json(str(self.sandbox.input))
        )
        return (
            frame.withWatermark("ts", f"{WATERMARK_S} seconds")
            .groupBy(F.window("ts", f"{WINDOW_S} seconds"), "key")
            .count()
        )

    def _sink(self, batch: Any, batch_id: int) -> None:
        rows = batch.collect()
        with self.sandbox.sink_file.open("a") as handle:
            for row in rows:
                record = {
                    "batch": batch_id,
                    "window": row["window"]["start"].strftime("%Y-%m-%dT%H:%M:%S"),
                    "key": row["key"],
                    "count": int(row["count"]),
                }
                handle.write(json.dumps(record, sort_keys=True) + "\n")

    def run(self, *, available_now: bool = False) -> None:
        """Start, process everything available, stop (recorded)."""
        writer = (
            self._query()
            .writeStream.outputMode("append")
            .foreachBatch(self._sink)
            .option("checkpointLocation", str(self.sandbox.checkpoint))
        )
        writer = (
            writer.trigger(availableNow=True)
            if available_now
            else writer.trigger(processingTime="0 seconds")
        )
        self.recorder.log(
            "driver",
            "query.start",
            trigger="availableNow" if available_now else "processAllAvailable",
        )
        query = writer.start()
        try:
            if available_now:
                query.awaitTermination(300)
            else:
                query.processAllAvailable()
        finally:
            query.stop()
            self.recorder.log("driver", "query.stop")

    def capture(self) -> None:
        """The sink's rows and the checkpoint's committed batches, as history ops."""
        if self.sandbox.sink_file.exists():
            for line in self.sandbox.sink_file.read_text().splitlines():
                row = json.loads(line)
                self.recorder.log("sink", "sink.row", **row)
        self.sandbox.sink_file.unlink(missing_ok=True)
        for batch in committed_batches(self.sandbox):
            self.recorder.log("spark", "checkpoint.batch", batch=batch)


def committed_batches(sandbox: Sandbox) -> list[int]:
    commits = sandbox.checkpoint / "commits"
    if not commits.exists():
        return []
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())
