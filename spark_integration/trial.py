"""One trial of an experiment on real Spark: its sandbox, its history, and how it is judged.

A trial is judged by the shared checkers only. Its verdict is

- ``violated`` when a checker fails and the user was not told: a duplicate, a
  lost window, a lost acknowledged start, a query thread that died uncaught;
- ``inconclusive`` when a checker could not tell (``unknown``) and none failed;
- ``raised`` when the query was still failing with an error at the end (the
  user was told; the windows it never emitted are the error's consequence,
  not a silent loss), unless a duplicate was emitted or a thread died uncaught;
- ``ok`` otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from raceproof.sim import Checker, CheckerResult, first_violation, run_checkers
from raceproof.sim.checkers import checker_name
from raceproof.sim.dataflow import drain_emits_every_window
from raceproof.sim.history import History
from raceproof.sim.lifecycle import no_uncaught_error
from raceproof.sim.verdicts import CheckStatus, Verdict
from raceproof.spark_integration import session
from raceproof.spark_integration.job import PipelineJob, Recorder
from raceproof.spark_integration.pipeline import Pipeline, PipelineRaised, calling_user
from raceproof.spark_integration.preflight import returned_rows
from raceproof.spark_integration.sandbox import Sandbox

# Checkers whose failure is the expected consequence of a query that is still failing.
CONSEQUENCES_OF_FAILURE = {checker_name(drain_emits_every_window())}


@dataclass
class Trial:
    verdict: str
    checker: str | None
    message: str
    history: History
    seconds: float
    verdicts: list[CheckerResult]
    notes: list[str] = field(default_factory=list)

    def violated(self) -> set[str]:
        """Every checker that failed (``checker`` names only the earliest)."""
        return {v.checker for v in self.verdicts if v.status == CheckStatus.VIOLATED}

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "checker": self.checker,
            "message": self.message,
            "violated": sorted(self.violated()),
            "seconds": round(self.seconds, 2),
            "ops": len(self.history),
            "notes": self.notes,
        }


def stale_sink(pipeline: Pipeline, spark: Any) -> None:
    """Refuse a trial whose sink holds rows before it wrote any (an earlier trial's table)."""
    given = calling_user("read_output(spark)", pipeline.read_output, spark)
    rows = returned_rows("read_output(spark)", given, none_ok=True)
    if rows:
        raise PipelineRaised(
            f"pipeline error: read_output() holds {len(rows)} rows before the trial wrote any "
            f"(first {rows[0]}): begin_trial(spark, folder) must give each trial an empty sink "
            "(drop or truncate the table there), or an earlier trial's rows are judged as this one's"
        )


def sentinel_missed(pipeline: Pipeline) -> str:
    """What to tell when the drain's sentinel records reach only some of the pipeline's sources.

    Under Spark's default ``multipleWatermarkPolicy=min`` the global watermark is the least
    of the sources': a source the sentinel never reaches holds it back, the drain flushes
    nothing, and the pipeline looks wrong when its sentinel is. Empty when it reaches all.
    """
    if not pipeline.sources:
        return ""
    records = pipeline.sentinel_records()
    reached = {str(calling_user("source_of(record)", pipeline.source_of, r)) for r in records}
    missed = [name for name in pipeline.sources if name not in reached]
    if not missed:
        return ""
    call = f"records({pipeline.sentinel_key!r}, {pipeline.sentinel_second})"
    return (
        f"the drain's sentinel reached no record of source {', '.join(missed)} ({call} gave "
        f"records for {', '.join(sorted(reached)) or 'no source'} only): under Spark's default "
        "multipleWatermarkPolicy=min that source's watermark holds every other back, so the "
        f"drain flushes nothing; make {call} give a record for every source"
    )


class TrialRun:
    """``with TrialRun(spark) as run:`` a fresh sandbox, recorder and job; ``run.judge(...)`` at the end."""

    def __init__(self, spark: Any, pipeline: Pipeline, *, keyed_sink: bool = False) -> None:
        self.spark = spark
        self.pipeline = pipeline
        self.sandbox = Sandbox()
        self.recorder = Recorder()
        self.job = PipelineJob(
            spark,
            sandbox=self.sandbox,
            recorder=self.recorder,
            pipeline=pipeline,
            keyed_sink=keyed_sink,
        )
        self.notes: list[str] = []
        self.sentinel_missed = ""  # what the drain's sentinel did not reach, said (a source)
        self.started = time.monotonic()
        self._log_offset = session.jvm_log_offset()
        own = self.sandbox.inside("own-sink")
        own.mkdir(parents=True, exist_ok=True)
        try:
            calling_user("begin_trial(spark, folder)", pipeline.begin_trial, spark, own)
            if pipeline.reads_own_output():
                stale_sink(pipeline, spark)
        except BaseException:
            self.sandbox.cleanup()
            raise

    def __enter__(self) -> TrialRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            for query in self.spark.streams.active:
                query.stop()
        except Exception:
            # Interrupted (Ctrl-C, SIGTERM) mid-call, the JVM may already be gone: stopping its
            # queries fails, and that must not replace the interrupt (exit 130/143) with an
            # internal error (70). The session's own clean-up stops the JVM.
            if not isinstance(exc, KeyboardInterrupt):
                raise
        finally:
            self.sandbox.cleanup()

    def note(self, text: str) -> None:
        self.notes.append(text)

    def drain(self) -> str | None:
        """The drain procedure: a sentinel past every open window, then AvailableNow."""
        self.sentinel_missed = sentinel_missed(self.pipeline)
        self.job.request_drain("sentinel+AvailableNow")
        self.job.add_input(
            [(self.pipeline.sentinel_key, self.pipeline.sentinel_second)], sentinel=True
        )
        return self.job.run(available_now=True)

    def judge(self, checkers: list[Checker], *, failing_at_end: bool = False) -> Trial:
        self.job.capture()
        self.job.capture_store()
        runs = {str(op.get("run")) for op in self.recorder.history.of_kind("query.start")}
        for thread, error in session.uncaught_errors_since(self._log_offset):
            if session.thread_of_runs(thread, runs):
                self.recorder.log("jvm", "error.uncaught", thread=thread, error=error)
        history = self.recorder.history
        verdicts = run_checkers(history, [*checkers, no_uncaught_error()])
        if failing_at_end:
            verdicts = [v for v in verdicts if v.checker not in CONSEQUENCES_OF_FAILURE]
        found = first_violation(verdicts)
        failures = [str(op.get("error")) for op in history.of_kind("query.failed")]
        undecided = [v for v in verdicts if v.status == CheckStatus.UNKNOWN]
        verdict: str  # a verdict word, or ``raised``: the query itself failed
        if found is not None:
            verdict, message = Verdict.VIOLATED, found.message
        elif undecided and not failing_at_end:  # a judgement asked for and not made: say so
            verdict, message = (
                Verdict.INCONCLUSIVE,
                f"{undecided[0].checker}: {undecided[0].message}",
            )
        elif failing_at_end:
            verdict = "raised"
            message = "; ".join([*self.notes, f"the query fails with: {failures[-1]}"])
        else:
            verdict, message = Verdict.OK, "; ".join(self.notes) or "every checker holds"
        return Trial(
            verdict=verdict,
            checker=found.checker if found else None,
            message=message,
            history=history,
            seconds=time.monotonic() - self.started,
            verdicts=verdicts,
            notes=self.notes,
        )
