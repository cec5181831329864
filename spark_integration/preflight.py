"""What can be checked of a pipeline without Spark, checked before the session starts.

Why it exists: a pipeline whose ``schema`` is not DDL, whose ``output_mode`` is
``"bogus"``, whose ``max_lateness_s`` is ``-5`` or ``"10"``, whose hooks take
the wrong arguments or whose ``records`` returns ``5`` used to cost a Spark
session and a trial (50 to 140 s) and end in exit 70 with a traceback. Each is
now one line before the JVM starts:

* a declaration that is wrong (``schema``, ``output_mode``, ``max_lateness_s``,
  a hook's signature) is ``PipelineError``: bad input, exit 2;
* a hook that needs no Spark (``records(key, second)``, ``expected(records)``)
  is called once on a sample event, and what it raises or returns wrongly is
  ``PipelineRaised`` naming the hook and what it returned: verdict ``error``,
  exit 4.

What only a running query can show (``read_output`` returning ``5``,
``write_stream`` returning ``42``) is checked where the hook is called, by
``returned_rows`` and ``returned_writer``: the same ``error`` naming the hook.

``schema`` is parsed by ``ddl_columns``, a parser of Spark's DDL type grammar
(``DataTypeAstBuilder`` of Spark's ``sql/api`` module: the primitive type
names and their synonyms, ``DECIMAL(p, s)``, ``CHAR(n)``/``VARCHAR(n)``,
``ARRAY<T>``, ``MAP<K, V>``, ``STRUCT<name: T, ...>``, ``NOT NULL`` and
``COMMENT '...'``), because PySpark's own ``_parse_datatype_string`` asks the
JVM. A type it does not know is refused naming the column, so a DDL that only a
newer Spark accepts is said at once rather than guessed at.
"""

from __future__ import annotations

import inspect
import math
import re
from typing import Any

from raceproof.spark_integration.pipeline import (
    Pipeline,
    PipelineError,
    PipelineRaised,
    calling_user,
    jsonable,
)

