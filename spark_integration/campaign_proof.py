"""A proof walked as rounds of Spark tasks over balanced units; merged into the local proof's result.

Why rounds: ``prove -j N`` balances a proof by handing bounded units of work
(``raceproof.sim.proof_units``) to whichever worker is free, and re-cutting
what a unit leaves. Spark has no work stealing and a task cannot ask for more
work, so a campaign gets the same effect in rounds: the driver walks the
proof's first ``DRIVER_RUNS`` runs itself, then each round ships every
unit that is ready as the tasks of one Spark job; each task walks its units,
each for at most its share of runs (``UNIT_RUNS``), and returns what each
walked and the branches it left; the driver cuts those into the next round's
units. The units, their shares and the rounds depend on the proof's tree
alone (a round takes every ready unit, dispatched in the plan's order), never
on the cluster: how a round's units are grouped into tasks does not change
what any unit walks.

The merge is ``proof_units``' own (:func:`proof_units.merge_units`, the
driver's :class:`proof_units.Plan`): a complete proof has the verdict,
schedule count and reduction counts of ``raceproof prove`` (any ``-j``); a
violation is the first in walk order (fewest deviations, then the earliest
chain of them), shrunk on the driver as ``prove`` shrinks it, so the row's
counterexample is the local proof's. A violated proof's counts are the runs
the units made before the first violation was settled, as for ``prove -j N``.

What travels is plain data: a :class:`Task` (the proof's cell and its units,
detached from the driver's walk) one way, a dict of ``UnitResult`` the other,
so executors may be other machines with the same raceproof.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from raceproof.sim import Budget, Runner, RunOutcome, deviations, encode_blob
from raceproof.sim.exhaustive import UNDECIDED, WalkOptions
from raceproof.sim.proof_units import (
    SPEEDUP_WORKERS,
    Dispatch,
    Plan,
    UnitResult,
    balance,
    merge_units,
    walk_unit,
)
from raceproof.sim.shrink import shrink
from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration.campaign_cells import (
    Cell,
    _error_line,
    _Recorder,
    counterexample_name,
    counterexample_text,
    empty_row,
    finish_row,
    load_scenarios,
)

TASKS_PER_CORE = 4  # a round's units go into this many tasks per core: Spark evens out the rest
# Runs the driver walks before the first round (the tree's first few units). Fewer than
# prove -j's 64 in process: what the driver walks, no executor does. With 64, the driver's
# runs were a third of samza-drain/drain's span on 16 cores (its rounds allowed x9.05);
# with 16, x12.38, at the price of a round more on some proofs (one more Spark job).
DRIVER_RUNS = 16


@dataclasses.dataclass(frozen=True)
class Task:
    """One Spark task of a round: the proof it belongs to and the units it walks, in order."""

    proof: Cell
    index: int
    dispatches: tuple[Dispatch, ...]
    max_deviations: int | None
    max_branch: int | None


@dataclasses.dataclass
class Walked:
    """What one unit's walk gave: its result, the hash of its runs' traces, its virtual time."""

    result: UnitResult
    hash: str
    virtual_ms: int


def _walk_recorded(run: Runner, options: WalkOptions, dispatch: Dispatch, worker: str) -> Walked:
    recorder = _Recorder(run)
    result = walk_unit(
        recorder,
        options,
        dispatch.unit,
        Budget(examples=dispatch.examples),
        stop_depth=dispatch.stop_depth,
        worker=worker,
    )
    return Walked(result=result, hash=recorder.digest.hexdigest(), virtual_ms=recorder.virtual_ms)


def walk_task(task: Task) -> dict[str, Any]:
    """Walk one task's units (runs on an executor); never raises: an error is said in the dict."""
    from raceproof.scenarios.catalogue import get

    started = time.perf_counter()
    out: dict[str, Any] = {"task": task.index, "walked": [], "error": None}
    try:
        load_scenarios(task.proof.scenarios_base, task.proof.scenarios)
        scenario = get(task.proof.scenario)
        run = scenario.runner(task.proof.variant, scenario.prove_config)
        options = WalkOptions(max_deviations=task.max_deviations, max_branch=task.max_branch)
        worker = f"{socket.gethostname()}:{os.getpid()}"
        for dispatch in task.dispatches:
            out["walked"].append(_walk_recorded(run, options, dispatch, worker))
    except Exception as exc:
        out["error"] = _error_line(exc)
    out["seconds"] = time.perf_counter() - started
    return out


