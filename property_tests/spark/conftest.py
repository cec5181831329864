"""The Spark tests' PostgreSQL: one real server per test module that asks for it (``postgres``);
and ``keep_trials``, so a test checks the trials a command ran rather than running its own.

Its connection string is in ``RACEPROOF_TEST_POSTGRES`` while the module runs, as a
job reads its DSN from its environment (``property_tests/spark_user_sinks.py``); a
server that cannot start fails the test, never skips it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from property_tests import spark_user_sinks
from property_tests.postgres_server import running_postgres
from raceproof.spark_integration import experiments

Trial = Callable[[Any, Any, bool], Any]  # (spark, pipeline, guarded) -> the trial's result


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with running_postgres() as conninfo:
        saved = os.environ.get(spark_user_sinks.CONNINFO_ENV)
        os.environ[spark_user_sinks.CONNINFO_ENV] = conninfo
        try:
            yield conninfo
        finally:
            if saved is None:
                os.environ.pop(spark_user_sinks.CONNINFO_ENV, None)
            else:
                os.environ[spark_user_sinks.CONNINFO_ENV] = saved


@pytest.fixture
def keep_trials(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[tuple[bool, Any]]]:
    """``keep_trials(name, trial=None)``: experiment ``name`` runs ``trial`` (its own by
    default) and keeps each result, ``(guarded, result)`` in the order they ran, for the
    test to check the trials that ``spark-check`` or ``run_experiment`` ran."""

    def keep(name: str, trial: Trial | None = None) -> list[tuple[bool, Any]]:
        experiment = experiments.EXPERIMENTS[name]
        run = trial or experiment.trial
        kept: list[tuple[bool, Any]] = []

        def kept_trial(spark: Any, pipeline: Any, guarded: bool) -> Any:
            kept.append((guarded, run(spark, pipeline, guarded)))
            return kept[-1][1]

        monkeypatch.setitem(experiments.EXPERIMENTS, name, replace(experiment, trial=kept_trial))
        return kept

    return keep
