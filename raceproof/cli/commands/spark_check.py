"""``raceproof spark-check``: fault experiments on real local-mode Spark, on the user's pipeline or a built-in one.

Gate semantics: the exit code is 0 when every guarded trial kept what its
guard promises and 1 when one did not. What stock Spark does is a finding,
printed in the table and the JSON, never a failure of the run. ``--repeat N``
runs each trial N times and reports how stable each verdict is.

Blame: each pipeline first runs a baseline trial with no fault. A wrong
baseline means the pipeline (or its reference) is wrong by itself: that is
reported with the difference from the reference (exit 1) and no fault
experiment runs on it. An exception from the user's own code (the factory,
``query``, ``expected``, a hook) or a query Spark rejects is a pipeline error:
verdict ``error``, exit 4, with the user's own frames, never "a bug in
raceproof".
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from raceproof.cli import signals
from raceproof.cli.commands.common import (
    StatusLine,
    UsageError,
    add_command,
    print_json,
    refuse_contradictions,
)
from raceproof.cli.validation import int_in
from raceproof.sim.verdicts import Verdict, exit_code_for

DEFAULT_PIPELINE = "windowed-count"
GENERATED = "generated-input"  # the experiment --script replays the input of
# Options that cannot mean anything together (exit 2 naming both), before Spark starts.
CONTRADICTIONS = (
    (
        "seed",
        "script",
        f"--seed draws the input script of {GENERATED} and --script gives it whole "
        "(no other experiment takes a seed); give one",
    ),
)


@dataclass
class SparkRequest:
    """What to run, parsed and checked before Spark starts."""

    pipelines: list[tuple[str, Any]]  # (spec, Pipeline)
    plan: list[tuple[str, Any, str]]  # (spec, Pipeline, experiment) to run
    not_applicable: list[tuple[str, Any, str]]  # requested, lacking what it needs
    seed: int = 0
    script: Any = None
    repeat: int = 1
    shrink_trials: int = 20  # --shrink-budget
    settings: dict[str, str] = field(default_factory=dict)  # the pipelines' spark_conf()


@dataclass
class SparkResult:
    """What ran: the rows, the verdict, what no experiment judged; an interrupt or the user's error."""

    request: SparkRequest
    rows: list[dict[str, Any]] = field(default_factory=list)
    session_s: float = 0.0
    seconds: float = 0.0
    unjudged: list[str] = field(default_factory=list)
    interrupt: BaseException | None = None
    error: Any = None  # PipelineRaised: the user's code raised

    @property
    def verdict(self) -> str:
        verdicts = {str(r["verdict"]) for r in self.rows}
        if self.error is not None:
            return Verdict.ERROR
        for verdict in (Verdict.VIOLATED, Verdict.ERROR, Verdict.INCONCLUSIVE):
            if verdict in verdicts:
                return verdict
        return Verdict.INCONCLUSIVE if self.interrupt is not None else Verdict.OK


def cmd_spark_check(args: argparse.Namespace) -> int:
    from raceproof.spark_integration.pipeline import PipelineRaised

    refuse_contradictions(args, CONTRADICTIONS)
    try:
        request = parse_request(args)
    except PipelineRaised as exc:  # the factory raised: the user's code, verdict error
        return render(args, SparkResult(SparkRequest([], [], []), error=exc))
    steps = len(request.plan) + len(request.pipelines) + 1
    lines = args.json and len(request.pipelines) > 1
    # Off a terminal (a CI log) only a line per experiment judged, no step as it starts.
    with StatusLine("spark-check", not args.json, total=steps, says_start=True, quiet=True) as say:
        result = run_request(request, say, judged=judged_line if lines else None)
    return render(args, result)


