"""Pipeline files as a data engineer writes them: Python functions at the top level of the file.

``raceproof spark-check --pipeline property_tests/spark_files/udf_kinds.py:FACTORY``
loads this file by its path. Every function Spark runs on its Python workers is
defined at the top level of this file (or of its sibling ``udf_helpers.py``), so
the workers must get it from the file itself (the UDFs' return types are
``DataType`` objects: PySpark 4 parses a DDL string such as ``"string"`` in the
session, which does not exist yet when the file is loaded): a pandas UDF, a Python UDF, a
``mapInPandas`` function, an ``applyInPandasWithState`` function (a running total
per key, of keys the pandas UDF upper-cased), and a UDF calling a helper imported
from the sibling file. Each factory gives one of them; ``expected`` is the
reference, the same for every kind: one row per input record, the key upper-cased
(the state pipeline: a count per upper-cased key).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.functions import pandas_udf, udf
from pyspark.sql.types import StringType
from udf_helpers import tagged

from raceproof.spark_integration.pipeline import Pipeline, Record, Row


def upper_keys(keys: pd.Series) -> pd.Series:
    """The pandas UDF's function: every key upper-cased."""
    return keys.str.upper()


# Made with a call, not a decorator: the UDF's function keeps its own name in the module, so
# cloudpickle pickles it by reference to this file (a decorated one is found under no name).
shout = pandas_udf(upper_keys, StringType())


def upper_one(key: str) -> str:
    """A top-level helper of the Python UDF (it travels by the file's name, or by value)."""
    return key.upper()


@udf(StringType())
def shout_one(key):  # no type hints: PySpark 4 takes hints for an Arrow UDF's
    """A Python UDF: one key upper-cased, by the file's own helper."""
    return upper_one(key)


@udf(StringType())
def tag_one(key):
    """A Python UDF that calls the sibling file's helper."""
    return tagged(key)


def shout_frames(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """``mapInPandas``'s function: each frame with its keys upper-cased."""
    for frame in frames:
        yield frame.assign(key=frame["key"].str.upper())


def running_total(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
    """``applyInPandasWithState``'s function: the records seen per key so far, emitted each batch."""
    total = int(state.get[0]) if state.exists else 0
    for frame in frames:
        total += len(frame)
    state.update((total,))
    yield pd.DataFrame({"key": [key[0]], "total": [total]})


class Rows(Pipeline):
    """One output row per input record: (key, ts), the key as ``convert`` makes it."""

    name = "pandas-udf"
    key_fields = ("key", "ts")

    def convert(self, key: str) -> str:
        return key.upper()

    def query(self, source: Any) -> Any:
        return source.select(shout("key").alias("key"), "ts")

    def expected(self, records: list[Record]) -> list[Row]:
        return [{"key": self.convert(str(r["key"])), "ts": r["ts"]} for r in records]


class PythonUdf(Rows):
    name = "python-udf"

    def query(self, source: Any) -> Any:
        return source.select(shout_one("key").alias("key"), "ts")


class MapInPandas(Rows):
    name = "map-in-pandas"

    def query(self, source: Any) -> Any:
        return source.mapInPandas(shout_frames, schema="key STRING, ts TIMESTAMP")


class SiblingHelper(Rows):
    name = "sibling-helper"

    def convert(self, key: str) -> str:
        return tagged(key)

    def query(self, source: Any) -> Any:
        return source.select(tag_one("key").alias("key"), "ts")


class RunningTotal(Pipeline):
    """applyInPandasWithState's running total per key, the key upper-cased by the pandas UDF.

    The UDF runs before the grouping: after it (on applyInPandasWithState's output) PySpark
    4.3.0's plan fails with ``ClassCastException: GenericInternalRow cannot be cast to
    UnsafeRow`` in the first batch, a fault of Spark's own and no subject of this test.
    """

    name = "pandas-state-total"
    output_mode = "update"
    key_fields = ("key",)

    def query(self, source: Any) -> Any:
        from pyspark.sql.streaming.state import GroupStateTimeout

        keys = source.select(shout("key").alias("key"), "ts")
        return keys.groupBy("key").applyInPandasWithState(
            running_total,
            outputStructType="key STRING, total LONG",
            stateStructType="total LONG",
            outputMode="update",
            timeoutConf=GroupStateTimeout.NoTimeout,
        )

    def expected(self, records: list[Record]) -> list[Row]:
        totals: dict[str, int] = {}
        for record in records:
            key = str(record["key"]).upper()
            totals[key] = totals.get(key, 0) + 1
        return [{"key": key, "total": n} for key, n in sorted(totals.items())]


def pandas_udf_rows() -> Rows:
    return Rows()


def python_udf_rows() -> PythonUdf:
    return PythonUdf()


def map_in_pandas_rows() -> MapInPandas:
    return MapInPandas()


def sibling_helper_rows() -> SiblingHelper:
    return SiblingHelper()


def running_totals() -> RunningTotal:
    return RunningTotal()
