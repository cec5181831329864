"""``raceproof bench --campaign`` and ``--cluster``: what running on Spark costs and gains.

Runs one small grid (``lost-update``, both variants, three strategies) three
ways: in this process, one cell after another (the baseline); as a campaign on
``local[1]``; and as a campaign on ``local[2]``. Each Spark session is started
and warmed up (one job that imports raceproof in a Python worker) before the
clock starts, so the figures are steady-state cells per second, not JVM
start-up; the start-up is its own figure (``{master}_session_start_s``: the
session's start, which every Spark command pays once). Printed, never asserted: the machine is shared, so the load average
is printed beside them.

``--cluster`` starts a standalone cluster on 127.0.0.1 with one 1-core
worker, then another with two (``spark_integration.standalone``), and times
one proof of ``campaign --prove`` in rounds on each (the median of a few
runs, after a warm-up), beside the balance figures of its plan: the speedup
its units allow on 2 workers, and the lower one its rounds allow (a round
waits for its last unit). The proof is walked once in this process first, so
the rows from the cluster are checked against it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raceproof.sim.errors import Signalled
from raceproof.spark_integration.campaign import Options, campaign_session, grid, run_proof_job
from raceproof.spark_integration.campaign import run as run_campaign
from raceproof.spark_integration.campaign_cells import Cell, comparable, run_cell

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


def figures(
    seeds: int = 6,
    examples: int = 100,
    progress: Say = None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``bench --campaign``: cells per second three ways; ``into`` gets each way's figure as it
    ends (the dict a caller keeps if a signal stops the bench)."""
    say = progress or (lambda _line: None)
    options = Options(
        scenarios=("lost-update",), seeds=tuple(range(seeds)), examples=examples, cross_check=0
    )
    cells = grid(options)
    result = {} if into is None else into
    result.update(
        grid=f"lost-update x 2 variants x 3 strategies x {seeds} seeds, "
        f"{examples} examples per cell",
        cells=len(cells),
        cpus=os.cpu_count(),
        load_before=_load(),
    )
    say(f"in-process: {len(cells)} cells one after another")
    started = time.perf_counter()
    for cell in cells:
        run_cell(cell)
    in_process_s = time.perf_counter() - started
    result["in_process_cells_per_s"] = round(len(cells) / in_process_s, 2)
    for master in ("local[1]", "local[2]"):
        say(f"{master}: a warmed-up session, then the campaign")
        began = time.perf_counter()
        spark = campaign_session(master, "raceproof-campaign-bench")
        result[f"{master}_session_start_s"] = round(time.perf_counter() - began, 1)
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
                raise Signalled(summary.interrupted_by or "SIGINT")
        finally:
            spark.stop()
        result[f"{master}_cells_per_s"] = round(len(cells) / seconds, 2)
    one, two = result["local[1]_cells_per_s"], result["local[2]_cells_per_s"]
    result["scaling_local2_over_local1"] = round(two / one, 2)
    overhead_ms = 1000 * (1 / one - 1 / result["in_process_cells_per_s"])
    result["overhead_ms_per_cell_local1_vs_in_process"] = round(overhead_ms, 1)
    result["load_after"] = _load()
    return result


# -- a proof on a standalone cluster of one, then two workers -------------------------
CLUSTER_PROOF = ("samza-drain", "drain")  # 1,782 runs in rounds, about 9 CPU s: rounds to spare
EXECUTORS_TIMEOUT_S = 240.0


def _executors_up(spark: Any, workers: int) -> None:
    """Wait until each worker's executor has registered (the driver counts as one more)."""
    deadline = time.monotonic() + EXECUTORS_TIMEOUT_S
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
    while status.size() < workers + 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{workers} executor(s) did not register in {EXECUTORS_TIMEOUT_S} s")
        time.sleep(0.5)
        status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()


def _on_cluster(
    proof: Cell, workers: int, repeats: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """The proof ``repeats`` times on a fresh cluster of ``workers`` 1-core workers."""
    from raceproof.spark_integration.standalone import standalone

    seconds: list[float] = []
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="raceproof-cluster-bench-") as folder,
        standalone(Path(folder), workers=workers) as cluster,
    ):
        spark = campaign_session(cluster.url, "raceproof-cluster-bench")
        try:
            _executors_up(spark, workers)
            _warm_up(spark)
            load = _load()
            for repeat in range(repeats):
                say(f"{workers} worker(s): the proof, run {repeat + 1} of {repeats}")
                started = time.perf_counter()
                rows.extend(run_proof_job(spark.sparkContext, proof))
                seconds.append(round(time.perf_counter() - started, 2))
        finally:
            spark.stop()
    return {
        "seconds": seconds,
        "median_s": statistics.median(seconds),
        "load_before": load,
        "load_after": _load(),
        "rows": rows,
    }


def cluster_figures(
    scenario: str = CLUSTER_PROOF[0],
    variant: str = CLUSTER_PROOF[1],
    repeats: int = 3,
    progress: Say = None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``bench --cluster``: one proof in rounds on 1 and then 2 workers, beside its balance;
    ``into`` gets each cluster's figures as it ends."""
    from raceproof.spark_integration.campaign_proof import in_process, proof_of, prove_cell

    say = progress or (lambda _line: None)
    proof = proof_of(scenario, variant)
    say(f"in this process: campaign --prove {scenario}/{variant} in rounds")
    started = time.perf_counter()
    local = prove_cell(proof, in_process, 2)  # the rounds in this process: the plan and counts
    in_process_s = round(time.perf_counter() - started, 2)
    plan = local["_balance"]
    result = {} if into is None else into
    result.update(
        proof=f"{scenario}/{variant}",
        cpus=os.cpu_count(),
        verdict=local["verdict"],
        schedules=local["schedules"],
        runs=local["examples"],
        rounds=plan["rounds"],
        units=plan["balance"]["units"],
        driver_runs=plan["driver_runs"],
        in_process_s=in_process_s,
        speedup_allowed=plan["balance"]["speedup_allowed"],
        rounds_speedup_allowed=plan["rounds_speedup_allowed"],
    )
    for workers in (1, 2):
        say(f"{workers} worker(s): a standalone cluster, its executors, a warm-up")
        figures = _on_cluster(proof, workers, repeats, say)
        same = all(comparable(row) == comparable(local) for row in figures.pop("rows"))
        result[f"workers_{workers}"] = figures | {"same_row_as_in_process": same}
    one, two = result["workers_1"]["median_s"], result["workers_2"]["median_s"]
    result["speedup_1_to_2_workers"] = round(one / two, 2)
    return result
