"""The drain's sentinel on a pipeline with several sources: said when it misses one (issue 48).

Under Spark's default ``multipleWatermarkPolicy=min`` a source the sentinel never
reaches holds the global watermark back, the drain flushes nothing, and the
baseline said ``PIPELINE WRONG`` blaming the job. ``trial.sentinel_missed`` names
the source and what to change; the baseline's message carries it. Spark-free:
it reads only the pipeline's declarations.
"""

from __future__ import annotations

from typing import Any

from property_tests.spark_generated_pipelines import TwoSourceJoin
from raceproof.spark_integration.pipeline import Pipeline, Record, timestamp
from raceproof.spark_integration.trial import sentinel_missed


class KeyRoutedUnion(Pipeline):
    """A union of two sources, each record routed by its key (the sentinel's key: one source)."""

    name = "key-routed-union"
    sources = ("left", "right")

    def records(self, key: str, second: int) -> list[Record]:
        return [{"key": key, "ts": timestamp(second), "source": "left" if key < "m" else "right"}]

    def query(self, source: Any) -> Any:
        return source["left"].unionByName(source["right"])


class EverySource(KeyRoutedUnion):
    def records(self, key: str, second: int) -> list[Record]:
        if key != self.sentinel_key:
            return super().records(key, second)
        return [{"key": key, "ts": timestamp(second), "source": s} for s in self.sources]


def test_a_sentinel_reaching_one_of_two_sources_is_said_with_what_to_change() -> None:
    said = sentinel_missed(KeyRoutedUnion())
    assert "reached no record of source right" in said, said
    assert "records('__sentinel__', 100000) gave records for left only" in said
    assert "multipleWatermarkPolicy=min" in said and "a record for every source" in said


def test_a_sentinel_on_every_source_or_one_source_is_not_said() -> None:
    assert sentinel_missed(EverySource()) == ""
    assert sentinel_missed(TwoSourceJoin()) == ""  # an order and a payment: both sources
    assert sentinel_missed(Pipeline()) == ""  # one source
