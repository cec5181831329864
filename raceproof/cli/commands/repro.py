"""``raceproof repro``: one run of a scenario, its timeline and verdict, optionally on a real backend."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raceproof.cli.commands.common import (
    UsageError,
    add_command,
    emit,
    outcome_story,
    print_outcome,
    print_reports,
    scenario_and_variant,
    scenario_args,
)
from raceproof.cli.validation import (
    int_in,
    non_empty,
    parse_overrides,
    prepare_output_dir,
    prepare_output_file,
    zk_hosts,
)
from raceproof.runs import runner
from raceproof.scenarios import discovery
from raceproof.scenarios.catalogue import (
    Scenario,
)
from raceproof.sim import (
    History,
    KeyedReplaySource,
    ReplayMisaligned,
    ReplaySource,
    RunOutcome,
    decode_blob,
    encode_blob,
    first_divergence,
    first_violation,
)
from raceproof.sim import RandomSource as _RandomSource
from raceproof.sim import repro as repro_files
from raceproof.sim.errors import LIKELY_CAUSES
from raceproof.sim.verdicts import CheckStatus, Verdict


# -- repro --------------------------------------------------------------------------
@dataclass(frozen=True)
class ReproRequest:
    """What ``repro`` was asked: the scenario, the source of its one run, where to write."""

    scenario: Scenario
    variant: str
    config: Any
    source: Any
    strategy: str
    out_dir: Path | None
    history_out: Path | None
    real_history_out: Path | None


@dataclass
class ReproResult:
    """The run's outcome and the result dict (with the real backend's run, if one)."""

    outcome: RunOutcome
    result: dict[str, Any]


def cmd_repro(args: argparse.Namespace) -> int:
    request = _parse(args)
    return _render(args, request, run_repro(args, request))


def _parse(args: argparse.Namespace) -> ReproRequest:
    scenario, variant = scenario_and_variant(args)
    overrides = parse_overrides(args.set)
    config = scenario.config_for("explore", overrides)
    chosen = [args.seed is not None, args.choices is not None, args.report_timeline]
    if sum(chosen) > 1:
        raise UsageError("give at most one of --seed, --choices, --report-timeline")
    history_out = (
        prepare_output_file(args.history_out, "--history-out") if args.history_out else None
    )
    out_dir = prepare_output_dir(args.out) if args.out is not None else None
    if args.real_history_out and args.backend == "sim":
        raise UsageError("--real-history-out needs a real backend (--backend zookeeper|spark)")
    real_history_out = (
        prepare_output_file(args.real_history_out, "--real-history-out")
        if args.real_history_out
        else None
    )
    if args.zk_hosts and args.backend != "zookeeper":
        raise UsageError("--zk-hosts needs --backend zookeeper")
    source, strategy = _source(args, scenario)
    return ReproRequest(
        scenario=scenario,
        variant=variant,
        config=config,
        source=source,
        strategy=strategy,
        out_dir=out_dir,
        history_out=history_out,
        real_history_out=real_history_out,
    )


def _source(args: argparse.Namespace, scenario: Scenario) -> tuple[Any, str]:
    """The source of the one run and the strategy it is named by."""
    if args.report_timeline:
        if scenario.report_script is None:
            raise UsageError(f"{scenario.name} has no report timeline")
        # The script is keyed by (label, occurrence), so the report's story also
        # runs against a fix variant whose draws differ from the buggy one's.
        return KeyedReplaySource(dict(scenario.report_script)), "report-timeline"
    if args.choices is not None:
        try:
            values = decode_blob(args.choices)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return ReplaySource(values, strict=True), "choices"
    if args.seed is not None:
        return _RandomSource(args.seed), "random"
    return ReplaySource([], strict=False), "fifo"


def run_repro(args: argparse.Namespace, request: ReproRequest) -> ReproResult:
    """The one run, judged; then the real backend's run, the history files, determinism."""
    scenario, variant, config = request.scenario, request.variant, request.config
    run = scenario.runner(variant, config)
    started = time.monotonic()
    try:
        outcome = run(request.source)
    except ReplayMisaligned as exc:
        raise UsageError(f"the choices do not fit {scenario.name}/{variant}: {exc}") from None
    result = runner.base_result(scenario, variant, request.strategy, config)
    result.update(runner.outcome_fields(outcome))
    result.update(examples=1, schedules=1, seconds=round(time.monotonic() - started, 4))
    result["repro"] = runner.repro_line(scenario, variant, outcome.values, config)
    result["backend"] = args.backend
    # One run says whether it reached each probe; only a search or proof judges ``not-reached``.
    result["probes"] = {name: 0 for name in scenario.probes} | dict(outcome.probes)
    if outcome.status == Verdict.VIOLATED:
        runner.attach_counterexample(
            result, request.out_dir, scenario, variant, config, outcome, request.strategy
        )
    if args.backend != "sim":
        real = run_real_backend(args, scenario, variant, config, outcome, result["checker"])
        result["simulated"] = {
            k: result[k] for k in ("verdict", "checker", "message", "trace_hash")
        }
        real_history = real.pop("_real_history")
        result.update(real)
        result["seconds"] = round(time.monotonic() - started, 4)
        if request.real_history_out is not None:
            # The real run's history (wall ms), for `raceproof report SIM --beside REAL`.
            _write_history(result, request.real_history_out, real_history, "--real-history-out")
        result["repro"] += f" --backend {args.backend}"
    if request.history_out is not None:
        _write_history(result, request.history_out, outcome.history, "--history-out")
    if args.check_determinism:
        result["determinism"] = check_determinism(args, scenario.name, variant, outcome)
        if not result["determinism"]["same"]:  # the user's model, not a race: the verdict error
            result["verdict"] = Verdict.ERROR
            result["checker"] = "determinism"
            result["message"] = (
                "the model is not deterministic: the same choices in two processes "
                f"(PYTHONHASHSEED 0 and 1) diverged: {result['determinism']['detail']}; "
                f"{LIKELY_CAUSES}"
            )
    return ReproResult(outcome=outcome, result=result)


