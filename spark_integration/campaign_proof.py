"""A proof split into shards that run as Spark tasks and merge into the local proof's result.

The split is ``prove -j``'s (``raceproof.sim.proof_plan``): the driver runs
the walk's first run (down the FIFO path) and cuts the rest of the walk
into shards described by data alone — a choice prefix, the sleep set it
starts with, its depth — listed in the order the sequential walk takes
them. Each shard is one Spark task that walks its subtree with
``raceproof.sim.exhaustive.prove`` (the reduction on, as a local ``prove``
has it), and :func:`merge` adds the shards' reports up in shard order with
``proof_plan.merge``. So a complete proof has the same verdict, schedule
count and reduction counts as ``raceproof prove`` and ``prove -j N``, and a
violation is the first one in walk order whichever executor finished first.

What travels between driver and executors is plain data: a :class:`Cell`
with its ``Shard`` one way, a dict the other (the report's accounting, the
shrunk counterexample's fields and file text), so executors may be other
machines.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from typing import Any

from raceproof.sim import Budget, Runner, RunOutcome, deviations, encode_blob
from raceproof.sim.exhaustive import UNDECIDED, ProofReport, prove
from raceproof.sim.proof_plan import finding_order, split
from raceproof.sim.proof_plan import merge as merge_reports
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

# The report's fields that are plain counts (what an executor sends back and merge adds up).
_COUNTS = tuple(
    f.name for f in dataclasses.fields(ProofReport) if f.name not in ("found", "shrunk")
)


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


def _report_dict(report: ProofReport) -> dict[str, Any]:
    return {name: getattr(report, name) for name in _COUNTS}


def prove_shard(cell: Cell, max_deviations: int | None, max_branch: int | None) -> dict[str, Any]:
    """Walk one shard (runs on an executor); a plain dict that :func:`merge` adds up.

    The shard gets the whole budget of runs (``cell.examples``), as each worker of
    ``prove -j`` does; no wall-clock budget, so the result never depends on the executor.
    """
    from raceproof.scenarios.catalogue import get

    assert cell.shard is not None, "a proof-shard cell carries its shard"
    started = time.perf_counter()
    result: dict[str, Any] = {"shard": cell.shard_index, "verdict": Verdict.OK, "virtual_ms": 0}
    try:
        load_scenarios(cell.scenarios_base, cell.scenarios)
        scenario = get(cell.scenario)
        recorder = _Recorder(scenario.runner(cell.variant, scenario.prove_config))
        report = prove(
            recorder,
            budget=Budget(examples=cell.examples),
            max_deviations=max_deviations,
            max_branch=max_branch,
            reduction=True,
            shard=cell.shard,
        )
        result["report"] = _report_dict(report)
        result["verdict"] = report.verdict
        if report.shrunk is not None:
            result["found"] = _found(scenario, cell.variant, report.shrunk)
        result["virtual_ms"] = recorder.virtual_ms
        result["hash"] = recorder.digest.hexdigest()
    except Exception as exc:
        result["verdict"] = Verdict.ERROR
        result["error"] = _error_line(exc)
    result["seconds"] = time.perf_counter() - started
    return result


@dataclasses.dataclass
class ProofPlan:
    """What the driver learned before the shards run: the first run's report and its row parts."""

    first: ProofReport
    expected: str
    max_deviations: int | None
    max_branch: int | None
    found: dict[str, Any] | None  # the first run's own violation, shrunk
    virtual_ms: int
    hash: str
    seconds: float  # the driver's share: the first run, the probes, a shrink


def shard_cells(proof: Cell) -> tuple[list[Cell], ProofPlan]:
    """The proof's shards (computed on the driver, as ``prove -j`` does) and its plan."""
    from raceproof.scenarios.catalogue import get

    started = time.perf_counter()
    load_scenarios(proof.scenarios_base, proof.scenarios)
    scenario = get(proof.scenario)
    expected = Verdict.VIOLATED if proof.variant in scenario.expect_violation else Verdict.OK
    run: Runner = scenario.runner(proof.variant, scenario.prove_config)
    recorder = _Recorder(run)
    max_dev, max_branch = scenario.prove_max_deviations, scenario.prove_max_branch
    shards, first = split(recorder, reduction=True, max_deviations=max_dev, max_branch=max_branch)
    found = None
    if first.found is not None:  # the FIFO run itself is violated: no shards to run
        shards = []
        found = _found(scenario, proof.variant, shrink(run, first.found).outcome)
    plan = ProofPlan(
        first=first,
        expected=expected,
        max_deviations=max_dev,
        max_branch=max_branch,
        found=found,
        virtual_ms=recorder.virtual_ms,
        hash=recorder.digest.hexdigest(),
        seconds=time.perf_counter() - started,
    )
    cells = [
        dataclasses.replace(proof, kind="proof-shard", shard=shard, shard_index=index)
        for index, shard in enumerate(shards)
    ]
    return cells, plan


def merge(proof: Cell, plan: ProofPlan, shards: list[dict[str, Any]]) -> dict[str, Any]:
    """One proof row from its shards' results (in shard order, whatever order they finished in)."""
    shards = sorted(shards, key=lambda s: s["shard"])
    row = empty_row(proof, plan.expected)
    digest = hashlib.sha256(plan.hash.encode())
    for shard in shards:
        digest.update(str(shard.get("hash")).encode())
    row["virtual_ms"] = plan.virtual_ms + sum(s["virtual_ms"] for s in shards)
    row["seconds"] = round(plan.seconds + sum(float(s["seconds"]) for s in shards), 4)
    row["shards"] = len(shards)
    row["cell_hash"] = digest.hexdigest()
    errors = [s for s in shards if s["verdict"] == Verdict.ERROR]
    if errors:
        row["verdict"] = Verdict.ERROR
        said = errors[0].get("error") or (errors[0].get("found") or {}).get("error")
        row["error"] = f"shard {errors[0]['shard']}: {said}"
        row["complete"] = False
        return finish_row(row, plan.expected)
    total = merge_reports(plan.first, [ProofReport(**s["report"]) for s in shards])
    row["schedules"], row["examples"] = total.schedules, total.runs
    # The first violation in walk order: the first run's own, else the shards' first by
    # deviations and then their chain (a later shard's may lie before an earlier one's).
    violated = [s for s in shards if s["verdict"] == Verdict.VIOLATED]
    first_shard = min(
        violated, key=lambda s: finding_order(ProofReport(**s["report"])), default=None
    )
    found = plan.found or (None if first_shard is None else first_shard["found"])
    if found is not None and "error" in found:  # not a verdict: the FIFO run itself raised
        row["verdict"], row["complete"] = Verdict.ERROR, False
        row.update(found)
    elif found is not None:
        row["verdict"], row["complete"] = Verdict.VIOLATED, False
        row.update(found)
        row["counterexample"] = counterexample_name(row)
    else:
        row["verdict"], row["complete"] = total.verdict, total.complete
    if total.pruned and found is None:
        bounds = sorted((k, v) for k, v in total.pruned.items() if not k.startswith(UNDECIDED))
        undecided = sorted((k, v) for k, v in total.pruned.items() if k.startswith(UNDECIDED))
        said = ["pruned by " + ", ".join(f"{k} ({v})" for k, v in bounds)] if bounds else []
        said += [f"{v} runs {k}" for k, v in undecided]  # a checker said unknown
        row["error"] = "; ".join(said)
    return finish_row(row, plan.expected)