OUTPUT_MODES = ("append", "update", "complete")
MAX_LATENESS_S = 10**8  # the scripts' event seconds stay below this
# Spark's primitive type names and synonyms (DataTypeAstBuilder.visitPrimitiveDataType).
PRIMITIVE_TYPES = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "BYTE",
        "SMALLINT",
        "SHORT",
        "INT",
        "INTEGER",
        "BIGINT",
        "LONG",
        "FLOAT",
        "REAL",
        "DOUBLE",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP_NTZ",
        "TIMESTAMP_LTZ",
        "STRING",
        "BINARY",
        "VOID",
        "VARIANT",
    }
)
SIZED_TYPES = frozenset({"CHAR", "CHARACTER", "VARCHAR"})
DECIMAL_TYPES = frozenset({"DECIMAL", "DEC", "NUMERIC"})
INTERVAL_UNITS = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"})
_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>`(?:[^`]|``)+`)|(?P<string>'(?:[^'\\]|\\.)*')|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>[0-9]+)|(?P<sym>[<>(),:]))"
)
# Each hook and the arguments raceproof calls it with (placeholders: only the count matters).
HOOKS = {
    "records": ("key", "second"),
    "query": ("source",),
    "output": ("row",),
    "expected": ("records",),
    "sink": ("batch", "batch_id"),
    "final_at": ("record",),
    "state_count": ("row",),
    "count_key": ("record",),
    "count_keys": ("record",),
    "begin_trial": ("spark", "folder"),
    "read_output": ("spark",),
    "write_stream": ("frame",),
    "spark_conf": (),
    "source_of": ("record",),
}

# A source's input folder name (``input/NAME``): one plain path component, no glob character.
SOURCE_NAME = re.compile(r"\w[\w.-]*")
# Settings Spark parses as an int (ConfigBuilder.intConf: the trimmed text, a 32-bit int) or a
# boolean (booleanConf: true or false in any case); those it also wants positive.
INT_SETTINGS = frozenset(
    {
        "spark.sql.shuffle.partitions",
        "spark.default.parallelism",
        "spark.task.maxFailures",
        "spark.sql.streaming.minBatchesToRetain",
        "spark.sql.streaming.numRecentProgressUpdates",
    }
)
POSITIVE_SETTINGS = frozenset(
    {"spark.sql.shuffle.partitions", "spark.sql.streaming.minBatchesToRetain"}
)
BOOL_SETTINGS = frozenset(
    {
        "spark.sql.adaptive.enabled",
        "spark.sql.ansi.enabled",
        "spark.sql.streaming.stopActiveRunOnRestart",
        "spark.sql.streaming.noDataMicroBatches.enabled",
        "spark.ui.enabled",
        "spark.ui.showConsoleProgress",
        "spark.speculation",
    }
)
INT = re.compile(r"[+-]?[0-9]+")
# SparkContext's masters: local, local[N|*], local[N|*, F], local-cluster[N, C, M], spark://...,
# k8s://... (SparkMasterRegex), and yarn.
MASTERS = (
    re.compile(r"spark://.+"),
    re.compile(r"k8s://.+"),
    re.compile(r"local"),
    re.compile(r"local\[([0-9]+|\*)\]"),
    re.compile(r"local\[([0-9]+|\*)\s*,\s*([0-9]+)\]"),
    re.compile(r"local-cluster\[\s*([0-9]+)\s*,\s*([0-9]+)\s*,\s*([0-9]+)\s*]"),
)
MASTER_RULE = (
    "Spark wants yarn, spark://HOST:PORT, k8s://..., local, local[N], local[*], local[N, F] "
    "or local-cluster[N, C, M]"
)


# -- DDL ---------------------------------------------------------------------------------------
class _Tokens:
    def __init__(self, text: str) -> None:
        self.items: list[tuple[str, str]] = []
        at = 0
        while at < len(text):
            if text[at:].strip() == "":
                break
            match = _TOKEN.match(text, at)
            if match is None:
                raise ValueError(f"unexpected {text[at:].strip()[:20]!r}")
            kind = match.lastgroup or ""
            self.items.append((kind, match.group(kind)))
            at = match.end()
        self.at = 0

    def peek(self) -> str:
        return self.items[self.at][1].upper() if self.at < len(self.items) else ""

    def take(self, kind: str | None = None) -> str:
        if self.at >= len(self.items):
            raise ValueError("it ends too early")
        found_kind, text = self.items[self.at]
        if kind is not None and found_kind != kind:
            raise ValueError(f"expected a {kind}, got {text!r}")
        self.at += 1
        return text

    def expect(self, symbol: str) -> None:
        if self.peek() != symbol:
            raise ValueError(f"expected {symbol!r}, got {self.peek() or 'the end'!r}")
        self.at += 1


def _name(tokens: _Tokens) -> str:
    kind, text = tokens.items[tokens.at] if tokens.at < len(tokens.items) else ("", "")
    if kind == "quoted":
        tokens.at += 1
        return text[1:-1].replace("``", "`")
    return tokens.take("word")


def _data_type(tokens: _Tokens) -> None:
    word = tokens.take("word").upper()
    if word in PRIMITIVE_TYPES:
        return
    if word in SIZED_TYPES:
        tokens.expect("(")
        tokens.take("number")
        tokens.expect(")")
    elif word in DECIMAL_TYPES:
        if tokens.peek() == "(":
            tokens.expect("(")
            tokens.take("number")
            if tokens.peek() == ",":
                tokens.expect(",")
                tokens.take("number")
            tokens.expect(")")
    elif word == "INTERVAL":
        if tokens.peek() in INTERVAL_UNITS:
            tokens.take()
            if tokens.peek() == "TO":
                tokens.take()
                if tokens.take().upper() not in INTERVAL_UNITS:
                    raise ValueError("INTERVAL ... TO needs a unit")
    elif word == "ARRAY":
        tokens.expect("<")
        _data_type(tokens)
        tokens.expect(">")
    elif word == "MAP":
        tokens.expect("<")
        _data_type(tokens)
        tokens.expect(",")
        _data_type(tokens)
        tokens.expect(">")
    elif word == "STRUCT":
        tokens.expect("<")
        if tokens.peek() != ">":
            _fields(tokens, closing=">")
        tokens.expect(">")
    else:
        raise ValueError(f"{word!r} is not a Spark SQL type")


