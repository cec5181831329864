"""``raceproof bench``: the performance figures, printed, never asserted.

Parse (which bench) -> run_bench (the bench's dict, filled a step at a time; the
tables' rows of each step printed as the next starts) -> render (the rest, or
``--json``'s one document). A signal keeps the figures of the steps that ended:
printed as text or JSON with ``"interrupted"``, exit 130 or 143, as ``check``.
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raceproof.cli import signals
from raceproof.cli.commands.common import (
    StatusLine,
    add_command,
    print_json,
    refuse_contradictions,
    refuse_orphans,
    scenario_and_variant,
)
from raceproof.cli.validation import int_in, non_empty, positive_seconds
from raceproof.runs import runner
from raceproof.sim.errors import Signalled

if TYPE_CHECKING:
    from raceproof.measure import bench_tables

# The modes of ``bench`` (each "instead" of the others): two at once mean nothing.
_MODES = ("campaign", "cluster", "swarm_table", "check_plan", "growth", "proofs")
CONTRADICTIONS = tuple(
    (first, second, "each is a bench of its own; run them one at a time")
    for i, first in enumerate(_MODES)
    for second in _MODES[i + 1 :]
)


# Options that only mean something beside another (exit 2 naming both).
NEEDS = (("knob", "growth", "it names the configuration field --growth grows"),)


def _knob(text: str) -> str:
    name, sep, raw = text.partition("=")
    if not sep or not name or not raw:
        raise argparse.ArgumentTypeError(f"expected NAME=V1,V2,... got {text!r}")
    for value in raw.split(","):
        int_in(0, 10**6)(value)
    return text


@dataclass
class BenchRun:
    """What a bench measured: every step's figures, or those of the steps a signal left done."""

    figures: dict[str, Any]
    interrupted: Signalled | None = None
    step: str | None = None  # the last step said: under way, or (--check-plan) the last done
    step_ended: bool = False  # --check-plan says each part as it ends


def cmd_bench(args: argparse.Namespace) -> int:
    """Parse (which bench), run it (its tables printed a step at a time), render the end."""
    from raceproof.measure import bench_tables

    refuse_contradictions(args, CONTRADICTIONS)
    refuse_orphans(args, NEEDS)
    mode = _mode(args)
    if mode == "growth" and args.knob:
        _check_knob(args)  # a field the configuration lacks is refused before any work
    stream = None if args.json else bench_tables.Stream(bench_tables.TABLES[mode], _line)
    return render(args, stream, run_bench(args, mode, stream))


def _line(text: str) -> None:
    print(text, flush=True)  # each row as it comes, into a pipe or a file too


def run_bench(args: argparse.Namespace, mode: str, stream: bench_tables.Stream | None) -> BenchRun:
    """Run the bench ``mode``; as each step starts, the rows of the one before are printed.

    A signal stops it: the figures of the steps done are kept (a step's figures
    enter the dict when it ends), the step under way is named.
    """
    # check --check-plan reports each part as it ends; the others say each step as it starts
    ran = BenchRun(figures={}, step_ended=mode == "check_plan")
    with StatusLine("bench", not args.json, says_start=not ran.step_ended) as status:

        def step(text: str) -> None:
            ran.step = text
            if stream is not None:
                with status.paused():
                    stream.show(ran.figures)
            status(text)

        try:
            run(args, mode, step, ran.figures)
        except Signalled as exc:  # a KeyboardInterrupt of no signal is no interrupt: let it go
            ran.interrupted = exc
    return ran


def render(args: argparse.Namespace, stream: bench_tables.Stream | None, ran: BenchRun) -> int:
    """The figures: the tables' last rows and notes (or ``--json``'s one document); an
    interrupted bench says so and exits 130 or 143."""
    if ran.interrupted is None:
        if stream is None:
            print_json(ran.figures)
        else:
            stream.end(ran.figures, complete=True)
        return runner.EXIT_OK
    name, code = _signal(ran.interrupted)
    where = f' {"after" if ran.step_ended else "during"} "{ran.step}"' if ran.step else ""
    note = f"interrupted by {name}{where}: the figures are those of the steps ended before it"
    if stream is None:
        print_json(ran.figures | {"interrupted": name, "notes": [note]})
    else:
        stream.end(ran.figures, complete=False)
        print(f"\nbench {note}")
    return code


