"""The ``raceproof`` command line: list, repro, explore, prove, replay, bench.

Exit codes are the contract: 0 holds / nothing found, 1 violation found,
2 bad usage or bad input (a clear message, nothing half-written),
3 inconclusive (a bound was hit before a proof completed). Every command
takes ``--json`` for one machine-readable object on stdout; human output and
progress go to stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raceproof.scenarios import runner
from raceproof.scenarios.catalogue import (
    Scenario,
    UnknownName,
    all_scenarios,
    config_from_json,
    get,
)
from raceproof.sim import (
    STRATEGIES,
    Budget,
    CounterexampleError,
    History,
    KeyedReplaySource,
    ReplayMisaligned,
    ReplaySource,
    RunOutcome,
    decode_blob,
    encode_blob,
    explore,
    first_divergence,
    first_violation,
)
from raceproof.sim import RandomSource as _RandomSource
from raceproof.sim import repro as repro_files


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


def _scenario_and_variant(args: argparse.Namespace) -> tuple[Scenario, str]:
    scenario = get(args.scenario)
    default = next(iter(scenario.variants))
    if getattr(args, "report_timeline", False) and scenario.report_variant:
        default = scenario.report_variant
    variant = args.variant or default
    scenario.check_variant(variant)
    return scenario, variant


def _print_outcome(outcome: RunOutcome, title: str) -> None:
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


# -- repro --------------------------------------------------------------------------
def cmd_repro(args: argparse.Namespace) -> int:
    scenario, variant = _scenario_and_variant(args)
    overrides = runner.parse_overrides(args.set)
    config = scenario.config_for("explore", overrides)
    chosen = [args.seed is not None, args.choices is not None, args.report_timeline]
    if sum(chosen) > 1:
        raise UsageError("give at most one of --seed, --choices, --report-timeline")
    run = scenario.runner(variant, config)
    if args.report_timeline:
        if scenario.report_script is None:
            raise UsageError(f"{scenario.name} has no report timeline")
        # The script is keyed by (label, occurrence), so the report's story also
        # runs against a fix variant whose draws differ from the buggy one's.
        source: Any = KeyedReplaySource(dict(scenario.report_script))
        strategy = "report-timeline"
    elif args.choices is not None:
        try:
            values = decode_blob(args.choices)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        source = ReplaySource(values, strict=True)
        strategy = "choices"
    elif args.seed is not None:
        source = _RandomSource(args.seed)
        strategy = "random"
    else:
        source = ReplaySource([], strict=False)
        strategy = "fifo"
    started = time.monotonic()
    try:
        outcome = run(source)
    except ReplayMisaligned as exc:
        raise UsageError(f"the choices do not fit {scenario.name}/{variant}: {exc}") from None
    result = runner.base_result(scenario, variant, strategy, config)
    result.update(runner.outcome_fields(outcome))
    result.update(examples=1, schedules=1, seconds=round(time.monotonic() - started, 4))
    result["repro"] = runner.repro_line(scenario, variant, outcome.values, config)
    result["backend"] = args.backend
    if args.backend != "sim":
        real = run_real_backend(args, scenario, variant, config, outcome, result["checker"])
        result["simulated"] = {
            k: result[k] for k in ("verdict", "checker", "message", "trace_hash")
        }
        result.update(real)
        result["seconds"] = round(time.monotonic() - started, 4)
        result["repro"] += f" --backend {args.backend}"
    if args.history_out:
        repro_files.write_atomically(Path(args.history_out), outcome.history.to_jsonl())
    if args.check_determinism:
        result["determinism"] = check_determinism(args, scenario.name, variant, outcome)
        if not result["determinism"]["same"]:
            result["verdict"] = "violated"
            result["checker"] = "determinism"

    def human() -> None:
        _print_outcome(outcome, f"== {scenario.name} / {variant} ({strategy}, simulated)")
        if args.backend != "sim":
            print(f"\n== the same schedule forced onto {args.backend} ({result['real_forced']})")
            print(result.pop("_timeline"))
            for verdict in result["verdicts"]:
                where = f" (op #{verdict['op_index']})" if verdict["op_index"] is not None else ""
                print(
                    f"  {verdict['status'].upper():9} {verdict['checker']}{where}  {verdict['message']}"
                )
            reproduced = " (the simulated violation reproduced)" if result["reproduced"] else ""
            print(f"verdict on {args.backend}: {result['verdict']}{reproduced}")
        print(f"repro: {result['repro']}")
        if "determinism" in result:
            d = result["determinism"]
            print(
                "determinism: "
                + (
                    "same trace hash in two processes (PYTHONHASHSEED 0 and 1)"
                    if d["same"]
                    else f"DIFFERENT: {d['detail']}"
                )
            )

    return emit(args, result, human)


def run_real_backend(
    args: argparse.Namespace,
    scenario: Scenario,
    variant: str,
    config: Any,
    simulated: RunOutcome,
    simulated_checker: str | None,
) -> dict[str, Any]:
    """Force the simulated schedule onto a real backend and judge the real history.

    The violation reported is the simulated one when the real run violates it
    too (``reproduced``): the question a user asks is whether *this*
    counterexample reproduced, not which checker logged its evidence first.
    """
    backend = scenario.real_backends.get(args.backend)
    if backend is None:
        valid = ", ".join(["sim", *sorted(scenario.real_backends)])
        raise UsageError(f"{scenario.name} has no {args.backend} backend; valid: {valid}")
    from raceproof.scenarios.zookeeper import ZooKeeperServer, ZooKeeperUnavailable

    try:
        if args.zk_hosts:
            real = backend(args.zk_hosts, variant, config, simulated)
        else:
            with ZooKeeperServer() as server:
                real = backend(server.hosts, variant, config, simulated)
    except ZooKeeperUnavailable as exc:
        raise UsageError(f"cannot run on ZooKeeper: {exc}") from None
    same = [v for v in real.verdicts if v.status == "violated" and v.checker == simulated_checker]
    violation = same[0] if same else first_violation(real.verdicts)
    fields: dict[str, Any] = {
        "verdict": real.status,
        "reproduced": bool(same),
        "checker": violation.checker if violation else None,
        "message": violation.message if violation else None,
        "op_index": violation.op_index if violation else None,
        "verdicts": [v.to_json() for v in real.verdicts],
        "trace_hash": real.history.trace_hash(),
        "timeline_ops": len(real.history),
        "real_forced": f"{real.followed} of {real.forced} checkpoints in the simulated order, "
        f"{real.skipped} not reached by this variant",
        "real_diverged": real.diverged,
        "real_errors": real.errors,
        "_timeline": real.history.render(),
    }
    if args.json:
        fields.pop("_timeline")
    return fields


def check_determinism(
    args: argparse.Namespace, scenario: str, variant: str, outcome: RunOutcome
) -> dict[str, Any]:
    """Run the same choices in two fresh processes under different PYTHONHASHSEED."""
    blob = encode_blob(outcome.values)
    hashes, paths = [], []
    with tempfile.TemporaryDirectory(prefix="raceproof-det-") as tmp:
        for hash_seed in ("0", "1"):
            path = Path(tmp) / f"history-{hash_seed}.jsonl"
            command = [
                sys.executable,
                "-m",
                "raceproof.scenarios.cli",
                "repro",
                scenario,
                "--variant",
                variant,
                "--choices",
                blob,
                "--json",
                "--history-out",
                str(path),
            ]
            for item in args.set:
                command += ["--set", item]
            env = dict(os.environ, PYTHONHASHSEED=hash_seed)
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
            if done.returncode not in (0, 1, 3):
                return {"same": False, "detail": f"child failed: {done.stderr.strip()[-500:]}"}
            hashes.append(json.loads(done.stdout)["trace_hash"])
            paths.append(path.read_text(encoding="utf-8"))
        same = hashes[0] == hashes[1] == outcome.trace_hash
        detail = ""
        if not same:
            left, right = History.from_jsonl(paths[0]), History.from_jsonl(paths[1])
            index = first_divergence(left, right)
            detail = f"first diverging op #{index}"
            if index is not None and index < min(len(left), len(right)):
                detail += f": {left[index].describe()}  vs  {right[index].describe()}"
        return {"same": same, "trace_hashes": hashes, "detail": detail}


# -- explore ------------------------------------------------------------------------
def cmd_explore(args: argparse.Namespace) -> int:
    scenario, variant = _scenario_and_variant(args)
    overrides = runner.parse_overrides(args.set)
    config = scenario.config_for("explore", overrides)
    if args.strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {args.strategy!r}; valid: {', '.join(STRATEGIES)}")
    budget_s = scenario.default_budget_s if args.budget is None else args.budget
    examples = scenario.default_examples if args.examples is None else args.examples
    if budget_s <= 0 or examples <= 0:
        raise UsageError("--budget and --examples must be positive")
    budget = Budget(examples=examples, seconds=budget_s, clock=time.monotonic)
    run = scenario.runner(variant, config, args.checker)
    progress = ProgressLine(f"explore {scenario.name}/{variant} [{args.strategy}]", not args.json)
    started = time.monotonic()
    report = explore(run, args.strategy, args.seed, budget, progress, pct_depth=args.pct_depth)
    progress.done()
    result = runner.base_result(scenario, variant, args.strategy, config)
    result.update(
        verdict=report.verdict,
        examples=report.examples,
        seed=args.seed,
        inconclusive_runs=report.inconclusive_runs,
        notes=report.notes,
        budget_s=budget_s,
        max_examples=examples,
    )
    if report.shrunk is not None and report.found is not None:
        runner.attach_counterexample(
            result, Path(args.out), scenario, variant, config, report.shrunk, args.strategy
        )
        result["schedules"] = report.examples
        result["found_deviations"] = sum(1 for v in report.found.values if v)
        result["found_timeline_ops"] = len(report.found.history)
        result["shrink_runs"] = report.shrink_runs
    else:
        result["schedules"] = report.examples
    result["seconds"] = round(time.monotonic() - started, 3)

    def human() -> None:
        if report.shrunk is not None:
            _print_outcome(
                report.shrunk,
                f"== {scenario.name} / {variant}: violation found by "
                f"{args.strategy} after {report.examples} examples, shrunk to "
                f"{result['deviations']} deviation(s) from FIFO ({result['timeline_ops']} ops)",
            )
            print(f"counterexample: {result['counterexample']}")
            print(f"repro: {result['repro']}")
        else:
            print(
                f"{scenario.name} / {variant}: {report.verdict}: {'; '.join(report.notes)} "
                f"({result['seconds']}s)"
            )

    return emit(args, result, human)


# -- prove --------------------------------------------------------------------------
def cmd_prove(args: argparse.Namespace) -> int:
    scenario, variant = _scenario_and_variant(args)
    overrides = runner.parse_overrides(args.set)
    config = scenario.config_for("prove", overrides)
    max_dev = scenario.prove_max_deviations if args.max_deviations is None else args.max_deviations
    max_branch = scenario.prove_max_branch if args.max_branch is None else args.max_branch
    budget = Budget(examples=args.max_schedules, seconds=args.budget, clock=time.monotonic)
    progress = ProgressLine(f"prove {scenario.name}/{variant}", not args.json)
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
            _print_outcome(
                report.shrunk,
                f"== {scenario.name} / {variant}: NOT proven: violation at schedule {report.runs}",
            )
            print(f"counterexample: {result['counterexample']}")
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


# -- replay -------------------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    try:
        cx = repro_files.load(Path(args.file))
    except CounterexampleError as exc:
        raise UsageError(str(exc)) from None
    try:
        scenario = get(cx.scenario)
        scenario.check_variant(cx.variant)
        config = config_from_json(scenario.config, cx.config)
    except (UnknownName, TypeError) as exc:
        raise UsageError(f"{args.file}: out of date: {exc}") from None
    run = scenario.runner(cx.variant, config)
    try:
        outcome = run(ReplaySource(cx.choices, strict=True))
    except ReplayMisaligned as exc:
        raise UsageError(
            f"{args.file}: out of date, the model changed underneath it: {exc}"
        ) from None
    if outcome.trace_hash != cx.trace_hash:
        index = first_divergence(cx.history, outcome.history)
        where = ""
        if index is not None and index < min(len(cx.history), len(outcome.history)):
            where = f": recorded {cx.history[index].describe()} / now {outcome.history[index].describe()}"
        raise UsageError(
            f"{args.file}: out of date: the replay diverges from the recorded timeline "
            f"at op #{index}{where}"
        )
    result = runner.base_result(scenario, cx.variant, "replay", config)
    result.update(runner.outcome_fields(outcome))
    result.update(
        examples=1,
        schedules=1,
        counterexample=str(args.file),
        recorded_trace_hash=cx.trace_hash,
        same_trace_hash=True,
        tool_version=cx.tool_version,
        git_commit=cx.git_commit,
    )
    result["repro"] = runner.repro_line(scenario, cx.variant, outcome.values, config)

    def human() -> None:
        _print_outcome(outcome, f"== replay of {args.file}: {cx.scenario} / {cx.variant}")
        print(f"same trace hash as recorded: {outcome.trace_hash}")

    return emit(args, result, human)


def cmd_compare(args: argparse.Namespace) -> int:
    from raceproof.scenarios import compare

    scenario = get(args.scenario)
    if scenario.name not in compare.COMPARISONS:
        raise UsageError(f"{scenario.name} has no design comparison; "
                         f"valid: {', '.join(sorted(compare.COMPARISONS))}")  # fmt: skip
    if args.seeds < 1 or args.rate <= 0 or args.duration_ms <= 0:
        raise UsageError("--seeds, --rate and --duration-ms must be positive")
    grid = compare.Grid(seeds=args.seeds, rate_per_s=args.rate, duration_ms=args.duration_ms)
    started = time.monotonic()
    rows = compare.COMPARISONS[scenario.name](grid, None if args.json else print)
    csv_path, png_path = compare.write_outputs(rows, Path(args.out), grid)
    result = {
        "scenario": scenario.name, "verdict": "ok", "rows": rows, "grid": dataclasses.asdict(grid),
        "csv": str(csv_path), "png": str(png_path), "seconds": round(time.monotonic() - started, 2),
    }  # fmt: skip
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print()
        print(compare.table(rows))
        print(f"\nwrote {csv_path} and {png_path} ({result['seconds']}s)")
    return runner.EXIT_OK


def cmd_spark_check(args: argparse.Namespace) -> int:
    from raceproof.spark_integration.experiments import EXPERIMENTS, run_experiment
    from raceproof.spark_integration.session import (
        SparkUnavailable,
        session_running,
        spark_session,
        stop_session,
    )

    names = args.experiment or list(EXPERIMENTS)
    unknown_names = [n for n in names if n not in EXPERIMENTS]
    if unknown_names:
        raise UsageError(
            f"unknown experiment {unknown_names[0]!r}; valid: {', '.join(EXPERIMENTS)}"
        )
    say = (
        (lambda line: print(line, file=sys.stderr, flush=True))
        if not args.json
        else (lambda line: None)
    )
    started = time.monotonic()
    owned = not session_running()  # a caller's session (a test's) is left running
    say("starting a local Spark session ...")
    try:
        spark = spark_session()
    except SparkUnavailable as exc:
        raise UsageError(f"cannot run spark-check: {exc}") from None
    session_s = round(time.monotonic() - started, 1)
    rows = []
    try:
        for number, name in enumerate(names, 1):
            guard = EXPERIMENTS[name].guard
            say(
                f"[{number}/{len(names)}] {name}: stock Spark"
                + (f", then with {guard}" if guard else "")
                + " ..."
            )
            rows.append(run_experiment(spark, name))
    finally:
        if owned:
            stop_session()
    stock_violated = any(r["stock"]["verdict"] == "violated" for r in rows)
    result = {"verdict": "violated" if stock_violated else "ok", "experiments": rows,
              "session_s": session_s, "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(spark_table(rows))
        for r in rows:
            print(f"\n{r['experiment']}:\n  stock: {r['stock']['message']}")
            if r["guarded"]:
                print(f"  with {r['guard']}: {r['guarded']['message']}")
        print(f"\nsession start {session_s}s, total {result['seconds']}s")
    return runner.EXIT_FOR_VERDICT[str(result["verdict"])]


def spark_table(rows: list[dict[str, Any]]) -> str:
    """The spark-check table: one line per experiment, outcome cells naming what failed."""

    def cell(trial: dict[str, Any] | None) -> str:
        if trial is None:
            return "-"
        failed = trial["violated"] if trial["verdict"] == "violated" else []
        return trial["verdict"] + (f" ({', '.join(failed)})" if failed else "")

    header = (
        "experiment",
        "fault",
        "stock Spark",
        "guard",
        "with the guard",
        "s",
        "JVM MiB",
        "Py MiB",
    )
    lines = [header] + [
        (r["experiment"], r["fault"], cell(r["stock"]), r["guard"] or "-", cell(r["guarded"]),
         f"{r['seconds']:.1f}", f"{r['jvm_peak_mb']:.0f}", f"{r['python_peak_mb']:.0f}")
        for r in rows
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def cmd_bench(args: argparse.Namespace) -> int:
    from raceproof.scenarios import bench

    say = None if args.json else print
    if args.scenario:
        scenario, variant = _scenario_and_variant(args)
        scenario.checkers_named(args.checker)
        result = bench.search_figures(scenario.name, variant, args.checker, args.seeds, say)
        result.update(bench.proof_figures(scenario.name, say))
    else:
        result = bench.run(quick=args.quick, progress=say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    return runner.EXIT_OK


# -- parser -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raceproof",
        description="Deterministic simulation of data-losing races: find, shrink, replay, prove.",
        epilog="exit codes: 0 holds / nothing found, 1 violation, 2 bad usage or input, 3 inconclusive",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--json", action="store_true", help="one JSON object on stdout")
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

    command("list", "scenarios, their variants, checkers and bounds")

    sub = command("repro", "one run; prints the timeline and the verdict")
    scenario_args(sub)
    sub.add_argument("--seed", type=int, help="draw every choice from this random seed")
    sub.add_argument("--choices", help="replay this choice blob (LEN:POS=VAL,...)")
    sub.add_argument(
        "--report-timeline", action="store_true", help="replay the race report's own story"
    )
    sub.add_argument(
        "--check-determinism",
        action="store_true",
        help="rerun in two processes under PYTHONHASHSEED 0 and 1, compare trace hashes",
    )
    sub.add_argument("--history-out", help="write the history as JSON Lines to this file")
    sub.add_argument(
        "--backend",
        default="sim",
        choices=["sim", "zookeeper"],
        help="sim (default), or force the run's schedule onto a real ZooKeeper",
    )
    sub.add_argument("--zk-hosts", help="use this ZooKeeper (HOST:PORT) instead of starting one")

    sub = command("explore", "search for a violation, shrink it, save the counterexample")
    scenario_args(sub)
    sub.add_argument(
        "--strategy", default="random", help=f"one of {', '.join(STRATEGIES)} (default random)"
    )
    sub.add_argument("--budget", type=float, help="wall seconds (default: the scenario's)")
    sub.add_argument("--examples", type=int, help="runs at most (default: the scenario's)")
    sub.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    sub.add_argument("--pct-depth", type=int, default=3, help="PCT bug depth (default 3)")
    sub.add_argument("--checker", help="count only violations of this checker (default: all)")
    sub.add_argument("--out", default="counterexamples", help="folder for counterexample files")

    sub = command("prove", "bounded exhaustive exploration of every schedule")
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

    sub = command("replay", "replay a counterexample file; fails loudly if the model changed")
    sub.add_argument("file", help="a counterexample .json file")

    sub = command("compare", "measure correct designs against each other (throughput, latency)")
    sub.add_argument("scenario", help="a scenario with a design comparison")
    sub.add_argument("--seeds", type=int, default=3, help="runs per point (default 3)")
    sub.add_argument(
        "--rate", type=int, default=400, help="commits per second offered (default 400)"
    )
    sub.add_argument(
        "--duration-ms", type=int, default=10_000, help="virtual ms of load (default 10000)"
    )
    sub.add_argument("--out", default="out", help="folder for the CSV and the PNG (default out/)")

    sub = command(
        "spark-check", "fault experiments on real local-mode Spark, with and without the guards"
    )
    from raceproof.spark_integration.experiments import EXPERIMENTS

    sub.add_argument("--experiment", action="append", metavar="NAME",
                     help="run only this experiment (repeatable); one of: " + ", ".join(EXPERIMENTS))  # fmt: skip

    sub = command("bench", "performance figures (printed, never asserted)")
    sub.add_argument("--quick", action="store_true", help="smaller workloads, for a smoke run")
    sub.add_argument("--scenario", help="instead: search figures over seeds, and proof figures")
    sub.add_argument("--variant", help="with --scenario: the variant searched (default: its first)")
    sub.add_argument("--checker", help="with --scenario: count only this checker's violations")
    sub.add_argument("--seeds", type=int, default=20, help="with --scenario: seeds per strategy")
    return parser


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list,
    "repro": cmd_repro,
    "explore": cmd_explore,
    "prove": cmd_prove,
    "replay": cmd_replay,
    "bench": cmd_bench,
    "compare": cmd_compare,
    "spark-check": cmd_spark_check,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return HANDLERS[args.command](args)
    except (UsageError, UnknownName) as exc:
        message = str(exc).strip("'\"")
        if getattr(args, "json", False):
            print(json.dumps({"error": message, "verdict": None}, sort_keys=True))
        print(f"raceproof: error: {message}", file=sys.stderr)
        return runner.EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
