"""``raceproof compare``: correct designs measured against each other, in simulation.

For the group coordinator (seed 003) the question the seed argued by opinion
is what blocking the event loop costs. An open-loop load of transactional
offset commits arrives at a fixed rate; for each correct design, as the
verification round trip and the partitions per thread grow, the simulation
measures throughput (acknowledged commits per virtual second) and p50/p99
latency from arrival to acknowledgement, as a mean over seeds with its
spread. The numbers come from the model; nothing here knows the winner.
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


@dataclasses.dataclass(frozen=True)
class Grid:
    verification_ms: Sequence[int] = (0, 1, 5, 20)
    partitions_per_thread: Sequence[int] = (1, 4, 16)
    threads: int = 2
    rate_per_s: int = 400
    duration_ms: int = 10_000
    seeds: int = 3


def percentile(values: Sequence[int], fraction: float) -> float:
    assert values, "no values"
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


def one_run(design: str, config: CoordinatorConfig, seed: int) -> dict[str, float]:
    world = World(RandomSource(seed), Bounds(max_time_ms=10**9, max_steps=10**8))
    coordinator: Coordinator = build(world, design, config)
    world.run_to_end()
    latencies = coordinator.latencies_ms or [0]
    in_window = sum(1 for t in coordinator.ack_times_ms if t <= config.duration_ms)
    return {
        # Sustained throughput: acknowledgements within the load window, per second.
        "throughput": in_window / (config.duration_ms / 1000),
        "p50": percentile(latencies, 0.50),
        "p99": percentile(latencies, 0.99),
        "failed": float(coordinator.failed),
        "requests": float(coordinator.requests),
    }


def _spread(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.pstdev(values) if len(values) > 1 else 0.0)


def coordinator_comparison(grid: Grid, progress: Progress = None) -> list[dict[str, Any]]:
    say = progress or (lambda _line: None)
    rows = []
    for design in DESIGNS:
        for per_thread in grid.partitions_per_thread:
            for verification_ms in grid.verification_ms:
                config = CoordinatorConfig(
                    threads=grid.threads,
                    partitions=per_thread * grid.threads,
                    verification_ms=(verification_ms,),
                    replication_ms=(1,),
                    rate_per_s=grid.rate_per_s,
                    duration_ms=grid.duration_ms,
                    quiet_log=True,
                )
                runs = [one_run(design, config, derive_seed(seed, per_thread, verification_ms))
                        for seed in range(grid.seeds)]  # fmt: skip
                row: dict[str, Any] = {
                    "design": design,
                    "partitions_per_thread": per_thread,
                    "verification_ms": verification_ms,
                }
                for metric in ("throughput", "p50", "p99", "failed"):
                    mean, spread = _spread([r[metric] for r in runs])
                    row[metric] = round(mean, 1)
                    row[f"{metric}_sd"] = round(spread, 1)
                rows.append(row)
                say(f"{design:18} {per_thread:3} partitions/thread  verification {verification_ms:3} ms: "
                    f"{row['throughput']:7.1f} commits/s  p50 {row['p50']:7.1f} ms  p99 {row['p99']:7.1f} ms  "
                    f"timed out {row['failed']:.0f}")  # fmt: skip
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = (
        "design",
        "part/thread",
        "verify ms",
        "commits/s (±sd)",
        "p50 ms (±sd)",
        "p99 ms (±sd)",
        "timed out",
    )
    lines = [header]
    for r in rows:
        lines.append((
            r["design"], str(r["partitions_per_thread"]), str(r["verification_ms"]),
            f"{r['throughput']:.1f} ±{r['throughput_sd']:.1f}", f"{r['p50']:.1f} ±{r['p50_sd']:.1f}",
            f"{r['p99']:.1f} ±{r['p99_sd']:.1f}", f"{r['failed']:.0f}",
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines
    )


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
        series = {f"{r['design']}, {r['partitions_per_thread']} part/thread": [] for r in rows}  # type: dict[str, list[tuple[float, float]]]
        for r in rows:
            series[f"{r['design']}, {r['partitions_per_thread']} part/thread"].append(
                (float(r["verification_ms"]), float(r[metric]))
            )
        panels.append((metric, label, series, log_y))
    png_path = out_dir / "coordinator-async-append-compare.png"
    panels_png(png_path, f"group coordinator: {grid.rate_per_s} transactional commits/s, {grid.threads} threads",
               panels, "verification round trip (ms)")  # fmt: skip
    return csv_path, png_path


COMPARISONS = {"coordinator-async-append": coordinator_comparison}
