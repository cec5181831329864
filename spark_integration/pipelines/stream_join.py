"""A stream–stream left outer join with watermarks: orders joined to their payments.

Each scripted event (key, second) is an order at ``second``; an order at an odd
second is paid 2 seconds later, an order at an even second is never paid. The
join matches a payment to an order of the same key within 5 seconds after it.
Both sides come from one file source (a ``side`` column splits them), each
with a 10-second watermark. A paid order is emitted as soon as its payment
arrives; an unpaid one only when the watermark passes its time bound, which
makes the join's state (both sides' buffered rows) the thing a drain must
flush and a restored checkpoint must not replay.
"""

from __future__ import annotations

from typing import Any

from raceproof.spark_integration.pipeline import Pipeline, Record, Row, second_of, timestamp

WATERMARK_S = 10
BOUND_S = 5
PAID_AFTER_S = 2


class StreamJoin(Pipeline):
    name = "stream-join"
    schema = "side STRING, key STRING, ts TIMESTAMP"
    key_fields = ("key", "order_ts")
    sentinel_second = 100_001  # odd: an order and its payment, so both sides' watermarks move
    join_type = "leftOuter"  # an unpaid order gives a row with no payment

    def records(self, key: str, second: int) -> list[Record]:
        order = {"side": "order", "key": key, "ts": timestamp(second)}
        if second % 2 == 0:
            return [order]
        paid = {"side": "payment", "key": key, "ts": timestamp(second + PAID_AFTER_S)}
        return [order, paid]

    def query(self, source: Any) -> Any:
        from pyspark.sql import functions as F

        orders = (
            source.where("side = 'order'")
            .select(F.col("key").alias("order_key"), F.col("ts").alias("order_ts"))
            .withWatermark("order_ts", f"{WATERMARK_S} seconds")
        )
        payments = (
            source.where("side = 'payment'")
            .select(F.col("key").alias("pay_key"), F.col("ts").alias("paid_ts"))
            .withWatermark("paid_ts", f"{WATERMARK_S} seconds")
        )
        condition = F.expr(
            f"order_key = pay_key AND paid_ts >= order_ts "
            f"AND paid_ts <= order_ts + interval {BOUND_S} seconds"
        )
        joined = orders.join(payments, condition, self.join_type)
        return joined.select(F.col("order_key").alias("key"), "order_ts", "paid_ts")

    def expected(self, records: list[Record]) -> list[Row]:
        orders = [(r["key"], second_of(r["ts"])) for r in records if r["side"] == "order"]
        paid = [(r["key"], second_of(r["ts"])) for r in records if r["side"] == "payment"]
        rows = []
        for key, at in sorted(orders):
            matches: list[int | None] = [
                p for k, p in sorted(paid) if k == key and at <= p <= at + BOUND_S
            ]
            for match in matches or [None]:
                rows.append(
                    {
                        "key": key,
                        "order_ts": timestamp(at),
                        "paid_ts": None if match is None else timestamp(match),
                    }
                )
        return rows


def pipeline() -> StreamJoin:
    return StreamJoin()
