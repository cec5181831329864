"""``raceproof prove``: bounded exhaustive exploration, with what it covered."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from raceproof.scenarios import runner
from raceproof.scenarios.commands.common import (
    Progress,
    add_command,
    emit,
    emit_interrupted,
    outcome_story,
    print_outcome,
    print_reports,
    scenario_and_variant,
    scenario_args,
)
from raceproof.scenarios.signals import Coverage
from raceproof.scenarios.validation import (
    int_in,
    non_empty,
    positive_seconds,
    prepare_output_dir,
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
    out_dir = prepare_output_dir(args.out)
    budget = Budget(examples=args.max_schedules, seconds=args.budget, clock=time.monotonic)
    progress = Progress(f"prove {scenario.name}/{variant}", not args.json, count_key="runs")
    coverage = Coverage()
    started = time.monotonic()
    try:
        report = scenario.prove(
            variant, budget, config=config, checker=args.checker, max_deviations=max_dev,
            max_branch=max_branch, progress=coverage.progress(progress),
        )  # fmt: skip
    except KeyboardInterrupt as exc:
        progress.done()
        seen = coverage.snapshot
        partial = runner.base_result(scenario, variant, "exhaustive", config)
        partial.update(
            complete=False, schedules=seen.get("schedules", 0), examples=seen.get("runs", 0),
            bounds_pruned={"interrupted": seen.get("frontier", 0)},
            max_deviations_reached=seen.get("depth", 0),
            seconds=round(time.monotonic() - started, 3),
        )  # fmt: skip
        covered = (
            f"{partial['schedules']} distinct complete schedules ({partial['examples']} runs, "
            f"{seen.get('frontier', 0)} left unexplored); not a proof"
        )
        return emit_interrupted(args, partial, exc, covered)
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
            result, out_dir, scenario, variant, config, report.shrunk, "exhaustive"
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
    sub.add_argument(
        "--budget", type=positive_seconds, default=600.0, help="wall seconds (default 600)"
    )
    sub.add_argument(
        "--max-schedules", type=int_in(1, 10**9), default=1_000_000,
        help="runs at most (default 1e6)",
    )  # fmt: skip
    sub.add_argument(
        "--max-deviations", type=int_in(0, 10_000),
        help="cap on deviations from FIFO (prunes: not complete)",
    )  # fmt: skip
    sub.add_argument(
        "--max-branch", type=int_in(1, 10_000),
        help="cap on options per draw, 1 = FIFO only (prunes: not complete)",
    )  # fmt: skip
    sub.add_argument("--checker", type=non_empty, help="judge only this checker (default: all)")
    sub.add_argument(
        "--out", type=non_empty, default="counterexamples", help="folder for counterexample files"
    )
