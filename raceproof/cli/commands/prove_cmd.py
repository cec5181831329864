"""``raceproof prove``: bounded exhaustive exploration, with what it covered."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from raceproof.cli.commands.common import (
    Progress,
    add_command,
    emit,
    emit_interrupted,
    judge_probes,
    outcome_story,
    print_json,
    print_outcome,
    print_reports,
    probes_line,
    refuse_contradictions,
    scenario_and_variant,
    scenario_args,
)
from raceproof.cli.signals import Coverage
from raceproof.cli.validation import (
    BadInput,
    int_in,
    jobs_option,
    non_empty,
    parse_overrides,
    positive_seconds,
    prepare_output_dir,
)
from raceproof.runs import processes, runner
from raceproof.sim import Budget, ProofReport
from raceproof.sim.exhaustive import UNDECIDED
from raceproof.sim.outcome import RunOutcome
from raceproof.sim.proof_plan import Estimate, estimate
from raceproof.sim.verdicts import Verdict

# How far the full walk's estimate was above the reduced proof's real size, measured on the
# built-in proofs and the zombie-controller model (the table "How far the estimate is off" in
# docs/explanation/proofs.md; property_tests/search_and_proof/test_estimate_label.py keeps the two the same).
MEASURED_RATIOS = "1.1x to 23,570,365x"
ESTIMATE_LABEL = (
    "the full walk's size (no reduction, no state cache), an upper bound: the reduced proofs "
    f"of the built-in scenarios walked {MEASURED_RATIOS} fewer schedules than this estimate, "
    "and a model where many steps commute can walk far fewer"
)


def _report_estimate(
    args: argparse.Namespace, scenario: str, variant: str, size: Estimate, config: Any
) -> int:
    """``prove --estimate``: the full walk's size and time, labelled as the upper bound it is."""
    fits = size.seconds <= args.budget
    if args.json:
        body = {
            "scenario": scenario,
            "variant": variant,
            "fits_budget": fits,
            "estimate_of": "full-walk upper bound",
            "estimate_label": ESTIMATE_LABEL,
            **size.to_json(),
        }
        print_json(body)
        return runner.EXIT_OK
    print(
        f"{scenario} / {variant}: {size.described()} in the full walk "
        f"(Knuth's estimator over {size.samples} random runs), {size.seconds_per_run * 1000:.2f} "
        f"ms a run: {size.described_seconds()} on one core; the full walk "
        f"{'fits' if fits else 'may not fit'} the budget of {args.budget:g}s"
    )
    print(f"  upper bound: {ESTIMATE_LABEL}; prove itself reports the real size")
    return runner.EXIT_OK


# -- prove --------------------------------------------------------------------------
ONE_SCHEDULE = (
    "warning: this configuration has one schedule: no two events were ever due at the same "
    "virtual ms and no draw had a second option, so nothing interleaved and the proof is "
    "trivial; give timing its choices (draw delays from world.source, see 'Giving timing its "
    "choices' in the proofs page)"
)
CROSS_CHECK_UNFINISHED = (
    "--cross-check: the full walk did not finish within the budget, so nothing was compared "
    "(raise --budget or --max-schedules, or prove without --cross-check)"
)
# ``--check-footprints`` with pairs it could not follow (a swapped order that could not be run as
# asked, or a step the kernel cannot name due among others): the footprints the proof rests on were not all checked, so it is no PROVEN.
FOOTPRINTS_UNVERIFIED = (
    "--check-footprints: {n} pairs of steps the reduction treats as commuting could not be "
    "swapped and compared (a swapped order could not be run as asked, or a step the kernel "
    "cannot name was due beside them), so the "
    "footprints they rest on are unchecked; prove "
    "without --check-footprints to trust them, or with --cross-check on a small configuration"
)
SYMMETRY_UNCHECKED = (
    "--check-symmetry: no state was reached as an image of one seen before (the two differing "
    "by a permutation of the symmetric actors), so none was compared: the declaration is "
    "unchecked on this configuration (try a larger one)"
)
# Options of ``prove`` that cannot mean anything together (exit 2 naming both).
CONTRADICTIONS = (
    ("state_cache", "no_state_cache", "the walk caches states or it does not; give one"),
    (
        "check_state_cache",
        "no_state_cache",
        "--check-state-cache runs the state cache to check it",
    ),
    ("check_symmetry", "no_state_cache", "--check-symmetry runs the state cache to check it"),
    (
        "check_footprints",
        "no_reduction",
        "the footprints checked are the reduction's, and --no-reduction turns it off",
    ),
    (
        "cross_check",
        "no_reduction",
        "--cross-check compares the reduced walk with the plain one, and --no-reduction "
        "leaves only the plain one",
    ),
    (
        "estimate",
        "check_footprints",
        "--estimate only samples the proof's size and runs no proof to check",
    ),
    (
        "estimate",
        "cross_check",
        "--estimate only samples the proof's size and runs no proof to check",
    ),
    (
        "estimate",
        "check_state_cache",
        "--estimate only samples the proof's size and runs no proof to check",
    ),
    (
        "state_cache",
        "check_state_cache",
        "--check-state-cache runs the state cache and checks it; give one",
    ),
    (
        "estimate",
        "check_symmetry",
        "--estimate only samples the proof's size and runs no proof to check",
    ),
    (
        "check_symmetry",
        "no_symmetry",
        "--check-symmetry checks the declared symmetry, and --no-symmetry leaves it out",
    ),
    (
        "state_cache",
        "check_symmetry",
        "--check-symmetry runs the state cache with the symmetry and checks both; give one",
    ),
    (
        "check_state_cache",
        "check_symmetry",
        "--check-symmetry runs the state cache with the symmetry and checks both; give one",
    ),
)


