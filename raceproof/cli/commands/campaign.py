"""``raceproof campaign``: scenario × variant × strategy × seed (and proofs in rounds) as Spark tasks.

Also ``raceproof report DIR`` for a campaign folder (the campaign report with
``--baseline``), registered here while the report command for counterexamples
lives elsewhere; :func:`report_campaign` is what either calls for a folder
that holds a campaign.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from raceproof.cli import signals
from raceproof.cli.commands.common import (
    StatusLine,
    UsageError,
    add_command,
    print_json,
    refuse_contradictions,
)
from raceproof.cli.validation import (
    MAX_EXAMPLES,
    BadInput,
    int_in,
    non_empty,
    prepare_output_dir,
)
from raceproof.runs import runner
from raceproof.sim import STRATEGIES
from raceproof.sim.errors import did_you_mean
from raceproof.sim.user_files import ascii_int
from raceproof.sim.verdicts import Verdict, exit_code_for

MAX_SEEDS = 1_000_000
MAX_CROSS_CHECK = 10_000


@contextlib.contextmanager
def _refusals_are_usage_errors(status: StatusLine) -> Iterator[None]:
    """The campaign or Spark refusing what it was given is bad input (exit 2, one line)."""
    from raceproof.spark_integration import campaign
    from raceproof.spark_integration.session import SparkUnavailable

    try:
        yield
    except campaign.CampaignError as exc:
        raise UsageError(str(exc)) from None
    except SparkUnavailable as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    finally:
        status.done()


# Options that cannot mean anything together (exit 2 naming both), before any folder or Spark.
CONTRADICTIONS = (
    ("seeds", "seed_range", "both say which seeds to run; give one"),
    ("pipeline", "scenario", "a --pipeline campaign runs a pipeline's experiments, no scenario"),
    ("pipeline", "variant", "a --pipeline campaign runs a pipeline's experiments, no variant"),
    ("pipeline", "strategy", "a --pipeline campaign runs a pipeline's experiments, no search"),
    ("pipeline", "prove", "a --pipeline campaign runs a pipeline's experiments, no proof"),
)
DEFAULT_SEEDS = 20


def _seeds(args: argparse.Namespace) -> list[int]:
    if args.seed_range is not None:  # an empty --seed-range is bad, not absent
        first, sep, last = args.seed_range.partition(":")
        try:
            low, high = ascii_int(first, "--seed-range"), ascii_int(last, "--seed-range")
        except BadInput:
            raise UsageError(
                f"--seed-range takes A:B (integers in ASCII digits), got {args.seed_range!r}"
            ) from None
        if not sep or high <= low or low < 0:
            raise UsageError(f"--seed-range A:B needs 0 <= A < B, got {args.seed_range!r}")
        if high - low > MAX_SEEDS:
            raise UsageError(f"--seed-range A:B covers at most {MAX_SEEDS} seeds, got {high - low}")
        return list(range(low, high))
    return list(range(DEFAULT_SEEDS if args.seeds is None else args.seeds))


def _check_master(master: str) -> None:
    """A master URL Spark would refuse, by its own rule, before any folder or JVM."""
    from raceproof.spark_integration.preflight import master_refused

    if master_refused(master):
        raise UsageError(f"--master {master!r}: {master_refused(master)}")


def cmd_campaign(args: argparse.Namespace) -> int:
    from raceproof.reports import campaign_folder
    from raceproof.spark_integration import campaign

    refuse_contradictions(args, CONTRADICTIONS)
    if args.experiment and not args.pipeline:
        raise UsageError("--experiment names a --pipeline campaign's experiment; give --pipeline")
    seeds = _seeds(args)
    _check_master(args.master)
    strategies = args.strategy or ["random", "hypothesis", "pct"]
    for strategy in strategies:
        if strategy not in STRATEGIES:
            near = did_you_mean(strategy, STRATEGIES)
            raise UsageError(f"unknown strategy {strategy!r}{near}; valid: {', '.join(STRATEGIES)}")
    prepare_output_dir(args.out)
    campaign_folder.check_folder(Path(args.out))  # before Spark starts: damaged or foreign
    if getattr(args, "pipeline", None):
        return pipeline_campaign(args)
    options = campaign.Options(
        scenarios=args.scenario or (),
        variants=args.variant or (),
        strategies=tuple(strategies),
        seeds=tuple(seeds),
        examples=args.examples,
        prove=args.prove,
        master=args.master,
        out=args.out,
        scenario_specs=tuple(
            [*(getattr(args, "top_scenarios", None) or []), *(args.scenarios or [])]
        ),
        cross_check=args.cross_check,
    )
    status = StatusLine("campaign", not args.json)
    say = status if not args.json else None
    with _refusals_are_usage_errors(status):
        summary = campaign.run(options, say)
    rows = campaign.read_rows(Path(args.out))
    from raceproof.reports.campaign import failed_expectations

    failed = failed_expectations(rows)
    determinism_failures = [c for c in summary.determinism if not c["same"]]
    verdict = scenario_campaign_verdict(
        rows, failed=failed, determinism_failures=determinism_failures
    )
    result: dict[str, Any] = {
        "verdict": verdict,
        "out": args.out,
        "rows": len(rows),
        "failed_expectations": failed,
        "determinism_failures": determinism_failures,
        **summary.to_json(),
    }
    if args.json:
        print_json(result)
    else:
        rate = f", {summary.ran / summary.seconds:.2f} cells/s" if summary.seconds else ""
        print(
            f"campaign {args.out}: {summary.cells} cells, {summary.already_done} already done, "
            f"{summary.ran} run now in {summary.seconds:.1f}s{rate}; {len(rows)} rows in "
            f"{Path(args.out) / campaign.RESULTS}"
        )
        for item in failed:
            print(f"  FAILED EXPECTATION {item['scenario']}/{item['variant']}: {item['why']}")
        for check in determinism_failures:
            print(f"  DETERMINISM FAILURE {check['cell']}")
        print(f"report: raceproof report {args.out}")
    if summary.interrupted:
        return 128 + signal.Signals[summary.interrupted_by or "SIGINT"]
    return exit_code_for(verdict)


def scenario_campaign_verdict(
    rows: list[dict[str, Any]],
    *,
    failed: list[dict[str, Any]],
    determinism_failures: list[dict[str, Any]],
) -> Verdict:
    """A scenario campaign's verdict from its rows: it says no more than its cells do.

    A contradicted expectation or a determinism failure is ``violated`` (exit 1); a cell
    whose model crashed is ``error`` (exit 4), never a found race; a variant expected to
    hold whose search cells are not all ``ok`` (a bound hit, an undecided checker, an
    unreached probe) is ``inconclusive`` (exit 3), and so is a campaign with no rows at
    all. Only then is it ``ok``.
    """
    crashed = any(row["verdict"] == Verdict.ERROR for row in rows)
    contradicted = [item for item in failed if item["contradicted"]]
    if contradicted or determinism_failures:
        return Verdict.VIOLATED
    if crashed:
        return Verdict.ERROR
    undecided = [
        row
        for row in rows
        if row["expected"] == Verdict.OK
        and row["kind"] == "search"
        and row["verdict"] != Verdict.OK
    ]
    if undecided or not rows:
        return Verdict.INCONCLUSIVE
    return Verdict.OK


def _pipeline_campaign_interrupted(args: argparse.Namespace, exc: signals.Interrupted) -> int:
    """A signal stopped ``campaign --pipeline``: the JVM goes first, then what finished is said.

    Each cell's row was appended as it finished, so the folder holds exactly those
    (a re-run resumes after them); the line says how many, exit 130 / 143.
    """
    from raceproof.spark_integration import campaign, session

    with contextlib.suppress(Exception):  # the signal may have cut a py4j call short
        session.stop_session()
    out = Path(args.out)
    try:
        rows = campaign.read_rows(out) if (out / campaign.RESULTS).is_dir() else []
    except Exception:  # a part cut short by the signal: the count is unknown, nothing more
        rows = []
    finished = f"{len(rows)} finished cells kept in {out / campaign.RESULTS}"
    if args.json:
        result = {"verdict": Verdict.INCONCLUSIVE, "interrupted": exc.name, "rows": len(rows)}
        print_json(result)
    print(
        f"raceproof: error: interrupted by {exc.name}: {finished} "
        f"(run the same command again to resume)",
        file=sys.stderr,
    )
    return exc.exit_code


def pipeline_campaign(args: argparse.Namespace) -> int:
    """``campaign --pipeline SPEC ...``: pipeline × experiment × seed, rows in the same Parquet
    layout; every pipeline given, on one Spark session."""
    from raceproof.cli.commands.spark_check import SparkRequest, SparkResult, render
    from raceproof.spark_integration import campaign, campaign_pipelines
    from raceproof.spark_integration.pipeline import (
        EXIT_PIPELINE_ERROR,
        PipelineError,
        PipelineRaised,
        resolve,
    )

    specs = [args.pipeline] if isinstance(args.pipeline, str) else list(args.pipeline)
    try:  # the factory and all that needs no Spark, before a session starts (as spark-check)
        for spec in specs:
            resolve(spec)
    except PipelineError as exc:
        raise UsageError(str(exc)) from None
    except PipelineRaised as exc:  # the user's code raised: verdict error, exit 4
        return render(args, SparkResult(SparkRequest([], [], []), error=exc))
    status = StatusLine("campaign", not args.json)
    try:
        with _refusals_are_usage_errors(status):
            summary = campaign_pipelines.run(
                specs,
                Path(args.out),
                _seeds(args),
                args.experiment or (),
                status if not args.json else None,
            )
    except signals.Interrupted as exc:
        return _pipeline_campaign_interrupted(args, exc)
    rows = campaign.read_rows(Path(args.out))
    verdicts = summary.verdicts
    verdict = campaign_verdict(verdicts)
    if args.json:
        print_json({"verdict": verdict, "out": args.out, "rows": len(rows), **summary.to_json()})
    else:
        print(
            f"campaign {args.out}: {summary.cells} cells, {summary.already_done} already done, "
            f"{summary.ran} run now in {summary.seconds:.1f}s; {len(rows)} rows; "
            f"verdicts {verdicts}"
        )
        print(f"report: raceproof report {args.out}")
    if verdict == Verdict.ERROR:
        return EXIT_PIPELINE_ERROR
    return exit_code_for(verdict)


def campaign_verdict(verdicts: dict[str, int]) -> Verdict:
    """A pipeline campaign's verdict from its cells' counts: the worst one wins.

    ``violated`` before ``error`` before undecided: a cell ``inconclusive`` or
    ``not-reached`` (or any word that is not ``ok``) makes the campaign
    ``inconclusive``, exit 3, never a pass; only cells all ``ok`` are ``ok``, and a
    campaign with no cell is ``inconclusive`` too.
    """
    seen = {word for word, count in verdicts.items() if count}
    if Verdict.VIOLATED in seen:
        return Verdict.VIOLATED
    if Verdict.ERROR in seen:
        return Verdict.ERROR
    if seen - {Verdict.OK} or not seen:  # no cell at all judged nothing
        return Verdict.INCONCLUSIVE
    return Verdict.OK


def is_campaign_dir(path: Path) -> bool:
    from raceproof.reports.campaign_folder import MANIFEST

    return path.is_dir() and (path / MANIFEST).is_file()


def report_campaign(args: argparse.Namespace) -> int:
    """``raceproof report DIR [--baseline OLD_DIR]``: Markdown, HTML and a plot into DIR."""
    from raceproof.reports import campaign as campaign_report

    folder = Path(args.input)
    if not is_campaign_dir(folder):
        raise UsageError(f"{folder} is not a campaign folder (no campaign.json)")
    baseline = Path(args.baseline) if args.baseline is not None else None
    if baseline is not None and not is_campaign_dir(baseline):
        raise UsageError(f"--baseline {baseline} is not a campaign folder (no campaign.json)")
    from raceproof.reports.campaign_folder import check_folder

    for checked in (folder, baseline):  # before anything is written: damaged parts, manifests
        if checked is not None:
            check_folder(checked)
    chosen = [args.format] if isinstance(args.format, str) else args.format
    if chosen and set(chosen) - {"md", "html"}:
        raise UsageError("a campaign report is Markdown or HTML (--format md or html)")
    timelines = _render_counterexamples(folder)
    written = campaign_report.write_report(folder, baseline, formats=chosen)
    written["timelines"] = str(len(timelines))
    if args.json:
        print_json({"verdict": Verdict.OK, "reports": written})
    else:
        for kind, path in sorted(written.items()):
            print(f"{kind}: {path}")
    return runner.EXIT_OK


def _render_counterexamples(folder: Path) -> list[Path]:
    """Each distinct counterexample's own timeline (the reports' HTML renderer), beside its file."""
    from raceproof.reports import ReportInputError, render_html
    from raceproof.reports.campaign import distinct_counterexamples, read_rows
    from raceproof.runs.stories import load_for_report
    from raceproof.sim import repro as repro_files

    written = []
    for entry in distinct_counterexamples(read_rows(folder)):
        source = folder / entry["counterexample"]
        target = source.with_suffix(".html")
        if not source.exists() or target.exists():
            continue
        try:
            story = load_for_report(source)
        except ReportInputError:
            continue
        repro_files.write_atomically(target, render_html(story, False))
        written.append(target)
    return written


def add(commands: Any) -> None:
    _add_campaign(commands)
    if "report" not in commands.choices:
        add_report(commands)


def _add_campaign(commands: Any) -> None:
    sub = add_command(
        commands,
        "campaign",
        "scenario × variant × strategy × seed (and proofs in rounds) as Spark tasks, into Parquet",
        cmd_campaign,
        epilog="examples:\n"
        "  raceproof campaign --seeds 20 --out out/c1\n"
        "  raceproof campaign --scenario lost-update --seed-range 0:100 --master spark://127.0.0.1:7077\n"
        "  raceproof campaign --scenario coordinator-async-append --seeds 5 --prove --out out/c2\n"
        "  raceproof report out/c1 --baseline out/c0",
    )
    _add_pipeline_options(sub)
    sub.add_argument(
        "--scenario", type=non_empty, action="append", help="only this scenario (repeatable)"
    )
    sub.add_argument(
        "--variant", type=non_empty, action="append", help="only this variant (repeatable)"
    )
    sub.add_argument(
        "--strategy",
        action="append",
        help=f"only this strategy, one of {', '.join(STRATEGIES)} (repeatable)",
    )
    sub.add_argument(
        "--seeds",
        type=int_in(1, MAX_SEEDS),
        default=None,
        help=f"seeds 0..N-1 (default {DEFAULT_SEEDS})",
    )
    sub.add_argument("--seed-range", metavar="A:B", help="seeds A..B-1 instead of --seeds")
    sub.add_argument(
        "--examples",
        type=int_in(1, MAX_EXAMPLES),
        default=100,
        help="examples per cell, the only budget (default 100)",
    )
    sub.add_argument(
        "--prove",
        action="store_true",
        help="also prove every variant: its balanced units shipped as tasks, in rounds",
    )
    sub.add_argument(
        "--master", type=non_empty, default="local[*]", help="Spark master URL (default local[*])"
    )
    sub.add_argument(
        "--out",
        type=non_empty,
        default="out/campaign",
        help="the campaign folder (default out/campaign)",
    )
    sub.add_argument(
        "--cross-check",
        type=int_in(0, MAX_CROSS_CHECK),
        default=3,
        help="cells re-run in the driver to check determinism (default 3)",
    )


def _add_pipeline_options(sub: Any) -> None:
    """``campaign --pipeline`` (repeatable) and the experiments it runs."""
    sub.add_argument(
        "--pipeline",
        type=non_empty,
        action="append",
        metavar="MODULE:FACTORY",
        help="run a Spark pipeline's fault experiments (pipeline × experiment × seed) instead "
        "of the scenarios: MODULE:FACTORY, FILE.py:FACTORY or a built-in pipeline's name "
        "(repeatable: every pipeline given, on one Spark session)",
    )
    sub.add_argument(
        "--experiment",
        type=non_empty,
        action="append",
        metavar="NAME",
        help="with --pipeline: only this experiment (repeatable)",
    )


def add_report(commands: Any) -> None:
    sub = add_command(
        commands,
        "report",
        "the report of a campaign folder: detection rates, distributions, regressions",
        report_campaign,
        epilog="examples:\n  raceproof report out/c1\n  raceproof report out/c2 --baseline out/c1",
    )
    sub.add_argument("input", help="a campaign folder (written by `raceproof campaign`)")
    sub.add_argument("--baseline", metavar="OLD_DIR", help="a previous campaign to compare with")
    sub.add_argument(
        "--format",
        choices=["md", "html"],
        action="append",
        help="only this format (default: md and html)",
    )
