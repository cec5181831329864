"""``raceproof bench``: the performance figures, printed, never asserted."""

from __future__ import annotations

import argparse
from typing import Any

from raceproof.cli.commands.common import (
    add_command,
    print_json,
    refuse_contradictions,
    scenario_and_variant,
)
from raceproof.cli.validation import int_in, non_empty, positive_seconds
from raceproof.runs import runner

# The modes of ``bench`` (each "instead" of the others): two at once mean nothing.
_MODES = ("campaign", "cluster", "swarm_table", "proofs")
CONTRADICTIONS = tuple(
    (first, second, "each is a bench of its own; run them one at a time")
    for i, first in enumerate(_MODES)
    for second in _MODES[i + 1 :]
)


def _knob(text: str) -> str:
    name, sep, raw = text.partition("=")
    if not sep or not name or not raw:
        raise argparse.ArgumentTypeError(f"expected NAME=V1,V2,... got {text!r}")
    for value in raw.split(","):
        int_in(0, 10**6)(value)
    return text


def cmd_bench(args: argparse.Namespace) -> int:
    from raceproof.measure import bench

    refuse_contradictions(args, CONTRADICTIONS)

    say = None if args.json else print
    if args.campaign:
        from raceproof.spark_integration import campaign_bench

        result = campaign_bench.figures(progress=say)
    elif args.cluster:
        result = _cluster(args, say)
    elif args.swarm_table:
        if args.scenario:
            scenario_and_variant(args)  # an unknown name is a usage error
        names = [args.scenario] if args.scenario else None
        result = bench.swarm_table(args.seeds, progress=say, names=names)
    elif args.check_plan:
        result = bench.check_plan(say)
    elif args.growth:
        result = _growth(args, bench, say)
    elif args.proofs:
        names = [args.scenario] if args.scenario else None
        if args.scenario:
            scenario_and_variant(args)  # an unknown name is a usage error
        result = bench.proof_bench(
            names, args.proof_budget, say, args.alternations, args.variant if names else None
        )
    elif args.scenario:
        scenario, variant = scenario_and_variant(args)
        scenario.checkers_named(args.checker)
        result = bench.search_figures(scenario.name, variant, args.checker, args.seeds, say)
        result.update(bench.proof_figures(scenario.name, say))
    else:
        result = bench.run(quick=args.quick, progress=say, alternations=args.alternations)
    if args.json:
        print_json(result)
    return runner.EXIT_OK


def _cluster(args: argparse.Namespace, say: Any) -> dict[str, Any]:
    """``bench --cluster``: a proof in rounds on a standalone cluster of 1, then 2 workers."""
    from raceproof.spark_integration import campaign_bench

    scenario_name, variant = campaign_bench.CLUSTER_PROOF
    if args.scenario or args.variant:  # a --variant alone is one of the default scenario's
        chosen = argparse.Namespace(**vars(args))
        chosen.scenario = args.scenario or scenario_name
        chosen.variant = args.variant or (None if args.scenario else variant)
        scenario, variant = scenario_and_variant(chosen)  # an unknown name is a usage error
        scenario_name = scenario.name
    return campaign_bench.cluster_figures(scenario_name, variant, args.alternations, say)


def _growth(args: argparse.Namespace, bench: Any, say: Any) -> dict[str, Any]:
    """``bench --growth``: the scenario's proof as a size knob of its configuration grows."""
    scenario_name, variant, knob, values = bench.GROWTH
    if args.scenario:
        scenario, variant = scenario_and_variant(args)  # an unknown name is a usage error
        scenario_name = scenario.name
    if args.knob:
        knob, _, raw = args.knob.partition("=")
        values = tuple(int_in(0, 10**6)(v) for v in raw.split(","))
    return bench.growth(scenario_name, variant, knob, values, args.proof_budget, say)


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
        help="instead: the reduced proof's schedules and seconds as a size knob grows, beside "
        "the full walk's estimate (default: coordinator-async-append writes 1-5)",
    )
    sub.add_argument(
        "--knob",
        type=_knob,
        help="with --growth: NAME=V1,V2,... a configuration field and its values",
    )
    sub.add_argument(
        "--proof-budget",
        type=positive_seconds,
        default=300.0,
        help="with --proofs or --growth: seconds per proof (300)",
    )