def judged_line(spec: str, rows: list[dict[str, Any]]) -> None:
    """``--json`` over several pipelines: one JSON line per pipeline as soon as it is judged,
    before the final document, so a time limit that kills the command keeps what was judged."""
    verdicts = {str(row["verdict"]) for row in rows}
    worst = next(
        (v for v in (Verdict.VIOLATED, Verdict.ERROR, Verdict.INCONCLUSIVE) if v in verdicts),
        Verdict.OK,
    )
    print_json({"judged": spec, "verdict": worst, "experiments": rows})
    sys.stdout.flush()


def parse_request(args: argparse.Namespace) -> SparkRequest:
    """The pipelines and the plan; UsageError (exit 2) for what is wrong, before Spark starts."""
    from raceproof.spark_integration.experiments import EXPERIMENTS, applicable
    from raceproof.spark_integration.generated import parse_script
    from raceproof.spark_integration.pipeline import (
        BUILT_IN,
        PipelineError,
        resolve,
        settings_of,
    )

    script = None
    if args.script is not None:
        try:
            script = parse_script(args.script)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    unknown_names = [n for n in args.experiment or [] if n not in EXPERIMENTS]
    if unknown_names:
        raise UsageError(
            f"unknown experiment {unknown_names[0]!r}; valid: {', '.join(EXPERIMENTS)}"
        )
    specs = args.pipeline or [DEFAULT_PIPELINE]
    if specs == ["all"]:
        specs = list(BUILT_IN)
    try:
        pipelines = [(spec, resolve(spec)) for spec in specs]
    except PipelineError as exc:
        raise UsageError(f"{exc}; built-in pipelines: {', '.join(BUILT_IN)}") from None
    try:
        settings = settings_of([pipeline for _, pipeline in pipelines])
    except PipelineError as exc:
        raise UsageError(str(exc)) from None
    plan, not_applicable = [], []
    for spec, pipeline in pipelines:
        fits = applicable(pipeline)
        plan += [(spec, pipeline, n) for n in fits if not args.experiment or n in args.experiment]
        not_applicable += [
            (spec, pipeline, n) for n in dict.fromkeys(args.experiment or []) if n not in fits
        ]
    if script is not None and not any(name == GENERATED for _, _, name in plan):
        raise UsageError(
            f"--script is the input of the {GENERATED} experiment, and none runs here "
            f"(give --experiment {GENERATED}, on a pipeline that declares max_lateness_s)"
        )
    return SparkRequest(
        pipelines=pipelines,
        plan=plan,
        not_applicable=not_applicable,
        seed=0 if args.seed is None else args.seed,
        script=script,
        repeat=args.repeat,
        shrink_trials=args.shrink_budget,
        settings=settings,
    )


