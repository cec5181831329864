"""Fault experiments on real local-mode Spark, judged by the models' own checkers.

Each experiment runs twice in fresh sandboxes: on stock Spark, and with the
guard raceproof offers for that failure. Its outcome is what was measured,
never an expectation written down.

- ``stale-checkpoint-restore``: the checkpoint is copied at batch k, the query
  runs on, the old ``offsets/`` and ``commits/`` (with their ``.crc`` files) are
  restored and the query restarted. Guard: checkpoint fencing, which refuses
  to start a query whose checkpoint is older than what its sink committed.
- ``drain``: stop with everything emitted. Stock: ``Trigger.AvailableNow``
  with an append-mode watermark. Guard: the drain procedure, which writes a
  sentinel event past every open window (Samza's watermark to +inf), then
  runs AvailableNow.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sim import Checker, first_violation, run_checkers
from sim.dataflow import drain_emits_every_window, no_duplicate_emission
from sim.history import History
from spark_integration.job import Recorder, WindowedCountJob, committed_batches
from spark_integration.sandbox import Sandbox


class CheckpointFenced(RuntimeError):
    """The guard refused a start: the checkpoint is older than what the sink committed."""


def fence(sandbox: Sandbox) -> None:
    """Refuse to start if the sink has committed a batch the checkpoint has not."""
    last_sink = sandbox.root / "sink" / "last_batch"
    sink_batch = int(last_sink.read_text()) if last_sink.exists() else -1
    checkpoint_batch = max(committed_batches(sandbox), default=-1)
    if sink_batch > checkpoint_batch:
        raise CheckpointFenced(
            f"refusing to start: the checkpoint's last committed batch is {checkpoint_batch} but the "
            f"sink already committed batch {sink_batch}; the checkpoint was restored from an older copy"
        )


@dataclass
class Trial:
    verdict: str
    checker: str | None
    message: str
    history: History
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "checker": self.checker, "message": self.message,
                "seconds": round(self.seconds, 2), "ops": len(self.history), "notes": self.notes}  # fmt: skip


def _judge(recorder: Recorder, checkers: list[Checker], started: float, notes: list[str]) -> Trial:
    verdicts = run_checkers(recorder.history, checkers)
    found = first_violation(verdicts)
    verdict = "violated" if found else "ok"
    message = found.message if found else "; ".join(notes)
    return Trial(
        verdict,
        found.checker if found else None,
        message,
        recorder.history,
        time.monotonic() - started,
        notes,
    )


def _recording_sink(job: WindowedCountJob) -> None:
    """Also remember the sink's last batch id (what fencing compares with)."""
    original = job._sink

    def sink(batch: Any, batch_id: int) -> None:
        original(batch, batch_id)
        (job.sandbox.root / "sink" / "last_batch").write_text(str(batch_id))

    job._sink = sink  # type: ignore[method-assign]


def stale_checkpoint_restore(spark: Any, guarded: bool) -> Trial:
    started, sandbox, recorder = time.monotonic(), Sandbox(), Recorder()
    notes: list[str] = []
    try:
        job = WindowedCountJob(spark, sandbox, recorder)
        _recording_sink(job)
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        job.capture()
        sandbox.copy_tree("checkpoint/offsets", "saved/offsets")
        sandbox.copy_tree("checkpoint/commits", "saved/commits")
        recorder.log("nemesis", "fault.checkpoint-copy", batch=max(committed_batches(sandbox)))
        job.add_input([("a", 25), ("b", 27)])
        job.add_input([("a", 41), ("b", 44)])
        job.run()
        job.capture()
        for part in ("offsets", "commits"):
            sandbox.delete(f"checkpoint/{part}")
            sandbox.copy_tree(f"saved/{part}", f"checkpoint/{part}")
        recorder.log("nemesis", "fault.checkpoint-restore", batch=max(committed_batches(sandbox)))
        try:
            if guarded:
                fence(sandbox)
            job.run()
            job.capture()
        except CheckpointFenced as refused:
            recorder.log("guard", "guard.refused", reason=str(refused))
            notes.append(str(refused))
        return _judge(recorder, [no_duplicate_emission()], started, notes)
    finally:
        sandbox.cleanup()


def drain(spark: Any, guarded: bool) -> Trial:
    started, sandbox, recorder = time.monotonic(), Sandbox(), Recorder()
    notes: list[str] = []
    try:
        job = WindowedCountJob(spark, sandbox, recorder)
        job.add_input([("a", 1), ("b", 3)])
        job.add_input([("a", 14), ("b", 15)])
        job.add_input([("a", 23), ("b", 26)])
        recorder.log(
            "driver",
            "drain.request",
            procedure="sentinel+AvailableNow" if guarded else "AvailableNow",
        )
        if guarded:
            # Past every open window plus the watermark delay: Samza's Watermark(+inf).
            job.add_input([("__sentinel__", 100_000)], sentinel=True)
        job.run(available_now=True)
        job.capture()
        return _judge(recorder, [drain_emits_every_window()], started, notes)
    finally:
        sandbox.cleanup()


EXPERIMENTS: dict[str, tuple[str, str, Callable[[Any, bool], Trial]]] = {
    "stale-checkpoint-restore": (
        "restore offsets/ and commits/ from an older copy, restart",
        "no-duplicate-emission",
        stale_checkpoint_restore,
    ),
    "drain": (
        "stop with Trigger.AvailableNow (append mode, watermark)",
        "drain-completeness",
        drain,
    ),
}


def run_experiment(spark: Any, name: str) -> dict[str, Any]:
    fault, checker, trial = EXPERIMENTS[name]
    stock, guarded = trial(spark, False), trial(spark, True)
    return {"experiment": name, "fault": fault, "checker": checker, "stock": stock.to_json(),
            "guarded": guarded.to_json(), "history_stock": json.loads(json.dumps([op.to_json() for op in stock.history]))}  # fmt: skip
