"""generated-input's judgement against a pure-Python model of what Spark does, with no Spark at all.

``spark_model`` runs a script the way Structured Streaming treats late data:
one micro-batch per script batch, a record dropped when its state is final
(``Pipeline.final_at``) under the watermark of the *previous* batch (the
newest event time of every batch before last, minus the delay), the drain's
sentinel records kept or not, and the output is the pipeline's own reference
(``expected``) over what was kept. The properties: over drawn scripts and
seeds, on the built-in windowed count and on a deduplication and a
stream-stream join declaring their lateness, a correct pipeline (the
watermark delay equal to the declared lateness) is never violated; each
planted bug always is: a 0 s watermark, a pipeline that drops every late row
(some of which must be kept), and a duplicated emit.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.spark_generated_pipelines import (
    EventTimeColumn,
    InnerJoin,
    KeyDerivedDedup,
    PandasSessions,
)
from raceproof.sim.history import History
from raceproof.spark_integration import generated
from raceproof.spark_integration.pipeline import (
    Pipeline,
    PipelineError,
    PipelineRaised,
    Record,
    load_pipeline,
    timestamp,
)
from raceproof.spark_integration.pipelines.dedup import Dedup
from raceproof.spark_integration.pipelines.stream_join import StreamJoin
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount


class LateDedup(Dedup):
    max_lateness_s = 10


class LateJoin(StreamJoin):
    max_lateness_s = 10


PIPELINES: dict[str, type[Pipeline]] = {
    "windowed-count": WindowedCount,
    "dedup": LateDedup,
    "stream-join": LateJoin,
    "event-time-column": EventTimeColumn,  # its event time is the column `event_time`
    "key-derived-dedup": KeyDerivedDedup,  # the sentinel's id is `__sentinel__-100000`
    "pandas-sessions": PandasSessions,  # a late record kept moves a session's start
    "inner-join": InnerJoin,  # a repeated event gives its pair twice
}


def _timing(pipeline: Pipeline) -> generated.Timing:
    def timing(key: str, second: int) -> tuple[int, int, bool]:
        records = pipeline.records(key, second)
        finals, seconds = map(pipeline.final_at, records), map(pipeline.event_second, records)
        return min(finals), max(seconds), bool(pipeline.expected(records))

    return timing


def spark_model(
    pipeline: Pipeline,
    script: generated.Script,
    delay_s: int,
    *,
    drop_late: bool = False,
    duplicate: bool = False,
    sentinel: bool = True,
) -> list[tuple[int, dict[str, Any]]]:
    """(batch, row) the sink stores when Spark runs ``script`` with a ``delay_s`` watermark.

    ``drop_late``: the pipeline also drops every record behind the newest event time;
    ``duplicate``: the first row is emitted twice.
    """
    kept: list[Record] = []
    newest: int | None = None
    before_last: int | None = None  # the newest event time of every batch before the last
    for events in script:
        records = [r for key, second in events for r in pipeline.records(key, second)]
        for record in records:
            if before_last is not None and pipeline.final_at(record) <= before_last - delay_s:
                continue  # late under the previous batch's watermark: Spark drops it
            if drop_late and newest is not None and pipeline.event_second(record) < newest:
                continue
            kept.append(record)
        seconds = [pipeline.event_second(r) for r in records]
        before_last, newest = newest, max([*([newest] if newest is not None else []), *seconds])
    if sentinel:
        kept += pipeline.sentinel_records()
    rows = [(len(script), dict(row)) for row in pipeline.expected(kept)]
    if duplicate and rows:
        rows.append(rows[0])
    return rows


def judged(pipeline: Pipeline, script: generated.Script, stored: list[tuple[int, Any]]) -> Any:
    """The watermark-reference verdict on a history holding the reference and ``stored``."""
    history = History()
    history.append(0, "driver", "pipeline", name=pipeline.name, key=list(pipeline.key_fields))
    lateness = int(pipeline.max_lateness_s or 0)
    batches = [[r for k, s in events for r in pipeline.records(k, s)] for events in script]
    must, maybe = generated.kept(pipeline, batches, lateness)

    def log(actor: str, kind: str, **fields: Any) -> None:
        history.append(1, actor, kind, **fields)

    generated.log_reference(log, pipeline, must, maybe, pipeline.sentinel_records())
    for batch, row in stored:
        history.append(2, "sink", "sink.row", batch=batch, row=row)
    return generated.within_watermark_reference()(history)


def _script(name: str, seed: int) -> tuple[Pipeline, generated.Script]:
    pipeline = PIPELINES[name]()
    lateness = int(pipeline.max_lateness_s or 0)
    return pipeline, generated.draw_script(seed, lateness, timing=_timing(pipeline))


SEEDS = st.integers(0, 2**32)
MAX_EXAMPLES = 60  # 600 each held too (130 s): a one-off run, not the suite


@settings(max_examples=MAX_EXAMPLES)
@given(st.sampled_from(sorted(PIPELINES)), SEEDS, st.booleans())
def test_a_correct_pipeline_is_never_violated(name: str, seed: int, sentinel: bool) -> None:
    pipeline, script = _script(name, seed)
    stored = spark_model(pipeline, script, int(pipeline.max_lateness_s or 0), sentinel=sentinel)
    verdict = judged(pipeline, script, stored)
    assert verdict.status == "ok", (generated.script_json(script), verdict.message)


@settings(max_examples=MAX_EXAMPLES)
@given(st.sampled_from(sorted(PIPELINES)), SEEDS)
def test_a_0s_watermark_is_always_caught(name: str, seed: int) -> None:
    pipeline, script = _script(name, seed)
    verdict = judged(pipeline, script, spark_model(pipeline, script, 0))
    assert verdict.status == "violated", generated.script_json(script)


@settings(max_examples=MAX_EXAMPLES)
@given(st.sampled_from(sorted(PIPELINES)), SEEDS)
def test_dropping_late_rows_that_must_be_kept_is_always_caught(name: str, seed: int) -> None:
    pipeline, script = _script(name, seed)
    lateness = int(pipeline.max_lateness_s or 0)
    verdict = judged(pipeline, script, spark_model(pipeline, script, lateness, drop_late=True))
    assert verdict.status == "violated", generated.script_json(script)


@settings(max_examples=MAX_EXAMPLES)
@given(st.sampled_from(sorted(PIPELINES)), SEEDS)
def test_a_duplicated_emit_is_always_caught(name: str, seed: int) -> None:
    pipeline, script = _script(name, seed)
    lateness = int(pipeline.max_lateness_s or 0)
    verdict = judged(pipeline, script, spark_model(pipeline, script, lateness, duplicate=True))
    assert verdict.status == "violated", generated.script_json(script)


@pytest.mark.parametrize("seed", range(10))
def test_a_0s_watermark_is_caught_at_seeds_0_to_9(seed: int) -> None:
    pipeline, script = _script("windowed-count", seed)
    verdict = judged(pipeline, script, spark_model(pipeline, script, 0))
    assert verdict.status == "violated" and "watermark semantics allow" in verdict.message


def test_the_event_time_column_is_declared_and_checked_to_exist(tmp_path: Any) -> None:
    path = tmp_path / "job.py"
    path.write_text(
        "from raceproof.spark_integration.pipelines.windowed_count import WindowedCount\n"
        "class Job(WindowedCount):\n"
        "    event_time = 'event_time'\n"
        "def make():\n"
        "    return Job()\n"
    )
    with pytest.raises(PipelineError, match="event_time = 'event_time' is not a column"):
        load_pipeline(f"{path}:make")
    with pytest.raises(PipelineRaised, match="no event-time column 'event_time'"):
        EventTimeColumn().event_second({"key": "a", "ts": timestamp(3)})
    assert EventTimeColumn().event_second({"key": "a", "event_time": timestamp(3)}) == 3


@pytest.mark.parametrize(
    ("name", "script"),
    [
        ("key-derived-dedup", '[[["c",52]]]'),
        ("pandas-sessions", '[[["c",19]],[["c",12],["c",9],["c",29]]]'),
        ("inner-join", '[[["c",31],["c",31],["a",58],["c",34]]]'),
    ],
)
def test_the_false_positives_of_issue_36_hold_on_the_model(name: str, script: str) -> None:
    pipeline = PIPELINES[name]()
    parsed = generated.parse_script(script)
    for sentinel in (False, True):
        assert (
            judged(pipeline, parsed, spark_model(pipeline, parsed, 10, sentinel=sentinel)).status
            == "ok"
        )
    kept_late = spark_model(pipeline, parsed, 10)  # Spark keeps c@9: the session starts at 9
    if name == "pandas-sessions":
        assert {"key": "c", "session_start": timestamp(9), "events": 4} in [r for _, r in kept_late]
        dropped = [(1, {"key": "c", "session_start": timestamp(12), "events": 3})]
        assert judged(pipeline, parsed, dropped).status == "ok"  # dropping it is legal too
        wrong = [(1, {"key": "c", "session_start": timestamp(12), "events": 4})]
        verdict = judged(pipeline, parsed, wrong)
        assert verdict.status == "violated"
        assert verdict.message == (
            "key=c session_start=2026-01-01T00:00:12: the sink stored "
            '[{"events": 4, "key": "c", "session_start": "2026-01-01T00:00:12"}]; '
            "Spark's watermark semantics allow "
            '[{"events": 3, "key": "c", "session_start": "2026-01-01T00:00:12"}] or nothing there'
        )


def test_a_row_twice_within_one_batch_is_not_called_a_replay() -> None:
    pipeline = WindowedCount()
    script = [[("a", 1)]]
    row = {"window": timestamp(0), "key": "a", "count": 1}
    verdict = judged(pipeline, script, [(0, row), (0, row)])
    assert verdict.status == "violated"
    assert "twice within one batch" in verdict.message and "replay" not in verdict.message
    assert "the sink stored [" in verdict.message and "allow [" in verdict.message