def run_request(request: SparkRequest, say: StatusLine, judged: Any = None) -> SparkResult:
    """Each pipeline's baseline, then its experiments, on one local Spark session.

    ``judged(spec, rows)``, if given, is called with each pipeline's rows once its last
    experiment is judged (or its baseline failed), in the order they run."""
    from raceproof.spark_integration.experiments import baseline
    from raceproof.spark_integration.pipeline import PipelineRaised
    from raceproof.spark_integration.results import not_applicable_row, run_experiment, unjudged
    from raceproof.spark_integration.session import (
        SparkUnavailable,
        session_running,
        spark_session,
        stop_session,
    )

    result = SparkResult(request)
    result.rows = [not_applicable_row(*planned) for planned in request.not_applicable]
    for _, pipeline in request.pipelines:
        result.unjudged += unjudged(pipeline)
    if not request.plan:
        return result
    started = time.monotonic()
    owned = not session_running()  # a caller's session (a test's) is left running
    say("starting a local Spark session ...")
    try:
        spark = spark_session(request.settings)
    except SparkUnavailable as exc:
        raise UsageError(f"cannot run spark-check: {exc}") from None
    result.session_s = round(time.monotonic() - started, 1)
    baselines: dict[str, dict[str, Any]] = {}
    last_of = {spec: number for number, (spec, _, _) in enumerate(request.plan, 1)}
    first_of = {spec: number for number, (spec, _, _) in reversed(list(enumerate(request.plan, 1)))}
    try:
        for number, (spec, pipeline, name) in enumerate(request.plan, 1):
            if spec not in baselines:
                say(f"{pipeline.name}: baseline, no fault ...")
                baselines[spec] = base = baseline(spark, pipeline).to_json()
                if base["verdict"] != Verdict.OK:
                    result.rows.append(baseline_row(spec, pipeline.name, base))
                    say.log(f"{pipeline.name}: baseline, no fault: {base['verdict']}")
            if baselines[spec]["verdict"] != Verdict.OK:
                if judged is not None and number == first_of[spec]:
                    judged(spec, [r for r in result.rows if r["pipeline"] == spec])
                continue  # a wrong pipeline: no fault experiment can say anything about it
            say(progress(request, number, pipeline.name, name))
            row = run_experiment(
                spark,
                name,
                pipeline,
                repeat=request.repeat,
                seed=request.seed,
                script=request.script,
                shrink_trials=request.shrink_trials,
            )
            row["pipeline"] = spec
            result.rows.append(row)
            say.log(f"[{number}/{len(request.plan)}] {pipeline.name}: {name}: {row['verdict']}")
            if judged is not None and number == last_of.get(spec):
                judged(spec, [r for r in result.rows if r["pipeline"] == spec])
    except KeyboardInterrupt as exc:
        result.interrupt = exc
    except PipelineRaised as exc:
        result.error = exc
    finally:
        if owned:
            stop_session()  # the JVM goes before the result is printed
    result.seconds = round(time.monotonic() - started, 1)
    return result


def progress(request: SparkRequest, number: int, pipeline: str, name: str) -> str:
    from raceproof.spark_integration.experiments import EXPERIMENTS

    guard = EXPERIMENTS[name].guard
    return (
        f"[{number}/{len(request.plan)}] {pipeline}: {name}: stock Spark"
        + (f", then with {guard}" if guard else "")
        + (f", {request.repeat} times each" if request.repeat > 1 else "")
        + " ..."
    )


def render(args: argparse.Namespace, result: SparkResult) -> int:
    """Print the result (a table and findings, or JSON); the exit code of its verdict."""
    from raceproof.spark_integration.pipeline import EXIT_PIPELINE_ERROR

    if result.error is not None:
        return pipeline_error(args, result.rows, result.error)
    if result.interrupt is not None:
        planned = len(result.request.plan) + len(result.request.not_applicable)
        return interrupted(args, result.rows, planned, result.interrupt, result.seconds)
    document = {
        "verdict": result.verdict,
        "checker": next(
            (r["checker"] for r in result.rows if r["verdict"] == Verdict.VIOLATED), None
        ),
        "pipelines": [spec for spec, _ in result.request.pipelines],
        "repeat": result.request.repeat,
        "experiments": result.rows,
        "unjudged": result.unjudged,
        "session_s": result.session_s,
        "seconds": result.seconds,
    }
    if args.json:
        print_json(document)
    else:
        print(spark_table(result.rows))
        for row in result.rows:
            print(findings(row))
        for line in result.unjudged:
            print(wrapped(f"not judged: {line}", indent="  "))
        print(closing(result))
    if result.verdict == Verdict.ERROR:
        return EXIT_PIPELINE_ERROR
    return exit_code_for(result.verdict)


def findings(row: dict[str, Any]) -> str:
    """The lines under the table for one row: what stock Spark and the guard did, the gate."""
    lines = [f"\n{row['scenario']} / {row['experiment']}:"]
    if row["experiment"] == "baseline":
        lines.append(f"  {row['summary']}: {row['stock']['trials'][-1]['message']}")
        return "\n".join(_wrap_lines(line) for line in lines)
    lines.append(f"  stock: {row['stock']['trials'][-1]['message']}")
    if row["guarded"]:
        lines.append(f"  with {row['guard']}: {row['guarded']['trials'][-1]['message']}")
    broken = ", ".join(row["broken_promises"])
    if broken and row.get("judges_pipeline"):
        lines.append(f"  {gate_cell(row)}: with no fault, {broken} failed")
    elif broken:
        lines.append(f"  {gate_cell(row)}: {row['guard']} did not keep {broken}")
    if row.get("shrunk"):
        small = row["shrunk"]
        lines.append(
            f"  shrunk from {small['from_events']} to {small['events']} events in "
            f"{small['trials']} trials: {small['batches']}"
        )
        lines.append(
            f"  replay: raceproof spark-check --pipeline {row['pipeline']} --experiment "
            f"generated-input --script '{small['script']}'"
        )
    return "\n".join(_wrap_lines(line) for line in lines)