def _signal(exc: Signalled) -> tuple[str, int]:
    """The signal's name and the exit code, 128 + its number.

    Besides the handler's ``Interrupted``, the campaign bench raises a ``Signalled``
    named after the signal its campaign stopped for (``spark_integration.campaign_bench``).
    """
    if isinstance(exc, signals.Interrupted):
        return exc.name, exc.exit_code
    name = str(exc) if str(exc) in ("SIGINT", "SIGTERM") else "SIGINT"
    return name, 128 + signal.Signals[name]


def _mode(args: argparse.Namespace) -> str:
    """Which bench the options ask for (``refuse_contradictions`` left at most one)."""
    for mode in ("campaign", "cluster", "swarm_table", "check_plan", "growth", "proofs"):
        if getattr(args, mode):
            return mode
    return "scenario" if args.scenario else "kernel"


def run(
    args: argparse.Namespace, mode: str, say: Callable[[str], None], into: dict[str, Any]
) -> dict[str, Any]:
    """The figures of the bench ``mode``, filled into ``into`` as each step ends, each step said
    to ``say`` as it starts."""
    from raceproof.measure import bench

    names = [args.scenario] if args.scenario else None
    if args.scenario and mode in ("swarm_table", "proofs"):
        scenario_and_variant(args)  # an unknown name is a usage error
    if mode == "campaign":
        from raceproof.spark_integration import campaign_bench

        return campaign_bench.figures(progress=say, into=into)
    if mode == "cluster":
        return _cluster(args, say, into)
    if mode == "swarm_table":
        return bench.swarm_table(args.seeds, progress=say, names=names, into=into)
    if mode == "check_plan":
        return bench.check_plan(say, into)
    if mode == "growth":
        return _growth(args, bench, say, into)
    if mode == "proofs":
        return bench.proof_bench(
            names,
            budget_s=args.proof_budget,
            progress=say,
            alternations=args.alternations,
            variant_for=args.variant if names else None,
            into=into,
        )
    if mode == "scenario":
        scenario, variant = scenario_and_variant(args)
        scenario.checkers_named(args.checker)
        bench.search_figures(
            scenario.name,
            variant,
            checker=args.checker,
            seeds=args.seeds,
            progress=say,
            into=into,
        )
        return bench.proof_figures(scenario.name, say, into)
    return bench.run(quick=args.quick, progress=say, alternations=args.alternations, into=into)


def _cluster(args: argparse.Namespace, say: Any, into: dict[str, Any]) -> dict[str, Any]:
    """``bench --cluster``: a proof in rounds on a standalone cluster of 1, then 2 workers."""
    from raceproof.spark_integration import campaign_bench

    scenario_name, variant = campaign_bench.CLUSTER_PROOF
    if args.scenario or args.variant:  # a --variant alone is one of the default scenario's
        chosen = argparse.Namespace(**vars(args))
        chosen.scenario = args.scenario or scenario_name
        chosen.variant = args.variant or (None if args.scenario else variant)
        scenario, variant = scenario_and_variant(chosen)  # an unknown name is a usage error
        scenario_name = scenario.name
    return campaign_bench.cluster_figures(
        scenario_name, variant, repeats=args.alternations, progress=say, into=into
    )


def _check_knob(args: argparse.Namespace) -> None:
    """``--knob NAME=V1,V2``: every value set on the scenario's proof configuration, now."""
    from raceproof.measure import bench
    from raceproof.scenarios.catalogue import get

    name = args.scenario or bench.GROWTH[0]
    scenario = scenario_and_variant(args)[0] if args.scenario else get(name)
    knob, _, raw = args.knob.partition("=")
    default = getattr(scenario.prove_config, knob, None)
    for value in raw.split(","):
        scenario.config_for(  # BadInput names the field and the option
            "prove", {knob: bench.sized(default, int(value))}, option="--knob"
        )


