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
import json
import time
from typing import Any

from raceproof.cli import signals
from raceproof.cli.commands.common import StatusLine, UsageError, add_command
from raceproof.cli.validation import int_in
from raceproof.sim.verdicts import Verdict, exit_code_for

DEFAULT_PIPELINE = "windowed-count"


def cmd_spark_check(args: argparse.Namespace) -> int:
    from raceproof.spark_integration.experiments import (
        EXPERIMENTS,
        applicable,
        baseline,
        run_experiment,
    )
    from raceproof.spark_integration.generated import parse_script
    from raceproof.spark_integration.pipeline import (
        BUILT_IN,
        EXIT_PIPELINE_ERROR,
        PipelineError,
        PipelineRaised,
        resolve,
    )
    from raceproof.spark_integration.session import (
        SparkUnavailable,
        session_running,
        spark_session,
        stop_session,
    )

    script = None
    if args.script is not None:
        try:
            script = parse_script(args.script)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    specs = args.pipeline or [DEFAULT_PIPELINE]
    if specs == ["all"]:
        specs = list(BUILT_IN)
    try:
        pipelines = [(spec, resolve(spec)) for spec in specs]
    except PipelineError as exc:
        raise UsageError(f"{exc}; built-in pipelines: {', '.join(BUILT_IN)}") from None
    except PipelineRaised as exc:
        return pipeline_error(args, [], exc)
    unknown_names = [n for n in args.experiment or [] if n not in EXPERIMENTS]
    if unknown_names:
        raise UsageError(
            f"unknown experiment {unknown_names[0]!r}; valid: {', '.join(EXPERIMENTS)}"
        )
    plan = [
        (spec, pipeline, name)
        for spec, pipeline in pipelines
        for name in applicable(pipeline)
        if not args.experiment or name in args.experiment
    ]
    if not plan:
        raise UsageError(
            f"experiment {', '.join(args.experiment or [])} does not apply to pipeline "
            f"{', '.join(p.name for _, p in pipelines)} (it lacks what the experiment needs)"
        )
    say = StatusLine(
        "spark-check", not args.json, total=len(plan) + len(pipelines) + 1, says_start=True
    )
    started = time.monotonic()
    owned = not session_running()  # a caller's session (a test's) is left running
    say("starting a local Spark session ...")
    try:
        spark = spark_session()
    except SparkUnavailable as exc:
        raise UsageError(f"cannot run spark-check: {exc}") from None
    session_s = round(time.monotonic() - started, 1)
    rows: list[dict[str, Any]] = []
    baselines: dict[str, dict[str, Any]] = {}
    try:
        for number, (spec, pipeline, name) in enumerate(plan, 1):
            if spec not in baselines:
                say(f"{pipeline.name}: baseline, no fault ...")
                baselines[spec] = base = baseline(spark, pipeline).to_json()
                if base["verdict"] != Verdict.OK:
                    rows.append(baseline_row(spec, pipeline.name, base))
            if baselines[spec]["verdict"] != Verdict.OK:
                continue  # a wrong pipeline: no fault experiment can say anything about it
            guard = EXPERIMENTS[name].guard
            say(
                f"[{number}/{len(plan)}] {pipeline.name}: {name}: stock Spark"
                + (f", then with {guard}" if guard else "")
                + (f", {args.repeat} times each" if args.repeat > 1 else "")
                + " ..."
            )
            row = run_experiment(
                spark,
                name,
                pipeline,
                repeat=args.repeat,
                seed=args.seed,
                script=script,
                shrink_budget=args.shrink_budget,
            )
            row["pipeline"] = spec
            rows.append(row)
    except KeyboardInterrupt as exc:
        if owned:
            stop_session()  # the JVM goes before the partial result is printed
        return interrupted(args, rows, len(plan), exc, round(time.monotonic() - started, 1))
    except PipelineRaised as exc:
        say.done()
        if owned:
            stop_session()
        return pipeline_error(args, rows, exc)
    finally:
        say.done()
        if owned:
            stop_session()
    failed = [r for r in rows if r["verdict"] == Verdict.VIOLATED]
    errors = [r for r in rows if r["verdict"] == Verdict.ERROR]
    result = {
        "verdict": Verdict.VIOLATED if failed else Verdict.ERROR if errors else Verdict.OK,
        "checker": failed[0]["checker"] if failed else None,
        "pipelines": [spec for spec, _ in pipelines],
        "repeat": args.repeat,
        "experiments": rows,
        "session_s": session_s,
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(spark_table(rows))
        for r in rows:
            print(f"\n{r['scenario']} / {r['experiment']}:")
            if r["experiment"] == "baseline":
                print(f"  {r['summary']}: {r['stock']['trials'][-1]['message']}")
                continue
            print(f"  stock: {r['stock']['trials'][-1]['message']}")
            if r["guarded"]:
                print(f"  with {r['guard']}: {r['guarded']['trials'][-1]['message']}")
            broken = ", ".join(r["broken_promises"])
            if broken and r.get("judges_pipeline"):
                print(f"  {gate_cell(r)}: with no fault, {broken} failed")
            elif broken:
                print(f"  {gate_cell(r)}: {r['guard']} did not keep {broken}")
            if r.get("shrunk"):
                small = r["shrunk"]
                print(
                    f"  shrunk from {small['from_events']} to {small['events']} events in "
                    f"{small['trials']} trials: {small['batches']}"
                )
                print(
                    f"  replay: raceproof spark-check --pipeline {r['pipeline']} --experiment "
                    f"generated-input --script '{small['script']}'"
                )
        print(
            f"\nsession start {session_s}s, total {result['seconds']}s; "
            + (
                f"{len(failed)} failed (see above)"
                if failed
                else "the pipeline raised with no fault (see above)"
                if errors
                else "every guard kept its promise (stock outcomes are findings)"
            )
        )
    if result["verdict"] == Verdict.ERROR:
        return EXIT_PIPELINE_ERROR
    return exit_code_for(result["verdict"])


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
        print(json.dumps(result, sort_keys=True))
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
        print(json.dumps(result, sort_keys=True))
    else:
        if rows:
            print(spark_table(rows))
        print(f"spark-check: {result['verdict']}: {note}")
    return signals.exit_code_for(exc)


def spark_table(rows: list[dict[str, Any]]) -> str:
    """The spark-check table: one line per pipeline and experiment, outcomes with their stability."""
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
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


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
        default=0,
        metavar="N",
        help="the seed generated-input draws its input script from (default 0)",
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