def _fields(tokens: _Tokens, closing: str) -> list[str]:
    names = []
    while True:
        names.append(_name(tokens))
        if tokens.peek() == ":":
            tokens.expect(":")
        _data_type(tokens)
        if tokens.peek() == "NOT":
            tokens.take()
            if tokens.take().upper() != "NULL":
                raise ValueError("NOT must be followed by NULL")
        if tokens.peek() == "COMMENT":
            tokens.take()
            tokens.take("string")
        if tokens.peek() != ",":
            break
        tokens.expect(",")
    if tokens.peek() != closing:
        raise ValueError(f"unexpected {tokens.peek()!r} after a column")
    return names


def ddl_columns(schema: object) -> list[str]:
    """The column names of a DDL schema (``"key STRING, ts TIMESTAMP"``); ValueError saying why not."""
    if not isinstance(schema, str) or not schema.strip():
        raise ValueError(f"must be a DDL string such as 'key STRING, ts TIMESTAMP', got {schema!r}")
    tokens = _Tokens(schema)
    names = _fields(tokens, closing="")
    duplicated = sorted({n for n in names if [m.lower() for m in names].count(n.lower()) > 1})
    if duplicated:
        raise ValueError(f"column {duplicated[0]!r} appears twice")
    return names


# -- declarations and hooks -------------------------------------------------------------------
def check_declarations(pipeline: Pipeline, spec: str) -> None:
    """``schema``, ``output_mode``, ``max_lateness_s`` and the hooks' signatures; PipelineError."""
    where = f"--pipeline {spec!r}"
    try:
        columns = ddl_columns(pipeline.schema)
    except ValueError as exc:
        raise PipelineError(f"{where}: schema = {pipeline.schema!r} is not DDL: {exc}") from None
    if pipeline.max_lateness_s is not None and pipeline.event_time not in columns:
        raise PipelineError(
            f"{where}: event_time = {pipeline.event_time!r} is not a column of its schema "
            f"({', '.join(columns)})"
        )
    if pipeline.output_mode not in OUTPUT_MODES:
        raise PipelineError(
            f"{where}: output_mode = {pipeline.output_mode!r}; expected one of "
            + ", ".join(OUTPUT_MODES)
        )
    lateness = pipeline.max_lateness_s
    if lateness is not None and (
        isinstance(lateness, bool)
        or not isinstance(lateness, int | float)
        or not math.isfinite(lateness)
        or lateness != int(lateness)
        or not 0 <= lateness <= MAX_LATENESS_S
    ):
        raise PipelineError(
            f"{where}: max_lateness_s = {lateness!r}; expected None or a whole number of "
            f"seconds in 0..{MAX_LATENESS_S}"
        )
    check_sources(pipeline.sources, where)
    for hook, arguments in HOOKS.items():
        method = getattr(pipeline, hook, None)
        if not callable(method):
            raise PipelineError(f"{where}: {hook} is not a method (it is {method!r})")
        try:
            inspect.signature(method).bind(*arguments)
        except TypeError as exc:
            raise PipelineError(
                f"{where}: {hook}({', '.join(arguments)}) cannot be called so: {exc}"
            ) from None
        except ValueError:
            continue  # a builtin without a signature: only calling it can tell


def check_sources(sources: object, where: str) -> None:
    """``sources``: a tuple (or list) of distinct names, each one plain folder name: the input
    folder of each source is ``input/NAME`` of the trial's sandbox, and Spark reads it whole."""
    if not isinstance(sources, tuple | list) or not all(isinstance(n, str) for n in sources):
        raise PipelineError(
            f"{where}: sources = {_shown(sources)}; expected a tuple of source names (strings), "
            "or () for one source"
        )
    for name in sources:
        if not SOURCE_NAME.fullmatch(name):
            raise PipelineError(
                f"{where}: sources holds {name!r}; a source's name is a folder name of letters, "
                "digits, '_', '-' and '.' that does not start with '.' or '-'"
            )
    twice = sorted({n for n in sources if sources.count(n) > 1})
    if twice:
        raise PipelineError(f"{where}: sources names {twice[0]!r} twice")


