"""A windowed count: 10-second event-time windows, a 10-second watermark, append mode.

The example pipeline every experiment was first written for. It is an
ordinary ``Pipeline``: ``raceproof spark-check --pipeline
raceproof.spark_integration.pipelines.windowed_count:pipeline`` is what
``--pipeline windowed-count`` (the default) runs.
"""

from __future__ import annotations

from typing import Any

from raceproof.spark_integration.pipeline import (
    TIME_FORMAT,
    Pipeline,
    Record,
    Row,
    second_of,
    timestamp,
)

WINDOW_S = 10
WATERMARK_S = 10


def window_of(ts: str) -> str:
    """The start of the window a record's ``ts`` falls in."""
    second = second_of(ts)
    return timestamp(second - second % WINDOW_S)


class WindowedCount(Pipeline):
    name = "windowed-count"
    schema = "key STRING, ts TIMESTAMP"
    key_fields = ("window", "key")
    state_counts = True
    max_lateness_s = WATERMARK_S

    def final_at(self, record: Record) -> int:
        second = second_of(record["ts"])
        return second - second % WINDOW_S + WINDOW_S  # the window's end

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        counted = (
            source.withWatermark("ts", f"{WATERMARK_S} seconds")
            .groupBy(F.window("ts", f"{WINDOW_S} seconds"), "key")
            .count()
        )
        return counted.select(F.col("window.start").alias("window"), "key", "count")

    def expected(self, records: list[Record]) -> list[Row]:
        counts: dict[tuple[str, str], int] = {}
        for record in records:
            row = (window_of(record["ts"]), record["key"])
            counts[row] = counts.get(row, 0) + 1
        return [{"window": w, "key": k, "count": n} for (w, k), n in sorted(counts.items())]

    def count_key(self, record: Record) -> tuple[str, ...]:
        return (window_of(record["ts"]), str(record["key"]))

    def state_count(self, row: Any) -> tuple[tuple[str, ...], int]:
        window = row["key"]["window"]["start"].strftime(TIME_FORMAT)
        return (window, str(row["key"]["key"])), int(row["value"]["count"])


def pipeline() -> WindowedCount:
    return WindowedCount()