def state_cache_on(args: argparse.Namespace) -> bool:
    """Whether the walk caches states: on unless ``--no-state-cache``, or ``--no-reduction``
    (the plain walk, every schedule) without ``--state-cache``; the checks run it."""
    if args.state_cache or args.check_state_cache or args.check_symmetry:
        return True
    return not args.no_state_cache and not args.no_reduction


@dataclass
class ProveSetup:
    """What the command line asked for, checked: the proof to run and its caps."""

    scenario: Any
    variant: str
    config: Any
    max_deviations: int | None
    max_branch: int | None
    out_dir: Any
    budget: Budget
    run: Any


@dataclass
class ProveResult:
    """A finished proof: the JSON result, the report it came from, whether it was cross-checked."""

    setup: ProveSetup
    result: dict[str, Any]
    report: ProofReport
    unchecked: bool  # --cross-check asked for, its full walk unfinished


@dataclass
class Interrupted:
    """A proof stopped by a signal: what it covered so far."""

    partial: dict[str, Any]
    exc: BaseException
    covered: str


def _parse(args: argparse.Namespace) -> ProveSetup:
    refuse_contradictions(args, CONTRADICTIONS)
    scenario, variant = scenario_and_variant(args)
    if args.check_symmetry and scenario.symmetric is None:
        raise BadInput(
            f"--check-symmetry: scenario {scenario.name} declares no symmetric actors "
            f"(Scenario(symmetric=...)): there is nothing to check"
        )
    if args.no_symmetry:  # the plain cache: states that differ by a permutation stay apart
        scenario = dataclasses.replace(scenario, symmetric=None)
    overrides = parse_overrides(args.set)
    config = scenario.config_for("prove", overrides)
    return ProveSetup(
        scenario=scenario,
        variant=variant,
        config=config,
        max_deviations=scenario.prove_max_deviations
        if args.max_deviations is None
        else args.max_deviations,
        max_branch=scenario.prove_max_branch if args.max_branch is None else args.max_branch,
        out_dir=prepare_output_dir(args.out) if args.out is not None else None,
        budget=Budget(examples=args.max_schedules, seconds=args.budget, clock=time.monotonic),
        run=scenario.runner(variant, config, args.checker),
    )


def cmd_prove(args: argparse.Namespace) -> int:
    setup = _parse(args)
    try:
        size = estimate(
            setup.run,
            samples=args.estimate_samples,
            max_branch=setup.max_branch,
            clock=time.monotonic,
        )
    except KeyboardInterrupt as exc:  # before the walk began: nothing is covered yet
        partial = runner.base_result(setup.scenario, setup.variant, "exhaustive", setup.config)
        partial.update(complete=False, bounds_pruned={"interrupted": 0})
        return emit_interrupted(args, partial, exc, "sampling the proof's size; not a proof")
    if args.estimate:
        return _report_estimate(args, setup.scenario.name, setup.variant, size, setup.config)
    if not args.json and size.seconds > args.budget:
        print(
            f"warning: this proof may not finish in its budget: {size.described()} "
            f"(an upper bound, without the reduction) at {size.seconds_per_run * 1000:.2f} "
            f"ms a run is {size.described_seconds()} > --budget {args.budget:g}s",
            file=sys.stderr,
        )
    proof = _run(args, setup, size)
    if isinstance(proof, Interrupted):
        return emit_interrupted(args, proof.partial, proof.exc, proof.covered)
    return emit(args, proof.result, functools.partial(_render, args, proof))


