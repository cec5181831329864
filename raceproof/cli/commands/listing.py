"""``raceproof list``: the scenarios, their variants, checkers and bounds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from raceproof.cli.commands.common import (
    add_command,
)
from raceproof.runs import runner
from raceproof.scenarios.catalogue import (
    all_scenarios,
)


# -- list ---------------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    scenarios = [s.describe() for s in all_scenarios()]
    if args.json:
        print(json.dumps({"scenarios": scenarios}, sort_keys=True))
        return runner.EXIT_OK
    for s in scenarios:
        print(f"{s['scenario']}: {s['summary']}")
        for name, what in s["variants"].items():
            mark = "expected to violate" if name in s["expect_violation"] else "expected to hold"
            print(f"    {name:28} {what}  [{mark}]")
        print(f"    checkers: {', '.join(s['checkers'])}")
        print(
            f"    bounds: {s['bounds']}   report timeline: {'yes' if s['report_timeline'] else 'no'}"
        )
    return runner.EXIT_OK


def add(commands: Any) -> None:
    add_command(
        commands,
        "list",
        "scenarios, their variants, checkers and bounds",
        cmd_list,
        epilog="example:\n  raceproof list\n  raceproof list --json",
    )
