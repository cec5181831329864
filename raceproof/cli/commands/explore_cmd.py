"""``raceproof explore``: search for a violation, shrink it, save the counterexample."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
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
    SearchReport,
    explore,
)
from raceproof.sim.errors import did_you_mean

MAX_PCT_DEPTH = 1_000  # PCT finds bugs of small depth; a depth past the run's steps means nothing


# -- explore ------------------------------------------------------------------------
@dataclass(frozen=True)
class ExploreRequest:
    """What ``explore`` was asked: parsed and checked, nothing run yet."""

    scenario: Any
    variant: str
    config: Any
    budget_s: float | None
    examples: int
    out_dir: Path


@dataclass
class ExploreResult:
    """What the search found: the result dict, its report, or the signal that stopped it."""

    result: dict[str, Any]
    report: SearchReport | None = None
    interrupted: BaseException | None = None
    covered: str = ""


def cmd_explore(args: argparse.Namespace) -> int:
    request = _parse(args)
    return _render(args, request, run_explore(args, request))


def _parse(args: argparse.Namespace) -> ExploreRequest:
    scenario, variant = scenario_and_variant(args)
    overrides = parse_overrides(args.set)
    config = scenario.config_for("explore", overrides)
    if args.strategy not in SEARCH_STRATEGIES:
        raise UsageError(
            f"unknown strategy {args.strategy!r}{did_you_mean(args.strategy, SEARCH_STRATEGIES)}; "
            f"valid: {', '.join(SEARCH_STRATEGIES)}"
        )
    # --examples alone is an examples-only budget: no wall clock can change its verdict.
    budget_s: float | None = args.budget
    if budget_s is None and args.examples is None:
        budget_s = scenario.default_budget_s
    examples = scenario.default_examples if args.examples is None else args.examples
    return ExploreRequest(
        scenario=scenario,
        variant=variant,
        config=config,
        budget_s=budget_s,
        examples=examples,
        out_dir=prepare_output_dir(args.out),
    )


def run_explore(args: argparse.Namespace, request: ExploreRequest) -> ExploreResult:
    """Search, shrink and save; a signal returns what was covered (with a finding, if any)."""
    scenario, variant, config, out_dir = (
        request.scenario,
        request.variant,
        request.config,
        request.out_dir,
    )
    budget = Budget(examples=request.examples, seconds=request.budget_s, clock=time.monotonic)
    coverage = Coverage()
    run = coverage.runner(scenario.runner(variant, config, args.checker))
    progress = Progress(
        f"explore {scenario.name}/{variant} [{args.strategy}]",
        not args.json,
        total=request.examples,
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
        covered = f"{coverage.examples} of {request.examples} examples"
        if coverage.best is not None:
            runner.attach_counterexample(
                partial, out_dir, scenario, variant, config, coverage.best, args.strategy
            )
            covered += ", a violation found (not fully shrunk)"
        partial["seconds"] = round(time.monotonic() - started, 3)
        return ExploreResult(result=partial, interrupted=exc, covered=covered)
    progress.done()
    result = _result(args, request, report)
    result["seconds"] = round(time.monotonic() - started, 3)
    return ExploreResult(result=result, report=report)


def _result(
    args: argparse.Namespace, request: ExploreRequest, report: SearchReport
) -> dict[str, Any]:
    scenario, variant, config = request.scenario, request.variant, request.config
    result = runner.base_result(scenario, variant, args.strategy, config)
    result.update(
        verdict=report.verdict,
        examples=report.examples,
        seed=args.seed,
        inconclusive_runs=report.inconclusive_runs,
        undecided_by=report.undecided_by,
        notes=report.notes,
        budget_s=request.budget_s,
        max_examples=request.examples,
    )
    if report.shrunk is not None and report.found is not None:
        runner.attach_counterexample(
            result, request.out_dir, scenario, variant, config, report.shrunk, args.strategy
        )
        result["schedules"] = report.examples
        result["found_deviations"] = sum(1 for v in report.found.values if v)
        result["found_timeline_ops"] = len(report.found.history)
        result["shrink_runs"] = report.shrink_runs
    else:
        result["schedules"] = report.examples
    judge_probes(result, scenario, variant, report.probes)
    return result


def _render(args: argparse.Namespace, request: ExploreRequest, done: ExploreResult) -> int:
    result, report = done.result, done.report
    if done.interrupted is not None:
        return emit_interrupted(args, result, done.interrupted, done.covered)
    if report is None:  # run_explore returns a report or the signal: a raceproof bug
        raise RuntimeError("explore ended with neither a report nor a signal")
    scenario, variant = request.scenario, request.variant

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
            story = outcome_story(scenario, variant, request.config, report.shrunk, title)
            print_outcome(report.shrunk, title, story)
            saved = result["counterexample"] or "not saved (the warning below says why)"
            print(f"counterexample: {saved}")
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