def _run(args: argparse.Namespace, setup: ProveSetup, size: Estimate) -> ProveResult | Interrupted:
    """Walk the proof with a progress line; its result, or what it covered when interrupted."""
    line = Progress(f"prove {setup.scenario.name}/{setup.variant}", not args.json, count_key="runs")

    def progress(info: dict[str, Any]) -> None:
        # The display shows a bar, the rate and the time left against ``estimate``
        # (Knuth's estimate of the full walk: the reduced walk runs at most that).
        if not size.overflows:  # an estimate past a float's range draws no bar
            info["estimate"] = max(round(size.schedules), int(info.get("runs", 0)))
        line(info)

    coverage = Coverage()
    started = time.monotonic()
    try:
        report = setup.scenario.prove(
            setup.variant,
            setup.budget,
            config=setup.config,
            checker=args.checker,
            max_deviations=setup.max_deviations,
            max_branch=setup.max_branch,
            progress=coverage.progress(progress),
            reduction=not args.no_reduction,
            jobs=args.jobs,
            state_cache=state_cache_on(args),
            state_cache_check=args.check_state_cache or args.check_symmetry,
            check_footprints=args.check_footprints,
            cross_check=args.cross_check,
            worker_setup=functools.partial(processes.die_with_parent, os.getpid()),
        )
    except KeyboardInterrupt as exc:
        line.done()
        return _interrupted(setup, coverage.snapshot, exc, started)
    line.done()
    return _result(args, setup, size, report, started)


def _interrupted(
    setup: ProveSetup, seen: dict[str, Any], exc: BaseException, started: float
) -> Interrupted:
    partial = runner.base_result(setup.scenario, setup.variant, "exhaustive", setup.config)
    partial.update(
        complete=False,
        schedules=seen.get("schedules", 0),
        examples=seen.get("runs", 0),
        bounds_pruned={"interrupted": seen.get("frontier", 0)},
        max_deviations_reached=seen.get("depth", 0),
        seconds=round(time.monotonic() - started, 3),
    )
    covered = (
        f"{partial['schedules']} distinct complete schedules ({partial['examples']} runs, "
        f"{seen.get('frontier', 0)} left unexplored); not a proof"
    )
    return Interrupted(partial, exc, covered)


def _result(
    args: argparse.Namespace,
    setup: ProveSetup,
    size: Estimate,
    report: ProofReport,
    started: float,
) -> ProveResult:
    """The JSON result of a finished proof (and its counterexample file, if it found one)."""
    scenario, variant = setup.scenario, setup.variant
    result = runner.base_result(scenario, variant, "exhaustive", setup.config)
    result.update(report.accounting())
    result.update(
        runs_per_class=report.runs_per_class,  # 1.0 when no run was cut or repeated a class
        verdict=report.verdict,
        examples=report.runs,
        max_deviations_reached=report.max_deviations_seen,
        estimate=size.to_json(),
        complete_means="every equivalence class of schedules of this configuration ran and held"
        if report.reduction
        else "every schedule of this configuration ran and held",
        configuration={
            "config": result["config"],
            "bounds": scenario.bounds.to_json(),
            "max_deviations": setup.max_deviations,
            "max_branch": setup.max_branch,
            "max_schedules": args.max_schedules,
            "budget_s": args.budget,
            "reduction": not args.no_reduction,
            "state_cache": state_cache_on(args),
            "jobs": args.jobs,
        },
    )
    if report.shrunk is not None:
        runner.attach_counterexample(
            result, setup.out_dir, scenario, variant, setup.config, report.shrunk, "exhaustive"
        )
        result["verdict"] = report.verdict
        result["schedules"] = report.schedules
    if report.undecided is not None and report.shrunk is None:
        _undecided(result, scenario, variant, setup.config, report.undecided)
    judge_probes(result, scenario, variant, report.probes)
    # One class is no sign of one schedule: two steps due together that commute are one
    # class of two. The estimate's runs multiply every draw's options: the first draw with
    # a second option is on every run, so a product below 2 is a full walk of one run.
    if report.complete and report.schedules == 1 and size.schedules < 2:
        result["notes"] = [*result.get("notes", []), ONE_SCHEDULE]
    unchecked = (
        args.cross_check and report.cross_checked is None and result["verdict"] == Verdict.OK
    )
    if unchecked:
        # --cross-check asks for the proof checked against the full walk: without it, say less.
        result["verdict"] = Verdict.INCONCLUSIVE
        result["notes"] = [*result.get("notes", []), CROSS_CHECK_UNFINISHED]
    unverified = (
        args.check_footprints
        and report.footprints_unverified > 0
        and result["verdict"] == Verdict.OK
    )
    if unverified:
        # --check-footprints asks for the proof's footprints checked: some were not, say less.
        result["verdict"] = Verdict.INCONCLUSIVE
        note = FOOTPRINTS_UNVERIFIED.format(n=report.footprints_unverified)
        result["notes"] = [*result.get("notes", []), note]
    if args.check_symmetry and not report.symmetric_merged and report.found is None:
        result["notes"] = [*result.get("notes", []), SYMMETRY_UNCHECKED]
    result["seconds"] = round(time.monotonic() - started, 3)
    return ProveResult(setup=setup, result=result, report=report, unchecked=unchecked)


