"""``raceproof list``: the scenarios, their variants, checkers, race-window probes and bounds."""

from __future__ import annotations

import argparse
from typing import Any

from raceproof.cli.commands.common import add_command, print_json
from raceproof.runs import runner
from raceproof.scenarios.catalogue import (
    all_scenarios,
)


# -- list ---------------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    scenarios = [s.describe() for s in all_scenarios()]
    if args.json:
        print_json({"scenarios": scenarios})
        return runner.EXIT_OK
    for s in scenarios:
        print(f"{s['scenario']}: {s['summary']}")
        for line in variant_lines(s):
            print(f"    {line}")
        print(f"    checkers: {', '.join(s['checkers'])}")
        for line in probe_lines(s["probes"], s["unreachable_probes"]):
            print(f"    {line}")
        print(
            f"    bounds: {s['bounds']}   report timeline: {'yes' if s['report_timeline'] else 'no'}"
        )
    return runner.EXIT_OK


def variant_lines(scenario: dict[str, Any]) -> list[str]:
    """A described scenario's variants, one line each: name, what it is, what it is expected to do.

    The names are one column, at least 27 wide (as the manual's listings show
    them) and wider when a name is longer, so every description starts in line.
    """
    from raceproof.reports.terminal import columns_text

    rows = []
    for name, what in scenario["variants"].items():
        mark = "expected to violate" if name in scenario["expect_violation"] else "expected to hold"
        if name in scenario["found_by_proof"]:
            mark += ", judged by its proof"
        rows.append((name, f"{what}  [{mark}]"))
    return columns_text(rows, min_widths=(27,)).splitlines() if rows else []


def probe_lines(probes: list[str], unreachable: dict[str, dict[str, str]]) -> list[str]:
    """The race-window probes, each with the variants that declare it unreachable and why.

    A variant expected to hold is judged ``not-reached`` when no run reaches one
    of its probes; a declared-unreachable probe is left out of that variant's
    judgement, so the listing says which and why.
    """
    if not probes:
        return ["probes: none (an ok is not checked against a race window)"]
    lines = []
    for probe in probes:
        lines.append(f"probe: {probe}")
        for variant, why in sorted(
            (v, reasons[probe]) for v, reasons in unreachable.items() if probe in reasons
        ):
            lines.append(f"    unreachable on {variant}: {why}")
    return lines


def add(commands: Any) -> None:
    add_command(
        commands,
        "list",
        "scenarios, their variants, checkers, race-window probes and bounds",
        cmd_list,
        epilog="example:\n  raceproof list\n  raceproof list --json",
    )
