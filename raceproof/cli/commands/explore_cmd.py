"""``raceproof explore``: search for a violation, shrink it, save the counterexample."""

from __future__ import annotations

import argparse
import time
from typing import Any

from raceproof.cli.commands.common import (
    Progress,
    UsageError,
    add_command,
    emit,
    emit_interrupted,
    judge_probes,
    outcome_story,
    print_outcome,
    print_reports,
    probes_line,
    scenario_and_variant,
    scenario_args,
)
from raceproof.cli.signals import Coverage
from raceproof.cli.validation import (
    MAX_EXAMPLES,
    int_in,
    non_empty,
    parse_overrides,
    positive_seconds,
    prepare_output_dir,
)
from raceproof.runs import runner
from raceproof.sim import (
    SEARCH_STRATEGIES,
    Budget,
    explore,
)

MAX_PCT_DEPTH = 1_000  # PCT finds bugs of small depth; a depth past the run's steps means nothing


# -- explore ------------------------------------------------------------------------
def cmd_explore(args: argparse.Namespace) -> int:
    scenario, variant = scenario_and_variant(args)
    overrides = parse_overrides(args.set)
    config = scenario.config_for("explore", overrides)
    if args.strategy not in SEARCH_STRATEGIES:
        raise UsageError(
            f"unknown strategy {args.strategy!r}; valid: {', '.join(SEARCH_STRATEGIES)}"
        )
    # --examples alone is an examples-only budget: no wall clock can change its verdict.
    budget_s: float | None = args.budget
    if budget_s is None and args.examples is None:
        budget_s = scenario.default_budget_s
    examples = scenario.default_examples if args.examples is None else args.examples
    out_dir = prepare_output_dir(args.out)
    budget = Budget(examples=examples, seconds=budget_s, clock=time.monotonic)
    coverage = Coverage()
    run = coverage.runner(scenario.runner(variant, config, args.checker))
    progress = Progress(
        f"explore {scenario.name}/{variant} [{args.strategy}]", not args.json, total=examples
    )
    started = time.monotonic()
    try:
        report = explore(
            run,
            args.strategy,
            args.seed,
            budget,
            coverage.progress(progress),
            pct_depth=args.pct_depth,
        )
    except KeyboardInterrupt as exc:
        progress.done()
        partial = runner.base_result(scenario, variant, args.strategy, config)
        partial.update(examples=coverage.examples, schedules=coverage.examples, seed=args.seed)
        covered = f"{coverage.examples} of {examples} examples"
        if coverage.best is not None:
            runner.attach_counterexample(
                partial, out_dir, scenario, variant, config, coverage.best, args.strategy
            )
            covered += ", a violation found (not fully shrunk)"
        partial["seconds"] = round(time.monotonic() - started, 3)
        return emit_interrupted(args, partial, exc, covered)
    progress.done()
    result = runner.base_result(scenario, variant, args.strategy, config)
    result.update(
        verdict=report.verdict,
        examples=report.examples,
        seed=args.seed,
        inconclusive_runs=report.inconclusive_runs,
        undecided_by=report.undecided_by,
        notes=report.notes,
        budget_s=budget_s,
        max_examples=examples,
    )
    if report.shrunk is not None and report.found is not None:
        runner.attach_counterexample(
            result, out_dir, scenario, variant, config, report.shrunk, args.strategy
        )
        result["schedules"] = report.examples
        result["found_deviations"] = sum(1 for v in report.found.values if v)
        result["found_timeline_ops"] = len(report.found.history)
        result["shrink_runs"] = report.shrink_runs
    else:
        result["schedules"] = report.examples
    judge_probes(result, scenario, variant, report.probes)
    result["seconds"] = round(time.monotonic() - started, 3)

    def human() -> None:
        probes = probes_line(result, "examples")
        if report.shrunk is not None and report.shrunk.error is not None:
            print(
                f"== {scenario.name} / {variant}: ERROR found by {args.strategy} after "
                f"{report.examples} examples"
            )
            print(runner.error_text(report.shrunk, result["repro"]))
        elif report.shrunk is not None:
            title = (
                f"== {scenario.name} / {variant}: violation found by "
                f"{args.strategy} after {report.examples} examples, shrunk to "
                f"{result['deviations']} deviation(s) from FIFO ({result['timeline_ops']} ops)"
            )
            story = outcome_story(scenario, variant, config, report.shrunk, title)
            print_outcome(report.shrunk, title, story)
            print(f"counterexample: {result['counterexample']}")
            print_reports(result)
            print(f"repro: {result['repro']}")
        else:
            print(
                f"{scenario.name} / {variant}: {result['verdict']}: {'; '.join(result['notes'])} "
                f"({result['seconds']}s)"
            )
        if probes:
            print(probes)

    return emit(args, result, human)


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "explore",
        "search for a violation, shrink it, save the counterexample",
        cmd_explore,
        epilog="examples:\n"
        "  raceproof explore lost-update --variant buggy --strategy random --seed 1\n"
        "  raceproof explore brooklin-double-stop --variant buggy --strategy pct --examples 500",
    )
    scenario_args(sub)
    sub.add_argument(
        "--strategy",
        default="random",
        help=f"one of {', '.join(SEARCH_STRATEGIES)} (default random)",
    )
    sub.add_argument(
        "--budget",
        type=positive_seconds,
        help="wall seconds (default: the scenario's, none when --examples is given)",
    )
    sub.add_argument(
        "--examples", type=int_in(1, MAX_EXAMPLES), help="runs at most (default: the scenario's)"
    )
    sub.add_argument("--seed", type=int_in(0), default=0, help="seed of the search (default 0)")
    sub.add_argument(
        "--pct-depth", type=int_in(1, MAX_PCT_DEPTH), default=3, help="PCT bug depth (default 3)"
    )
    sub.add_argument(
        "--checker", type=non_empty, help="count only violations of this checker (default: all)"
    )
    sub.add_argument(
        "--out", type=non_empty, default="counterexamples", help="folder for counterexample files"
    )
