"""Shared test settings: a derandomized Hypothesis profile for CI (never flaky), and the Spark session fixture."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from property_tests import spark_cds
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

# Every Spark driver JVM the tests start (the module sessions, and the commands, second drivers
# and campaigns they run in processes of their own, which inherit this) compiles with the JIT's
# first tier only: the suite's JVMs live for seconds to minutes, and the second tier's compiler
# threads cost more CPU than they give back on two cores (test_spark_output_modes.py: 57.6 and
# 53.6 CPU s without, 36.6 and 37.6 with, at a load average of 8-11). What Spark computes is
# the same; a SPARK_SUBMIT_OPTS already set (even empty: users' default) is kept. They collect
# garbage with the serial collector, not G1 (its concurrent threads on a 1 GiB heap cost more
# than they save here): test_spark_generated_sessions + test_spark_output_modes 44.2, 44.1,
# 42.2 CPU s with G1, 38.1, 38.3 serial; test_spark_generated 68.6, 56.9 with G1, 62.9, 58.9.
# Spark's classes come from an archive once it is made (spark_cds.py: 3-4 CPU s less a start).
os.environ.setdefault("SPARK_SUBMIT_OPTS", spark_cds.DEFAULT)
spark_cds.use_when_made()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A Spark test starts making the archive of Spark's classes; any test uses it once made."""
    group = item.get_closest_marker("xdist_group")
    if "spark" in item.nodeid.lower() or (group and str(group.args[0]).startswith("spark")):
        spark_cds.start_making()
    spark_cds.use_when_made()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local-mode Spark session per test module (started by the test, never skipped)."""
    session = spark_session()
    yield session
    stop_session()
