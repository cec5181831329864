"""``raceproof prove``: bounded exhaustive exploration, with what it covered."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from raceproof.scenarios import runner
from raceproof.scenarios.commands.common import (
    Progress,
    add_command,
    emit,
    outcome_story,
    print_outcome,
    print_reports,
    scenario_and_variant,
    scenario_args,
)
from raceproof.sim import (
    Budget,
)


# -- prove --------------------------------------------------------------------------
def cmd_prove(args: argparse.Namespace) -> int:
    scenario, variant = scenario_and_variant(args)
    overrides = runner.parse_overrides(args.set)
    config = scenario.config_for("prove", overrides)
    max_dev = scenario.prove_max_deviations if args.max_deviations is None else args.max_deviations
    max_branch = scenario.prove_max_branch if args.max_branch is None else args.max_branch
    budget = Budget(examples=args.max_schedules, seconds=args.budget, clock=time.monotonic)
    progress = Progress(f"prove {scenario.name}/{variant}", not args.json, count_key="runs")
    started = time.monotonic()
    report = scenario.prove(
        variant, budget, config=config, checker=args.checker, max_deviations=max_dev,
        max_branch=max_branch, progress=progress,
    )  # fmt: skip
    progress.done()
    result = runner.base_result(scenario, variant, "exhaustive", config)
    result.update(
        verdict=report.verdict,
        complete=report.complete,
        schedules=report.schedules,
        examples=report.runs,
        bounds_pruned=report.pruned,
        max_deviations_reached=report.max_deviations_seen,
        configuration={
            "config": result["config"],
            "bounds": scenario.bounds.to_json(),
            "max_deviations": max_dev,
            "max_branch": max_branch,
            "max_schedules": args.max_schedules,
            "budget_s": args.budget,
        },
    )
    if report.shrunk is not None:
        runner.attach_counterexample(
            result, Path(args.out), scenario, variant, config, report.shrunk, "exhaustive"
        )
        result["verdict"] = "violated"
        result["schedules"] = report.schedules
    result["seconds"] = round(time.monotonic() - started, 3)

    def human() -> None:
        if report.shrunk is not None:
            title = (
                f"== {scenario.name} / {variant}: NOT proven: violation at schedule {report.runs}"
            )
            story = outcome_story(scenario, variant, config, report.shrunk, title)
            print_outcome(report.shrunk, title, story)
            print(f"counterexample: {result['counterexample']}")
            print_reports(result)
            print(f"repro: {result['repro']}")
            return
        state = "PROVEN" if report.complete else "INCONCLUSIVE"
        print(
            f"{scenario.name} / {variant}: {state}: {report.schedules} distinct complete schedules "
            f"({report.runs} runs, up to {report.max_deviations_seen} deviations) in {result['seconds']}s"
        )
        print(f"  configuration: {json.dumps(result['config'], sort_keys=True)}")
        if report.pruned:
            print(
                f"  pruned by: {', '.join(f'{k} ({v} branches)' for k, v in sorted(report.pruned.items()))}"
            )

    return emit(args, result, human)


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "prove",
        "bounded exhaustive exploration of every schedule",
        cmd_prove,
        epilog="examples:\n"
        "  raceproof prove lost-update --variant fix-cas\n"
        "  raceproof prove brooklin-double-stop --variant fix-conditional-write --json",
    )
    scenario_args(sub)
    sub.add_argument("--budget", type=float, default=600.0, help="wall seconds (default 600)")
    sub.add_argument(
        "--max-schedules", type=int, default=1_000_000, help="runs at most (default 1e6)"
    )
    sub.add_argument(
        "--max-deviations", type=int, help="cap on deviations from FIFO (prunes: not complete)"
    )
    sub.add_argument(
        "--max-branch", type=int, help="cap on options per draw (prunes: not complete)"
    )
    sub.add_argument("--checker", help="judge only this checker (default: all)")
    sub.add_argument("--out", default="counterexamples", help="folder for counterexample files")
