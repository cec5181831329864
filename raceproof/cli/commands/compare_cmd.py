"""``raceproof compare``: designs measured against each other."""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

from raceproof.cli.commands.common import UsageError, add_command, print_json
from raceproof.cli.validation import int_in, non_empty, prepare_output_dir
from raceproof.runs import runner
from raceproof.scenarios.catalogue import (
    get,
)
from raceproof.sim.verdicts import Verdict


def cmd_compare(args: argparse.Namespace) -> int:
    from raceproof.measure import compare

    scenario = get(args.scenario)
    if scenario.name not in compare.COMPARISONS:
        raise UsageError(
            f"{scenario.name} has no design comparison; "
            f"valid: {', '.join(sorted(compare.COMPARISONS))}"
        )
    out_dir = prepare_output_dir(args.out)
    grid = compare.Grid(seeds=args.seeds, rate_per_s=args.rate, duration_ms=args.duration_ms)
    started = time.monotonic()
    rows = compare.COMPARISONS[scenario.name](grid, None if args.json else print)
    csv_path, png_path = compare.write_outputs(rows, out_dir, grid)
    result = {
        "scenario": scenario.name,
        "verdict": Verdict.OK,
        "rows": rows,
        "grid": dataclasses.asdict(grid),
        "csv": str(csv_path),
        "png": str(png_path),
        "seconds": round(time.monotonic() - started, 2),
    }
    if args.json:
        print_json(result)
    else:
        print()
        print(compare.table(rows))
        print(f"\nwrote {csv_path} and {png_path} ({result['seconds']}s)")
    return runner.EXIT_OK


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "compare",
        "measure correct designs against each other (throughput, latency)",
        cmd_compare,
        epilog="example:\n  raceproof compare coordinator-async-append --seeds 3 --out out/",
    )
    sub.add_argument("scenario", help="a scenario with a design comparison")
    sub.add_argument("--seeds", type=int_in(1, 1_000), default=3, help="runs per point (default 3)")
    sub.add_argument(
        "--rate",
        type=int_in(1, 1_000_000),
        default=400,
        help="commits per second offered (default 400)",
    )
    sub.add_argument(
        "--duration-ms",
        type=int_in(1, 10**9),
        default=10_000,
        help="virtual ms of load (default 10000)",
    )
    sub.add_argument(
        "--out", type=non_empty, default="out", help="folder for the CSV and the PNG (default out/)"
    )
