"""A simulated counterexample's order forced onto a real Spark trial: one story, in the model and on Spark.

``raceproof repro streams-checkpoint-resurrection --report-timeline --backend
spark`` (and ``samza-drain``) runs the scenario in simulation, then reads the
simulated history for the ops the story turns on and plays them, in the
simulated order, as the named fault points of ``spark_integration.faults`` on
a real local-mode query (the way ``--backend zookeeper`` forces the order
onto real threads). Each step of the real trial names the simulated op it
mirrors and whether the real point was reached, so the two are shown side by
side; the simulated history is judged by the model's checkers, the real one
by the shared dataflow checkers, and ``checker_map`` says which real checker
states the same property as which simulated one.

- **Checkpoint resurrection** (KAFKA-8187, ``models/kafka_streams``): the
  task's changelog records become input events of the windowed count (one
  state key per record); the first owner's checkpoints are committed
  micro-batches; the new owner's ``checkpoint.load`` is a restarted query
  held at the entry of its first batch (``offsets/k`` written, the state of
  that run not yet loaded: ``foreachBatch`` gets a lazy frame); the
  cleaner's ``dir.delete`` deletes ``checkpoint/state`` before or after that
  point, as the simulated order has it; the final ``restore.done`` is one
  more restart whose state store is read back through Spark's
  ``statestore`` source and judged by ``replay-equivalence``.
- **Drain** (SAMZA-2741, ``models/samza``): the messages the aggregating
  tasks processed become events of the windowed count (task = key, pane
  ``seq // window_size`` = one 10-second window), in files grouped by the
  simulated time they were processed; the job runs until the simulated
  drain's markers, then drains as the variant does: ``drain-1.8`` (panes not
  fired) is stock ``Trigger.AvailableNow``, ``drain`` (every pane fired) is
  the drain procedure with its sentinel, ``kill`` stops the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from raceproof.models.kafka_streams import TASK
from raceproof.sim import CheckerResult, RunOutcome
from raceproof.sim.dataflow import (
    drain_emits_every_window,
    no_duplicate_emission,
    state_matches_inputs,
)
from raceproof.sim.history import History, Op
from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration import session
from raceproof.spark_integration.faults import WAIT_S, BatchGate, at_offsets_not_committed
from raceproof.spark_integration.job import committed_batches
from raceproof.spark_integration.pipelines.windowed_count import WINDOW_S, WindowedCount
from raceproof.spark_integration.trial import Trial, TrialRun

SIM_WINDOW_MS = 10_000  # drain story: messages processed in one 10 s of simulated time -> one file


class NoSparkCounterpart(ValueError):
    """The simulated variant has no counterpart on Spark (a usage error)."""


@dataclass
class Step:
    """One step of the story: the simulated op and the Spark point it became."""

    sim_index: int | None
    sim: str
    spark: str
    reached: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "sim_index": self.sim_index,
            "sim": self.sim,
            "spark": self.spark,
            "reached": self.reached,
        }


@dataclass
class ForcedTrial:
    """The real trial and its steps; the attributes ``repro --backend`` reads of any real run."""

    story: str
    trial: Trial
    steps: list[Step]
    checker_map: dict[str, str]
    errors: list[str] = field(default_factory=list)

    @property
    def history(self) -> History:
        return self.trial.history

    @property
    def verdicts(self) -> list[CheckerResult]:
        return self.trial.verdicts

    @property
    def forced(self) -> int:
        return len(self.steps)

    @property
    def followed(self) -> int:
        return sum(1 for s in self.steps if s.reached)

    @property
    def skipped(self) -> int:
        return self.forced - self.followed

    @property
    def diverged(self) -> str | None:
        missed = [s for s in self.steps if not s.reached]
        return f"not reached on Spark: {missed[0].spark}" if missed else None

    @property
    def status(self) -> str:
        """``violated`` only for a silent violation; a query that failed loudly is ``ok`` (told)."""
        return Verdict.VIOLATED if self.trial.verdict == Verdict.VIOLATED else Verdict.OK

    def side_by_side(self) -> str:
        """Each step's simulated op beside the Spark point it became; the trial's outcome under them.

        A column table (``columns_text``): the op's index right-aligned, each
        header over its own column.
        """
        from raceproof.reports.terminal import columns_text

        rows = [("", f"simulated ({self.story})", "", "Spark")]
        for s in self.steps:
            where = f"#{s.sim_index}" if s.sim_index is not None else "-"
            mark = "" if s.reached else "   [NOT REACHED]"
            rows.append((where, s.sim, "->", s.spark + mark))
        table = columns_text(rows, min_widths=(5,), right=(0,)).splitlines()
        lines = [f"  {line}" for line in table]
        lines.append(f"  Spark trial: {self.trial.verdict}: {self.trial.message}")
        return "\n".join(lines)


def _describe(op: Op, width: int = 72) -> str:
    fields = " ".join(f"{k}={v}" for k, v in sorted(op.fields.items()))
    text = f"{op.actor} {op.kind} {fields}".strip()
    return text if len(text) <= width else text[: width - 3] + "..."


def _short(error: str) -> str:
    """A Spark error as its innermost error class when it has one (``[CANNOT_LOAD_...]``)."""
    classes = re.findall(r"\[([A-Z][A-Z0-9_.]+)\]", error)
    return f"[{classes[-1]}]" if classes else error[:100]


# -- checkpoint resurrection (KAFKA-8187) ---------------------------------------------------


def _held_or_failed(gate: BatchGate, query: Any) -> bool:
    """Until the batch thread is held at the gate (True) or the query ended before it (False)."""
    for _ in range(int(WAIT_S / 0.2)):
        if gate.wait(0.2):
            return True
        if not query.isActive:
            return gate.wait(0)
    return False


def _record_event(op: Op) -> tuple[str, int]:
    """A changelog record as an input event: its own key, all in the first window (none closes)."""
    offset = int(op.get("offset"))
    return str(op.get("key")), offset % WINDOW_S


@dataclass
class _ResurrectionStory:
    """The ops of a simulated KAFKA-8187 run that the Spark trial plays, found once."""

    history: History
    appends: list[Op]  # the task's changelog records
    restores: list[Op]
    end: int  # the last restore: ops after it are not part of the story
    load: Op  # the checkpoint load the final owner's store rests on
    delete: Op | None  # the cleaner's deletion of the task's folder
    writes: list[int]  # offsets of the checkpoints on disk when it loads

    @property
    def offset(self) -> int:
        return max(self.writes, default=0)

    @property
    def after(self) -> list[Op]:
        """Records appended at or past the loaded checkpoint, before the last restore."""
        return [
            op
            for op in self.appends
            if int(op.get("offset")) >= self.offset and op.index < self.end
        ]

    def first_write(self) -> Op | None:
        return next(
            (
                op
                for op in self.history.of_kind("checkpoint.write")
                if op.get("task") == TASK and int(op.get("offset")) > 0
            ),
            None,
        )

    def seeks(self) -> list[Op]:
        """The final owner's seeks after its load: the batch that runs over the loaded state."""
        return [
            op
            for op in self.history.of_kind("seek")
            if self.load.index < op.index < self.end and op.actor == self.load.actor
        ]


