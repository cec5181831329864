"""``raceproof bench``: the performance figures, printed and never asserted in tests.

Figures: kernel events per second against plain SimPy on the same workload
(the ratio is the cost of choice-driven tie-breaking), random-strategy
schedules per second on one core, Hypothesis examples per second, and virtual
seconds simulated per wall second on a timer-heavy workload.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Generator
from typing import Any

import simpy

from raceproof.scenarios.catalogue import get
from raceproof.sim import Bounds, Budget, RandomSource, World, explore
from raceproof.sim.shared import whole_object_footprints

Progress = Callable[[str], None] | None


def _tick_workload(env: simpy.Environment, processes: int, rounds: int) -> None:
    """``processes`` actors each sleeping ``rounds`` times; many wake-ups coincide."""

    def actor(index: int) -> Generator[Any, Any, None]:
        for step in range(rounds):
            yield env.timeout((index * 7 + step) % 5)

    for index in range(processes):
        if isinstance(env, World):
            env.spawn(f"a{index}", actor(index))
        else:
            env.process(actor(index))


def _events_per_second(
    make: Callable[[], simpy.Environment], processes: int, rounds: int
) -> tuple[float, int]:
    env = make()
    _tick_workload(env, processes, rounds)
    started = time.perf_counter()
    count = 0
    try:
        while True:
            env.step()
            count += 1
    except simpy.core.EmptySchedule:
        pass
    return count / (time.perf_counter() - started), count


def _timer_workload(world: World, horizon_ms: int) -> None:
    periods_ms = (100, 1_000, 5_000, 10_000, 30_000, 60_000, 600_000)

    def timer(period_ms: int) -> Generator[Any, Any, None]:
        while world.now_ms + period_ms <= horizon_ms:
            yield world.sleep(period_ms)

    for period_ms in periods_ms:
        world.spawn(f"timer{period_ms}", timer(period_ms))


def run(quick: bool = False, progress: Progress = None) -> dict[str, Any]:
    say = progress or (lambda _line: None)
    scale = 1 if quick else 5
    result: dict[str, Any] = {}

    processes, rounds = 50, 40 * scale
    simpy_eps, simpy_events = _events_per_second(simpy.Environment, processes, rounds)
    world_eps, world_events = _events_per_second(
        lambda: World(RandomSource(0), Bounds(max_time_ms=10**9, max_steps=10**9)),
        processes,
        rounds,
    )
    result["kernel"] = {
        "workload": f"{processes} processes x {rounds} timeouts, ties on most instants",
        "simpy_events_per_s": round(simpy_eps),
        "world_events_per_s": round(world_eps),
        "world_over_simpy": round(world_eps / simpy_eps, 3),
        "events": world_events,
        "simpy_events": simpy_events,
    }
    say(
        f"kernel: World {world_eps:,.0f} events/s vs plain SimPy {simpy_eps:,.0f} events/s "
        f"(ratio {world_eps / simpy_eps:.2f}) on {world_events:,} events"
    )

    scenario = get("lost-update")
    runner = scenario.runner("fix-cas", scenario.config)
    examples = 1000 * scale
    started = time.perf_counter()
    explore(runner, "random", 0, Budget(examples=examples))
    random_rate = examples / (time.perf_counter() - started)
    result["random_schedules_per_s_per_core"] = round(random_rate, 1)
    say(f"random strategy: {random_rate:,.0f} schedules/s on one core (lost-update/fix-cas)")

    examples = 200 * scale
    started = time.perf_counter()
    explore(runner, "hypothesis", 0, Budget(examples=examples))
    hyp_rate = examples / (time.perf_counter() - started)
    result["hypothesis_examples_per_s"] = round(hyp_rate, 1)
    say(f"hypothesis strategy: {hyp_rate:,.0f} examples/s (lost-update/fix-cas)")

    horizon_ms = 24 * 3_600_000 * scale
    world = World(RandomSource(0), Bounds(max_time_ms=horizon_ms, max_steps=10**9))
    _timer_workload(world, horizon_ms)
    started = time.perf_counter()
    world.run_to_end()
    wall_s = time.perf_counter() - started
    ratio = (world.now_ms / 1000) / wall_s
    result["virtual_s_per_wall_s"] = round(ratio)
    result["virtual_workload"] = (
        f"7 timers (100 ms .. 10 min) over {horizon_ms // 3_600_000} virtual hours"
    )
    say(
        f"virtual time: {ratio:,.0f} virtual seconds per wall second "
        f"({horizon_ms // 3_600_000} h of 7 timers in {wall_s:.2f}s)"
    )
    return result


def search_figures(
    scenario_name: str,
    variant: str,
    checker: str | None,
    seeds: int,
    progress: Progress = None,
) -> dict[str, Any]:
    """Per strategy over ``seeds`` seeds: how often, how fast, how short the violation found is."""
    say = progress or (lambda _line: None)
    scenario = get(scenario_name)
    runner = scenario.runner(variant, scenario.config, checker)
    figures: dict[str, Any] = {
        "scenario": scenario_name,
        "variant": variant,
        "checker": checker,
        "seeds": seeds,
        "budget_s": scenario.default_budget_s,
        "max_examples": scenario.default_examples,
        "strategies": {},
    }
    started = time.perf_counter()
    virtual_ms = sum(runner(RandomSource(seed)).virtual_ms for seed in range(100))
    ratio = (virtual_ms / 1000) / (time.perf_counter() - started)
    figures["virtual_s_per_wall_s"] = round(ratio)
    say(f"virtual time: {ratio:,.0f} virtual seconds per wall second (100 random runs)")
    for strategy in ("random", "hypothesis", "pct"):
        seconds, examples, devs, ops, found = [], [], [], [], 0
        for seed in range(seeds):
            budget = Budget(scenario.default_examples, scenario.default_budget_s, time.monotonic)
            started = time.perf_counter()
            report = explore(runner, strategy, seed, budget)
            seconds.append(time.perf_counter() - started)
            examples.append(report.examples)
            if report.shrunk is not None:
                found += 1
                devs.append(sum(1 for v in report.shrunk.values if v))
                ops.append(len(report.shrunk.history))
        row = {
            "found": f"{found}/{seeds}",
            "seconds_median": round(statistics.median(seconds), 3),
            "seconds_max": round(max(seconds), 3),
            "examples_median": statistics.median(examples),
            "examples_max": max(examples),
            "shrunk_deviations_max": max(devs, default=None),
            "shrunk_ops_median": statistics.median(ops) if ops else None,
            "shrunk_ops_max": max(ops, default=None),
        }
        figures["strategies"][strategy] = row
        say(f"{strategy:10} found {row['found']}  seconds median {row['seconds_median']} max "
            f"{row['seconds_max']}  examples median {row['examples_median']} max {row['examples_max']}  "
            f"shrunk: <= {row['shrunk_deviations_max']} deviations, ops median "
            f"{row['shrunk_ops_median']} max {row['shrunk_ops_max']}")  # fmt: skip
    return figures


def proof_figures(scenario_name: str, progress: Progress = None) -> dict[str, Any]:
    """Prove every variant of a scenario on its prove configuration: verdict, schedules, time."""
    say = progress or (lambda _line: None)
    scenario = get(scenario_name)
    rows = {}
    for variant in scenario.variants:
        started = time.perf_counter()
        report = scenario.prove(variant, Budget(1_000_000, 600.0, time.monotonic))
        seconds = time.perf_counter() - started
        rows[variant] = {
            "verdict": report.verdict,
            "complete": report.complete,
            "schedules": report.schedules,
            "runs": report.runs,
            "seconds": round(seconds, 2),
        }
        say(f"prove {variant:24} {report.verdict:12} complete={report.complete}  "
            f"{report.schedules} schedules ({report.runs} runs) in {seconds:.2f}s")  # fmt: skip
    return {"scenario": scenario_name, "prove": rows}


def _timed_proof(
    scenario_name: str, variant: str, budget_s: float, *, reduction: bool, jobs: int
) -> dict[str, Any]:
    scenario = get(scenario_name)
    started = time.perf_counter()
    report = scenario.prove(
        variant, Budget(1_000_000, budget_s, time.monotonic), reduction=reduction, jobs=jobs
    )
    return {
        "verdict": report.verdict,
        "complete": report.complete,
        "schedules": report.schedules,
        "runs": report.runs,
        "skipped_equivalent": report.skipped_equivalent,
        "seconds": round(time.perf_counter() - started, 2),
    }


def proof_bench(
    names: list[str] | None = None, budget_s: float = 300.0, progress: Progress = None
) -> dict[str, Any]:
    """Per scenario, its first variant expected to hold: the proof with and without the
    reduction and on two worker processes, measured in one run, as ratios."""
    say = progress or (lambda _line: None)
    from raceproof.scenarios.catalogue import all_scenarios

    rows: dict[str, Any] = {}
    for scenario in all_scenarios():
        if names and scenario.name not in names:
            continue
        variant = next((v for v in scenario.variants if v not in scenario.expect_violation), None)
        if variant is None:
            continue
        reduced = _timed_proof(scenario.name, variant, budget_s, reduction=True, jobs=1)
        full = _timed_proof(scenario.name, variant, budget_s, reduction=False, jobs=1)
        two = _timed_proof(scenario.name, variant, budget_s, reduction=True, jobs=2)
        row = {
            "variant": variant,
            "reduced": reduced,
            "full": full,
            "reduced_j2": two,
            "schedules_full_over_reduced": round(
                full["schedules"] / max(reduced["schedules"], 1), 2
            ),
            "seconds_full_over_reduced": round(full["seconds"] / max(reduced["seconds"], 1e-9), 2),
            "j2_speedup": round(reduced["seconds"] / max(two["seconds"], 1e-9), 2),
            "j2_same_counts": (two["verdict"], two["schedules"], two["runs"])
            == (reduced["verdict"], reduced["schedules"], reduced["runs"]),
        }
        with whole_object_footprints():
            whole = _timed_proof(scenario.name, variant, budget_s, reduction=True, jobs=1)
        row["whole_object"] = whole
        # Tracked state records a resource per key and field; ``whole_object`` records each
        # tracked container as one resource, as the coarsest hand-placed touch of it would.
        # Same schedules where a model has no tracked state.
        row["tracked_no_larger"] = (
            reduced["complete"] and reduced["schedules"] <= whole["schedules"]
        )
        rows[scenario.name] = row
        # A full walk cut by the budget ran fewer schedules than it has: the ratios are floors.
        row["ratios_are_lower_bounds"] = reduced["complete"] and not full["complete"]
        at_least = "x>=" if row["ratios_are_lower_bounds"] else "x"
        say(f"{scenario.name:34} {variant:22} reduced {reduced['schedules']:>8} sched "
            f"{reduced['seconds']:>7}s {'complete' if reduced['complete'] else 'INCOMPLETE'} | "
            f"full {full['schedules']:>8} sched {full['seconds']:>7}s "
            f"{'complete' if full['complete'] else 'INCOMPLETE'} | {at_least}{row['seconds_full_over_reduced']} "
            f"faster, {at_least}{row['schedules_full_over_reduced']} fewer | -j 2: x{row['j2_speedup']} "
            f"{'same counts' if row['j2_same_counts'] else 'DIFFERENT counts'} | whole-object "
            f"footprints {whole['schedules']} sched: tracked "
            f"{'no larger' if row['tracked_no_larger'] else 'LARGER or incomplete'}")  # fmt: skip
    return {"budget_s_per_proof": budget_s, "proofs": rows}
