"""Pipelines generated-input once accused wrongly, as a data engineer writes them (issue 36's four false positives).

- ``key_derived_dedup``: ``dropDuplicatesWithinWatermark`` on an id built from
  the key (``c-50``), so the drain's sentinel gives the id
  ``__sentinel__-100000``: a row recognised as the sentinel's by the
  pipeline's declaration, not by its text;
- ``pandas_sessions``: sessions per key through ``applyInPandasWithState``
  (a 10 s gap, emitted once the watermark passes a session's end plus the
  gap): a late record Spark may keep moves a session's start;
- ``inner_join``: a stream-stream inner join of orders and payments; a
  repeated input event rightly gives its pair twice, as ``expected`` says;
- ``event_time_column``: the windowed count whose event-time column is
  called ``event_time`` (declared by ``event_time = "event_time"``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from raceproof.spark_integration.pipeline import Pipeline, Record, Row, second_of, timestamp
from raceproof.spark_integration.pipelines.stream_join import StreamJoin
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount, window_of

WATERMARK_S = 10
GAP_S = 10


class KeyDerivedDedup(Pipeline):
    name = "key-derived-dedup"
    schema = "id STRING, key STRING, ts TIMESTAMP"
    key_fields = ("id",)
    max_lateness_s = WATERMARK_S

    def records(self, key: str, second: int) -> list[Record]:
        return [{"id": f"{key}-{second - second % 10}", "key": key, "ts": timestamp(second)}]

    def query(self, source: Any) -> Any:
        marked = source.withWatermark("ts", f"{WATERMARK_S} seconds")
        return marked.dropDuplicatesWithinWatermark(["id"]).select("id", "key")

    def expected(self, records: list[Record]) -> list[Row]:
        return [{"id": i, "key": k} for i, k in sorted({(r["id"], r["key"]) for r in records})]


def _sessions(seconds: list[int]) -> list[tuple[int, int, int]]:
    """(start, end, events) of the sessions ``seconds`` form: a gap of more than GAP_S splits."""
    found: list[list[int]] = []
    for second in sorted(seconds):
        if found and second - found[-1][1] <= GAP_S:
            found[-1][1] = second
            found[-1][2] += 1
        else:
            found.append([second, second, 1])
    return [(s, e, n) for s, e, n in found]


EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, raceproof's EPOCH


def session_state(key: Any, frames: Iterator[Any], state: Any) -> Iterator[Any]:
    """applyInPandasWithState's function: the open sessions' event seconds are the state; a
    session whose end plus the gap the watermark has passed is emitted and forgotten."""
    import pandas as pd

    epoch = pd.Timestamp(EPOCH_MS, unit="ms")
    seconds: list[int] = json.loads(state.get[0]) if state.exists else []
    for frame in frames:
        seconds += [int((t - epoch).total_seconds()) for t in frame["ts"]]
    watermark_s = (state.getCurrentWatermarkMs() - EPOCH_MS) // 1000
    sessions = _sessions(seconds)
    closed = [s for s in sessions if s[1] + GAP_S < watermark_s]
    still = [s for s in sessions if s[1] + GAP_S >= watermark_s]
    if still:
        left = [x for x in seconds if any(s <= x <= e for s, e, _ in still)]
        state.update((json.dumps(sorted(left)),))
        state.setTimeoutTimestamp(EPOCH_MS + (min(e for _, e, _ in still) + GAP_S) * 1000)
    else:
        state.remove()
    yield pd.DataFrame(
        {
            "key": [key[0]] * len(closed),
            "session_start": [epoch + pd.Timedelta(seconds=s) for s, _, _ in closed],
            "events": [n for _, _, n in closed],
        }
    )


class PandasSessions(Pipeline):
    name = "pandas-sessions"
    schema = "key STRING, ts TIMESTAMP"
    key_fields = ("key", "session_start")
    max_lateness_s = WATERMARK_S

    def query(self, source: Any) -> Any:
        from pyspark.sql.streaming.state import GroupStateTimeout

        return (
            source.withWatermark("ts", f"{WATERMARK_S} seconds")
            .groupBy("key")
            .applyInPandasWithState(
                session_state,
                outputStructType="key STRING, session_start TIMESTAMP, events LONG",
                stateStructType="seconds STRING",
                outputMode="append",
                timeoutConf=GroupStateTimeout.EventTimeTimeout,
            )
        )

    def expected(self, records: list[Record]) -> list[Row]:
        by_key: dict[str, list[int]] = {}
        for record in records:
            by_key.setdefault(str(record["key"]), []).append(second_of(str(record["ts"])))
        return [
            {"key": key, "session_start": timestamp(start), "events": events}
            for key, seconds in sorted(by_key.items())
            for start, _, events in _sessions(seconds)
        ]


class InnerJoin(StreamJoin):
    """Orders joined to their payments, an inner join: an unpaid order gives no row."""

    name = "inner-join"
    max_lateness_s = WATERMARK_S
    join_type = "inner"

    def expected(self, records: list[Record]) -> list[Row]:
        return [row for row in super().expected(records) if row["paid_ts"] is not None]


class EventTimeColumn(WindowedCount):
    """The windowed count on an event-time column called ``event_time``."""

    name = "event-time-column"
    schema = "key STRING, event_time TIMESTAMP"
    event_time = "event_time"

    def records(self, key: str, second: int) -> list[Record]:
        return [{"key": key, "event_time": timestamp(second)}]

    def final_at(self, record: Record) -> int:
        second = self.event_second(record)
        return second - second % 10 + 10

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        counted = (
            source.withWatermark("event_time", f"{WATERMARK_S} seconds")
            .groupBy(F.window("event_time", "10 seconds"), "key")
            .count()
        )
        return counted.select(F.col("window.start").alias("window"), "key", "count")

    def expected(self, records: list[Record]) -> list[Row]:
        return super().expected([{"key": r["key"], "ts": r["event_time"]} for r in records])

    def count_key(self, record: Record) -> tuple[str, ...]:
        return (window_of(str(record["event_time"])), str(record["key"]))


def key_derived_dedup() -> KeyDerivedDedup:
    return KeyDerivedDedup()


def pandas_sessions() -> PandasSessions:
    return PandasSessions()


def inner_join() -> InnerJoin:
    return InnerJoin()


def event_time_column() -> EventTimeColumn:
    return EventTimeColumn()


class ShortWatermark(WindowedCount):
    """Declares 10 s of lateness, waits 0 s for it: generated-input must catch it at any seed."""

    name = "short-watermark"

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        counted = (
            source.withWatermark("ts", "0 seconds")
            .groupBy(F.window("ts", "10 seconds"), "key")
            .count()
        )
        return counted.select(F.col("window.start").alias("window"), "key", "count")


def short_watermark() -> ShortWatermark:
    return ShortWatermark()


class TwoSourceJoin(StreamJoin):
    """The left outer join of orders to payments, read from two file sources, one per stream."""

    name = "two-source-join"
    sources = ("orders", "payments")

    def source_of(self, record: Record) -> str:
        return f"{record['side']}s"

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        orders = (
            source["orders"]
            .select(F.col("key").alias("order_key"), F.col("ts").alias("order_ts"))
            .withWatermark("order_ts", f"{WATERMARK_S} seconds")
        )
        payments = (
            source["payments"]
            .select(F.col("key").alias("pay_key"), F.col("ts").alias("paid_ts"))
            .withWatermark("paid_ts", f"{WATERMARK_S} seconds")
        )
        condition = F.expr(
            "order_key = pay_key AND paid_ts >= order_ts "
            "AND paid_ts <= order_ts + interval 5 seconds"
        )
        joined = orders.join(payments, condition, self.join_type)
        return joined.select(F.col("order_key").alias("key"), "order_ts", "paid_ts")


def two_source_join() -> TwoSourceJoin:
    return TwoSourceJoin()


class TwoSourceUnion(WindowedCount):
    """Per-key counts in 10 s windows over the union of two file sources, each with its own
    10 s watermark (keys a and b are read from ``left``, c and the probe's from ``right``;
    the drain's sentinel from both, so each source's watermark passes every window)."""

    name = "two-source-union"
    schema = "key STRING, ts TIMESTAMP, source STRING"
    sources = ("left", "right")

    def records(self, key: str, second: int) -> list[Record]:
        ts = timestamp(second)
        if key == self.sentinel_key:
            return [{"key": key, "ts": ts, "source": name} for name in self.sources]
        return [{"key": key, "ts": ts, "source": "left" if key in ("a", "b") else "right"}]

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        left = source["left"].withWatermark("ts", f"{WATERMARK_S} seconds")
        right = source["right"].withWatermark("ts", f"{WATERMARK_S} seconds")
        counted = left.unionByName(right).groupBy(F.window("ts", "10 seconds"), "key").count()
        return counted.select(F.col("window.start").alias("window"), "key", "count")

    def expected(self, records: list[Record]) -> list[Row]:
        return super().expected([{"key": r["key"], "ts": r["ts"]} for r in records])


class MaxPolicyUnion(TwoSourceUnion):
    """The same union with ``multipleWatermarkPolicy=max``: the greatest source watermark drops
    a lagging source's records that its own 10 s lateness must keep."""

    name = "max-policy-union"

    def spark_conf(self) -> dict[str, str]:
        return {"spark.sql.streaming.multipleWatermarkPolicy": "max"}