def _resurrection_story(history: History, variant: str) -> _ResurrectionStory:
    appends = [op for op in history.of_kind("changelog.append") if op.get("task") == TASK]
    restores = history.of_kind("restore.done")
    end = restores[-1].index if restores else len(history)
    loads = [
        op for op in history.of_kind("checkpoint.load") if op.get("task") == TASK and op.index < end
    ]
    if not loads or not appends:
        raise NoSparkCounterpart(
            f"the simulated run of {variant} never loads a checkpoint of {TASK}: no story to force"
        )
    load = loads[-1]
    deletes = [
        op for op in history.of_kind("dir.delete") if op.get("task") == TASK and op.index < end
    ]
    delete = next((op for op in deletes if op.index > load.index), deletes[-1] if deletes else None)
    # The checkpoints on disk when it loads: each one a committed micro-batch on Spark.
    writes = sorted(
        {
            int(op.get("offset"))
            for op in history.of_kind("checkpoint.write")
            if op.get("task") == TASK and op.index < load.index and int(op.get("offset")) > 0
        }
    )
    return _ResurrectionStory(
        history=history,
        appends=appends,
        restores=restores,
        end=end,
        load=load,
        delete=delete,
        writes=writes,
    )


def _delete_state(run: TrialRun, delete: Op, steps: list[Step]) -> None:
    run.sandbox.delete("checkpoint/state")
    run.recorder.log("nemesis", "fault.delete", path="checkpoint/state", sim_index=delete.index)
    steps.append(Step(delete.index, _describe(delete), "deleted checkpoint/state"))