def wrapped(text: str, *, indent: str = "    ") -> str:
    from raceproof.spark_integration.job import wrapped as wrap

    return wrap(text, indent=indent)


def _wrap_lines(text: str) -> str:
    """Each line wrapped at spaces; a replay command and a frame's lines are left whole."""
    return "\n".join(
        line
        if "raceproof spark-check" in line or line.startswith("    ") or "File " in line[:8]
        else wrapped(line)
        for line in text.split("\n")
    )


def closing(result: SparkResult) -> str:
    failed = [r for r in result.rows if r["verdict"] == Verdict.VIOLATED]
    said = {
        Verdict.VIOLATED: f"{len(failed)} failed (see above)",
        Verdict.ERROR: "the pipeline raised with no fault (see above)",
        Verdict.INCONCLUSIVE: "inconclusive: a requested judgement could not be made (see above)",
        Verdict.OK: "every guard kept its promise (stock outcomes are findings)",
    }[Verdict(result.verdict)]
    return f"\nsession start {result.session_s}s, total {result.seconds}s; {said}"


def baseline_row(spec: str, name: str, trial: dict[str, Any]) -> dict[str, Any]:
    """A pipeline that is wrong (``violated``) or fails (``error``) with no fault injected."""
    wrong = trial["verdict"] == Verdict.VIOLATED
    summary = (
        "THE PIPELINE IS WRONG WITHOUT ANY FAULT (its output differs from its reference; "
        "no fault experiment was run)"
        if wrong
        else "THE PIPELINE FAILS WITHOUT ANY FAULT (no fault experiment was run)"
    )
    return {
        "scenario": name,
        "pipeline": spec,
        "experiment": "baseline",
        "variant": "stock",
        "strategy": "baseline",
        "verdict": Verdict.VIOLATED if wrong else Verdict.ERROR,
        "checker": trial["checker"],
        "summary": summary,
        "examples": 1,
        "fault": "none",
        "checkers": "no-duplicate-emission, drain-completeness",
        "guard": None,
        "promises": [],
        "broken_promises": [],
        "stock": {"stability": trial["verdict"], "trials": [trial]},
        "guarded": None,
        "seconds": trial["seconds"],
        "python_cpu_s": 0.0,
        "jvm_cpu_s": 0.0,
        "jvm_peak_mb": 0.0,
    }


def gate_cell(row: dict[str, Any]) -> str:
    """The gate column: whose promise broke (raceproof's guard or the pipeline's own sink)."""
    if row["experiment"] == "baseline":
        return "PIPELINE WRONG" if row["verdict"] == Verdict.VIOLATED else "PIPELINE ERROR"
    if row["verdict"] == Verdict.INCONCLUSIVE:
        return "INCONCLUSIVE"
    if row["verdict"] != Verdict.VIOLATED:
        return Verdict.OK
    if row.get("judges_pipeline"):
        return "PIPELINE WRONG"
    return "SINK FAILED" if row["guard"] == "the pipeline's own sink" else "GUARD FAILED"


