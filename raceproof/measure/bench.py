"""``raceproof bench``: the performance figures, printed and never asserted in tests.

Every ratio comes from alternating runs in one process (``alternate``): the two
sides are measured moments apart, round after round, and the median and range
of the per-round ratios are reported with the load average at start and end.

Figures: kernel events per second against plain SimPy on the same workload
(the ratio is the cost of choice-driven tie-breaking; per second of the
measuring thread's CPU time, which another process on a shared machine does
not inflate the way it does wall time, with the wall-clock ratio beside it;
the World draws as a search's sources do, without naming deviations), random-strategy
schedules per second on one core, Hypothesis examples per second, and virtual
seconds simulated per wall second on a timer-heavy workload.

Each bench returns its figures as one dict (what ``--json`` prints) and says
each step to ``progress`` as it starts; ``bench_tables`` renders the dict.
A caller may hand that dict in (``into``): a step's figures enter it when the
step ends, so when a step starts the ones before it are there to print, and a
signal that stops the bench leaves the caller the figures of every step done.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

import simpy

from raceproof.scenarios.catalogue import get
from raceproof.sim import Bounds, Budget, RandomSource, World, explore
from raceproof.sim.explore import searching
from raceproof.sim.proof_plan import estimate
from raceproof.sim.verdicts import Verdict

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
) -> tuple[float, float, int]:
    """Events per second of CPU time of this thread, and per second of wall time."""
    env = make()
    _tick_workload(env, processes, rounds)
    started, started_cpu = time.perf_counter(), time.thread_time()
    count = 0
    try:
        while True:
            env.step()
            count += 1
    except simpy.core.EmptySchedule:
        pass
    cpu_s, wall_s = time.thread_time() - started_cpu, time.perf_counter() - started
    return count / cpu_s, count / wall_s, count


def _timer_workload(world: World, horizon_ms: int) -> None:
    periods_ms = (100, 1_000, 5_000, 10_000, 30_000, 60_000, 600_000)

    def timer(period_ms: int) -> Generator[Any, Any, None]:
        while world.now_ms + period_ms <= horizon_ms:
            yield world.sleep(period_ms)

    for period_ms in periods_ms:
        world.spawn(f"timer{period_ms}", timer(period_ms))


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (the machine is shared: say how loaded it was)."""
    return [round(value, 2) for value in os.getloadavg()]


def spread(values: Sequence[float], digits: int = 3) -> dict[str, Any]:
    """Median and range of the figures of ``values`` (one per alternation)."""
    return {
        "median": round(statistics.median(values), digits),
        "range": [round(min(values), digits), round(max(values), digits)],
        "runs": [round(value, digits) for value in values],
    }


def alternate(
    rounds: int, *measures: Callable[[], float], warm_up: bool = False
) -> list[list[float]]:
    """Run ``measures`` one after the other, ``rounds`` times, rotating which goes first.

    Each round gives one figure per measure taken moments apart under the same
    load, so a ratio is computed per round and its median and range reported:
    one pass of each, minutes apart, is not a stable figure on a shared machine.
    ``warm_up`` runs each measure once, unrecorded, first.
    """
    figures: list[list[float]] = [[] for _ in measures]
    if warm_up:
        for measure in measures:  # imports, caches, the allocator's first pages: not measured
            measure()
    for round_index in range(rounds):
        order = list(range(len(measures)))
        shift = round_index % len(measures)
        for index in order[shift:] + order[:shift]:
            figures[index].append(measures[index]())
    return figures


def _rate(action: Callable[[], Any], count: int) -> float:
    started = time.perf_counter()
    action()
    return count / (time.perf_counter() - started)


