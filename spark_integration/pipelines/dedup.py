"""Deduplication within a watermark: each event id is emitted once, however often it is re-sent.

Each scripted event (key, second) becomes a record with id ``key@bucket``
(the 10-second bucket of ``second``) sent twice, one second apart, as an
at-least-once producer would. ``dropDuplicatesWithinWatermark(["id"])`` keeps
the ids it has seen in its state until the 10-second watermark passes them,
so the state is a set of ids: a restored or deleted state store lets an id
through again. The first copy of an id is emitted at once (append mode), so
there is nothing a drain has to flush.
"""

from __future__ import annotations

from typing import Any

from raceproof.spark_integration.pipeline import Pipeline, Record, Row, timestamp

BUCKET_S = 10
WATERMARK_S = 10


class Dedup(Pipeline):
    name = "dedup"
    schema = "id STRING, key STRING, ts TIMESTAMP"
    key_fields = ("id",)

    def records(self, key: str, second: int) -> list[Record]:
        event_id = f"{key}@{second - second % BUCKET_S}"
        return [
            {"id": event_id, "key": key, "ts": timestamp(second)},
            {"id": event_id, "key": key, "ts": timestamp(second + 1)},  # the re-send
        ]

    def query(self, source: Any) -> Any:
        deduplicated = source.withWatermark("ts", f"{WATERMARK_S} seconds")
        return deduplicated.dropDuplicatesWithinWatermark(["id"]).select("id", "key")

    def expected(self, records: list[Record]) -> list[Row]:
        ids = {(r["id"], r["key"]) for r in records}
        return [{"id": i, "key": k} for i, k in sorted(ids)]


def pipeline() -> Dedup:
    return Dedup()
