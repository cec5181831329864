"""Generated input against a session window whose watermark is shorter than its sessions need (issue 48, item 4).

``session_window`` counts with a 10 s gap and 10 s of declared lateness
(``property_tests/spark_generated_pipelines.py``): a record's session ends no
sooner than its second plus the gap, which is where its state is final
(``final_at``), and Spark drops a late record only once the watermark has
passed that end. The generator's probe looked for the earliest record still
open only from the lateness onwards, so its probe (the lateness behind the
newest event) was kept even by a 2 s watermark: that job passed at seed 0. The
probe now searches before the lateness too, and lands ``lateness + gap - 1``
seconds behind: the 2 s watermark drops it, and the job is caught at the
default seed from the command line; the 10 s watermark holds at seeds 0, 1 and
2. Real local-mode Spark.
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

pytestmark = pytest.mark.xdist_group("spark-2")

PIPELINES = "property_tests.spark_generated_pipelines"


def test_the_probe_of_a_session_window_lies_the_gap_before_the_lateness() -> None:
    sessions = spark_generated_pipelines.session_window_counts()
    script = generated.draw_script(0, 10, timing=partial(generated._event_timing, sessions))
    probes = [s for batch in script for k, s in batch if k == generated.PROBE_KEY]
    (probe,) = probes
    newest = max(s for batch in script[:-1] for _, s in batch)
    assert probe == newest - 10 - 10 + 1, script  # lateness + gap - 1 behind: still open


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_session_window_with_the_declared_watermark_holds(spark: Any, seed: int) -> None:
    pipeline = spark_generated_pipelines.session_window_counts()
    trial = generated_input(spark, pipeline, False, seed=seed)
    assert trial.verdict == "ok", trial.message


def test_a_session_window_with_a_2s_watermark_is_caught_at_the_default_seed(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["spark-check", "--pipeline", f"{PIPELINES}:short_session_watermark"]
    code = main([*argv, "--experiment", "generated-input", "--shrink-budget", "0", "--json"])
    result = json.loads(capsys.readouterr().out)
    (row,) = result["experiments"]
    assert code == 1 and row["broken_promises"] == ["watermark-reference"], row
    message = row["stock"]["trials"][0]["message"]
    assert "key=p session_start=2026-01-01T00:00:16: the sink stored nothing" in message, message