def _render(args: argparse.Namespace, proof: ProveResult) -> None:
    report, result = proof.report, proof.result
    name = f"{proof.setup.scenario.name} / {proof.setup.variant}"
    if report.shrunk is not None and report.shrunk.error is not None:
        print(f"== {name}: NOT proven: ERROR at schedule {report.runs}")
        print(runner.error_text(report.shrunk, result["repro"]))
    elif report.shrunk is not None:
        title = f"== {name}: NOT proven: violation at schedule {report.runs}"
        setup = proof.setup
        story = outcome_story(setup.scenario, setup.variant, setup.config, report.shrunk, title)
        print_outcome(report.shrunk, title, story)
        print(f"counterexample: {result['counterexample'] or runner.NOT_SAVED}")
        print_reports(result)
        print(f"repro: {result['repro']}")
    elif proof.unchecked:
        print(f"{name}: INCONCLUSIVE: {CROSS_CHECK_UNFINISHED}")
    else:
        _render_coverage(args, name, report, result)


def _render_coverage(
    args: argparse.Namespace, name: str, report: ProofReport, result: dict[str, Any]
) -> None:
    """A proof that found nothing: what it covered, how, and what cut it."""
    state = "PROVEN" if report.complete and result["verdict"] == Verdict.OK else "INCONCLUSIVE"
    if result["verdict"] == Verdict.NOT_REACHED:
        state = "NOT REACHED (not a proof of anything)"
    classes = "equivalence classes of schedules" if report.reduction else "distinct schedules"
    if report.state_cache_cuts:  # a cut run stands for every class below the state it met
        covered = (
            f"{report.runs} runs, {report.schedules} run to the end and "
            f"{report.state_cache_cuts} cut at a state explored before"
        )
        deviations = f"up to {report.max_deviations_seen} deviations"
    else:
        covered = f"{report.schedules} {classes} run to the end"
        deviations = f"{report.runs} runs, up to {report.max_deviations_seen} deviations"
    print(f"{name}: {state}: {covered} ({deviations}) in {result['seconds']}s")
    if report.reduction:
        print(
            f"  reduction: {report.skipped_equivalent} branches skipped as equivalent, "
            f"{report.sleep_blocked} runs cut where they became equivalent to an explored one"
        )
    if report.balance is not None and report.balance["units"] != 1:
        plan: dict[str, Any] = report.balance
        print(
            f"  balance: {plan['units']} units of work (the largest {plan['largest_unit_runs']} "
            f"runs, the longest chain {plan['critical_path_runs']}): the plan allows "
            f"x{plan['speedup_allowed']['16']} on 16 workers"
        )
    if report.states_seen:
        print(
            f"  state cache: {report.states_seen} states seen, {report.state_cache_cuts} runs "
            f"cut at a state explored before ({report.state_cache_checked} compared)"
            + (
                f", {report.symmetric_merged} of them an image of one seen under the "
                "symmetric actors"
                if report.symmetric_merged
                else ""
            )
        )
    if report.state_cache_off is not None:
        print(f"  state cache: off, the walk stayed stateless ({report.state_cache_off})")
    print(f"  configuration: {json.dumps(result['config'], sort_keys=True)}")
    if report.footprints_checked is not None:
        print(
            f"  footprints: {report.footprints_checked} pairs of steps the reduction treats "
            f"as commuting swapped and compared, all commute "
            f"({report.footprints_unverified} could not be followed"
            + ("" if not report.footprints_unverified else ": NOT checked")
            + ")"
        )
    if args.cross_check:
        print(
            "  cross-check: "
            + (
                "the full walk did not complete within the budget: nothing compared"
                if report.cross_checked is None
                else f"the full walk ({report.cross_checked} schedules) reaches the same "
                f"verdict and final states"
            )
        )
    bounds = {k: v for k, v in report.pruned.items() if not k.startswith(UNDECIDED)}
    if bounds:
        print(f"  pruned by: {', '.join(f'{k} ({v} branches)' for k, v in sorted(bounds.items()))}")
    for note in result.get("notes", []):
        print(f"  {note}")
    probes = probes_line(result, "runs")
    if probes:
        print(f"  {probes}")