def _growth(args: argparse.Namespace, bench: Any, say: Any, into: dict[str, Any]) -> dict[str, Any]:
    """``bench --growth``: the scenario's proof as a size knob of its configuration grows."""
    scenario_name, variant, knob, values = bench.GROWTH
    if args.scenario:
        scenario, variant = scenario_and_variant(args)  # an unknown name is a usage error
        scenario_name = scenario.name
    if args.knob:
        knob, _, raw = args.knob.partition("=")
        values = tuple(int_in(0, 10**6)(v) for v in raw.split(","))
    return bench.growth(
        scenario_name,
        variant,
        knob=knob,
        values=values,
        budget_s=args.proof_budget,
        progress=say,
        into=into,
    )


def add(commands: Any) -> None:
    # one function: argparse wiring, one option after another; a split would only scatter it
    sub = add_command(
        commands,
        "bench",
        "performance figures (printed, never asserted)",
        cmd_bench,
        epilog="examples:\n  raceproof bench --quick\n"
        "  raceproof bench --scenario brooklin-double-stop --variant buggy --seeds 10\n"
        "  raceproof bench --proofs --scenario lost-update\n"
        "  raceproof bench --campaign\n"
        "  raceproof bench --cluster --alternations 3",
    )
    sub.add_argument(
        "--campaign",
        action="store_true",
        help="instead: campaign cells/s on local[1] and local[2], and per-cell overhead",
    )
    sub.add_argument(
        "--cluster",
        action="store_true",
        help="instead: campaign --prove in rounds on a standalone cluster of 1, then 2 workers "
        "started on 127.0.0.1 (default proof samza-drain/drain; --scenario/--variant pick "
        "another; --alternations runs on each)",
    )
    sub.add_argument("--quick", action="store_true", help="smaller workloads, for a smoke run")
    sub.add_argument(
        "--alternations",
        type=int_in(1, 1000),
        default=5,
        help="rounds of alternating runs each ratio's median and range come from (5)",
    )
    sub.add_argument(
        "--scenario", type=non_empty, help="instead: search figures over seeds, and proof figures"
    )
    sub.add_argument(
        "--variant",
        type=non_empty,
        help="with --scenario: the variant searched (default: its first); with --proofs, "
        "the variant proved (default: its first expected to hold)",
    )
    sub.add_argument(
        "--checker", type=non_empty, help="with --scenario: count only this checker's violations"
    )
    sub.add_argument(
        "--seeds", type=int_in(1, 10_000), default=20, help="with --scenario: seeds per strategy"
    )
    sub.add_argument(
        "--swarm-table",
        action="store_true",
        help="instead: random against swarm, examples to first violation of every "
        "variant expected to violate, over --seeds seeds",
    )
    sub.add_argument(
        "--proofs",
        action="store_true",
        help="instead: each scenario's proof with and without the reduction, and on -j 2",
    )
    sub.add_argument(
        "--check-plan",
        action="store_true",
        help="instead: check's parts on the whole catalogue, one by one, and the speedup "
        "their plan allows on 2-16 workers",
    )
    sub.add_argument(
        "--growth",
        action="store_true",
        help="instead: the reduced proof's classes, runs, sleep-blocked runs, distinct states "
        "and seconds as a size knob grows, beside the full walk's estimate (default: "
        "coordinator-async-append writes 1-5)",
    )
    sub.add_argument(
        "--knob",
        type=_knob,
        help="with --growth: NAME=V1,V2,... a configuration field and its values (a field "
        "of names, as Brooklin's streams, takes a count: the configuration's names, then C, D...)",
    )
    sub.add_argument(
        "--proof-budget",
        type=positive_seconds,
        default=300.0,
        help="with --proofs or --growth: seconds per proof (300)",
    )