def run(
    quick: bool = False,
    progress: Progress = None,
    alternations: int = 5,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The kernel and strategy figures, each from ``alternations`` alternating rounds."""
    say = progress or (lambda _line: None)
    scale = 1 if quick else 5
    result = {} if into is None else into
    result.update(alternations=alternations, load_average_start=load_average())

    say(f"kernel: World against plain SimPy, {alternations} alternations")
    _kernel_figures(result, alternations, scale)
    say("strategies: random and hypothesis on lost-update/fix-cas")
    _strategy_figures(result, alternations, scale)
    say("virtual time: 7 timers")
    _virtual_time_figures(result, alternations, scale)
    result["load_average_end"] = load_average()
    return result


def _kernel_figures(result: dict[str, Any], alternations: int, scale: int) -> None:
    """World's events per CPU second against plain SimPy's, alternating."""
    processes, rounds = 50, 40 * scale
    counts: dict[str, int] = {}
    wall: dict[str, list[float]] = {"simpy": [], "world": []}

    def kernel(make: Callable[[], simpy.Environment], name: str) -> Callable[[], float]:
        def measure() -> float:
            rate, wall_rate, counts[name] = _events_per_second(make, processes, rounds)
            wall[name].append(wall_rate)
            return rate

        return measure

    simpy_runs, world_runs = alternate(
        alternations,
        kernel(simpy.Environment, "simpy"),
        kernel(lambda: World(searching(RandomSource(0)), Bounds(10**9, 10**9)), "world"),
        warm_up=True,
    )
    ratio = spread([w / s for w, s in zip(world_runs, simpy_runs, strict=True)])
    # The warm-up's wall figures are not alternations: the last ``alternations`` are.
    wall_world, wall_simpy = wall["world"][-alternations:], wall["simpy"][-alternations:]
    wall_ratio = spread([w / s for w, s in zip(wall_world, wall_simpy, strict=True)])
    result["kernel"] = {
        "workload": f"{processes} processes x {rounds} timeouts, ties on most instants, "
        "drawn as a search draws (deviations not named)",
        "clock": "CPU time of the measuring thread (wall-clock figures beside)",
        "simpy_events_per_s": round(statistics.median(simpy_runs)),
        "world_events_per_s": round(statistics.median(world_runs)),
        "world_over_simpy": ratio["median"],
        "world_over_simpy_range": ratio["range"],
        "world_over_simpy_runs": ratio["runs"],
        "world_over_simpy_wall": wall_ratio["median"],
        "world_over_simpy_wall_range": wall_ratio["range"],
        "events": counts["world"],
        "simpy_events": counts["simpy"],
    }


def _strategy_figures(result: dict[str, Any], alternations: int, scale: int) -> None:
    """The random and Hypothesis strategies' rates on lost-update/fix-cas, alternating."""
    scenario = get("lost-update")
    runner = scenario.runner("fix-cas", scenario.config)
    random_examples, hypothesis_examples = 1000 * scale, 200 * scale
    random_runs, hypothesis_runs = alternate(
        alternations,
        lambda: _rate(
            lambda: explore(runner, "random", 0, Budget(examples=random_examples)), random_examples
        ),
        lambda: _rate(
            lambda: explore(runner, "hypothesis", 0, Budget(examples=hypothesis_examples)),
            hypothesis_examples,
        ),
    )
    for key, runs in (
        ("random_schedules_per_s_per_core", random_runs),
        ("hypothesis_examples_per_s", hypothesis_runs),
    ):
        figure = spread(runs, 1)
        result[key], result[f"{key}_range"] = figure["median"], figure["range"]


def _virtual_time_figures(result: dict[str, Any], alternations: int, scale: int) -> None:
    """Virtual seconds per wall second on a timer workload."""
    horizon_ms = 24 * 3_600_000 * scale

    def virtual() -> float:
        world = World(RandomSource(0), Bounds(max_time_ms=horizon_ms, max_steps=10**9))
        _timer_workload(world, horizon_ms)
        started = time.perf_counter()
        world.run_to_end()
        return (world.now_ms / 1000) / (time.perf_counter() - started)

    (virtual_runs,) = alternate(alternations, virtual)
    figure = spread(virtual_runs, 0)
    result["virtual_s_per_wall_s"] = round(figure["median"])
    result["virtual_s_per_wall_s_range"] = [round(value) for value in figure["range"]]
    result["virtual_workload"] = (
        f"7 timers (100 ms .. 10 min) over {horizon_ms // 3_600_000} virtual hours"
    )


def search_figures(
    scenario_name: str,
    variant: str,
    checker: str | None,
    seeds: int,
    progress: Progress = None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Per strategy over ``seeds`` seeds: how often, how fast, how short the violation found is."""
    say = progress or (lambda _line: None)
    scenario = get(scenario_name)
    runner = scenario.runner(variant, scenario.config, checker)
    figures = {} if into is None else into
    figures.update(
        scenario=scenario_name,
        variant=variant,
        checker=checker,
        seeds=seeds,
        budget_s=scenario.default_budget_s,
        max_examples=scenario.default_examples,
        strategies={},
    )
    say("virtual time: 100 random runs")
    started = time.perf_counter()
    virtual_ms = sum(runner(RandomSource(seed)).virtual_ms for seed in range(100))
    ratio = (virtual_ms / 1000) / (time.perf_counter() - started)
    figures["virtual_s_per_wall_s"] = round(ratio)
    for strategy in ("random", "swarm", "hypothesis", "pct"):
        say(f"{strategy}: {seeds} seeds")
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
    return figures


def proof_figures(
    scenario_name: str, progress: Progress = None, into: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Prove every variant of a scenario on its prove configuration: verdict, schedules, time."""
    say = progress or (lambda _line: None)
    scenario = get(scenario_name)
    result = {} if into is None else into
    rows: dict[str, Any] = {}
    result.update(scenario=scenario_name, prove=rows)
    for variant in scenario.variants:
        say(f"prove {scenario_name} / {variant}")
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
    return result


def _timed_proof(
    scenario_name: str,
    variant: str,
    budget_s: float,
    *,
    reduction: bool,
    jobs: int,
    whole_object_footprints: bool = False,
) -> dict[str, Any]:
    scenario = get(scenario_name)
    started = time.perf_counter()
    report = scenario.prove(
        variant,
        Budget(1_000_000, budget_s, time.monotonic),
        reduction=reduction,
        jobs=jobs,
        whole_object_footprints=whole_object_footprints,
        state_cache=False,  # the reduction's figures: the stateless walk, the same on any -j
    )
    return {
        "verdict": report.verdict,
        "complete": report.complete,
        "schedules": report.schedules,
        "runs": report.runs,
        "skipped_equivalent": report.skipped_equivalent,
        "seconds": round(time.perf_counter() - started, 3),
        # The plan's balance: each worker's work, the largest unit, the speedups it allows.
        "balance": report.balance,
    }


def _proof_measures(
    scenario_name: str, variant: str, budget_s: float
) -> tuple[
    dict[str, dict[str, Any]],
    dict[str, set[tuple[Any, ...]]],
    Callable[[str, bool, int], Callable[[], float]],
]:
    """The proof measures ``proof_bench`` alternates, each keeping its last figures and counts."""
    last: dict[str, dict[str, Any]] = {}
    counts: dict[str, set[tuple[Any, ...]]] = {
        "reduced": set(),
        "full": set(),
        "j2": set(),
        "full_j2": set(),
    }

    def timed(name: str, reduction: bool, jobs: int) -> Callable[[], float]:
        def measure() -> float:
            figures = _timed_proof(scenario_name, variant, budget_s, reduction=reduction, jobs=jobs)
            last[name] = figures
            counts[name].add((figures["verdict"], figures["schedules"], figures["runs"]))
            return float(figures["seconds"])

        return measure

    return last, counts, timed


def _allowed(figures: dict[str, Any]) -> float | None:
    plan = figures.get("balance")
    return None if plan is None else float(plan["speedup_allowed"]["16"])


def proof_bench(
    names: list[str] | None = None,
    budget_s: float = 300.0,
    progress: Progress = None,
    alternations: int = 5,
    variant_for: str | None = None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Per scenario, its first variant expected to hold (or ``variant_for``): the proof with
    and without the reduction, each on one and on two worker processes, alternated
    ``alternations`` times; each ratio is computed per round and given as its median and
    range, beside the speedup the -j 2 run's plan allows on 16 workers (machine-free)."""
    say = progress or (lambda _line: None)
    from raceproof.scenarios.catalogue import all_scenarios

    result = {} if into is None else into
    rows: dict[str, Any] = {}
    result.update(
        budget_s_per_proof=budget_s,
        alternations=alternations,
        load_average_start=load_average(),
        proofs=rows,
    )
    for scenario in all_scenarios():
        if names and scenario.name not in names:
            continue
        variant = variant_for or next(
            (v for v in scenario.variants if v not in scenario.expect_violation), None
        )
        if variant is None:
            continue
        say(f"{scenario.name} / {variant}: reduced and full, -j 1 and -j 2, whole-object")
        rows[scenario.name] = _proof_row(scenario.name, variant, budget_s, alternations)
    result["load_average_end"] = load_average()
    return result


def _proof_row(
    scenario_name: str, variant: str, budget_s: float, alternations: int
) -> dict[str, Any]:
    """One scenario's proof figures: reduced and full, on -j 1 and -j 2, alternated; whole-object."""
    last, counts, timed = _proof_measures(scenario_name, variant, budget_s)
    reduced_s, full_s, two_s, full_two_s = alternate(
        alternations,
        timed("reduced", True, 1),
        timed("full", False, 1),
        timed("j2", True, 2),
        timed("full_j2", False, 2),
    )
    reduced, full, two, full_two = last["reduced"], last["full"], last["j2"], last["full_j2"]
    full_over_reduced = spread(
        [f / max(r, 1e-9) for f, r in zip(full_s, reduced_s, strict=True)], 2
    )
    j2 = spread([r / max(t, 1e-9) for r, t in zip(reduced_s, two_s, strict=True)], 2)
    full_j2 = spread([r / max(t, 1e-9) for r, t in zip(full_s, full_two_s, strict=True)], 2)
    for figures, runs in (
        (reduced, reduced_s),
        (full, full_s),
        (two, two_s),
        (full_two, full_two_s),
    ):
        figures["seconds"] = spread(runs)
    row = {
        "variant": variant,
        "reduced": reduced,
        "full": full,
        "reduced_j2": two,
        "schedules_full_over_reduced": round(full["schedules"] / max(reduced["schedules"], 1), 2),
        "seconds_full_over_reduced": full_over_reduced["median"],
        "seconds_full_over_reduced_range": full_over_reduced["range"],
        "j2_speedup": j2["median"],
        "j2_speedup_range": j2["range"],
        # A budget can cut a walk at a different point each round; complete walks never differ.
        "j2_same_counts": counts["j2"] == counts["reduced"] and len(counts["reduced"]) == 1,
        "full_j2": full_two,
        "full_j2_speedup": full_j2["median"],
        "full_j2_speedup_range": full_j2["range"],
        "full_j2_same_counts": counts["full_j2"] == counts["full"] and len(counts["full"]) == 1,
        # What the plans allow on 16 workers (total runs / a greedy schedule's makespan).
        "speedup_allowed_16": _allowed(two),
        "full_speedup_allowed_16": _allowed(full_two),
    }
    whole = _timed_proof(
        scenario_name, variant, budget_s, reduction=True, jobs=1, whole_object_footprints=True
    )
    row["whole_object"] = whole
    # Tracked state records a resource per key and field; ``whole_object`` records each
    # tracked container as one resource, as the coarsest hand-placed touch of it would.
    # Same schedules where a model has no tracked state.
    row["tracked_no_larger"] = reduced["complete"] and reduced["schedules"] <= whole["schedules"]
    # A full walk cut by the budget ran fewer schedules than it has: the ratios are floors.
    row["ratios_are_lower_bounds"] = reduced["complete"] and not full["complete"]
    return row


def examples_to_violation(
    scenario_name: str, variant: str, strategy: str, seeds: int, max_examples: int
) -> dict[str, Any]:
    """Over ``seeds`` seeds: examples until the first violation (a miss counts ``max_examples``)."""
    scenario = get(scenario_name)
    runner = scenario.runner(variant, scenario.config)
    counts, found = [], 0
    for seed in range(seeds):
        report = explore(runner, strategy, seed, Budget(examples=max_examples))
        found += report.verdict == Verdict.VIOLATED
        counts.append(report.examples)
    return {
        "found": f"{found}/{seeds}",
        "examples_median": statistics.median(counts),
        "examples_max": max(counts),
    }


def swarm_table(
    seeds: int = 20,
    max_examples: int = 2000,
    progress: Progress = None,
    names: list[str] | None = None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Random against swarm on every variant expected to violate: examples to first violation."""
    say = progress or (lambda _line: None)
    from raceproof.scenarios.catalogue import all_scenarios

    result = {} if into is None else into
    rows: list[dict[str, Any]] = []
    result.update(seeds=seeds, max_examples=max_examples, swarm_table=rows)
    for scenario in all_scenarios():
        if names and scenario.name not in names:
            continue
        for variant in scenario.variants:
            if variant not in scenario.expect_violation:
                continue
            say(f"{scenario.name} / {variant}: random and swarm, {seeds} seeds")
            row: dict[str, Any] = {"scenario": scenario.name, "variant": variant}
            for strategy in ("random", "swarm"):
                row[strategy] = examples_to_violation(
                    scenario.name, variant, strategy, seeds, max_examples
                )
            rows.append(row)
    return result


GROWTH = ("coordinator-async-append", "block-event-loop", "writes", (1, 2, 3, 4, 5))


def sized(default: Any, value: int) -> Any:
    """A knob's value: ``value`` itself, or for a field that is a tuple of names (Brooklin's
    ``streams``) that many names: the configuration's own, then new ones (``C``, ``D``, ...)."""
    if not isinstance(default, tuple) or not all(isinstance(n, str) for n in default):
        return value
    names = list(default[:value])
    letter = ord("A")
    while len(names) < value:
        if chr(letter) not in names:
            names.append(chr(letter))
        letter += 1
    return tuple(names)


def growth(
    scenario_name: str = GROWTH[0],
    variant: str = GROWTH[1],
    knob: str = GROWTH[2],
    values: Sequence[int] = GROWTH[3],
    budget_s: float = 120.0,
    progress: Progress = None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The reduced proof as one size knob of the configuration grows, beside the full walk's
    estimate (Knuth's, 30 samples): where a proof stops fitting its budget."""
    say = progress or (lambda _line: None)
    scenario = get(scenario_name)
    result = {} if into is None else into
    rows: list[dict[str, Any]] = []
    result.update(
        scenario=scenario_name,
        variant=variant,
        knob=knob,
        budget_s_per_proof=budget_s,
        growth=rows,
        load_average_start=load_average(),
    )
    default = getattr(scenario.prove_config, knob, None)
    for value in values:
        say(f"{knob}={value}: the full walk's estimate, then the reduced proof")
        config = scenario.config_for("prove", {knob: sized(default, value)}, option="--knob")
        run = scenario.runner(variant, config)
        size = estimate(run, samples=30, clock=time.monotonic)
        started = time.perf_counter()
        report = scenario.prove(
            variant, Budget(10**9, budget_s, time.monotonic), config=config, state_cache=True
        )
        rows.append(_growth_row(knob, value, report, time.perf_counter() - started, size))
    result["load_average_end"] = load_average()
    return result


def _growth_row(knob: str, value: int, report: Any, seconds: float, size: Any) -> dict[str, Any]:
    """One size of ``bench --growth``: the proof's counts beside the full walk's estimate."""
    full = size.to_json()["schedules_estimate"]
    return {
        knob: value,
        "verdict": report.verdict,
        "complete": report.complete,
        "schedules": report.schedules,  # classes, with the reduction
        "runs": report.runs,
        "sleep_blocked": report.sleep_blocked,
        "runs_per_class": report.runs_per_class,
        "skipped_equivalent": report.skipped_equivalent,
        "states_seen": report.states_seen,  # distinct states (0: the model has no fingerprint)
        "symmetric_merged": report.symmetric_merged,  # states merged as a permutation of one seen
        "seconds": round(seconds, 2),
        "full_walk_schedules_estimate": full,
        "full_walk_seconds_estimate": size.to_json()["seconds_estimate"],
        # How many times fewer runs than the full walk's estimate (a finished proof only).
        "full_walk_over_runs": round(full / report.runs, 1)
        if full is not None and report.complete and report.runs
        else None,
    }


def _plan_figures(done: list[Any]) -> dict[str, Any]:
    """The speedup the parts ``done`` allow on 2, 4, 8 and 16 workers (``parts.plan_figure``)."""
    from raceproof.gate import parts

    return {str(n): parts.plan_figure(done, n) for n in (2, 4, 8, 16)}


def check_plan(progress: Progress = None, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """``check``'s plan on the whole catalogue (ci profile), its parts and proof units run here
    one by one: each one's CPU seconds, and the speedup the plan allows on 2-16 workers.

    Stopped by a signal, ``into`` holds the plan's figures over the parts done
    (each figure counts its ``parts``)."""
    from raceproof.gate import expectations as gate
    from raceproof.gate import parts
    from raceproof.scenarios.catalogue import all_scenarios

    say = progress or (lambda _line: None)
    profile = gate.PROFILES["ci"]
    plan = parts.parts_for(all_scenarios(), profile)
    result = {} if into is None else into
    result["load_average_start"] = load_average()
    done: list[parts.PartResult] = []
    gate_plan = parts.GatePlan(plan, profile, None)
    try:
        while (task := gate_plan.next()) is not None:  # as check -j 1 runs them
            outcome = parts.run_task(task, profile, None)
            finished = gate_plan.take(outcome) if isinstance(outcome, parts.UnitDone) else outcome
            for ran in [finished, *finished.twins] if finished is not None else []:
                done.append(ran)
                gate_plan.ended(ran)  # as check drops a search's parts after its finding
                part = ran.part
                say(
                    f"[{len(done)}/{len(plan)}] {part.scenario} / {part.variant} {part.kind} "
                    f"(part {part.index + 1}/{part.parts}"
                    + (f", {len(ran.units)} units" if ran.units else "")
                    + f"): {ran.cpu_seconds:.2f} CPU s"
                )
    except BaseException:
        if done:  # stopped by a signal: the plan's figures over the parts done
            result["check_plan"] = _plan_figures(done)
        raise
    result["check_plan"] = _plan_figures(done)
    result["load_average_end"] = load_average()
    return result
