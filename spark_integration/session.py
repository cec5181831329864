"""One small, fast local-mode SparkSession per process."""

from __future__ import annotations

import os
import sys
from typing import Any

_SESSION: Any = None


def spark_session() -> Any:
    """local[2], UI and progress off, 2 shuffle partitions, AQE off, 127.0.0.1, UTC, ERROR logs."""
    global _SESSION
    if _SESSION is None:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        _SESSION = (
            SparkSession.builder.master("local[2]")
            .appName("raceproof-spark-check")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.streaming.stopActiveRunOnRestart", "true")
            .getOrCreate()
        )
        _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def stop_session() -> None:
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None