def two_source_union() -> TwoSourceUnion:
    return TwoSourceUnion()


def max_policy_union() -> MaxPolicyUnion:
    return MaxPolicyUnion()


def _spark_sessions(seconds: list[int]) -> list[tuple[int, int]]:
    """(start, events) of Spark's session windows over ``seconds``: an event starts a window
    [t, t + GAP_S), and overlapping windows merge (an event less than GAP_S after the last)."""
    found: list[list[int]] = []
    for second in sorted(seconds):
        if found and second < found[-1][1] + GAP_S:
            found[-1][1] = second
            found[-1][2] += 1
        else:
            found.append([second, second, 1])
    return [(start, events) for start, _, events in found]


class SessionWindowCounts(Pipeline):
    """Events per ``session_window`` (a 10 s gap) and key, with a 10 s watermark.

    A record's session can end no sooner than its own second plus the gap, so that is
    where the watermark makes its state final (``final_at``)."""

    name = "session-window-counts"
    key_fields = ("key", "session_start")
    max_lateness_s = WATERMARK_S
    watermark_s = WATERMARK_S

    def final_at(self, record: Record) -> int:
        return self.event_second(record) + GAP_S

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        counted = (
            source.withWatermark("ts", f"{self.watermark_s} seconds")
            .groupBy(F.session_window("ts", f"{GAP_S} seconds"), "key")
            .count()
        )
        return counted.select("key", F.col("session_window.start").alias("session_start"), "count")

    def expected(self, records: list[Record]) -> list[Row]:
        by_key: dict[str, list[int]] = {}
        for record in records:
            by_key.setdefault(str(record["key"]), []).append(second_of(str(record["ts"])))
        return [
            {"key": key, "session_start": timestamp(start), "count": events}
            for key, seconds in sorted(by_key.items())
            for start, events in _spark_sessions(seconds)
        ]


class ShortSessionWatermark(SessionWindowCounts):
    """The same sessions with a 2 s watermark: shorter than the 10 s of declared lateness."""

    name = "short-session-watermark"
    watermark_s = 2


def session_window_counts() -> SessionWindowCounts:
    return SessionWindowCounts()


def short_session_watermark() -> ShortSessionWatermark:
    return ShortSessionWatermark()
