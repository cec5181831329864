"""One experiment's row of the spark-check table: the trials run, their stability, the gate's verdict.

``run_experiment`` runs an experiment's trials stock and (where raceproof has
one that can act on the pipeline) guarded, and makes the row ``spark-check``
prints and ``campaign --pipeline`` stores. A requested experiment the pipeline
lacks what it needs for is an ``inconclusive`` row naming what is missing
(``not_applicable_row``), never a pass, and what no experiment judged about a
pipeline (a sink never read back, no late data) is said in one line each
(``unjudged``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from typing import Any

from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration import generated, session
from raceproof.spark_integration.experiments import (
    EXPERIMENTS,
    FENCING,
    KEYED_SINK,
    OWN_SINK,
    Experiment,
)
from raceproof.spark_integration.pipeline import Pipeline
from raceproof.spark_integration.trial import Trial

NEEDS = {
    "lateness": "max_lateness_s (how late its data may be)",
    "state": "state_counts = True (its state store read as per-key counts)",
    "drain": "complete_after_drain = True",
    "batch-hook": "raceproof's foreachBatch (it writes through write_stream)",
    "own-sink": "a sink(batch, batch_id) of its own, read back by read_output",
    "spec": "to be loaded by a --pipeline spec (a second driver process loads it)",
}


def lacks(pipeline: Pipeline, name: str) -> str:
    """What ``pipeline`` would need to declare for experiment ``name`` to apply."""
    missing = [
        need
        for need in sorted(EXPERIMENTS[name].needs)
        if not pipeline.applicable(frozenset({need}))
    ]
    return ", ".join(NEEDS.get(need, need) for need in missing)


def not_applicable_row(spec: str, pipeline: Pipeline, name: str) -> dict[str, Any]:
    """A requested experiment the pipeline lacks what it needs for: inconclusive, never a pass."""
    experiment = EXPERIMENTS[name]
    message = (
        f"not run: {name} needs {lacks(pipeline, name)}, which {pipeline.name} does not declare"
    )
    trial: dict[str, Any] = {
        "verdict": Verdict.INCONCLUSIVE,
        "checker": None,
        "message": message,
        "violated": [],
    }
    return {
        "scenario": pipeline.name,
        "pipeline": spec,
        "experiment": name,
        "variant": "stock",
        "strategy": "fault-experiment",
        "verdict": Verdict.INCONCLUSIVE,
        "checker": None,
        "examples": 0,
        "fault": experiment.fault,
        "checkers": experiment.checkers,
        "guard": None,
        "promises": [],
        "broken_promises": [],
        "stock": {"stability": "not applicable", "trials": [trial]},
        "guarded": None,
        "judges_pipeline": experiment.judges_pipeline,
        "seconds": 0.0,
        "python_cpu_s": 0.0,
        "jvm_cpu_s": 0.0,
        "jvm_peak_mb": 0.0,
    }


def unjudged(pipeline: Pipeline) -> list[str]:
    """What no experiment judged about ``pipeline``, each said in one line."""
    said = []
    if type(pipeline).sink is not Pipeline.sink and not pipeline.reads_own_output():
        said.append(
            f"{pipeline.name}: its own sink(batch, batch_id) was never read back (it declares no "
            "read_output): the checkers judged what foreachBatch delivered, not what the sink stored"
        )
    if pipeline.max_lateness_s is None:
        said.append(
            f"{pipeline.name}: never fed late data (it declares no max_lateness_s, so "
            "generated-input did not run)"
        )
    return said


def outcome(trial: dict[str, Any]) -> str:
    """One trial's outcome as a table cell: the verdict and, if violated, what failed."""
    failed = trial["violated"] if trial["verdict"] == Verdict.VIOLATED else []
    return trial["verdict"] + (f" ({', '.join(failed)})" if failed else "")


def stability(trials: list[dict[str, Any]]) -> str:
    """``violated (x)`` for one run; ``violated (x) 10/10`` or ``unstable: ... 6/10, ok 4/10``."""
    counts: dict[str, int] = {}
    for trial in trials:
        counts[outcome(trial)] = counts.get(outcome(trial), 0) + 1
    n = len(trials)
    if len(counts) == 1:
        (only,) = counts
        return only if n == 1 else f"{only} {n}/{n}"
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "unstable: " + ", ".join(f"{label} {k}/{n}" for label, k in ranked)


def broken_promises(experiment: Experiment, trial: Trial) -> list[str]:
    """The checkers the guard promised that failed in a guarded trial."""
    return sorted(set(experiment.promises) & trial.violated())


