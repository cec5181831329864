"""The Spark tests' PostgreSQL: one real server per test module that asks for it (``postgres``).

Its connection string is in ``RACEPROOF_TEST_POSTGRES`` while the module runs, as a
job reads its DSN from its environment (``property_tests/spark_user_sinks.py``); a
server that cannot start fails the test, never skips it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from property_tests import spark_user_sinks
from property_tests.postgres_server import running_postgres


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