def pipeline_error(args: argparse.Namespace, rows: list[dict[str, Any]], exc: Any) -> int:
    """The user's code raised: verdict ``error``, exit 4, their frames on stderr."""
    import sys

    from raceproof.spark_integration.pipeline import EXIT_PIPELINE_ERROR

    result = {
        "verdict": Verdict.ERROR,
        "error": str(exc),
        "frames": exc.frames,
        "experiments": rows,
    }
    if args.json:
        print_json(result)
    if exc.frames:
        print(exc.frames.rstrip(), file=sys.stderr)
    print(f"spark-check: {exc}", file=sys.stderr)
    return EXIT_PIPELINE_ERROR


def interrupted(
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    planned: int,
    exc: BaseException,
    seconds: float,
) -> int:
    """The experiments finished before a signal, as a result; exit 130 or 143."""
    name = signals.signal_name(exc)
    failed = any(r.get("verdict") == Verdict.VIOLATED for r in rows)
    note = f"interrupted by {name} after {len(rows)} of {planned} experiments"
    result: dict[str, Any] = {
        "verdict": Verdict.VIOLATED if failed else Verdict.INCONCLUSIVE,
        "experiments": rows,
        "interrupted": name,
        "seconds": seconds,
        "notes": [note],
    }
    if args.json:
        print_json(result)
    else:
        if rows:
            print(spark_table(rows))
        print(f"spark-check: {result['verdict']}: {note}")
    return signals.exit_code_for(exc)


def spark_table(rows: list[dict[str, Any]]) -> str:
    """The spark-check table: one line per pipeline and experiment, outcomes with their stability."""
    from raceproof.reports.terminal import columns_text

    header = (
        "pipeline",
        "experiment",
        "stock Spark",
        "guard",
        "with the guard",
        "gate",
        "wall s",
        "CPU s",
        "JVM MiB",
    )
    lines = [header] + [
        (
            r["scenario"],
            r["experiment"],
            r["stock"]["stability"],
            r["guard"] or "-",
            r["guarded"]["stability"] if r["guarded"] else "-",
            gate_cell(r),
            f"{r['seconds']:.1f}",
            f"{r['jvm_cpu_s'] + r['python_cpu_s']:.1f}",
            f"{r['jvm_peak_mb']:.0f}",
        )
        for r in rows
    ]
    return columns_text(lines)


def add(commands: Any) -> None:
    from raceproof.spark_integration.experiments import EXPERIMENTS
    from raceproof.spark_integration.pipeline import BUILT_IN

    sub = add_command(
        commands,
        "spark-check",
        "fault experiments on real local-mode Spark, on your pipeline or a built-in one",
        cmd_spark_check,
        epilog="examples:\n  raceproof spark-check\n"
        "  raceproof spark-check --pipeline mypackage.jobs:pipeline --repeat 10\n"
        "  raceproof spark-check --pipeline path/to/job.py:pipeline --experiment drain --json",
    )
    sub.add_argument(
        "--pipeline",
        action="append",
        metavar="MODULE:FACTORY",
        help="the pipeline to test (repeatable): MODULE:FACTORY, FILE.py:FACTORY, "
        f"'all', or a built-in one: {', '.join(BUILT_IN)} (default {DEFAULT_PIPELINE})",
    )
    sub.add_argument(
        "--experiment",
        action="append",
        metavar="NAME",
        help="run only this experiment (repeatable); one of: " + ", ".join(EXPERIMENTS),
    )
    sub.add_argument(
        "--seed",
        type=int_in(0, 2**63 - 1),
        default=None,
        metavar="N",
        help="the seed generated-input draws its input script from (default 0; "
        "not with --script, which gives the script)",
    )
    sub.add_argument(
        "--script",
        metavar="JSON",
        help="replay this input script in generated-input instead of drawing one "
        "(the JSON a shrunk trial prints)",
    )
    sub.add_argument(
        "--shrink-budget",
        type=int_in(0, 10_000),
        default=20,
        metavar="N",
        help="at most N Spark trials to shrink a violated generated-input script "
        "(default 20; 0: do not shrink)",
    )
    sub.add_argument(
        "--repeat",
        type=int_in(1, 1_000),
        default=1,
        metavar="N",
        help="run every trial N times and report each verdict's stability",
    )