def run_experiment(
    spark: Any,
    name: str,
    pipeline: Pipeline,
    *,
    repeat: int = 1,
    seed: int = 0,
    script: generated.Script | None = None,
    shrink_trials: int = 20,
) -> dict[str, Any]:
    """Run one experiment ``repeat`` times stock and (if it has one) guarded; time and memory included.

    The row's ``verdict`` is the gate's: ``violated`` when a guarded trial broke
    a checker its guard promises, ``ok`` otherwise. What stock Spark does is a
    finding reported in ``stock``, never a failure of the run.
    """
    experiment = EXPERIMENTS[name]
    if experiment.trial is generated.generated_input:
        experiment = replace(
            experiment, trial=partial(generated.generated_input, seed=seed, script=script)
        )
    started = time.monotonic()
    cpu_started = time.process_time()
    jvm_cpu_started = session.jvm_cpu_s(spark)
    stock = [experiment.trial(spark, pipeline, False) for _ in range(repeat)]
    experiment, guarded = _guarded(spark, experiment, pipeline, stock, repeat)
    broken = sorted({c for trial in guarded for c in broken_promises(experiment, trial)})
    shrunk: dict[str, Any] | None = None
    verdict = Verdict.VIOLATED if broken else Verdict.OK
    if experiment.judges_pipeline:
        broken = sorted({c for trial in stock for c in trial.violated()})
        undecided = any(trial.verdict == Verdict.INCONCLUSIVE for trial in stock)
        verdict = Verdict.VIOLATED if broken else Verdict.INCONCLUSIVE if undecided else Verdict.OK
        if broken and name == "generated-input" and shrink_trials > 0:
            shrunk = shrink_input(spark, pipeline, stock[0], seed, shrink_trials)
    stock_json = [t.to_json() for t in stock]
    guarded_json = [t.to_json() for t in guarded]
    last = (guarded or stock)[-1]
    return {
        "scenario": pipeline.name,
        "pipeline": pipeline.name,
        "experiment": name,
        "variant": "guarded" if experiment.guard else "stock",
        "strategy": "fault-experiment",
        "verdict": verdict,
        "checker": broken[0] if broken else None,
        "examples": repeat,
        "fault": experiment.fault,
        "checkers": experiment.checkers,
        "guard": experiment.guard,
        "promises": list(experiment.promises),
        "broken_promises": broken,
        "stock": {"stability": stability(stock_json), "trials": stock_json},
        "guarded": {"stability": stability(guarded_json), "trials": guarded_json}
        if guarded
        else None,
        "trace_hash": last.history.trace_hash(),
        "shrunk": shrunk,
        "judges_pipeline": experiment.judges_pipeline,
        "seconds": round(time.monotonic() - started, 1),
        "python_cpu_s": round(time.process_time() - cpu_started, 1),
        "jvm_cpu_s": round(session.jvm_cpu_s(spark) - jvm_cpu_started, 1),
        **session.peak_memory_mb(spark),
    }


def _guarded(
    spark: Any, experiment: Experiment, pipeline: Pipeline, stock: list[Trial], repeat: int
) -> tuple[Experiment, list[Trial]]:
    """The guard that can act on this pipeline, and its trials (the stock ones when the guard
    is the pipeline's own sink, none when there is no guard)."""
    if pipeline.writes_own_stream() and experiment.guard in (KEYED_SINK, FENCING):
        # Both guards act through raceproof's foreachBatch (its batch files, the batch id it
        # records), which a pipeline's own writeStream sink never goes through.
        experiment = replace(experiment, guard=OWN_SINK if pipeline.reads_own_output() else None)
    if experiment.guard == KEYED_SINK and pipeline.reads_own_output():
        # The guard raceproof offers is a sink keyed on batch id; a pipeline with a sink of its
        # own is judged at that sink, so the sink itself keeps the guard's promises or not.
        experiment = replace(experiment, guard=OWN_SINK)
    if experiment.guard == OWN_SINK:
        return experiment, stock
    if not experiment.guard:
        return experiment, []
    return experiment, [experiment.trial(spark, pipeline, True) for _ in range(repeat)]


def shrink_input(
    spark: Any, pipeline: Pipeline, trial: Trial, seed: int, max_trials: int
) -> dict[str, Any]:
    """The violated generated-input trial's script, shrunk while the same checker fails."""
    (logged,) = trial.history.of_kind("input.script")
    script = generated.parse_script(str(logged.get("script")))
    checker = trial.checker

    def fails(candidate: generated.Script) -> bool:
        again = generated.generated_input(spark, pipeline, False, seed=seed, script=candidate)
        return again.checker == checker

    small, trials = generated.shrink_script(script, fails, max_trials=max_trials)
    return {
        "checker": checker,
        "events": sum(map(len, small)),
        "from_events": sum(map(len, script)),
        "trials": trials,
        "script": generated.script_json(small),
        "batches": generated.describe(small),
    }
