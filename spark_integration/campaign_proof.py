"""A proof split into shards that run as Spark tasks and merge into the local proof's result.

A shard is a choice prefix: the values of the first few draws of the proof's
enumeration. :func:`split` expands the choice tree level by level (draw 0,
then draw 1, ...) until there are enough prefixes, applying the same caps the
local walk applies at those draws; every schedule of the configuration starts
with exactly one of the prefixes, so the shards partition the walk.
:func:`prove_shard` walks the schedules that start with its prefix,
breadth-first by deviations like ``sim.exhaustive.prove``, expanding only
draws past the prefix. :func:`merge` adds the shards' counts up in shard
order, so a complete proof has the same schedule count as ``raceproof
prove``; a violation is the shard's shrunk counterexample with the fewest
deviations (the first such shard on a tie), so the merged result does not
depend on which shard finished first.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from raceproof.sim import ReplaySource, Runner, RunOutcome, deviations, encode_blob
from raceproof.sim.enumeration import Prune, Walk
from raceproof.sim.shrink import shrink
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

MAX_SPLIT_LEVELS = 8


def split(
    run: Runner,
    target: int,
    max_deviations: int | None,
    max_branch: int | None,
    on_prune: Prune,
) -> list[tuple[int, ...]]:
    """Choice prefixes that partition every schedule of ``run``: at least ``target`` when the tree allows."""
    shards: list[tuple[int, ...]] = [()]
    for level in range(MAX_SPLIT_LEVELS):
        if len(shards) >= target:
            break
        grown: list[tuple[int, ...]] = []
        for prefix in shards:
            if len(prefix) < level:  # a run that ended before this draw: a leaf
                grown.append(prefix)
                continue
            outcome = run(ReplaySource(prefix, strict=False))
            if len(outcome.choices) <= level:
                grown.append(prefix)
                continue
            n = outcome.choices[level].n
            options = n - 1
            if max_branch is not None and n > max_branch:
                on_prune("max_branch", n - max_branch)
                options = max_branch - 1
            if max_deviations is not None and deviations(prefix) + 1 > max_deviations:
                if options > 0:
                    on_prune("max_deviations", options)
                options = 0
            grown.extend((*prefix, value) for value in range(options + 1))
        shards = grown
    return shards


class ShardWalk(Walk):
    """The walk below one prefix: its own run first, then deviations past the prefix only."""

    def __init__(
        self,
        run: Runner,
        prefix: tuple[int, ...],
        max_deviations: int | None,
        max_branch: int | None,
        on_prune: Prune,
    ) -> None:
        super().__init__(run, max_deviations, max_branch, on_prune)
        self.frontier = deque([(prefix, len(prefix), -1, deviations(prefix))])

    def __iter__(self) -> Iterator[tuple[RunOutcome, int]]:
        while self.frontier:
            parent, position, value, depth = self.frontier.popleft()
            prefix = parent if value < 0 else (*parent[:position], value)
            outcome = self.run(ReplaySource(prefix, strict=False))
            recorded = tuple(outcome.values)
            assert recorded[: len(prefix)] == prefix, (
                f"the model is nondeterministic: prefix {prefix} replayed as {recorded[: len(prefix)]}"
            )
            self._expand(outcome, recorded, len(prefix), depth)
            yield outcome, depth


def prove_shard(cell: Cell, max_deviations: int | None, max_branch: int | None) -> dict[str, Any]:
    """Walk one shard (runs on an executor); a plain dict that :func:`merge` adds up."""
    from raceproof.scenarios.catalogue import get

    started = time.perf_counter()
    result: dict[str, Any] = {
        "shard": cell.shard_index,
        "pruned": {},
        "schedules": 0,
        "runs": 0,
        "deepest": 0,
        "virtual_ms": 0,
        "verdict": "ok",
    }
    try:
        load_scenarios(cell.scenarios_base, cell.scenarios)
        scenario = get(cell.scenario)
        recorder = _Recorder(scenario.runner(cell.variant, scenario.prove_config))
        pruned: dict[str, int] = result["pruned"]

        def cut(bound: str, count: int) -> None:
            pruned[bound] = pruned.get(bound, 0) + count

        walk = ShardWalk(recorder, cell.shard, max_deviations, max_branch, cut)
        for outcome, depth in walk:
            result["runs"] += 1
            result["deepest"] = max(result["deepest"], depth)
            if outcome.status == "violated":
                shrunk = shrink(recorder, outcome).outcome
                result["schedules"] += 1
                result["verdict"] = "violated"
                violation = shrunk.violation
                result["found"] = {
                    "checker": violation.checker if violation else None,
                    "trace_hash": shrunk.trace_hash,
                    "blob": encode_blob(shrunk.values),
                    "deviations": deviations(shrunk.values),
                }
                result["_counterexample"] = counterexample_text(
                    scenario, cell.variant, scenario.prove_config, shrunk, "exhaustive"
                )
                break
            if outcome.bound is not None:
                cut(outcome.bound, 1)
            else:
                result["schedules"] += 1
            if walk.frontier and result["runs"] >= cell.examples:
                cut("budget", len(walk.frontier))
                break
        result["virtual_ms"] = recorder.virtual_ms
        result["hash"] = recorder.digest.hexdigest()
    except Exception as exc:
        result["verdict"] = "error"
        result["error"] = _error_line(exc)
    result["seconds"] = time.perf_counter() - started
    return result


def merge(
    proof: Cell, expected: str, shards: list[dict[str, Any]], split_pruned: dict[str, int]
) -> dict[str, Any]:
    """One proof row from its shards' results (in shard order, whatever order they finished in)."""
    shards = sorted(shards, key=lambda s: s["shard"])
    row = empty_row(proof, expected)
    pruned: dict[str, int] = dict(split_pruned)
    digest = hashlib.sha256()
    for shard in shards:
        for bound, count in shard["pruned"].items():
            pruned[bound] = pruned.get(bound, 0) + count
        digest.update(str(shard.get("hash")).encode())
    row["schedules"] = sum(s["schedules"] for s in shards)
    row["examples"] = sum(s["runs"] for s in shards)
    row["virtual_ms"] = sum(s["virtual_ms"] for s in shards)
    row["seconds"] = round(sum(s["seconds"] for s in shards), 4)
    row["shards"] = len(shards)
    row["cell_hash"] = digest.hexdigest()
    errors = [s for s in shards if s["verdict"] == "error"]
    violated = [s for s in shards if s["verdict"] == "violated"]
    if errors:
        row["verdict"] = "error"
        row["error"] = f"shard {errors[0]['shard']}: {errors[0]['error']}"
        row["complete"] = False
    elif violated:
        best = min(violated, key=lambda s: (s["found"]["deviations"], s["shard"]))
        row["verdict"] = "violated"
        row["complete"] = False
        row.update(best["found"])
        row["counterexample"] = counterexample_name(row)
        row["_counterexample"] = best["_counterexample"]
    else:
        row["complete"] = not pruned
        row["verdict"] = "ok" if not pruned else "inconclusive"
    if pruned:
        row["error"] = row["error"] or "pruned by " + ", ".join(
            f"{k} ({v})" for k, v in sorted(pruned.items())
        )
    return finish_row(row, expected)


def shard_cells(
    proof: Cell, target: int
) -> tuple[list[Cell], str, int | None, int | None, dict[str, int]]:
    """The proof's shards (computed on the driver), its expectation, caps and what the split pruned."""
    from raceproof.scenarios.catalogue import get

    load_scenarios(proof.scenarios_base, proof.scenarios)
    scenario = get(proof.scenario)
    expected = "violated" if proof.variant in scenario.expect_violation else "ok"
    pruned: dict[str, int] = {}

    def cut(bound: str, count: int) -> None:
        pruned[bound] = pruned.get(bound, 0) + count

    run = scenario.runner(proof.variant, scenario.prove_config)
    max_dev, max_branch = scenario.prove_max_deviations, scenario.prove_max_branch
    prefixes = split(run, target, max_dev, max_branch, cut)
    cells = [
        Cell(
            "proof-shard",
            proof.scenario,
            proof.variant,
            "exhaustive",
            proof.seed,
            proof.examples,
            proof.scenarios_base,
            proof.scenarios,
            prefix,
            index,
        )
        for index, prefix in enumerate(prefixes)
    ]
    return cells, expected, max_dev, max_branch, pruned