def tasks_of(
    dispatches: Sequence[Dispatch], proof: Cell, state: ProofPlan, slots: int
) -> list[Task]:
    """A round's units dealt round-robin into at most ``TASKS_PER_CORE * slots`` tasks."""
    count = max(1, min(len(dispatches), TASKS_PER_CORE * slots))
    return [
        Task(
            proof=proof,
            index=index,
            dispatches=tuple(dispatches[index::count]),
            max_deviations=state.max_deviations,
            max_branch=state.max_branch,
        )
        for index in range(count)
    ]


@dataclasses.dataclass
class ProofPlan:
    """The driver's side of one proof: the scenario's bounds, the plan, what came back."""

    proof: Cell
    expected: str
    max_deviations: int | None
    max_branch: int | None
    plan: Plan
    hashes: dict[tuple[int, ...], str] = dataclasses.field(default_factory=dict)
    virtual_ms: int = 0
    rounds: list[list[int]] = dataclasses.field(default_factory=list)  # each unit's runs, by round
    driver_runs: int = 0
    tasks: int = 0  # Spark tasks shipped, over all rounds
    error: str | None = None

    def take(self, dispatch: Dispatch, walked: Walked) -> None:
        self.plan.take(dispatch, walked.result)
        self.hashes[walked.result.ident] = walked.hash
        self.virtual_ms += walked.virtual_ms


Ship = Callable[[list[Task]], list[dict[str, Any]]]


def prove_in_rounds(proof: Cell, ship: Ship, slots: int) -> ProofPlan:
    """Walk ``proof``: its first runs here, the rest in rounds of tasks through ``ship``.

    ``ship`` runs a round's tasks (as one Spark job, or in this process) and returns
    :func:`walk_task`'s dicts in any order; ``slots`` is the cores the tasks share.
    """
    from raceproof.scenarios.catalogue import get

    load_scenarios(proof.scenarios_base, proof.scenarios)
    scenario = get(proof.scenario)
    state = ProofPlan(
        proof=proof,
        expected=Verdict.VIOLATED if proof.variant in scenario.expect_violation else Verdict.OK,
        max_deviations=scenario.prove_max_deviations,
        max_branch=scenario.prove_max_branch,
        plan=Plan(Budget(examples=proof.examples)),
    )
    plan = state.plan
    run = scenario.runner(proof.variant, scenario.prove_config)
    options = WalkOptions(max_deviations=state.max_deviations, max_branch=state.max_branch)
    while plan.runs < DRIVER_RUNS and (dispatch := plan.next()) is not None:
        state.take(dispatch, _walk_recorded(run, options, dispatch, "driver"))
    state.driver_runs = plan.runs
    while dispatches := list(iter(plan.next, None)):
        tasks = tasks_of(dispatches, proof, state, slots)
        back = {out["task"]: out for out in ship(tasks)}
        failed = [back[t.index] for t in tasks if back[t.index]["error"] is not None]
        if failed:
            state.error = f"task {failed[0]['task']}: {failed[0]['error']}"
            return state
        by_ident = {w.result.ident: w for out in back.values() for w in out["walked"]}
        for dispatch in dispatches:  # in the plan's order: the next round's order is the plan's
            state.take(dispatch, by_ident[dispatch.unit.ident])
        state.rounds.append([by_ident[d.unit.ident].result.report.runs for d in dispatches])
        state.tasks += len(tasks)
    return state


def _found(scenario: Any, variant: str, shrunk: RunOutcome) -> dict[str, Any]:
    violation = shrunk.violation
    found: dict[str, Any] = {
        "checker": violation.checker if violation else None,
        "trace_hash": shrunk.trace_hash,
        "blob": encode_blob(shrunk.values),
        "deviations": deviations(shrunk.values),
    }
    if shrunk.error is not None:  # the model raised: verdict ``error``, no counterexample file
        found["error"] = f"{shrunk.error.headline} at {shrunk.error.where}"[:1000]
    else:
        found["_counterexample"] = counterexample_text(
            scenario, variant, scenario.prove_config, shrunk, "exhaustive"
        )
    return found