def _render(args: argparse.Namespace, request: ReproRequest, done: ReproResult) -> int:
    outcome, result = done.outcome, done.result
    scenario, variant = request.scenario, request.variant

    def human() -> None:
        title = f"== {scenario.name} / {variant} ({request.strategy}, simulated)"
        story = outcome_story(scenario, variant, request.config, outcome, title)
        print_outcome(outcome, title, story)
        if outcome.error is not None:
            print(runner.error_text(outcome, None))
        if result["probes"]:
            reached = ", ".join(
                f"{k!r} {'reached' if v else 'NOT reached'}" for k, v in result["probes"].items()
            )
            print(f"probes: {reached}")
        if args.backend != "sim":
            _print_real(args, result)
        print(f"repro: {result['repro']}")
        if result.get("counterexample"):
            print(f"counterexample: {result['counterexample']}")
            print_reports(result)
        elif "counterexample" in result:
            print(f"counterexample: {runner.NOT_SAVED}")
        if "determinism" in result:
            d = result["determinism"]
            print(
                "determinism: "
                + (
                    "same trace hash in two processes (PYTHONHASHSEED 0 and 1)"
                    if d["same"]
                    else f"DIFFERENT: {result['message']}"
                )
            )

    return emit(args, result, human)


def _print_real(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """The real backend's timeline, its checkers' verdicts and its verdict."""
    from raceproof.reports.terminal import verdict_line

    print(f"\n== the same schedule forced onto {args.backend} ({result['real_forced']})")
    print(result.pop("_timeline"))
    for verdict in result["verdicts"]:
        print(
            verdict_line(
                verdict["status"], verdict["checker"], verdict["op_index"], verdict["message"]
            )
        )
    reproduced = " (the simulated violation reproduced)" if result["reproduced"] else ""
    print(f"verdict on {args.backend}: {result['verdict']}{reproduced}")


def _write_history(result: dict[str, Any], path: Path, history: History, option: str) -> None:
    try:
        repro_files.write_atomically(path, history.to_jsonl())
    except runner.WRITE_FAILURES as exc:  # checked before the run; a full disk since: warn
        said = runner.unsaved(f"{option} {path}", exc)
        result["write_error"] = "; ".join(filter(None, (result.get("write_error"), said)))


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
    real = _spark_run(backend, variant, config, simulated) if args.backend == "spark" else None
    if real is None:
        from raceproof.zookeeper import ZooKeeperServer, ZooKeeperUnavailable, reachable

        try:
            if args.zk_hosts:
                reachable(args.zk_hosts)
                real = backend(args.zk_hosts, variant, config, simulated)
            else:
                with ZooKeeperServer() as server:
                    real = backend(server.hosts, variant, config, simulated)
        except ZooKeeperUnavailable as exc:
            raise UsageError(f"cannot run on ZooKeeper: {exc}") from None
    # A real backend may judge the same property with its own checker (Spark: the dataflow ones).
    wanted = getattr(real, "checker_map", {}).get(simulated_checker, simulated_checker)
    same = [v for v in real.verdicts if v.status == CheckStatus.VIOLATED and v.checker == wanted]
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
        "_real_history": real.history,
    }
    if hasattr(real, "steps"):  # a story forced step by step (Spark): the two side by side
        fields["real_forced"] = (
            f"{real.followed} of {real.forced} steps of the simulated story reached on "
            f"{args.backend}"
        )
        fields["real_steps"] = [step.to_json() for step in real.steps]
        fields["real_outcome"] = real.trial.to_json()
        fields["_timeline"] = real.side_by_side() + "\n\n" + fields["_timeline"]
    if args.json:
        fields.pop("_timeline")
    return fields


