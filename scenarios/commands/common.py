"""What every command shares: the usage error, JSON-or-human output, progress, the scenario arguments.

One command per module lives beside this one; each has an ``add(commands)`` that
registers its parser with its handler, so ``raceproof.scenarios.cli`` only
assembles them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from raceproof.scenarios import runner
from raceproof.scenarios.catalogue import (
    Scenario,
    get,
)
from raceproof.sim import (
    RunOutcome,
)


class UsageError(Exception):
    """Bad usage or bad input: exit 2 with this message."""


# -- output helpers -----------------------------------------------------------------
def emit(args: argparse.Namespace, result: dict[str, Any], human: Callable[[], None]) -> int:
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        human()
    return runner.EXIT_FOR_VERDICT.get(str(result.get("verdict")), runner.EXIT_OK)


class ProgressLine:
    """A throttled one-line progress display on stderr, only on a terminal."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self.started = time.monotonic()
        self.last = 0.0

    def __call__(self, info: dict[str, Any]) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.2:
            return
        self.last = now
        body = "  ".join(f"{k} {v}" for k, v in info.items())
        sys.stderr.write(f"\r{self.label}  {body}  {now - self.started:6.1f}s ")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\r" + " " * 100 + "\r")
            sys.stderr.flush()


def scenario_and_variant(args: argparse.Namespace) -> tuple[Scenario, str]:
    scenario = get(args.scenario)
    default = next(iter(scenario.variants))
    if getattr(args, "report_timeline", False) and scenario.report_variant:
        default = scenario.report_variant
    variant = args.variant or default
    scenario.check_variant(variant)
    return scenario, variant


def print_outcome(outcome: RunOutcome, title: str) -> None:
    print(title)
    print(outcome.history.render())
    print()
    for verdict in outcome.verdicts:
        where = f" (op #{verdict.op_index})" if verdict.op_index is not None else ""
        print(f"  {verdict.status.upper():9} {verdict.checker}{where}  {verdict.message}")
    devs = [
        f"draw #{i} {c.label} = option {c.value} of {c.n}"
        for i, c in enumerate(outcome.choices)
        if c.value
    ]
    print(f"deviations from FIFO ({len(devs)}): " + ("; ".join(devs) if devs else "none"))
    print(
        f"verdict: {outcome.status}   trace {outcome.trace_hash[:16]}   "
        f"{outcome.virtual_ms} virtual ms, {outcome.steps} steps"
    )


def add_command(
    commands: Any,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], int],
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand with ``--json`` and its handler; ``epilog`` shows examples in ``--help``."""
    sub = commands.add_parser(
        name,
        help=help_text,
        description=help_text,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.add_argument("--json", action="store_true", help="one JSON object on stdout")
    sub.set_defaults(handler=handler)
    return sub


def scenario_args(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("scenario", help="a scenario name (see `raceproof list`)")
    sub.add_argument("--variant", help="a variant of the scenario (default: its first)")
    sub.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a configuration field (JSON value), repeatable",
    )