def rounds_speedup(state: ProofPlan, workers: int) -> float:
    """The speedup the rounds allow on ``workers`` cores, counted in runs: the driver's runs
    first, then each round's units scheduled greedily in order, a round starting when the
    last one ended (the rounds' barriers are what this costs against ``balance``)."""
    total = span = state.driver_runs
    for units in state.rounds:
        free = [0] * workers
        for runs in units:
            free[free.index(min(free))] += runs
        total += sum(units)
        span += max(free)
    return round(total / max(1, span), 2)


def figures(state: ProofPlan) -> dict[str, Any]:
    """The proof's balance: ``proof_units.balance`` of its units, and what its rounds allow."""
    return {
        "cell": state.proof.key,
        "rounds": len(state.rounds),
        "tasks": state.tasks,
        "driver_runs": state.driver_runs,
        "balance": balance(state.plan.results),
        "rounds_speedup_allowed": {str(n): rounds_speedup(state, n) for n in SPEEDUP_WORKERS},
    }


def proof_row(state: ProofPlan, seconds: float) -> dict[str, Any]:
    """One proof row from a finished plan (the merge of ``prove -j``), shrunk here."""
    from raceproof.scenarios.catalogue import get

    proof, plan = state.proof, state.plan
    row = empty_row(proof, state.expected)
    row["seconds"] = round(seconds, 4)
    row["shards"] = len(plan.results)
    row["_balance"] = figures(state)
    if state.error is not None:
        row["verdict"], row["complete"], row["error"] = Verdict.ERROR, False, state.error
        return finish_row(row, state.expected)
    total, winner = merge_units(plan.results, reduction=True, left=plan.left())
    digest = hashlib.sha256()
    for ident in sorted(state.hashes):
        digest.update(state.hashes[ident].encode())
    row["virtual_ms"] = state.virtual_ms
    row["schedules"], row["examples"] = total.schedules, total.runs
    found = None
    if winner is not None and winner.report.found is not None:
        scenario = get(proof.scenario)
        recorder = _Recorder(scenario.runner(proof.variant, scenario.prove_config))
        found = _found(scenario, proof.variant, shrink(recorder, winner.report.found).outcome)
        digest.update(recorder.digest.hexdigest().encode())
        row["virtual_ms"] += recorder.virtual_ms
    row["cell_hash"] = digest.hexdigest()
    if found is not None and "error" in found:  # not a verdict: the model raised
        row["verdict"], row["complete"] = Verdict.ERROR, False
        row.update(found)
    elif found is not None:
        row["verdict"], row["complete"] = Verdict.VIOLATED, False
        row.update(found)
        row["counterexample"] = counterexample_name(row)
    else:  # probes judged as ``prove`` judges them: a declared window no run reached
        verdict, _, notes = get(proof.scenario).judge_probes(
            proof.variant, total.verdict, total.probes
        )
        row["verdict"], row["complete"] = verdict, total.complete
        if verdict == Verdict.NOT_REACHED:
            row["error"] = notes[0]
    if total.pruned and found is None:
        bounds = sorted((k, v) for k, v in total.pruned.items() if not k.startswith(UNDECIDED))
        undecided = sorted((k, v) for k, v in total.pruned.items() if k.startswith(UNDECIDED))
        said = ["pruned by " + ", ".join(f"{k} ({v})" for k, v in bounds)] if bounds else []
        said += [f"{v} runs {k}" for k, v in undecided]  # a checker said unknown
        row["error"] = "; ".join(said)
    return finish_row(row, state.expected)


def proof_of(scenario: str, variant: str, runs: int = 1_000_000) -> Cell:
    """The proof cell of ``scenario``/``variant`` with a budget of ``runs`` (the campaign's)."""
    return Cell(
        kind="proof",
        scenario=scenario,
        variant=variant,
        strategy="exhaustive",
        seed=0,
        examples=runs,
    )


def prove_cell(proof: Cell, ship: Ship, slots: int) -> dict[str, Any]:
    """The proof row of ``proof``, its rounds run through ``ship`` (``slots`` cores)."""
    started = time.perf_counter()
    state = prove_in_rounds(proof, ship, slots)
    return proof_row(state, time.perf_counter() - started)


def in_process(tasks: list[Task]) -> list[dict[str, Any]]:
    """``ship`` without Spark: the tasks one after the other here (tests, the bench's baseline)."""
    return [walk_task(task) for task in tasks]
