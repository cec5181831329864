"""``raceproof campaign --pipeline SPEC ...``: pipeline × experiment × seed on real Spark, into the campaign's Parquet layout.

Each pipeline given (``--pipeline`` repeats; one Spark session for them all) runs through its applicable fault
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
An experiment asked for by name that a pipeline lacks what it needs for is a
row too, ``not applicable`` (verdict ``inconclusive``), never a silent gap.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    specs: str | Sequence[str],
    out: Path,
    seeds: Sequence[int],
    experiments: Sequence[str] = (),
    say: Say | None = None,
    spark: Any = None,
) -> Summary:
    """Run the grid of every pipeline in ``specs``, skipping the cells ``out`` holds.

    The steps, top down: resolve every pipeline and its experiments (bad input before
    Spark starts), open the folder and one session for them all, then per pipeline the
    baseline and (if it holds) every (experiment, seed) cell, and a ``not applicable``
    row for each experiment asked for that the pipeline lacks what it needs for; the
    manifest rewritten as each cell finishes.
    """
    from raceproof.spark_integration import session
    from raceproof.spark_integration.pipeline import PipelineError, settings_of

    tell = say or (lambda _text: None)
    plans = _resolve_all([specs] if isinstance(specs, str) else list(specs), out, experiments)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = {str(r["cell"]) for r in read_rows(out)} if (out / RESULTS).exists() else set()
    total = sum(1 + len(plan.names) * len(seeds) + len(plan.lacking) for plan in plans)
    summary = Summary(cells=total, master="local[2] (driver)", parallelism=1)
    options = _options(plans, seeds, master=summary.master, out=out)
    try:
        settings = settings_of([plan.pipeline for plan in plans])
    except PipelineError as exc:
        raise CampaignError(str(exc)) from None
    spark = spark if spark is not None else session.spark_session(settings)
    write_manifest(out, options, summary)  # a campaign.json from the start: report reads it
    grid = Grid(spark=spark, out=out, done=done, summary=summary, options=options, tell=tell)
    try:
        for plan in plans:
            grid.pipeline(plan, seeds, started)
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


@dataclass
class Plan:
    """One pipeline of the campaign: its applicable experiments asked for, and those it lacks
    what they need for (asked for by name: each gets a ``not applicable`` row)."""

    pipeline: Any
    names: list[str]
    lacking: list[str]


@dataclass
class Grid:
    """What every cell of a campaign writes into: the session, the folder, the summary."""

    spark: Any
    out: Path
    done: set[str]
    summary: Summary
    options: Options
    tell: Say

    def pipeline(self, plan: Plan, seeds: Sequence[int], started: float) -> None:
        """One pipeline's rows: the baseline, then its cells if the baseline holds."""
        pipeline, summary = plan.pipeline, self.summary
        for name in plan.lacking:
            self.write(_not_applicable(pipeline, name), started)
        cells = [(name, seed) for name in plan.names for seed in seeds]
        if _baseline(self.spark, pipeline, self.out, self.done, summary, self.tell) != Verdict.OK:
            return
        for number, (name, seed) in enumerate(cells, 1):
            if f"pipeline/{pipeline.name}/{name}/{seed}" in self.done:
                summary.already_done += 1
                continue
            self.tell(f"[{number}/{len(cells)}] {pipeline.name}: {name}, seed {seed} ...")
            self.write(_cell(self.spark, pipeline, name, seed), started)

    def write(self, row: dict[str, Any], started: float) -> None:
        """Append one finished cell's row; count it; rewrite the manifest."""
        if row["cell"] in self.done:
            self.summary.already_done += 1
            return
        write_rows(self.spark, self.out, [finish_row(row, Verdict.OK)])
        self.summary.ran += 1
        self.summary.count(row["verdict"])
        self.summary.seconds = round(time.monotonic() - started, 1)
        write_manifest(self.out, self.options, self.summary)  # as each cell finishes


def _not_applicable(pipeline: Any, name: str) -> dict[str, Any]:
    """The row of an experiment asked for that ``pipeline`` lacks what it needs for."""
    from raceproof.spark_integration.results import lacks

    row = _row(pipeline.name, name, 0, Verdict.INCONCLUSIVE)
    row["finding"] = f"not applicable: {name} needs {lacks(pipeline, name)}"
    row["seconds"] = 0.0
    return row


def _resolve_all(specs: list[str], out: Path, experiments: Sequence[str]) -> list[Plan]:
    """Every pipeline ``specs`` names, with its experiments; bad input refused before Spark."""
    from raceproof.spark_integration.experiments import EXPERIMENTS, applicable
    from raceproof.spark_integration.pipeline import PipelineError, resolve

    if out.exists() and not out.is_dir():
        raise CampaignError(f"--out {out} is not a folder")
    unknown = [name for name in experiments if name not in EXPERIMENTS]
    if unknown:
        raise CampaignError(f"unknown experiment {unknown[0]!r}; valid: {', '.join(EXPERIMENTS)}")
    plans: list[Plan] = []
    for spec in specs:
        try:
            pipeline = resolve(spec)
        except PipelineError as exc:
            raise CampaignError(str(exc)) from None
        if any(plan.pipeline.name == pipeline.name for plan in plans):
            raise CampaignError(
                f"two --pipeline give the pipeline name {pipeline.name!r}: a campaign's cells "
                "are named by it (give each pipeline its own name)"
            )
        fits = applicable(pipeline)
        names = [n for n in fits if not experiments or n in experiments]
        lacking = [n for n in dict.fromkeys(experiments) if n not in fits]
        plans.append(Plan(pipeline=pipeline, names=names, lacking=lacking))
    if not any(plan.names for plan in plans):
        named = ", ".join(plan.pipeline.name for plan in plans)
        raise CampaignError(f"no experiment of {', '.join(experiments)} applies to {named}")
    return plans


def _options(plans: list[Plan], seeds: Sequence[int], *, master: str, out: Path) -> Options:
    """The manifest's options: the model campaign's fields, as a pipeline grid fills them."""
    names = [n for plan in plans for n in [*plan.names, *plan.lacking]]
    return Options(
        scenarios=tuple(plan.pipeline.name for plan in plans),
        variants=tuple(dict.fromkeys(names)),
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