def check_settings(settings: dict[str, str]) -> None:
    """The ``spark_conf()`` values that can be judged without Spark, by Spark's own rules;
    PipelineError naming the setting. Spark judges the rest as the session starts."""
    for key, value in settings.items():
        why = _refused(key, value)
        if why:
            raise PipelineError(f"spark_conf() sets {key} = {value!r}: {why}")


def _refused(key: str, value: str) -> str:
    """Why Spark would refuse ``value`` for ``key`` ("" if it would not, or we cannot tell)."""
    text = value.strip()
    if key == "spark.master":
        return master_refused(text)
    if key in INT_SETTINGS:
        if not INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
            return "Spark wants a whole number (an int) here"
        if key in POSITIVE_SETTINGS and int(text) <= 0:
            return "Spark wants a positive number here"
    if key in BOOL_SETTINGS and text.lower() not in ("true", "false"):
        return "Spark wants true or false here"
    return ""


def master_refused(master: str) -> str:
    """Why Spark would refuse this master URL ("" if it takes it): SparkContext's forms
    (SparkMasterRegex), and yarn."""
    if master == "yarn" or any(form.fullmatch(master) for form in MASTERS):
        return ""
    return MASTER_RULE


def returned_rows(what: str, value: Any, *, none_ok: bool = False) -> list[dict[str, Any]]:
    """What a hook returned, as rows: a list (or tuple) of dicts; anything else names the hook."""
    if value is None and none_ok:
        return []
    if isinstance(value, list | tuple) and all(isinstance(r, dict) for r in value):
        return [dict(r) for r in value]
    raise PipelineRaised(
        f"pipeline error: {what} returned {_shown(value)}, not a list of rows (dicts)"
    )


def returned_writer(what: str, value: Any) -> Any:
    """What ``write_stream`` returned: a DataStreamWriter (something with ``outputMode``)."""
    if callable(getattr(value, "outputMode", None)) and callable(getattr(value, "start", None)):
        return value
    raise PipelineRaised(
        f"pipeline error: {what} returned {_shown(value)}, not a DataStreamWriter "
        "(frame.writeStream...)"
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return (text[:80] + "...") if len(text) > 80 else text


def check_hooks(pipeline: Pipeline) -> None:
    """Call the hooks that need no Spark on one sample event; PipelineRaised naming the hook.

    ``read_output`` and ``write_stream`` are tried too, without a session (``None``):
    one that needs the session raises, and that says nothing (the trial calls it
    again with one); one that returns the wrong type without looking at its
    argument (``return 5``) is wrong whatever the session, and is said now.
    """
    records = returned_rows(
        "records(key, second)",
        calling_user("records(key, second)", pipeline.records, "k", 1),
    )
    for record in records:
        jsonable(record)
        _source_named(pipeline, record)
    returned_rows(
        "expected(records)", calling_user("expected(records)", pipeline.expected, records)
    )
    if pipeline.reads_own_output():
        tried = _without_a_session(pipeline.read_output)
        if tried is not _NEEDS_SPARK:
            returned_rows("read_output(spark)", tried, none_ok=True)
    if pipeline.writes_own_stream():
        tried = _without_a_session(pipeline.write_stream)
        if tried is not _NEEDS_SPARK:
            returned_writer("write_stream(frame)", tried)


def _source_named(pipeline: Pipeline, record: dict[str, Any]) -> None:
    """With ``sources`` declared, ``source_of(record)`` must name one of them."""
    if not pipeline.sources:
        return
    name = calling_user("source_of(record)", pipeline.source_of, record)
    if name not in pipeline.sources:
        raise PipelineRaised(
            f"pipeline error: source_of({record}) returned {_shown(name)}, not one of its "
            f"sources ({', '.join(pipeline.sources)})"
        )


_NEEDS_SPARK = object()


def _without_a_session(hook: Any) -> Any:
    try:
        return hook(None)
    except Exception:  # it needs what only a session gives: the trial will call it with one
        return _NEEDS_SPARK


def check(pipeline: Pipeline, spec: str) -> None:
    """Everything about ``pipeline`` that needs no Spark session, before one starts."""
    check_declarations(pipeline, spec)
    check_hooks(pipeline)