def _spark_run(backend: Any, variant: str, config: Any, simulated: RunOutcome) -> Any:
    """The backend run on the shared local Spark session (stopped after, unless a caller's)."""
    from raceproof.spark_integration.forced import NoSparkCounterpart
    from raceproof.spark_integration.session import (
        SparkUnavailable,
        session_running,
        stop_session,
    )

    owned = not session_running()
    try:
        return backend(None, variant, config, simulated)
    except NoSparkCounterpart as exc:
        raise UsageError(str(exc)) from None
    except SparkUnavailable as exc:
        raise UsageError(f"cannot run on Spark: {exc}") from None
    finally:
        if owned:
            stop_session()


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
                "raceproof.cli.main",
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
            for entry in discovery.command_line_entries():  # the child loads the same scenarios
                command += ["--scenarios", entry]
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


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "repro",
        "one run; prints the timeline and the verdict",
        cmd_repro,
        epilog="examples:\n"
        "  raceproof repro brooklin-double-stop --report-timeline\n"
        "  raceproof repro lost-update --variant buggy --choices 4:0=1 --check-determinism\n"
        "  raceproof repro brooklin-double-stop --report-timeline --backend zookeeper \\\n"
        "      --history-out sim.jsonl --real-history-out zookeeper.jsonl\n"
        "  raceproof repro streams-checkpoint-resurrection --report-timeline --backend spark",
    )
    scenario_args(sub)
    sub.add_argument("--seed", type=int_in(0), help="draw every choice from this random seed")
    sub.add_argument("--choices", type=non_empty, help="replay this choice blob (LEN:POS=VAL,...)")
    sub.add_argument(
        "--report-timeline", action="store_true", help="replay the race report's own story"
    )
    sub.add_argument(
        "--check-determinism",
        action="store_true",
        help="rerun in two processes under PYTHONHASHSEED 0 and 1, compare trace hashes",
    )
    sub.add_argument(
        "--history-out", type=non_empty, help="write the history as JSON Lines to this file"
    )
    sub.add_argument(
        "--real-history-out",
        type=non_empty,
        help="with --backend: write the real run's history (wall ms) as JSON Lines to this file",
    )
    sub.add_argument(
        "--out",
        type=non_empty,
        default=None,
        help="save the counterexample file and its reports in this folder when the run fails "
        "(default: nothing is written)",
    )
    sub.add_argument(
        "--backend",
        default="sim",
        choices=["sim", "zookeeper", "spark"],
        help="sim (default), or force the run's schedule onto a real ZooKeeper or Spark "
        "(local mode)",
    )
    sub.add_argument(
        "--zk-hosts", type=zk_hosts, help="use this ZooKeeper (HOST:PORT) instead of starting one"
    )
