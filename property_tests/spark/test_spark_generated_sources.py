"""Generated input on a pipeline of two sources: each source's watermark judged on its own (issue 48, item 4).

A two-source union (``property_tests/spark_generated_pipelines.py``) whose
sources each carry a 10 s watermark for 10 s of declared lateness.
``generated.kept`` judges a record by its own source's watermark (a source with
no data yet by the least of the others', as Spark's default policy counts only
sources with data), and ``draw_script`` ends a script of a pipeline with several
sources with three batches that make one source lag the other (two moving one
source far ahead, then the lagging source's own newest event again). The union
with ``spark.sql.streaming.multipleWatermarkPolicy=max`` from its
``spark_conf()`` drops that record, which its own source's lateness must keep:
caught at the default seed from the command line. Before, lateness was judged
against both sources together, so the max policy looked the same as the default
and passed. The same union with Spark's default policy passes at seeds 0, 1
and 2. Real local-mode Spark.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from property_tests import spark_generated_pipelines
from raceproof.cli.main import main
from raceproof.spark_integration import generated
from raceproof.spark_integration.generated import generated_input

pytestmark = pytest.mark.xdist_group("spark")

PIPELINES = "property_tests.spark_generated_pipelines"
POLICY = "spark.sql.streaming.multipleWatermarkPolicy"


def test_every_script_of_two_sources_ends_with_one_lagging_the_other() -> None:
    union = spark_generated_pipelines.two_source_union()
    for seed in range(3):
        script = generated.draw_script(
            seed,
            10,
            timing=partial(generated._event_timing, union),
            routes=partial(generated._route, union),
        )
        ahead, again, behind = script[-3:]
        ((fast, far),), ((fast_again, _),), ((slow, second),) = ahead, again, behind
        assert fast == fast_again and union.source_of(union.records(fast, far)[0]) == "left"
        assert union.source_of(union.records(slow, second)[0]) == "right"
        batches = [[r for k, s in events for r in union.records(k, s)] for events in script]
        must, _ = generated.kept(union, batches, 10)
        assert union.records(slow, second)[0] in must  # its own source's lateness keeps it


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_default_policy_union_holds_on_drawn_input(spark: Any, seed: int) -> None:
    assert spark.conf.get(POLICY, "min") == "min"
    trial = generated_input(spark, spark_generated_pipelines.two_source_union(), False, seed=seed)
    assert trial.verdict == "ok", trial.message


def test_the_max_policy_union_is_caught_at_the_default_seed(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["spark-check", "--pipeline", f"{PIPELINES}:max_policy_union"]
    try:
        code = main([*argv, "--experiment", "generated-input", "--shrink-budget", "0", "--json"])
    finally:
        spark.conf.unset(POLICY)  # spark_conf() set it on the module's session
    result = json.loads(capsys.readouterr().out)
    (row,) = result["experiments"]
    assert code == 1 and row["broken_promises"] == ["watermark-reference"], row
    message = row["stock"]["trials"][0]["message"]
    assert "key=c: the sink stored nothing" in message, message
