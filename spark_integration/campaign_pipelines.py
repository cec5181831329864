"""``raceproof campaign --pipeline SPEC``: pipeline × experiment × seed on real Spark, into the campaign's Parquet layout.

A user's pipeline (or a built-in one) runs through its applicable fault
experiments once per seed, and each (pipeline, experiment, seed) becomes one
row of the same ``DIR/results/`` Parquet table a model campaign writes
(``campaign_cells.COLUMNS``), so ``raceproof report DIR`` and ``--baseline``
work on it unchanged. Rows are appended as each cell finishes and a re-run
skips the cells the folder already holds (resumable). The seed is the
generated-input script's seed; the other experiments are scripted, so their
seeds repeat the same trial (a stability measurement).

Unlike a model cell, a pipeline cell cannot be a task on an executor: a
streaming query is started and stopped by the driver's session (Spark
refuses a SparkSession inside a task), so the cells run one after another in
the driver, the Spark session doing the parallel work inside each trial.
The pipeline's baseline trial (no fault) runs first: a pipeline that raises
or is wrong without faults gets one ``baseline`` row and no experiment rows.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raceproof.reports.campaign_folder import RESULTS
from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration.campaign import (
    CampaignError,
    Options,
    Summary,
    read_rows,
    write_manifest,
    write_rows,
)
from raceproof.spark_integration.campaign_cells import Cell, empty_row, finish_row

Say = Callable[[str], None]


def _row(pipeline: str, experiment: str, seed: int, verdict: str) -> dict[str, Any]:
    cell = Cell(
        kind="pipeline",
        scenario=pipeline,
        variant=experiment,
        strategy="fault-experiment",
        seed=seed,
        examples=1,
    )
    row = empty_row(cell, Verdict.OK)
    row["cell"] = f"pipeline/{pipeline}/{experiment}/{seed}"
    row["verdict"] = verdict
    row["examples"] = 1
    return row


def run(
    spec: str,
    out: Path,
    seeds: Sequence[int],
    experiments: Sequence[str] = (),
    say: Say | None = None,
    spark: Any = None,
) -> Summary:
    """Run the grid, skipping the cells ``out`` holds; the summary of this run.

    The steps, top down: resolve the pipeline and its experiments, open the
    folder and the session, then the baseline and (if it holds) every
    (experiment, seed) cell, the manifest rewritten as each finishes.
    """
    from raceproof.spark_integration import session
    from raceproof.spark_integration.pipeline import PipelineError, settings_of

    tell = say or (lambda _text: None)
    pipeline, names = _resolve(spec, out, experiments)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = {str(r["cell"]) for r in read_rows(out)} if (out / RESULTS).exists() else set()
    cells = [(name, seed) for name in names for seed in seeds]
    summary = Summary(cells=len(cells) + 1, master="local[2] (driver)", parallelism=1)
    options = _options(pipeline.name, names, seeds, master=summary.master, out=out)
    try:
        settings = settings_of([pipeline])
    except PipelineError as exc:
        raise CampaignError(str(exc)) from None
    spark = spark if spark is not None else session.spark_session(settings)
    write_manifest(out, options, summary)  # a campaign.json from the start: report reads it
    try:
        if _baseline(spark, pipeline, out, done, summary, tell) == Verdict.OK:
            for number, (name, seed) in enumerate(cells, 1):
                if f"pipeline/{pipeline.name}/{name}/{seed}" in done:
                    summary.already_done += 1
                    continue
                tell(f"[{number}/{len(cells)}] {pipeline.name}: {name}, seed {seed} ...")
                row = _cell(spark, pipeline, name, seed)
                write_rows(spark, out, [finish_row(row, Verdict.OK)])
                summary.ran += 1
                summary.count(row["verdict"])
                summary.seconds = round(time.monotonic() - started, 1)
                write_manifest(out, options, summary)  # as each cell finishes
    except KeyboardInterrupt as exc:  # the command's signal handling says what was kept
        summary.interrupted = True
        summary.interrupted_by = getattr(exc, "name", "SIGINT")
        summary.seconds = round(time.monotonic() - started, 1)
        with contextlib.suppress(Exception):  # the manifest is plain JSON, no py4j call
            write_manifest(out, options, summary)
        raise
    summary.seconds = round(time.monotonic() - started, 1)
    write_manifest(out, options, summary)
    return summary


def _resolve(spec: str, out: Path, experiments: Sequence[str]) -> tuple[Any, list[str]]:
    """The pipeline ``spec`` names and its applicable experiments (those asked for); bad input refused."""
    from raceproof.spark_integration.experiments import applicable
    from raceproof.spark_integration.pipeline import PipelineError, resolve

    if out.exists() and not out.is_dir():
        raise CampaignError(f"--out {out} is not a folder")
    try:
        pipeline = resolve(spec)
    except PipelineError as exc:
        raise CampaignError(str(exc)) from None
    names = [n for n in applicable(pipeline) if not experiments or n in experiments]
    if not names:
        raise CampaignError(f"no experiment of {', '.join(experiments)} applies to {pipeline.name}")
    return pipeline, names


def _options(
    pipeline: str, names: Sequence[str], seeds: Sequence[int], *, master: str, out: Path
) -> Options:
    """The manifest's options: the model campaign's fields, as a pipeline grid fills them."""
    return Options(
        scenarios=(pipeline,),
        variants=tuple(names),
        strategies=("fault-experiment",),
        seeds=tuple(seeds),
        examples=1,
        master=master,
        out=str(out),
        cross_check=0,
    )


def _baseline(
    spark: Any, pipeline: Any, out: Path, done: set[str], summary: Summary, tell: Say
) -> Verdict:
    """The pipeline's baseline row (no fault), run unless ``out`` holds it; its verdict."""
    from raceproof.spark_integration.experiments import baseline
    from raceproof.spark_integration.pipeline import PipelineRaised

    base_key = f"pipeline/{pipeline.name}/baseline/0"
    if base_key in done:
        summary.already_done += 1
        verdict = next(Verdict(r["verdict"]) for r in read_rows(out) if r["cell"] == base_key)
        summary.count(verdict)
        return verdict
    tell(f"{pipeline.name}: baseline, no fault ...")
    row = _row(pipeline.name, "baseline", 0, Verdict.OK)
    began = time.monotonic()
    try:
        trial = baseline(spark, pipeline)
        judged = trial.verdict in (Verdict.OK, Verdict.VIOLATED)
        verdict = Verdict(trial.verdict) if judged else Verdict.ERROR
        row["checker"], row["trace_hash"] = trial.checker, trial.history.trace_hash()
        row["finding"] = f"no fault: {trial.verdict}: {trial.message}"
        row["error"] = None if judged else trial.message
    except PipelineRaised as exc:
        verdict, row["error"] = Verdict.ERROR, str(exc)
    row["verdict"] = verdict
    row["seconds"] = round(time.monotonic() - began, 2)
    write_rows(spark, out, [finish_row(row, Verdict.OK)])
    summary.ran += 1
    summary.count(verdict)
    return verdict


def _cell(spark: Any, pipeline: Any, name: str, seed: int) -> dict[str, Any]:
    """One (experiment, seed) cell's row: the gate's verdict, and what stock Spark did as its finding."""
    from raceproof.spark_integration.pipeline import PipelineRaised
    from raceproof.spark_integration.results import run_experiment

    row = _row(pipeline.name, name, seed, Verdict.OK)
    try:
        result = run_experiment(spark, name, pipeline, seed=seed)
    except PipelineRaised as exc:
        row.update(verdict=Verdict.ERROR, error=str(exc), seconds=0.0)
        return row
    row.update(
        verdict=result["verdict"],
        checker=result["checker"],
        trace_hash=result["trace_hash"],
        cell_hash=result["trace_hash"],
        seconds=result["seconds"],
        finding=finding(result),
    )
    return row


def finding(result: dict[str, Any]) -> str:
    """What an experiment found: stock Spark's outcome and message, and the guard's if it had one."""
    stock = result["stock"]
    said = f"stock Spark: {stock['stability']}: {stock['trials'][-1]['message']}"
    if result.get("guarded"):
        guarded = result["guarded"]
        said += f"; with {result['guard']}: {guarded['stability']}"
    return said


__all__ = ["run"]
