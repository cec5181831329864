"""Pipelines with sinks of their own, as a data engineer writes them: PostgreSQL and Spark's Parquet sink.

Each is the built-in windowed count with a real sink behind it and the
``read_output`` hook, so every checker judges what the sink stored:

- ``appending``: a ``foreachBatch`` writer that inserts every micro-batch's
  rows into a PostgreSQL table without looking at ``batch_id`` (not
  idempotent: a re-run batch is stored twice);
- ``idempotent``: the same writer recording each ``batch_id`` in the same
  transaction as its rows and skipping a batch id it has already stored;
- ``upserting``: the writer upserting each row on its key (``ON CONFLICT
  DO UPDATE``), which a retried batch cannot duplicate;
- ``parquet``: Spark's own file sink (Parquet, with its ``_spark_metadata``
  log), read back through that log;
- ``merge_accumulating`` / ``merge_idempotent``: per-customer totals that a
  ``MERGE`` adds each batch's amounts to (a replay doubles a value, no row), and
  the same writer skipping a batch id it has merged.

The PostgreSQL connection string comes from ``RACEPROOF_TEST_POSTGRES`` (the
tests start the server), as a job reads its DSN from its environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from raceproof.spark_integration.pipeline import Pipeline, Record, Row, timestamp
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

CONNINFO_ENV = "RACEPROOF_TEST_POSTGRES"


class PostgresCounts(WindowedCount):
    """Windowed counts written into PostgreSQL by ``foreachBatch``."""

    idempotent = False

    def __init__(self) -> None:
        self.conninfo = os.environ[CONNINFO_ENV]
        self.name = "postgres-" + ("idempotent" if self.idempotent else "appending")

    def begin_trial(self, spark: Any, folder: Path) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as db:
            db.execute("DROP TABLE IF EXISTS counts, batches_done")
            db.execute("CREATE TABLE counts (win TEXT, key TEXT, count BIGINT)")
            db.execute("CREATE TABLE batches_done (batch_id BIGINT PRIMARY KEY)")

    def sink(self, batch: Any, batch_id: int) -> None:
        import psycopg

        rows = [self.output(row) for row in batch.collect()]
        with psycopg.connect(self.conninfo) as db:  # one transaction: the rows and the batch id
            if self.idempotent:
                new = db.execute(
                    "INSERT INTO batches_done VALUES (%s) ON CONFLICT DO NOTHING RETURNING batch_id",
                    (batch_id,),
                ).fetchone()
                if new is None:
                    return  # this batch id is stored already: a re-run writes nothing
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO counts VALUES (%s, %s, %s)",
                    [(r["window"], r["key"], r["count"]) for r in rows],
                )

    def read_output(self, spark: Any) -> list[Row]:
        import psycopg

        with psycopg.connect(self.conninfo) as db:
            stored = db.execute("SELECT win, key, count FROM counts ORDER BY win, key").fetchall()
        return [{"window": w, "key": k, "count": n} for w, k, n in stored]


class IdempotentPostgresCounts(PostgresCounts):
    idempotent = True


class UpsertPostgresCounts(PostgresCounts):
    """Each row upserted on its key (``ON CONFLICT (win, key) DO UPDATE``): a retried batch
    rewrites the rows it wrote before, so a retry stores each row once."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "postgres-upsert"

    def begin_trial(self, spark: Any, folder: Path) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as db:
            db.execute("DROP TABLE IF EXISTS counts, batches_done")
            db.execute(
                "CREATE TABLE counts (win TEXT, key TEXT, count BIGINT, PRIMARY KEY (win, key))"
            )

    def sink(self, batch: Any, batch_id: int) -> None:
        import psycopg

        rows = [self.output(row) for row in batch.collect()]
        with psycopg.connect(self.conninfo) as db, db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO counts VALUES (%s, %s, %s) "
                "ON CONFLICT (win, key) DO UPDATE SET count = EXCLUDED.count",
                [(r["window"], r["key"], r["count"]) for r in rows],
            )