def _undecided(
    result: dict[str, Any], scenario: Any, variant: str, config: Any, run: RunOutcome
) -> None:
    """A run a checker left undecided: never a proof; the notes name the checker and its repro."""
    counts = {
        k[len(UNDECIDED) :]: v
        for k, v in result["bounds_pruned"].items()
        if k.startswith(UNDECIDED)
    }
    repro = runner.repro_line(scenario, variant, run.values, config)
    said = {v.checker: v.message for v in run.verdicts if v.checker in run.undecided_by}
    result["undecided"] = {"checkers": counts, "repro": repro}
    result["notes"] = [
        *result.get("notes", []),
        *(
            f"{count} runs undecided by {name} (the checker said unknown: "
            f"{said.get(name) or 'its history cannot tell'}); not a proof"
            for name, count in sorted(counts.items())
        ),
        f"first undecided run: {repro}",
    ]


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
        "--max-schedules",
        type=int_in(1, 10**9),
        default=1_000_000,
        help="runs at most (default 1e6)",
    )
    sub.add_argument(
        "--max-deviations",
        type=int_in(0, 10_000),
        help="cap on deviations from FIFO (prunes: not complete)",
    )
    sub.add_argument(
        "--max-branch",
        type=int_in(1, 10_000),
        help="cap on options per draw, 1 = FIFO only (prunes: not complete)",
    )
    sub.add_argument("--checker", type=non_empty, help="judge only this checker (default: all)")
    sub.add_argument(
        "--out",
        type=non_empty,
        default=None,
        help="save a violation's counterexample file in this folder (default: nothing is written)",
    )
    sub.add_argument(
        "--no-reduction",
        action="store_true",
        help="walk every schedule (no partial-order reduction)",
    )
    _add_walk_options(sub)


def _add_walk_options(sub: Any) -> None:
    """How the walk is split and checked."""
    sub.add_argument(
        "-j", "--jobs", type=jobs_option(), default=1, help="worker processes (default 1)"
    )
    sub.add_argument(
        "--state-cache",
        action="store_true",
        help="cut at states explored before, named by the kernel or by the model's "
        "declare_state (the default, except with --no-reduction)",
    )
    sub.add_argument(
        "--no-state-cache",
        action="store_true",
        help="walk statelessly: one run per equivalence class, no state fingerprinted "
        "(the counts are then the same on any -j)",
    )
    sub.add_argument(
        "--check-state-cache",
        action="store_true",
        help="debug the state fingerprint: cut nothing, compare what would be cut",
    )
    sub.add_argument(
        "--check-symmetry",
        action="store_true",
        help="check the scenario's symmetric actors: cut nothing, compare the runs from states "
        "that differ by a permutation (exit 2 naming the actor if they differ)",
    )
    sub.add_argument(
        "--no-symmetry",
        action="store_true",
        help="the state cache without the scenario's symmetric actors",
    )
    sub.add_argument(
        "--check-footprints",
        action="store_true",
        help="swap-test the steps the reduction treats as commuting (exit 2 if they do not; "
        "inconclusive, exit 3, if some could not be swapped)",
    )
    sub.add_argument(
        "--cross-check",
        action="store_true",
        help="also walk every schedule without the reduction and compare final states "
        "(exit 2 if they differ; small configurations)",
    )
    sub.add_argument(
        "--estimate",
        action="store_true",
        help="only estimate the proof's size and time, by sampling",
    )
    sub.add_argument(
        "--estimate-samples",
        type=int_in(1, 100_000),
        default=30,
        help="random runs the estimate samples (30)",
    )
