"""``raceproof compare``: correct designs measured against each other, in simulation.

For the group coordinator (seed 003) the question the seed argued by opinion
is what blocking the event loop costs. The runtime is the one at apache/kafka
a8203f9c7a2 (PR #15142) with its defaults: one event thread
(``group.coordinator.threads``), one append per write event (no batching at
that version), the HighWatermarkUpdated event at the back of the queue,
5,000 ms write timeout started at the append. An open-loop load of offset
commits, a share of them transactional (each the first write of its
transaction, so each needs verification), arrives at a fixed rate over 16
partitions (about one broker's share of the 50 ``__consumer_offsets``
partitions in a 3-broker cluster). Two inputs are not known from the code,
the verification round trip and the event thread's cost per write, so the
comparison is a sensitivity table over them and over the transactional share:
throughput (acknowledged commits per virtual second within the load window),
p50/p99 latency from arrival to acknowledgement, and the commits still
unacknowledged when the load stops, as a mean over seeds with its spread.

Sub-millisecond write costs need a finer clock than the kernel's integer
milliseconds: these runs set ``clock_units_per_s`` to 10,000, so the model's
clock counts tenths of a millisecond, and convert back to ms for the table.
The numbers come from the model; nothing here knows the winner.
"""

from __future__ import annotations

import csv
import dataclasses
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raceproof.models.group_coordinator import Coordinator, CoordinatorConfig, build
from raceproof.sim import Bounds, RandomSource, World, derive_seed

Progress = Callable[[str], None] | None
DESIGNS = ("block-event-loop", "verify-then-write")
UNITS_PER_MS = 10  # clock units per millisecond in these runs (0.1 ms)


@dataclasses.dataclass(frozen=True)
class Grid:
    verification_ms: Sequence[int] = (1, 5, 20)
    write_cost_us: Sequence[int] = (100, 500, 1000)  # multiples of 100 us
    transactional_percent: Sequence[int] = (10, 50)
    threads: int = 1  # group.coordinator.threads default at a8203f9c7a2
    partitions: int = 16
    replication_ms: int = 2  # append to HWM advance (follower fetch round trips)
    rate_per_s: int = 400
    duration_ms: int = 10_000
    seeds: int = 3


def percentile(values: Sequence[int], fraction: float) -> float:
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


def one_run(design: str, config: CoordinatorConfig, seed: int) -> dict[str, float]:
    """One load run; times in the table's ms whatever the run's clock unit."""
    world = World(RandomSource(seed), Bounds(max_time_ms=10**10, max_steps=10**8))
    coordinator: Coordinator = build(world, design, config)
    world.run_to_end()
    per_ms = config.clock_units_per_s / 1000
    latencies = coordinator.latencies_ms or [0]
    in_window = sum(1 for t in coordinator.ack_times_ms if t <= config.duration_ms)
    return {
        # Sustained throughput: acknowledgements within the load window, per second.
        "throughput": in_window / (config.duration_ms / config.clock_units_per_s),
        "p50": percentile(latencies, 0.50) / per_ms,
        "p99": percentile(latencies, 0.99) / per_ms,
        "backlog": float(coordinator.requests - in_window),
        "failed": float(coordinator.failed),
        "requests": float(coordinator.requests),
    }


def point_config(
    grid: Grid, verification_ms: int, write_cost_us: int, percent: int
) -> CoordinatorConfig:
    if not (write_cost_us % 100 == 0 and write_cost_us > 0):  # kept under python -O: a figure
        raise ValueError(f"write costs are multiples of 100 us, got {write_cost_us}")
    return CoordinatorConfig(
        threads=grid.threads,
        partitions=grid.partitions,
        verification_ms=(verification_ms * UNITS_PER_MS,),
        replication_ms=(grid.replication_ms * UNITS_PER_MS,),
        write_cost_ms=write_cost_us // 100,
        write_timeout_ms=5_000 * UNITS_PER_MS,
        rate_per_s=grid.rate_per_s,
        duration_ms=grid.duration_ms * UNITS_PER_MS,
        transactional_per_mille=percent * 10,
        clock_units_per_s=1000 * UNITS_PER_MS,
        quiet_log=True,
    )


def _spread(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.pstdev(values) if len(values) > 1 else 0.0)


def coordinator_comparison(grid: Grid, progress: Progress = None) -> list[dict[str, Any]]:
    say = progress or (lambda _line: None)
    rows = []
    for design in DESIGNS:
        for percent in grid.transactional_percent:
            for cost_us in grid.write_cost_us:
                for verification_ms in grid.verification_ms:
                    say(
                        f"{design}: {percent}% transactional, write {cost_us / 1000:.1f} ms, "
                        f"verification {verification_ms} ms, {grid.seeds} seed(s)"
                    )
                    config = point_config(grid, verification_ms, cost_us, percent)
                    runs = [
                        one_run(
                            design, config, derive_seed(seed, percent, cost_us, verification_ms)
                        )
                        for seed in range(grid.seeds)
                    ]
                    row: dict[str, Any] = {
                        "design": design,
                        "transactional_percent": percent,
                        "write_cost_ms": cost_us / 1000,
                        "verification_ms": verification_ms,
                    }
                    for metric in ("throughput", "p50", "p99", "backlog", "failed"):
                        mean, spread = _spread([r[metric] for r in runs])
                        row[metric] = round(mean, 1)
                        row[f"{metric}_sd"] = round(spread, 1)
                    rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The comparison as a terminal table: one line per design and setting, means with their sd."""
    from raceproof.reports.terminal import columns_text

    header = (
        "design",
        "txn %",
        "write ms",
        "verify ms",
        "commits/s (±sd)",
        "p50 ms (±sd)",
        "p99 ms (±sd)",
        "unacked",
        "timed out",
    )
    lines = [header]
    for r in rows:
        lines.append(
            (
                r["design"],
                str(r["transactional_percent"]),
                f"{r['write_cost_ms']:.1f}",
                str(r["verification_ms"]),
                f"{r['throughput']:.1f} ±{r['throughput_sd']:.1f}",
                f"{r['p50']:.1f} ±{r['p50_sd']:.1f}",
                f"{r['p99']:.1f} ±{r['p99_sd']:.1f}",
                f"{r['backlog']:.0f}",
                f"{r['failed']:.0f}",
            )
        )
    return columns_text(lines)


def write_outputs(rows: list[dict[str, Any]], out_dir: Path, grid: Grid) -> tuple[Path, Path]:
    from raceproof.reports.plots import panels_png

    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "coordinator-async-append-compare.csv"
    tmp = csv_path.with_suffix(".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(csv_path)
    panels = []
    for metric, label, log_y in (
        ("throughput", "commits per virtual second", False),
        ("p99", "p99 latency (ms, log scale)", True),
    ):
        for percent in grid.transactional_percent:
            series: dict[str, list[tuple[float, float]]] = {}
            for r in rows:
                if r["transactional_percent"] == percent:
                    name = f"{r['design']}, write {r['write_cost_ms']:.1f} ms"
                    series.setdefault(name, []).append(
                        (float(r["verification_ms"]), float(r[metric]))
                    )
            panels.append((f"{metric}, {percent}% transactional", label, series, log_y))
    png_path = out_dir / "coordinator-async-append-compare.png"
    panels_png(
        png_path,
        f"group coordinator at PR #15142: {grid.rate_per_s} commits/s, "
        f"{grid.threads} event thread, {grid.partitions} partitions",
        panels,
        "verification round trip (ms)",
    )
    return csv_path, png_path


COMPARISONS = {"coordinator-async-append": coordinator_comparison}
