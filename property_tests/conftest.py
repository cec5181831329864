"""Shared test settings: a derandomized Hypothesis profile for CI (never flaky), and the Spark session fixture."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from raceproof.spark_integration.session import spark_session, stop_session

settings.register_profile(
    "ci",
    derandomize=True,
    print_blob=True,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
# `make mutation` runs the tests once per mutant: fewer examples, same derandomized draws.
settings.register_profile(
    "mutation",
    derandomize=True,
    deadline=None,
    max_examples=25,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local-mode Spark session per test module (started by the test, never skipped)."""
    session = spark_session()
    yield session
    stop_session()