class ParquetCounts(WindowedCount):
    """Windowed counts through Spark's own Parquet file sink."""

    name = "parquet-file-sink"
    path = ""

    def begin_trial(self, spark: Any, folder: Path) -> None:
        self.path = str(folder / "counts")

    def write_stream(self, frame: Any) -> Any:
        return frame.writeStream.format("parquet").option("path", self.path)

    def read_output(self, spark: Any) -> list[Row]:
        if not (Path(self.path) / "_spark_metadata").exists():
            return []
        return [self.output(row) for row in spark.read.parquet(self.path).collect()]


class MergeTotals(Pipeline):
    """Each customer's total amount, merged into PostgreSQL by ``foreachBatch`` (issue 48).

    The query passes each record's ``(customer, amount)`` through; the sink adds a
    batch's amounts to the stored totals with ``MERGE ... SET amount = t.amount +
    s.amount``. No row is ever stored twice, so a row count sees nothing: a replayed
    batch changes a value (customer b's 3 becomes 6), which only the sink's content
    judged against the reference shows. ``idempotent``: the batch id is recorded in the
    same transaction and a batch id already stored is skipped.
    """

    schema = "customer STRING, amount BIGINT, ts TIMESTAMP"
    key_fields = ("customer",)
    idempotent = False

    def __init__(self) -> None:
        self.conninfo = os.environ[CONNINFO_ENV]
        self.name = "postgres-merge-" + ("idempotent" if self.idempotent else "accumulating")

    def records(self, key: str, second: int) -> list[Record]:
        return [{"customer": key, "amount": second % 3 + 1, "ts": timestamp(second)}]

    def query(self, source: Any) -> Any:
        return source.select("customer", "amount")

    def expected(self, records: list[Record]) -> list[Row]:
        totals: dict[str, int] = {}
        for record in records:
            totals[record["customer"]] = totals.get(record["customer"], 0) + record["amount"]
        return [{"customer": c, "amount": n} for c, n in sorted(totals.items())]

    def begin_trial(self, spark: Any, folder: Path) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as db:
            db.execute("DROP TABLE IF EXISTS totals, merged_batches")
            db.execute("CREATE TABLE totals (customer TEXT PRIMARY KEY, amount BIGINT)")
            db.execute("CREATE TABLE merged_batches (batch_id BIGINT PRIMARY KEY)")

    def sink(self, batch: Any, batch_id: int) -> None:
        import psycopg

        amounts: dict[str, int] = {}
        for row in batch.collect():
            amounts[row["customer"]] = amounts.get(row["customer"], 0) + int(row["amount"])
        with psycopg.connect(self.conninfo) as db:  # one transaction: the totals and the batch id
            if (
                self.idempotent
                and not db.execute(
                    "INSERT INTO merged_batches VALUES (%s) ON CONFLICT DO NOTHING RETURNING batch_id",
                    (batch_id,),
                ).fetchone()
            ):
                return  # this batch is merged already: a replay adds nothing
            with db.cursor() as cursor:
                cursor.executemany(
                    "MERGE INTO totals t USING (VALUES (%s, %s::BIGINT)) AS s(customer, amount) "
                    "ON t.customer = s.customer "
                    "WHEN MATCHED THEN UPDATE SET amount = t.amount + s.amount "
                    "WHEN NOT MATCHED THEN INSERT (customer, amount) VALUES (s.customer, s.amount)",
                    sorted(amounts.items()),
                )

    def read_output(self, spark: Any) -> list[Row]:
        import psycopg

        with psycopg.connect(self.conninfo) as db:
            stored = db.execute("SELECT customer, amount FROM totals ORDER BY customer").fetchall()
        return [{"customer": c, "amount": n} for c, n in stored]


class IdempotentMergeTotals(MergeTotals):
    idempotent = True


def merge_accumulating() -> MergeTotals:
    return MergeTotals()


def merge_idempotent() -> IdempotentMergeTotals:
    return IdempotentMergeTotals()


def appending() -> PostgresCounts:
    return PostgresCounts()


def idempotent() -> IdempotentPostgresCounts:
    return IdempotentPostgresCounts()


def upserting() -> UpsertPostgresCounts:
    return UpsertPostgresCounts()


def parquet() -> ParquetCounts:
    return ParquetCounts()
