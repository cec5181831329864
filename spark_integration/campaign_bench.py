"""``raceproof bench --campaign``: what running cells as Spark tasks costs and gains.

Runs one small grid (``lost-update``, both variants, three strategies) three
ways: in this process, one cell after another (the baseline); as a campaign on
``local[1]``; and as a campaign on ``local[2]``. Each Spark session is started
and warmed up (one job that imports raceproof in a Python worker) before the
clock starts, so the figures are steady-state cells per second, not JVM
start-up. Printed, never asserted: the machine is shared, so the load average
is printed beside them.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raceproof.spark_integration.campaign import Options, campaign_session, grid
from raceproof.spark_integration.campaign import run as run_campaign
from raceproof.spark_integration.campaign_cells import Cell, run_cell

Say = Callable[[str], None] | None


def _warm_up(spark: Any) -> None:
    cells = [
        Cell(
            kind="search",
            scenario="lost-update",
            variant="buggy",
            strategy="random",
            seed=seed,
            examples=1,
        )
        for seed in range(4)
    ]
    spark.sparkContext.parallelize(cells, len(cells)).map(run_cell).collect()


def _load() -> str:
    one, five, _fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f}"


def figures(seeds: int = 6, examples: int = 100, progress: Say = None) -> dict[str, Any]:
    say = progress or (lambda _line: None)
    options = Options(
        scenarios=("lost-update",), seeds=tuple(range(seeds)), examples=examples, cross_check=0
    )
    cells = grid(options)
    result: dict[str, Any] = {
        "grid": f"lost-update x 2 variants x 3 strategies x {seeds} seeds, "
        f"{examples} examples per cell",
        "cells": len(cells),
        "cpus": os.cpu_count(),
        "load_before": _load(),
    }
    say(f"campaign bench: {len(cells)} cells ({result['grid']}); load average {_load()}")
    started = time.perf_counter()
    for cell in cells:
        run_cell(cell)
    in_process_s = time.perf_counter() - started
    result["in_process_cells_per_s"] = round(len(cells) / in_process_s, 2)
    say(f"in-process: {len(cells) / in_process_s:.2f} cells/s ({in_process_s:.1f}s)")
    for master in ("local[1]", "local[2]"):
        spark = campaign_session(master, "raceproof-campaign-bench")
        try:
            _warm_up(spark)
            with tempfile.TemporaryDirectory(prefix="raceproof-campaign-bench-") as out:
                started = time.perf_counter()
                summary = run_campaign(
                    Options(**{**options.__dict__, "master": master, "out": str(Path(out) / "c")}),
                    spark=spark,
                )
                seconds = time.perf_counter() - started
            if summary.interrupted:  # the campaign kept its cells and stopped: so does the bench
                raise KeyboardInterrupt(summary.interrupted_by or "SIGINT")
        finally:
            spark.stop()
        rate = len(cells) / seconds
        result[f"{master}_cells_per_s"] = round(rate, 2)
        say(f"{master}: {rate:.2f} cells/s ({seconds:.1f}s); load average {_load()}")
    one, two = result["local[1]_cells_per_s"], result["local[2]_cells_per_s"]
    result["scaling_local2_over_local1"] = round(two / one, 2)
    overhead_ms = 1000 * (1 / one - 1 / result["in_process_cells_per_s"])
    result["overhead_ms_per_cell_local1_vs_in_process"] = round(overhead_ms, 1)
    result["load_after"] = _load()
    say(
        f"scaling local[2] / local[1]: {two / one:.2f}; overhead of a campaign cell on local[1] "
        f"against in-process: {overhead_ms:+.0f} ms per cell"
    )
    return result
