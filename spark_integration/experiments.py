"""Fault experiments on real local-mode Spark, judged by the models' own checkers.

Every experiment that drains is judged by what the sink holds against the
reference for the same input (``drain-completeness``: every expected row,
with the reference's values), besides ``no-duplicate-emission``, and every
guard promises both: an effect a replay repeats (a ``MERGE`` that adds a
batch's amounts again, an ``INSERT``, a counter) is caught wherever a replay
happens, whether or not it duplicates a row.

Each experiment runs a pipeline (``spark_integration.pipeline``: the user's
or a built-in one) on stock Spark and, where raceproof offers one, with a
guard, each in a fresh sandbox. Its outcome is what was measured, never an
expectation written down; a guard names the checkers it promises, and the
gate (``run_experiment``'s verdict) fails only when a guarded trial breaks
one. The lifecycle experiments live in ``spark_integration.lifecycle``; the
data ones are here:

- ``stale-checkpoint-restore``: the checkpoint is copied at batch k, the query
  runs on, the old ``offsets/`` and ``commits/`` (with their ``.crc`` files)
  are restored and the query restarted. Guard: checkpoint fencing.
- ``drain``: stop with everything emitted. Stock: ``Trigger.AvailableNow``
  with an append-mode watermark. Guard: the drain procedure (a sentinel event
  past every open window, Samza's watermark to +inf, then AvailableNow).
- ``stop-start-race``: real threads stop and start the query on one
  checkpoint while input arrives (two threads stop each run at once, at a
  named point: the query idle with no input pending), then
  ``processAllAvailable`` and a drain. Guard: a sink keyed on batch id.
- ``slow-sink-stop``: stop while ``foreachBatch`` is in a slow second write
  after its rows went out; restart. Guard: a sink keyed on batch id.
- ``cleaner-partition-state`` / ``cleaner-latest-delta`` /
  ``cleaner-whole-checkpoint``: a cleaner deletes one partition's state, the
  newest delta file, or the whole checkpoint while the query runs; more
  input, restart, drain. Guard (whole checkpoint only): checkpoint fencing.
- ``stop-before-commit``: the process stops inside batch k once its
  ``foreachBatch`` has written (a named point: ``offsets/k`` written,
  ``commits/k`` not; the batch fails there, as a killed driver leaves it),
  restart. Guard: a sink keyed on batch id.
- ``kill``: the same point as ``stop-before-commit``, reached by a second
  driver process that is then killed with SIGKILL, JVM and all
  (``spark_integration.killed``); restart, drain. Judged at the pipeline's own
  sink. Guard: the pipeline's own sink.
- ``stop-during-batch-job``: ``query.stop()`` inside batch k's
  ``foreachBatch`` after its first row, and the batch then runs a Spark job
  of its own, which the stop interrupts (the ``StackOverflowError`` finding).
  Guard: stop only between batches.
- ``maintenance-snapshot``: the moment state-store maintenance writes a
  snapshot (a named point: the ``.snapshot`` file appears), it is truncated,
  a torn write; more input, restart from it, drain. No guard.
- ``transient-sink-failure``: the pipeline's own ``foreachBatch`` sink writes
  half of batch k and fails once (``TransientSinkFailure``); the query is
  restarted, as a production retry does, and drained. Judged at that sink
  (its ``read_output``): exactly once or not. Guard: the pipeline's own sink.
- ``replay-equivalence``: stop and restart mid-stream; the state store after
  every batch (Spark's state data source) against a recomputation from the
  inputs each batch read.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raceproof.sim.dataflow import (
    drain_emits_every_window,
    no_duplicate_emission,
    state_matches_inputs,
)
from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration import generated, killed, lifecycle
from raceproof.spark_integration.faults import (
    BatchAbandon,
    BatchGate,
    TransientSinkFailure,
    at_offsets_not_committed,
    stop_in_background,
    stop_landed,
    wait_committed,
    wait_snapshot,
)
from raceproof.spark_integration.job import committed_batches
from raceproof.spark_integration.pipeline import Pipeline
from raceproof.spark_integration.sandbox import Sandbox
from raceproof.spark_integration.trial import Trial, TrialRun


class CheckpointFenced(RuntimeError):
    """The guard refused a start: the checkpoint is older than what the sink committed."""


def fence(sandbox: Sandbox) -> None:
    """Refuse to start if the sink has committed a batch the checkpoint has not."""
    last_sink = sandbox.inside("sink/last_batch")
    sink_batch = int(last_sink.read_text()) if last_sink.exists() else -1
    checkpoint_batch = max(committed_batches(sandbox), default=-1)
    if sink_batch > checkpoint_batch:
        raise CheckpointFenced(
            f"refusing to start: the checkpoint's last committed batch is {checkpoint_batch} but the "
            f"sink already committed batch {sink_batch}; the checkpoint was restored from an older "
            "copy or deleted"
        )


def _fenced_run(run: TrialRun, guarded: bool, *, fencing: bool = True) -> str | None:
    """Restart the job, behind the fence when guarded; the error if the query failed.

    ``fencing=False`` skips the fence even when guarded: a test passes it to show the
    gate fails when the guard stops doing its job (it was an environment variable).
    """
    try:
        if guarded and fencing:
            fence(run.sandbox)
    except CheckpointFenced as refused:
        run.recorder.log("guard", "guard.refused", reason=str(refused))
        run.note(str(refused))
        return None
    return run.job.run()


DATA = [no_duplicate_emission(), drain_emits_every_window()]

# The script every experiment's first batches follow, and the baseline runs without a fault.
BASELINE_SCRIPT = [[("a", 1), ("b", 2)], [("a", 12), ("b", 13)], [("a", 25), ("b", 27)]]


def baseline(spark: Any, pipeline: Pipeline) -> Trial:
    """The pipeline with no fault at all: its input, a run, the drain procedure, judged.

    If this trial is violated the pipeline (or its reference) is wrong by itself, and no
    fault experiment can say anything about it: ``spark-check`` reports that and stops.
    """
    with TrialRun(spark, pipeline) as run:
        for events in BASELINE_SCRIPT:
            run.job.add_input(events)
        failure = run.job.run()
        if failure is None and pipeline.complete_after_drain:
            failure = run.drain()
        if failure is not None:
            run.note(f"the query failed with no fault injected: {failure}")
        trial = run.judge(DATA)
        if trial.verdict == Verdict.VIOLATED and run.sentinel_missed:
            trial.message = f"{trial.message}; {run.sentinel_missed}"  # the sentinel's, likely
        if failure is not None and trial.verdict == Verdict.OK:
            trial.verdict, trial.message = "raised", "; ".join(run.notes)
        return trial


def stale_checkpoint_restore(
    spark: Any, pipeline: Pipeline, guarded: bool, *, fencing: bool = True
) -> Trial:
    with TrialRun(spark, pipeline) as run:
        job, sandbox = run.job, run.sandbox
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        sandbox.copy_tree("checkpoint/offsets", "saved/offsets")
        sandbox.copy_tree("checkpoint/commits", "saved/commits")
        run.recorder.log("nemesis", "fault.checkpoint-copy", batch=max(committed_batches(sandbox)))
        job.add_input([("a", 25), ("b", 27)])
        job.add_input([("a", 41), ("b", 44)])
        job.run()
        job.capture()
        for part in ("offsets", "commits"):
            sandbox.delete(f"checkpoint/{part}")
            sandbox.copy_tree(f"saved/{part}", f"checkpoint/{part}")
        run.recorder.log(
            "nemesis", "fault.checkpoint-restore", batch=max(committed_batches(sandbox))
        )
        _fenced_run(run, guarded, fencing=fencing)
        return run.judge([no_duplicate_emission()])


def drain(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    with TrialRun(spark, pipeline) as run:
        job = run.job
        job.add_input([("a", 1), ("b", 3)])
        job.add_input([("a", 14), ("b", 15)])
        job.add_input([("a", 23), ("b", 26)])
        if guarded:
            run.drain()
        else:
            job.request_drain("AvailableNow")
            job.run(available_now=True)
        return run.judge([drain_emits_every_window()])


def stop_start_race(
    spark: Any, pipeline: Pipeline, guarded: bool, *, rounds: int = 5, seed: int = 7
) -> Trial:
    """Stops and starts race each other while input arrives; every stop lands at a named point.

    ``seed`` fixes the sleeps, not the JVM. The point: the query idle, no input
    pending and every batch committed (the feeder is held, then
    ``processAllAvailable``), so no stop ever lands inside ``foreachBatch``.
    A stop that lands while the recording sink's ``batch.collect()`` runs kills
    the stream thread with Spark's own ``StackOverflowError`` (the
    ``stop-during-batch-job`` finding, at its own named point), and where the
    race put the stop decided the verdict: a flip. Here the two stoppers still
    race each other, and input arrives between the stops and the starts.
    """
    pace = random.Random(seed)
    with TrialRun(spark, pipeline, keyed_sink=guarded) as run:
        job = run.job
        job.add_input([("a", 1), ("b", 2)])
        feeding = threading.Lock()  # held by the driver while it stops: no input arrives then

        def feed() -> None:
            for second in (12, 23, 34, 45, 56, 67):
                time.sleep(0.15)
                with feeding:
                    job.add_input([("a", second), ("b", second + 1)])

        feeder = threading.Thread(target=feed, name="feeder")
        feeder.start()
        for _ in range(rounds):
            query = job.start()
            time.sleep(pace.uniform(0.05, 0.6))
            with feeding:
                failed = job.process(query)  # idle: every file read, every batch committed
                run.recorder.log(
                    "nemesis",
                    "fault.point",
                    point="idle, no input pending",
                    run=str(query.runId),
                    failed=failed,
                )
                racer = threading.Thread(target=query.stop, name="second-stopper")
                racer.start()
                job.stop(query)
                racer.join()
        feeder.join()
        failure = job.run()
        failure = failure or run.drain()
        run.note(f"{rounds} stop/start rounds, two stoppers each, every stop with the query idle")
        return run.judge(DATA, failing_at_end=failure is not None)


def slow_sink_stop(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    with TrialRun(spark, pipeline, keyed_sink=guarded) as run:
        job = run.job
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        rows_written = threading.Event()

        def slow_second_write(batch: Any, batch_id: int, rows: int) -> None:
            if rows == 0 or rows_written.is_set():
                return
            rows_written.set()
            run.recorder.log("sink", "sink.slow-write", batch=batch_id, rows=rows)
            sleep = "reflect('java.lang.Thread', 'sleep', cast(4000 as bigint))"
            batch.sparkSession.range(0, 1, 1, 1).selectExpr(sleep).collect()

        job.after_rows = slow_second_write
        job.add_input([("a", 25), ("b", 27)])
        query = job.start()
        if not rows_written.wait(60):
            run.note("no batch emitted rows: the stop never hit a slow write")
        run.recorder.log("nemesis", "fault.stop-during-sink")
        job.stop(query)
        job.after_rows = None
        failure = job.run() or run.drain()
        return run.judge(DATA, failing_at_end=failure is not None)


def _run_a_spark_job(batch: Any, batch_id: int, rows: int) -> None:
    """What many real sinks do inside foreachBatch: another Spark job (here a one-row count)."""
    batch.sparkSession.range(0, 1, 1, 1).count()


def stop_during_batch_job(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    """Stop the query while batch k's foreachBatch runs a Spark job of its own, restart, drain.

    The point: the first batch that writes a row, after its first row; Spark
    has written ``offsets/k`` and not ``commits/k``. The stop is issued from
    another thread and the batch released only once the stop has begun, so
    the stop always lands inside batch k; the batch then runs a Spark job,
    which the stop interrupts (Spark's ``StackOverflowError``). The guard stops
    only between batches (once ``commits/k`` exists and the query is idle).
    """
    with TrialRun(spark, pipeline) as run:
        job, sandbox = run.job, run.sandbox
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        gate = BatchGate(batch=None, rows=1)
        job.gate = gate
        job.after_rows = lambda b, i, n: (
            _run_a_spark_job(b, i, n) if i == gate.reached_batch else None
        )
        job.add_input([("a", 25), ("b", 27)])
        query = job.start()
        if not gate.wait():
            run.note("no batch wrote a row: the named point was never reached")
            gate.release()
        else:
            k = int(gate.reached_batch or 0)
            point = f"batch {k} after its first row (offsets/{k} written, commits/{k} not)"
            run.recorder.log(
                "nemesis",
                "fault.point",
                point=point,
                checked_on_files=at_offsets_not_committed(sandbox, k),
            )
            if guarded:
                gate.release()
                committed = wait_committed(sandbox, k)
                query.processAllAvailable()  # idle: no batch (and no job of one) is running
                run.recorder.log("guard", "guard.between-batches", batch=k, committed=committed)
                job.stop(query)
            else:
                stopper = stop_in_background(query)
                landed = stop_landed(query)
                run.recorder.log("nemesis", "fault.stop", point=point, landed=landed)
                gate.release()
                stopper.join()
                run.recorder.log("driver", "query.stop", run=str(query.runId))
            run.note(f"stopped at {point}" if not guarded else f"stopped after commits/{k}")
        job.gate = None
        job.after_rows = None
        failure = job.run() or run.drain()
        return run.judge(DATA, failing_at_end=failure is not None)


def stop_before_commit(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    """The process stops inside batch k, after its foreachBatch wrote and before Spark commits k.

    What it models: a driver that goes away (killed, its container stopped)
    between the sink's writes of batch k and Spark's ``commits/k``. The sink
    raises ``ProcessStopped`` as its last act (``faults.BatchAbandon``), so
    ``MicroBatchExecution`` never reaches ``markMicroBatchEnd`` and the
    checkpoint holds ``offsets/k`` without ``commits/k``, as after the kill. On
    restart ``populateStartOffsets`` re-runs batch k, every time: a sink that
    ignores ``batch_id`` stores it twice; the guard, a sink keyed on batch id,
    replaces the first attempt. (A graceful ``query.stop()`` at this point does
    not model it: whether ``commits/k`` is written then is a race inside Spark
    and Hadoop, so the batch re-ran in most runs but not all:
    docs/howto/spark-sinks.md, "Stable verdicts".)
    """
    with TrialRun(spark, pipeline, keyed_sink=guarded) as run:
        job, sandbox = run.job, run.sandbox
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        abandon = BatchAbandon(rows=1)
        job.abandon = abandon
        job.add_input([("a", 25), ("b", 27)])
        query = job.start()
        stopped = job.process(query)  # the batch fails: processAllAvailable raises
        job.stop(query)
        job.abandon = None
        k = abandon.reached_batch
        if k is None or stopped is None:
            run.note("no batch wrote a row: the process never stopped before a commit")
        else:
            committed = (sandbox.checkpoint / "commits" / str(k)).exists()
            point = f"batch {k} after its foreachBatch ran (offsets/{k} written, commits/{k} not)"
            run.recorder.log(
                "nemesis",
                "fault.process-stopped",
                point=point,
                checked_on_files=abandon.at_point,
                committed_after=committed,
            )
            run.note(f"the process stopped in {point}")
        failure = job.run() or run.drain()
        return run.judge(DATA, failing_at_end=failure is not None)


def kill_before_commit(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    """The driver process is killed (SIGKILL) in batch k after its foreachBatch wrote; restart.

    Batch k runs in a second driver of its own (``spark_integration.killed``), held once
    the user's sink has written and before ``commits/k``, and killed there with its JVM;
    the command restarts the query on the checkpoint left behind and drains. Judged, as
    every experiment, by the sink's content against the reference.
    """
    with TrialRun(spark, pipeline, keyed_sink=guarded) as run:
        job = run.job
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        job.add_input([("a", 25), ("b", 27)])
        found = killed.kill_at_point(str(pipeline.loaded_from), run.sandbox, keyed=guarded)
        k = found["batch"]
        if k is None:
            run.note(f"the second driver never reached the kill point: {found.get('said', '')}")
        else:
            point = f"batch {k} after its foreachBatch ran (offsets/{k} written, commits/{k} not)"
            run.recorder.log(
                "nemesis",
                "fault.killed",
                point=point,
                checked_on_files=bool(found["at_point"]),
                signal="SIGKILL",
            )
            run.note(f"the driver process was killed (SIGKILL) in {point}")
        failure = job.run() or run.drain()
        return run.judge(DATA, failing_at_end=failure is not None)


def _cleaner(target: Callable[[Sandbox], str]) -> TrialFn:
    def experiment(spark: Any, pipeline: Pipeline, guarded: bool, *, fencing: bool = True) -> Trial:
        with TrialRun(spark, pipeline) as run:
            job, sandbox = run.job, run.sandbox
            job.add_input([("a", 1), ("b", 2)])
            job.add_input([("a", 12), ("b", 13)])
            job.add_input([("a", 25), ("b", 27)])
            query = job.start()
            query.processAllAvailable()
            deleted = target(sandbox)
            sandbox.delete(deleted)
            run.recorder.log("nemesis", "fault.delete", path=deleted)
            job.add_input([("a", 36), ("b", 38)])
            failed_while_running = job.process(query)
            run.note(
                f"the running query failed: {failed_while_running}"
                if failed_while_running
                else f"after deleting {deleted} the running query went on"
            )
            job.stop(query)
            job.add_input([("a", 47), ("b", 49)])
            failure = _fenced_run(run, guarded, fencing=fencing)
            if failure is None and not run.recorder.history.of_kind("guard.refused"):
                run.note("the restart succeeded")
                failure = run.drain()
            elif failure is not None:
                run.note("the restart failed too")
            return run.judge(DATA, failing_at_end=failure is not None)

    return experiment


def _one_partition(sandbox: Sandbox) -> str:
    return "checkpoint/state/0/1"


def _latest_delta(sandbox: Sandbox) -> str:
    partition = sandbox.inside("checkpoint/state/0/1")
    deltas = sorted(partition.rglob("*.delta"), key=lambda p: (int(p.name.split(".")[0]), str(p)))
    newest = deltas[-1]  # one store's newest (a join keeps four stores per partition)
    sandbox.delete(str(newest.with_name(f".{newest.name}.crc").relative_to(sandbox.root)))
    return str(newest.relative_to(sandbox.root))


def _whole_checkpoint(sandbox: Sandbox) -> str:
    return "checkpoint"


SNAPSHOT_CONF = "spark.sql.streaming.stateStore.minDeltasForSnapshot"


def maintenance_snapshot(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    """Truncate the first snapshot maintenance writes, as it appears; restart from it; drain.

    ``minDeltasForSnapshot`` is 1 for this trial (Spark's default, 10, needs
    ten batches first), so maintenance's next pass snapshots every store.
    """
    saved = spark.conf.get(SNAPSHOT_CONF, None)
    spark.conf.set(SNAPSHOT_CONF, "1")
    try:
        with TrialRun(spark, pipeline) as run:
            job, sandbox = run.job, run.sandbox
            job.add_input([("a", 1), ("b", 2)])
            job.add_input([("a", 12), ("b", 13)])
            query = job.start()
            query.processAllAvailable()
            snapshot = wait_snapshot(sandbox)
            if snapshot is None:
                run.note("maintenance wrote no snapshot: the named point was never reached")
            else:
                relative = str(snapshot.relative_to(sandbox.root))
                size = snapshot.stat().st_size
                sandbox.inside(relative).write_bytes(b"")
                run.recorder.log(
                    "nemesis",
                    "fault.truncate",
                    path=relative,
                    bytes=size,
                    point="state-store maintenance wrote a snapshot",
                )
                run.note(f"truncated {relative} ({size} bytes) as maintenance wrote it")
            job.stop(query)
            job.add_input([("a", 25), ("b", 27)])
            failure = job.run() or run.drain()
            checkers = list(DATA)
            if pipeline.state_counts and failure is None:
                job.capture()
                job.capture_state()
                checkers.append(state_matches_inputs())
            return run.judge(checkers, failing_at_end=failure is not None)
    finally:
        if saved is None:
            spark.conf.unset(SNAPSHOT_CONF)
        else:
            spark.conf.set(SNAPSHOT_CONF, saved)


def transient_sink_failure(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    """The user's sink writes half of batch k and fails once; the query is restarted; drained.

    Judged at the user's sink (``read_output``): exactly once means no row stored twice
    (``no-duplicate-emission``) and every row there after the drain (``drain-completeness``).
    """
    with TrialRun(spark, pipeline) as run:
        job = run.job
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 12), ("b", 13)])
        job.run()
        job.transient = fault = TransientSinkFailure(rows=2)
        job.add_input([("a", 25), ("b", 27)])
        job.add_input([("a", 36), ("b", 38)])
        failed = job.run()
        job.transient = None
        if not fault.fired:
            run.note("no batch had 2 rows: the sink never failed")
        else:
            run.note(f"the sink failed once in batch {fault.reached_batch} ({failed}); restarted")
        run.recorder.log("nemesis", "fault.restart")
        failure = job.run() or run.drain()
        return run.judge(DATA, failing_at_end=failure is not None)


def replay_equivalence(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    with TrialRun(spark, pipeline) as run:
        job = run.job
        job.add_input([("a", 1), ("b", 2)])
        job.add_input([("a", 5), ("b", 13)])
        job.run()
        run.recorder.log("nemesis", "fault.restart")
        job.add_input([("a", 14), ("b", 25)])
        job.add_input([("a", 27), ("a", 31)])
        job.run()
        job.capture()
        job.capture_state()
        return run.judge([state_matches_inputs(), no_duplicate_emission()])


TrialFn = Callable[[Any, Pipeline, bool], Trial]

NO_DUPLICATE = "no-duplicate-emission"
FENCING = "checkpoint fencing"
KEYED_SINK = "sink keyed on batch id"
OWN_SINK = "the pipeline's own sink"
COMPLETE = "drain-completeness"


@dataclass(frozen=True)
class Experiment:
    name: str
    fault: str
    checkers: str
    trial: TrialFn
    guard: str | None  # None: raceproof offers no guard for this fault
    promises: tuple[str, ...] = ()  # the checkers the guard promises hold
    needs: frozenset[str] = frozenset()  # what a pipeline must have (Pipeline.applicable)
    # No fault, only input: a violated trial means the pipeline is wrong, and fails the gate.
    judges_pipeline: bool = False


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in [
        Experiment(
            name="double-stop-resume",
            fault="two stops; resume; the late stop lands",
            checkers="acknowledged-resume-holds, no-lost-update",
            trial=lifecycle.double_stop_resume,
            guard="stop bound to the run id",
            promises=("acknowledged-resume-holds", "no-lost-update"),
        ),
        Experiment(
            name="second-start",
            fault="a second start while a run is active",
            checkers="acknowledged-resume-holds",
            trial=lifecycle.second_start,
            guard="stopActiveRunOnRestart=false",
            promises=("acknowledged-resume-holds",),
        ),
        Experiment(
            name="stop-start-race",
            fault="threads race stop()/start() while input arrives",
            checkers="no-duplicate-emission, drain-completeness, no-uncaught-error",
            trial=stop_start_race,
            guard=KEYED_SINK,
            promises=(NO_DUPLICATE, COMPLETE),
            needs=frozenset({"drain"}),
        ),
        Experiment(
            name="stale-checkpoint-restore",
            fault="restore offsets/ and commits/ from an older copy, restart",
            checkers="no-duplicate-emission",
            trial=stale_checkpoint_restore,
            guard=FENCING,
            promises=(NO_DUPLICATE,),
        ),
        Experiment(
            name="cleaner-partition-state",
            fault="delete one partition's state while running",
            checkers="no-duplicate-emission, drain-completeness",
            trial=_cleaner(_one_partition),
            guard=None,
            needs=frozenset({"drain"}),
        ),
        Experiment(
            name="cleaner-latest-delta",
            fault="delete the newest state delta while running",
            checkers="no-duplicate-emission, drain-completeness",
            trial=_cleaner(_latest_delta),
            guard=None,
            needs=frozenset({"drain"}),
        ),
        Experiment(
            name="cleaner-whole-checkpoint",
            fault="delete the whole checkpoint while running",
            checkers="no-duplicate-emission, drain-completeness",
            trial=_cleaner(_whole_checkpoint),
            guard=FENCING,
            promises=(NO_DUPLICATE,),
            needs=frozenset({"drain"}),
        ),
        Experiment(
            name="drain",
            fault="stop with Trigger.AvailableNow (append mode, watermark)",
            checkers="drain-completeness",
            trial=drain,
            guard="drain procedure (sentinel)",
            promises=(COMPLETE,),
            needs=frozenset({"drain"}),
        ),
        Experiment(
            name="slow-sink-stop",
            fault="stop during a slow foreachBatch write, restart",
            checkers="no-duplicate-emission, drain-completeness",
            trial=slow_sink_stop,
            guard=KEYED_SINK,
            promises=(NO_DUPLICATE, COMPLETE),
            needs=frozenset({"drain", "batch-hook"}),
        ),
        Experiment(
            name="stop-before-commit",
            fault="the process stops in batch k after foreachBatch wrote (offsets/k written, "
            "commits/k not), restart",
            checkers="no-duplicate-emission, drain-completeness",
            trial=stop_before_commit,
            guard=KEYED_SINK,
            promises=(NO_DUPLICATE, COMPLETE),
            needs=frozenset({"drain", "batch-hook"}),
        ),
        Experiment(
            name="kill",
            fault="the driver process is killed (SIGKILL) in batch k after foreachBatch wrote "
            "(offsets/k written, commits/k not), restart",
            checkers="no-duplicate-emission, drain-completeness (at the pipeline's sink)",
            trial=kill_before_commit,
            guard=KEYED_SINK,
            promises=(NO_DUPLICATE, COMPLETE),
            needs=frozenset({"drain", "own-sink", "spec"}),
        ),
        Experiment(
            name="stop-during-batch-job",
            fault="stop() in batch k's foreachBatch after 1 row, and the batch then runs a "
            "Spark job of its own",
            checkers="no-uncaught-error, no-duplicate-emission, drain-completeness",
            trial=stop_during_batch_job,
            guard="stop only between batches (idle)",
            promises=("no-uncaught-error", NO_DUPLICATE, COMPLETE),
            needs=frozenset({"drain", "batch-hook"}),
        ),
        Experiment(
            name="maintenance-snapshot",
            fault="truncate the snapshot state-store maintenance just wrote, restart",
            checkers="no-duplicate-emission, drain-completeness, replay-equivalence",
            trial=maintenance_snapshot,
            guard=None,
            needs=frozenset({"drain"}),
        ),
        Experiment(
            name="generated-input",
            fault="no fault: drawn input, late at every level, out of order, duplicated",
            checkers="watermark-reference (every output Spark may give)",
            trial=generated.generated_input,
            guard=None,
            needs=frozenset({"drain", "lateness"}),
            judges_pipeline=True,
        ),
        Experiment(
            name="transient-sink-failure",
            fault="the pipeline's sink writes half of batch k and raises once; the query restarts",
            checkers="no-duplicate-emission, drain-completeness (at the pipeline's sink)",
            trial=transient_sink_failure,
            guard=OWN_SINK,
            promises=(NO_DUPLICATE, COMPLETE),
            needs=frozenset({"drain", "own-sink"}),
        ),
        Experiment(
            name="replay-equivalence",
            fault="stop and restart mid-stream (state recovered)",
            checkers="replay-equivalence",
            trial=replay_equivalence,
            guard=None,
            needs=frozenset({"state"}),
        ),
    ]
}


def applicable(pipeline: Pipeline) -> list[str]:
    """The experiments this pipeline has what they need for, in the table's order."""
    return [name for name, e in EXPERIMENTS.items() if pipeline.applicable(e.needs)]
