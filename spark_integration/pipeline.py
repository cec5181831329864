"""The pipeline interface: how a user describes their own PySpark streaming job to ``spark-check``.

``raceproof spark-check --pipeline package.module:factory`` (or
``path/to/file.py:factory``) calls ``factory()`` and gets a ``Pipeline``. The
fault experiments only ever talk to that object, so the built-in jobs
(``spark_integration/pipelines/``) are written against the very same interface
a user's module is, and nothing works only inside this repository.

A pipeline says

- what its input is: ``schema`` (the DDL of one JSON input record) and
  ``records(key, second)``, the records one event of the experiments' script
  becomes (an event has a key and an event-time second since ``EPOCH``);
- how the query is built: ``query(source)``, their transformations on the
  source DataFrame (with ``sources`` declared, a dict of one DataFrame per
  file source, each record written to the one ``source_of(record)`` names),
  and ``output_mode``; raceproof's recording ``foreachBatch``
  sink sits around the user's own ``sink(batch, batch_id)`` if they give one;
- what the output must be: ``output(row)`` (a sink row as JSON-able fields),
  ``key_fields`` (what identifies an output row: the same key twice is a
  duplicate), ``expected(records)`` (the reference: the rows the inputs read
  must give), ``complete_after_drain`` (every expected row is emitted once a
  drain ends) and, for replay equivalence, ``state_counts`` with
  ``state_count(row)`` (a state store row as a per-key count of input records)
  and ``count_key(record)``.

``spark_conf()`` gives Spark settings and jars (``spark.jars``) for the
session raceproof builds, so a JDBC sink's driver needs no environment
variable. A pipeline with a sink of its own adds ``begin_trial`` (a fresh folder per
trial), ``read_output`` (the rows its sink stored, which every checker then
judges) and, for a sink that is not ``foreachBatch``, ``write_stream``;
``stored_as`` overrides how its output mode stores rows; ``max_lateness_s``,
``event_time`` (the event-time column, checked to be in ``schema``) and
``final_at`` enable generated late input (docs/howto/spark-sinks.md,
"Realistic input"); the drain's sentinel event is ``sentinel_key`` at
``sentinel_second``, and the rows its records give are recognised by that
declaration (``sentinel_records``), never by their text. Whatever the
user's code raises becomes ``PipelineRaised`` (``calling_user``): verdict
``error``, exit 4, never a bug in raceproof.

The experiments that apply to a pipeline are the ones whose needs it meets
(``applicable``): replay equivalence needs ``state_counts``, the drain
experiments need ``complete_after_drain``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from raceproof.sim.errors import Signalled, said

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"

Record = dict[str, Any]
Row = dict[str, Any]


# PySpark 4 parses a UDF's return type given as DDL text ("string") in the session, and a
# pipeline file is loaded before raceproof starts one (its spark_conf() shapes the session).
NO_SESSION_YET = (
    " (raceproof loads the file before it starts Spark: give a UDF's return type as a "
    "DataType, StringType() rather than 'string', or make the UDF inside query())"
)


class PipelineError(ValueError):
    """The --pipeline argument does not name a loadable pipeline (a usage error)."""


# DESIGN.md's exit code for a model, checker or user pipeline that raised (verdict ``error``).
EXIT_PIPELINE_ERROR = 4  # the same code as raceproof.runs.runner.EXIT_ERROR: verdict `error`


class PipelineRaised(Exception):
    """The user's own code (factory, query, reference, hooks) raised or broke the interface.

    Not a bug in raceproof and not a found race: ``spark-check`` reports it as
    verdict ``error`` on exit 4, with ``frames`` (the user's own stack frames).
    """

    def __init__(self, message: str, frames: str = "") -> None:
        super().__init__(message)
        self.frames = frames


def user_frames(exc: BaseException) -> str:
    """The traceback of ``exc`` without raceproof's and pyspark's own frames (the user's code)."""
    import traceback

    keep = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if "/raceproof/" not in frame.filename
        and "/spark_integration/" not in frame.filename
        and "/pyspark/" not in frame.filename
        and "/py4j/" not in frame.filename
    ]
    lines = traceback.format_list(keep)
    return "".join(lines) + f"{type(exc).__name__}: {said(exc)}".removesuffix(": ")


def calling_user(what: str, call: Any, *args: Any, before_spark: bool = False) -> Any:
    """``call(*args)``, the user's code: whatever it raises becomes a ``PipelineRaised`` naming ``what``.

    Every ``BaseException`` but a real signal's (``Signalled``) is the user's, a
    ``KeyboardInterrupt`` or ``GeneratorExit`` it raises included. One exception:
    while PySpark's own SIGINT handler is installed (a session someone else made;
    raceproof's sessions put the command's handler back, ``session.started``), it
    raises a plain ``KeyboardInterrupt`` for a real Ctrl-C, so there one is taken for
    the signal, unless ``before_spark`` (the factory, called before any session).
    """
    try:
        return call(*args)
    except PipelineRaised:
        raise
    except BaseException as exc:  # sys.exit() in the user's code is theirs too
        if isinstance(exc, Signalled) or (
            isinstance(exc, KeyboardInterrupt) and not before_spark and pyspark_takes_sigint()
        ):
            raise
        first = (said(exc).strip().splitlines() or [""])[0]  # whole: never cut mid-word
        named = f"{type(exc).__name__}: {first}".removesuffix(": ")
        raise PipelineRaised(f"pipeline error: {what} raised {named}", user_frames(exc)) from exc


def pyspark_takes_sigint() -> bool:
    """Whether SIGINT's handler now is PySpark's (it raises a plain ``KeyboardInterrupt``)."""
    import signal

    return str(getattr(signal.getsignal(signal.SIGINT), "__module__", "")).startswith("pyspark")


def timestamp(second: int) -> str:
    """The event-time string of ``second`` seconds after ``EPOCH`` (what a record's ts holds)."""
    return (EPOCH + timedelta(seconds=second)).strftime(TIME_FORMAT)


def second_of(ts: str) -> int:
    """The inverse of ``timestamp``."""
    moment = datetime.strptime(ts, TIME_FORMAT).replace(tzinfo=UTC)
    return int((moment - EPOCH).total_seconds())


def jsonable(value: Any) -> Any:
    """A Spark row value as JSON: timestamps as ``TIME_FORMAT`` strings, structs as dicts."""
    if isinstance(value, datetime):
        return value.strftime(TIME_FORMAT)
    if isinstance(value, date):
        return value.isoformat()
    if hasattr(value, "asDict"):
        return {k: jsonable(v) for k, v in value.asDict().items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


STORE_RULES = ("append", "upsert", "snapshot")


class Pipeline:
    """Subclass and override; every default below is what the common case wants."""

    name: str = "pipeline"
    schema: str = "key STRING, ts TIMESTAMP"
    output_mode: str = "append"
    # How the sink stores what the query emits, which is what the checkers judge. ``None``: by
    # the output mode's meaning: append -> "append" (every emitted row is stored: a key emitted
    # twice is a duplicate), update -> "upsert" (the last row emitted per key stands),
    # complete -> "snapshot" (the last batch's rows are the whole result table). Declare
    # another rule to override it (an update-mode job whose sink appends: "append").
    stored_as: str | None = None
    key_fields: tuple[str, ...] = ("key",)
    complete_after_drain: bool = True
    # The drain's sentinel event: its key, and when it is (past every window and join bound the
    # script uses). Whatever rows its records give are the drain's, never judged as output.
    sentinel_key: str = "__sentinel__"
    sentinel_second: int = 100_000
    # The event-time column of an input record (what the watermark is on): a ``schema`` column.
    event_time: str = "ts"

    # The ``--pipeline`` spec this pipeline was loaded by (set by ``load_pipeline``): what a
    # second driver process loads it by (the ``kill`` experiment). ``None``: made in-process.
    loaded_from: str | None = None

    # More than one file source (a join reading two streams): their names. Each record goes to
    # the source ``source_of(record)`` names, and ``query`` is given a dict name -> DataFrame.
    sources: tuple[str, ...] = ()

    def source_of(self, record: Record) -> str:
        """Which of ``sources`` a record is read from (default: its ``source`` field)."""
        return str(record.get("source"))

    def records(self, key: str, second: int) -> list[Record]:
        """The input records one scripted event becomes."""
        return [{"key": key, "ts": timestamp(second)}]

    def query(self, source: Any) -> Any:
        """The streaming DataFrame the sink receives, built from the source DataFrame."""
        raise NotImplementedError(f"{type(self).__name__}.query(source) is not defined")

    def output(self, row: Any) -> Row:
        """One row of a micro-batch as the JSON-able fields raceproof records."""
        return {k: jsonable(v) for k, v in row.asDict().items()}

    def expected(self, records: list[Record]) -> list[Row]:
        """The reference: the rows a correct run emits for these input records."""
        raise NotImplementedError(f"{type(self).__name__}.expected(records) is not defined")

    def sink(self, batch: Any, batch_id: int) -> None:
        """The user's own sink, called after raceproof recorded the batch (default: none)."""

    # Generated input (the ``generated-input`` experiment): how late the pipeline's data may be
    # (the watermark delay it must tolerate; ``None``: no generated input), and from which
    # event second a record's state is final (its window's end for a windowed aggregation).
    max_lateness_s: int | None = None

    def final_at(self, record: Record) -> int:
        """The event second from which a watermark at or past it drops this record."""
        return self.event_second(record)

    def event_second(self, record: Record) -> int:
        """A record's event time (its ``event_time`` column) in seconds since ``EPOCH``."""
        if self.event_time not in record:
            raise PipelineRaised(
                f"pipeline error: records(key, second) gave {record}, with no event-time "
                f"column {self.event_time!r} (declare the pipeline's event_time)"
            )
        try:
            return second_of(str(record[self.event_time]))
        except ValueError:
            raise PipelineRaised(
                f"pipeline error: records(key, second) gave {self.event_time}="
                f"{record[self.event_time]!r}, not an event time as timestamp(second) writes it"
            ) from None

    def sentinel_records(self) -> list[Record]:
        """The drain's sentinel event as input records (``records`` of the declared sentinel)."""
        return list(
            calling_user(
                "records(key, second)", self.records, self.sentinel_key, self.sentinel_second
            )
        )

    # Replay equivalence: the state store read back as per-key counts of input records.
    state_counts: bool = False

    def state_count(self, row: Any) -> tuple[tuple[str, ...], int]:
        """One row of Spark's ``statestore`` data source as (state key, count of records)."""
        raise NotImplementedError(f"{type(self).__name__}.state_count(row) is not defined")

    def count_key(self, record: Record) -> tuple[str, ...]:
        """The state key an input record is counted under (with ``state_counts``)."""
        return tuple(str(record[f]) for f in self.key_fields)

    def count_keys(self, record: Record) -> list[tuple[str, ...]]:
        """Every state key an input record is counted under: override when one record feeds
        several keys (a sliding window, a record split into words); default ``[count_key]``."""
        return [self.count_key(record)]

    # The user's own sink under test. ``begin_trial`` gives each trial a fresh folder (point a
    # table name or a path there); ``read_output`` returns the rows the sink has stored, and
    # when a pipeline defines it every checker judges those rows instead of raceproof's
    # recording. ``write_stream`` replaces raceproof's foreachBatch with the pipeline's own
    # writer (Spark's file sink, say); raceproof adds the checkpoint and the trigger.
    def spark_conf(self) -> dict[str, str]:
        """Spark settings (and jars: ``spark.jars``) for the session raceproof builds."""
        return {}

    def begin_trial(self, spark: Any, folder: Path) -> None:
        """Called before each trial with a fresh, empty folder of that trial's own."""

    def read_output(self, spark: Any) -> list[Row] | None:
        """The rows the user's sink holds now (as ``output`` gives them); ``None``: no own sink."""
        return None

    def write_stream(self, frame: Any) -> Any:
        """The pipeline's own DataStreamWriter for ``frame`` (default ``None``: foreachBatch)."""
        return None

    def store_rule(self) -> str:
        """``append``, ``upsert`` or ``snapshot``: ``stored_as`` or the output mode's meaning."""
        if self.stored_as is not None:
            return self.stored_as
        return {"update": "upsert", "complete": "snapshot"}.get(self.output_mode, "append")

    def reads_own_output(self) -> bool:
        return type(self).read_output is not Pipeline.read_output

    def writes_own_stream(self) -> bool:
        return type(self).write_stream is not Pipeline.write_stream

    def applicable(self, needs: frozenset[str]) -> bool:
        """Whether this pipeline has what an experiment needs (``state``, ``drain``)."""
        has = {"state"} if self.state_counts else set()
        if self.complete_after_drain:
            has.add("drain")
        if self.max_lateness_s is not None:
            has.add("lateness")
        if self.loaded_from is not None:
            has.add("spec")
        if not self.writes_own_stream():
            has.add("batch-hook")  # raceproof's foreachBatch, where the batch-level faults act
            if self.reads_own_output() and type(self).sink is not Pipeline.sink:
                has.add("own-sink")  # the user's foreachBatch writer, judged at what it stored
        return needs <= has


def load_pipeline(spec: str) -> Pipeline:
    """``module.path:factory`` or ``path/to/file.py:factory`` -> the Pipeline ``factory()`` returns."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise PipelineError(f"--pipeline {spec!r}: expected MODULE:FACTORY or FILE.py:FACTORY")
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise PipelineError(f"--pipeline {spec!r}: no file {target}")
            # As `python path/to/job.py` does: the file's folder first, so sibling modules load.
            folder = str(path.resolve().parent)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            name = f"raceproof_user_pipeline_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(name, path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
            ship_by_value(Path(folder), name)
        else:
            module = importlib.import_module(target)
    except PipelineError:
        raise
    except BaseException as exc:  # the user's module: sys.exit() in it is no exit of ours
        if isinstance(exc, Signalled):  # a real signal stops the command
            raise
        hint = NO_SESSION_YET if "SESSION_OR_CONTEXT_NOT_EXISTS" in said(exc) else ""
        raise PipelineError(
            f"--pipeline {spec!r}: cannot import {target}: {_said(exc)}{hint}"
        ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise PipelineError(f"--pipeline {spec!r}: {target} has no callable {attr!r}")
    pipeline = calling_user(f"the factory {attr}() of {target}", factory, before_spark=True)
    if not isinstance(pipeline, Pipeline):
        raise PipelineError(
            f"--pipeline {spec!r}: {attr}() returned {type(pipeline).__name__}, not a "
            "raceproof.spark_integration.pipeline.Pipeline"
        )
    if pipeline.store_rule() not in STORE_RULES:
        raise PipelineError(
            f"--pipeline {spec!r}: stored_as = {pipeline.stored_as!r}; expected one of "
            + ", ".join(STORE_RULES)
        )
    with contextlib.suppress(AttributeError, TypeError):  # a class with __slots__ keeps None
        pipeline.loaded_from = spec
    from raceproof.spark_integration import preflight  # it builds on this module

    preflight.check(pipeline, spec)  # all that needs no Spark, before a session starts
    return pipeline


# Modules of a pipeline file's folder that are never shipped by value: raceproof itself (a
# pipeline file at the top of a raceproof checkout sits beside its folders).
NEVER_BY_VALUE = ("raceproof",)


def ship_by_value(folder: Path, name: str) -> None:
    """Pickle the pipeline file ``name`` and its sibling modules by value to Spark's workers.

    A file loaded by its path is a module only the driver can import (its name is
    raceproof's, its folder is on the driver's ``sys.path`` alone), and cloudpickle pickles
    a function defined at the top level of a module by reference, by the module's name:
    every pandas UDF, Python UDF, ``mapInPandas`` or ``applyInPandasWithState`` function of
    the file failed on the workers with ``ModuleNotFoundError`` (issue 48). Registered by
    value, the functions travel whole, with the globals they use; so do the modules the file
    imported from its own folder (a ``helpers.py`` beside it). Without PySpark nothing is
    registered (spark-check refuses later, naming the ``spark`` extra).
    """
    try:
        from pyspark import cloudpickle
    except ImportError:
        return
    for module_name in sorted({name, *siblings(folder)}):
        if module_name in sys.modules:
            cloudpickle.register_pickle_by_value(sys.modules[module_name])


def siblings(folder: Path) -> set[str]:
    """The top-level modules loaded now from ``folder`` itself: ``folder/x.py`` or ``folder/x/``."""
    found = set()
    for module_name, module in list(sys.modules.items()):
        top = module_name.partition(".")[0]
        source = getattr(module, "__file__", None)
        if "." in module_name or top in NEVER_BY_VALUE or not isinstance(source, str):
            continue
        path = Path(source).resolve()
        is_file = path.parent == folder and path.suffix == ".py"
        is_package = path.name == "__init__.py" and path.parent.parent == folder
        if is_file or is_package:
            found.add(module_name)
    return found


def settings_of(pipelines: list[Pipeline]) -> dict[str, str]:
    """Every pipeline's ``spark_conf()`` as one dict; PipelineRaised for junk, PipelineError
    when two pipelines want one setting to hold two values."""
    merged: dict[str, str] = {}
    for pipeline in pipelines:
        given = calling_user("spark_conf()", pipeline.spark_conf, before_spark=True)
        if not isinstance(given, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int | float | bool) for k, v in given.items()
        ):
            raise PipelineRaised(
                f"pipeline error: spark_conf() of {pipeline.name} returned {given!r:.200}, not a "
                "dict of setting name -> value"
            )
        for key, value in given.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if merged.get(key, text) != text:
                raise PipelineError(
                    f"the pipelines set {key} to both {merged[key]!r} and {text!r} in spark_conf()"
                )
            merged[key] = text
    from raceproof.spark_integration import preflight  # it builds on this module

    preflight.check_settings(merged)  # what Spark would refuse as it starts, before it does
    return merged


def _said(exc: BaseException) -> str:
    """One line for an exception of the user's code (``sys.exit(5)`` says so)."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    text = said(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


BUILT_IN = {
    "windowed-count": "raceproof.spark_integration.pipelines.windowed_count:pipeline",
    "stream-join": "raceproof.spark_integration.pipelines.stream_join:pipeline",
    "dedup": "raceproof.spark_integration.pipelines.dedup:pipeline",
}


def resolve(spec: str) -> Pipeline:
    """A built-in pipeline's name, or a MODULE:FACTORY / FILE.py:FACTORY spec."""
    return load_pipeline(BUILT_IN.get(spec, spec))
