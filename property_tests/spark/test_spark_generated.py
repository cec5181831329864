"""Generated input on real Spark: late, out-of-order and duplicate records, judged by the watermark's semantics.

``draw_script`` is a pure function of its seed (a Hypothesis property), and
the must-keep / may-drop split follows the documented watermark rule. On real
local-mode Spark, the built-in windowed count (a 10 s watermark for 10 s of
declared lateness) holds on drawn scripts, and the same job with a 0 s
watermark is caught: spark-check exits 1, prints the script shrunk to a short
one and the command that replays it, and the replay is violated again.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests import spark_generated_pipelines
from raceproof.cli.main import main
from raceproof.spark_integration import generated
from raceproof.spark_integration.generated import generated_input
from raceproof.spark_integration.pipeline import timestamp
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

pytestmark = pytest.mark.xdist_group("spark-2")

SHORT_WATERMARK = '''
from pyspark.sql import functions as F
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

class ShortWatermark(WindowedCount):
    """Declares 10 s of lateness, waits 0 s for it."""
    name = "short-watermark"

    def query(self, source):
        counted = source.withWatermark("ts", "0 seconds").groupBy(
            F.window("ts", "10 seconds"), "key").count()
        return counted.select(F.col("window.start").alias("window"), "key", "count")

def make():
    return ShortWatermark()
'''


@given(st.integers(0, 2**32), st.integers(0, 30))
def test_a_script_is_a_function_of_its_seed_and_round_trips(seed: int, lateness: int) -> None:
    script = generated.draw_script(seed, lateness)
    assert script == generated.draw_script(seed, lateness)
    assert generated.parse_script(generated.script_json(script)) == script
    assert all(1 <= len(batch) <= 5 for batch in script)  # up to 4 drawn, and the probe
    assert sum(key == generated.PROBE_KEY for batch in script for key, _ in batch) == 1


def test_the_watermark_rule_splits_must_keep_from_may_drop() -> None:
    job = WindowedCount()
    batches = [
        [{"key": "a", "ts": timestamp(25)}],
        [{"key": "a", "ts": timestamp(19)}, {"key": "a", "ts": timestamp(5)}],
    ]
    must, maybe = generated.kept(job, batches, 10)  # watermark 15 in batch 1
    assert [r["ts"] for r in must] == [timestamp(25), timestamp(19)]  # window [10, 20) is open
    assert [r["ts"] for r in maybe] == [timestamp(5)]  # window [0, 10) ended at 10 <= 15
    outputs, complete = generated.legal_outputs(job, must, maybe)
    assert complete and len(outputs) == 2  # a@5 kept (its window's row) or dropped (no row)
    row = {"window": timestamp(0), "key": "a", "count": 1}
    assert sorted(row in out for out in outputs) == [False, True]


@pytest.mark.parametrize("text", ["", "[]", "[[[1, 2]]]", '[[["a", -1]]]', "{"])
def test_a_bad_script_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--script"):
        generated.parse_script(text)


def test_a_correct_watermark_holds_on_drawn_input(spark: Any) -> None:
    for seed in (0, 1):
        trial = generated_input(spark, WindowedCount(), False, seed=seed)
        assert trial.verdict == "ok", trial.message


def test_a_short_watermark_is_caught_and_shrinks_to_a_script_that_replays(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "short_job.py"
    path.write_text(textwrap.dedent(SHORT_WATERMARK))
    spec = f"{path}:make"
    code = main(
        [
            "spark-check",
            "--pipeline",
            spec,
            "--experiment",
            "generated-input",
            "--seed",
            "2",
            "--shrink-budget",
            "3",  # one shrink that holds is the point: seed 2 went 15 -> 12 events in a budget of 2
        ]
    )
    out = capsys.readouterr().out
    assert code == 1 and "PIPELINE WRONG" in out, out
    shrunk = re.search(r"shrunk from (\d+) to (\d+) events", out)
    assert shrunk and int(shrunk[2]) < int(shrunk[1]), out
    replay = re.search(r"--script '([^']+)'", out)
    assert replay, out
    code = main(
        [
            "spark-check",
            "--pipeline",
            spec,
            "--experiment",
            "generated-input",
            "--script",
            replay[1],
            "--shrink-budget",
            "0",
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    (row,) = [r for r in result["experiments"] if r["experiment"] == "generated-input"]
    assert code == 1 and row["broken_promises"] == ["watermark-reference"], row


@pytest.mark.parametrize(
    ("factory", "script"),
    [
        ("key_derived_dedup", '[[["c",52]]]'),
        ("pandas_sessions", '[[["c",19]],[["c",12],["c",9],["c",29]]]'),
        ("inner_join", '[[["c",31],["c",31],["a",58],["c",34]]]'),
    ],
)
def test_the_false_positives_of_issue_36_hold(spark: Any, factory: str, script: str) -> None:
    """Each was violated before: a key-derived sentinel id, a session moved by a late record
    Spark may keep, a pair a repeated event rightly gives twice."""
    pipeline = getattr(spark_generated_pipelines, factory)()
    trial = generated_input(spark, pipeline, False, script=generated.parse_script(script))
    assert trial.verdict == "ok", trial.message
    stored = [op.get("row") for op in trial.history.of_kind("sink.row")]
    if factory == "pandas_sessions":  # c@9 kept or dropped, both legal: one session of c
        assert [(r["key"], r["events"]) for r in stored if r["key"] == "c"] in (
            [("c", 4)],
            [("c", 3)],
        ), stored
    if factory == "inner_join":  # two orders c@31, two payments c@33: four pairs
        pair = {"key": "c", "order_ts": timestamp(31), "paid_ts": timestamp(33)}
        assert stored.count(pair) == 4, stored


def test_an_event_time_column_of_another_name_is_judged_by_it(spark: Any) -> None:
    pipeline = spark_generated_pipelines.event_time_column()
    trial = generated_input(spark, pipeline, False, seed=0)
    assert trial.verdict == "ok", trial.message
    (reference,) = trial.history.of_kind("expect.legal")
    assert (
        reference.get("must") == len(trial.history.of_kind("input.record")) - 1
    )  # bar the sentinel


def test_a_0s_watermark_is_caught_at_the_default_seed(spark: Any) -> None:
    trial = generated_input(spark, spark_generated_pipelines.short_watermark(), False, seed=0)
    assert trial.checker == "watermark-reference", trial.message
    assert "the sink stored" in trial.message and "semantics allow" in trial.message


def test_an_uncaught_error_is_the_trial_whose_run_died() -> None:
    from raceproof.spark_integration.session import thread_of_runs

    thread = "stream execution thread for [id = 3e59-aa, runId = ae7f7cf3-1261-4468]"
    assert thread_of_runs(thread, {"ae7f7cf3-1261-4468"})
    assert not thread_of_runs(thread, {"0000-other-run"})  # an earlier trial's thread
    assert thread_of_runs("stream execution thread for [id = 1]", set())
