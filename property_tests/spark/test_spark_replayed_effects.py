"""A replayed effect that changes a value, not a row count, is caught wherever a replay happens (issue 48, item 2).

The pipeline (``property_tests/spark_user_sinks.py``, ``merge_accumulating``)
passes each record's ``(customer, amount)`` through, and its ``foreachBatch``
sink adds each batch's amounts to a real PostgreSQL table with ``MERGE ... SET
amount = t.amount + s.amount``. A batch Spark replays is added twice: no row is
stored twice, so ``no-duplicate-emission`` sees nothing, and before this change
``stop-before-commit`` reported the gate ok. Every experiment is now judged by
the sink's content against the reference (``drain-completeness``, a promise of
every guard), so both the process stopped before the commit and the driver
killed with SIGKILL there (``kill``, a second driver process) fail the gate,
naming the doubled value; the same writer recording its batch ids
(``merge_idempotent``) passes both. The server is Debian's PostgreSQL started
by the test (``postgres_server``); Spark is real local mode. Either failing to
start fails the test.
"""

from __future__ import annotations

from typing import Any

import pytest

from raceproof.spark_integration.pipeline import load_pipeline
from raceproof.spark_integration.results import run_experiment

pytestmark = pytest.mark.xdist_group("spark")

SINKS = "property_tests.spark_user_sinks"


def _judged(spark: Any, factory: str, experiment: str) -> dict[str, Any]:
    return run_experiment(spark, experiment, load_pipeline(f"{SINKS}:{factory}"))


@pytest.mark.parametrize("experiment", ["stop-before-commit", "kill"])
def test_an_accumulating_merge_is_caught_by_its_content_and_the_idempotent_one_passes(
    spark: Any, postgres: str, experiment: str
) -> None:
    caught = _judged(spark, "merge_accumulating", experiment)
    (trial,) = caught["stock"]["trials"]
    assert caught["verdict"] == "violated", caught
    assert caught["broken_promises"] == ["drain-completeness"], caught
    assert "no-duplicate-emission" not in trial["violated"], trial  # no row was stored twice
    assert "emitted amount=" in trial["message"] and "reference gives" in trial["message"]
    point = "killed (SIGKILL)" if experiment == "kill" else "process stopped"
    assert point in trial["message"] or any(point in note for note in trial["notes"]), trial
    held = _judged(spark, "merge_idempotent", experiment)
    (kept,) = held["stock"]["trials"]
    assert held["verdict"] == "ok" and kept["verdict"] == "ok", kept
    assert any("commits/" in note for note in kept["notes"]), kept  # the fault did land
