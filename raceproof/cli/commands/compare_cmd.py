"""``raceproof compare``: designs measured against each other."""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raceproof.cli.commands.common import StatusLine, UsageError, add_command, print_json
from raceproof.cli.validation import int_in, non_empty, prepare_output_dir
from raceproof.runs import runner
from raceproof.scenarios.catalogue import (
    get,
)
from raceproof.sim.verdicts import Verdict

if TYPE_CHECKING:
    from raceproof.measure.compare import Grid


@dataclasses.dataclass
class CompareRequest:
    """What ``compare`` was asked: the comparison, its grid, where its files go."""

    scenario: str
    grid: Grid
    out_dir: Path


def cmd_compare(args: argparse.Namespace) -> int:
    request = _parse(args)
    with StatusLine("compare", not args.json, says_start=True) as status:
        result = run_compare(request, status)
    return _render(args, result)


def _parse(args: argparse.Namespace) -> CompareRequest:
    from raceproof.measure import compare

    scenario = get(args.scenario)
    if scenario.name not in compare.COMPARISONS:
        raise UsageError(
            f"{scenario.name} has no design comparison; "
            f"valid: {', '.join(sorted(compare.COMPARISONS))}"
        )
    out_dir = prepare_output_dir(args.out)
    return CompareRequest(
        scenario=scenario.name,
        grid=compare.Grid(seeds=args.seeds, rate_per_s=args.rate, duration_ms=args.duration_ms),
        out_dir=out_dir,
    )


def run_compare(request: CompareRequest, say: Callable[[str], None]) -> dict[str, Any]:
    """Every point of the grid, each design's mean over the seeds, into a CSV and a PNG."""
    from raceproof.measure import compare

    started = time.monotonic()
    rows = compare.COMPARISONS[request.scenario](request.grid, say)
    csv_path, png_path = compare.write_outputs(rows, request.out_dir, request.grid)
    return {
        "scenario": request.scenario,
        "verdict": Verdict.OK,
        "rows": rows,
        "grid": dataclasses.asdict(request.grid),
        "csv": str(csv_path),
        "png": str(png_path),
        "seconds": round(time.monotonic() - started, 2),
    }


def _render(args: argparse.Namespace, result: dict[str, Any]) -> int:
    from raceproof.measure import compare

    if args.json:
        print_json(result)
    else:
        print(compare.table(result["rows"]))
        print(f"\nwrote {result['csv']} and {result['png']} ({result['seconds']}s)")
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
