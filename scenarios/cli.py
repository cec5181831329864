"""The ``raceproof`` command line: assembles the commands and maps every failure to its exit code.

Exit codes are the contract: 0 holds / nothing found, 1 violation found,
2 bad usage or bad input (a clear message, nothing half-written),
3 inconclusive (a bound was hit before a proof completed). Every command
takes ``--json`` for one machine-readable object on stdout; human output and
progress go to stderr when it is a terminal. Each command lives in its own
module under ``raceproof.scenarios.commands``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from raceproof.scenarios import discovery, runner
from raceproof.scenarios.catalogue import UnknownName
from raceproof.scenarios.commands import COMMANDS
from raceproof.scenarios.commands.common import UsageError

__all__ = ["UsageError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raceproof",
        description="Deterministic simulation of data-losing races: find, shrink, replay, prove.",
        epilog="exit codes: 0 holds / nothing found, 1 violation, 2 bad usage or input, 3 inconclusive",
    )
    parser.add_argument("--version", action="version", version=f"raceproof {runner.tool_version()}")
    parser.add_argument(
        "--scenarios",
        dest="top_scenarios",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="also load the scenarios this module or file registers (repeatable; "
        "every command takes it too)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        discovery.ensure_loaded([*args.top_scenarios, *(args.scenarios or [])])
        code: int = args.handler(args)
        return code
    except (UsageError, UnknownName, discovery.ScenarioLoadError) as exc:
        message = str(exc).strip("'\"")
        if getattr(args, "json", False):
            print(json.dumps({"error": message, "verdict": None}, sort_keys=True))
        print(f"raceproof: error: {message}", file=sys.stderr)
        return runner.EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