def _first_owner(run: TrialRun, story: _ResurrectionStory, steps: list[Step]) -> int:
    """Each checkpoint the first owner wrote as a committed micro-batch; the last batch's id."""
    low = 0
    for high in story.writes:
        run.job.add_input(
            [_record_event(op) for op in story.appends if low <= int(op.get("offset")) < high]
        )
        low = high
    run.job.run()
    last = max(committed_batches(run.sandbox), default=-1)
    first = story.first_write()
    steps.append(
        Step(
            first.index if first else None,
            f"checkpoints of {TASK} up to offset {story.offset}",
            f"{story.offset} records committed in batches 0..{last}",
        )
    )
    return last


def _held_restart(
    run: TrialRun, story: _ResurrectionStory, steps: list[Step], last: int
) -> str | None:
    """The new owner's load as a restart held at its first batch, the deletion placed around it.

    Returns the failure of the restarted batch, if it failed.
    """
    job, load, delete = run.job, story.load, story.delete
    after = story.after
    job.add_input([_record_event(op) for op in after[: len(after) // 2]] or [("late", 0)])
    if delete is not None and delete.index < load.index:
        _delete_state(run, delete, steps)
    gate = BatchGate(batch=last + 1, rows=0)
    job.gate = gate
    query = job.start()
    reached = _held_or_failed(gate, query)
    files = at_offsets_not_committed(run.sandbox, last + 1) if reached else False
    run.recorder.log(
        "nemesis",
        "fault.point",
        point=f"entry of batch {last + 1}",
        reached=reached,
        checked_on_files=files,
        sim_index=load.index,
    )
    steps.append(
        Step(
            sim_index=load.index,
            sim=_describe(load),
            spark=f"restarted query holds at the entry of batch {last + 1} (offsets/"
            f"{last + 1} written, commits/{last + 1} not, its state not loaded)",
            reached=reached and files,
        )
    )
    if delete is not None and delete.index > load.index:
        _delete_state(run, delete, steps)
    gate.release()
    failure = job.process(query)
    job.stop(query)
    job.gate = None
    recreated = delete is not None and run.sandbox.checkpoint.joinpath("state").exists()
    seeks = story.seeks()
    if seeks and reached:
        outcome = f"failed: {_short(failure)}" if failure else "committed"
        steps.append(
            Step(
                seeks[0].index,
                _describe(seeks[0]),
                f"batch {last + 1} ran over the state: {outcome}"
                + ("; checkpoint/state re-created" if recreated else ""),
            )
        )
    elif seeks:
        steps.append(
            Step(
                sim_index=seeks[0].index,
                sim=_describe(seeks[0]),
                spark=f"not reached: the query failed before batch {last + 1}: "
                f"{_short(failure or 'no error')}",
                reached=False,
            )
        )
    return failure


def _final_restart(
    run: TrialRun, story: _ResurrectionStory, steps: list[Step], *, last: int, failure: str | None
) -> str | None:
    """The rest of the records and the final restore, its state store read back; the failure."""
    if failure is None:
        run.job.add_input(
            [_record_event(op) for op in story.after[len(story.after) // 2 :]] or [("late", 1)]
        )
        failure = run.job.run()
        if failure is not None:
            steps[-1].spark += f"; the restart failed: {_short(failure)}"
        run.job.capture()
        try:
            run.job.capture_state()
        except Exception as exc:  # the state data source could not read what is left
            run.note(f"the state store could not be read back: {str(exc).splitlines()[0]}")
    if story.restores:
        restore = story.restores[-1]
        steps.append(
            Step(
                sim_index=restore.index,
                sim=_describe(restore),
                spark="restart; the state store read back (statestore source) after every batch"
                if failure is None
                else f"not run: the query failed loudly at batch {last + 1}",
                reached=failure is None,
            )
        )
    return failure


def streams_resurrection(
    spark: Any | None, variant: str, config: Any, simulated: RunOutcome
) -> ForcedTrial:
    """KAFKA-8187's order on a real windowed count (``spark`` None: the shared local session)."""
    story = _resurrection_story(simulated.history, variant)
    steps: list[Step] = []
    with TrialRun(spark or session.spark_session(), WindowedCount()) as run:
        last = _first_owner(run, story, steps)
        failure = _held_restart(run, story, steps, last)
        failure = _final_restart(run, story, steps, last=last, failure=failure)
        trial = run.judge(
            [state_matches_inputs(), no_duplicate_emission()], failing_at_end=failure is not None
        )
    return ForcedTrial(
        story="KAFKA-8187",
        trial=trial,
        steps=steps,
        checker_map={
            "checkpoint-soundness": "replay-equivalence",
            "no-record-lost": "replay-equivalence",
            "no-stale-read": "replay-equivalence",
        },
        errors=[failure] if failure else [],
    )


# -- drain (SAMZA-2741) ---------------------------------------------------------------------

DRAIN_VARIANTS = {
    "drain-1.8": "stock Trigger.AvailableNow (append mode: windows the watermark has not passed "
    "are never emitted)",
    "drain": "the drain procedure (a sentinel event past every window, then AvailableNow)",
    "kill": "the query stopped (no drain)",
}


def _message_event(op: Op, window_size: int) -> tuple[str, int]:
    """A stage-2 message as an event: its task is the key, pane ``seq // window_size`` one window."""
    seq = int(op.get("seq"))
    return str(op.actor), (seq // window_size) * WINDOW_S + seq % window_size


def _drain_processed(
    run: TrialRun, history: History, stop: Op, window_size: int, steps: list[Step]
) -> None:
    """The stage-2 messages processed before the stop as micro-batches; those in flight as input."""
    stage2 = [op for op in history.of_kind("process") if str(op.get("ssp")).startswith("int/")]
    before = [op for op in stage2 if op.index < stop.index]
    groups: dict[int, list[Op]] = {}
    for op in before:
        groups.setdefault(op.time_ms // SIM_WINDOW_MS, []).append(op)
    for ops in groups.values():
        run.job.add_input([_message_event(op, window_size) for op in ops])
    run.job.run()
    fired = sum(1 for op in history.of_kind("pane.fire") if op.index < stop.index)
    steps.append(
        Step(
            before[0].index if before else None,
            f"{len(before)} stage-2 messages processed, {fired} panes fired",
            f"{len(groups)} files, one micro-batch each; "
            f"{len(committed_batches(run.sandbox))} batches committed",
        )
    )
    requests = history.of_kind("drain.request")
    if requests:
        steps.append(
            Step(
                requests[0].index,
                _describe(requests[0]),
                "(the drain takes effect at the markers below)",
            )
        )
    in_flight = [op for op in stage2 if op.index > stop.index]
    if in_flight:
        run.job.add_input([_message_event(op, window_size) for op in in_flight])


def _drain_stop(run: TrialRun, variant: str, stop: Op, steps: list[Step]) -> str | None:
    """The stop as the variant makes it: killed, drained, or stock AvailableNow; its failure."""
    job = run.job
    if variant == "kill":
        query = job.start()
        job.process(query)
        job.request_drain("kill")
        job.stop(query)
        steps.append(Step(stop.index, _describe(stop), "query.stop() (no drain)"))
        return None
    if variant == "drain":
        failure = run.drain()
        steps.append(
            Step(
                stop.index,
                _describe(stop),
                "drain procedure: sentinel past every window, then AvailableNow",
            )
        )
        return failure
    job.request_drain("AvailableNow")
    failure = job.run(available_now=True)
    steps.append(Step(stop.index, _describe(stop), "Trigger.AvailableNow (stock drain)"))
    return failure


def samza_drain(spark: Any | None, variant: str, config: Any, simulated: RunOutcome) -> ForcedTrial:
    """SAMZA-2741's drain on a real windowed count (``spark`` None: the shared local session)."""
    if variant not in DRAIN_VARIANTS:
        raise NoSparkCounterpart(
            f"samza-drain variant {variant!r} has no Spark counterpart; valid: "
            + ", ".join(DRAIN_VARIANTS)
        )
    history = simulated.history
    stops = history.of_kind("drain.inject", "kill")
    if not stops:
        raise NoSparkCounterpart(f"the simulated run of {variant} never drains nor kills")
    window_size = int(config.window_size)
    steps: list[Step] = []
    with TrialRun(spark or session.spark_session(), WindowedCount()) as run:
        _drain_processed(run, history, stops[0], window_size, steps)
        failure = _drain_stop(run, variant, stops[0], steps)
        finals = history.of_kind("final")
        if finals:
            unfired = finals[-1].get("unfired_pane_seqs") or []
            windows = sorted({int(s) // window_size for s in unfired})
            steps.append(
                Step(
                    finals[-1].index,
                    f"upgrade: unfired panes of messages {unfired}",
                    f"drain-completeness judged on the sink (panes {windows} are "
                    f"windows starting at second {[w * WINDOW_S for w in windows]})",
                )
            )
        trial = run.judge(
            [drain_emits_every_window(), no_duplicate_emission()],
            failing_at_end=failure is not None,
        )
    return ForcedTrial(
        story="SAMZA-2741",
        trial=trial,
        steps=steps,
        checker_map={"drain-completeness": "drain-completeness"},
        errors=[failure] if failure else [],
    )
