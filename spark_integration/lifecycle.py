"""Query lifecycles on real Spark, judged by the double-STOP checkers of ``sim.lifecycle``.

Clients start ("resume") and stop a streaming query on one checkpoint. Each
start and stop is written as the lifecycle ops the Brooklin model writes
(``status.write`` with the run a client decided on as ``version_read`` and the
run it actually hit as ``version_overwritten``, ``stop.request``,
``resume.ack``, ``final``), so the very same checkers judge them.

- ``double-stop-resume``: two clients stop the query; one stop lands, the
  query is resumed, then the second, late stop lands. Stock: the late stop is
  applied by name to whatever run is active, as a controller that keeps
  queries by name does. Guard: a stop carries the run id its client saw and
  does nothing if that run is gone (the analogue of Brooklin's conditional
  write).
- ``second-start``: a second client starts the query while a run is active.
  Stock: ``spark.sql.streaming.stopActiveRunOnRestart`` true (the default):
  the new start silently stops the live run. Guard: false, the start raises.
"""

from __future__ import annotations

from typing import Any

from raceproof.sim.lifecycle import acknowledged_resume_holds, legal_transitions, no_lost_update
from raceproof.spark_integration.job import short_error
from raceproof.spark_integration.pipeline import Pipeline
from raceproof.spark_integration.trial import Trial, TrialRun

ACTIVE, STOPPED = "ACTIVE", "STOPPED"
CHECKERS = [
    legal_transitions("legal-transitions", [(STOPPED, ACTIVE), (ACTIVE, STOPPED)]),
    acknowledged_resume_holds("acknowledged-resume-holds", ACTIVE),
    no_lost_update("no-lost-update"),
]


class Controller:
    """Starts and stops one query for named clients, writing the lifecycle ops."""

    def __init__(self, run: TrialRun) -> None:
        self.run = run
        self.log = run.recorder.log
        self.handles: dict[str, Any] = {}  # run id -> query handle
        self.entity_run: dict[str, str] = {}  # entity -> the run its last start made

    def active_run(self) -> str | None:
        ids = {str(q.runId) for q in self.run.spark.streams.active}
        return next((r for r in sorted(self.handles) if r in ids), None)

    def resume(self, client: str, entity: str) -> str:
        before = self.entity_run.get(entity)
        if before is not None and not self.handles[before].isActive:
            before = None
        query = self.run.job.start(client=client)
        self.handles[str(query.runId)] = query
        self.entity_run[entity] = str(query.runId)
        self.log(
            client,
            "status.write",
            entity=entity,
            to=ACTIVE,
            version_read=None,
            version_overwritten=before,
            **{"from": ACTIVE if before else STOPPED},
        )
        self.log(client, "resume.ack", entity=entity, run=str(query.runId))
        return str(query.runId)

    def request_stop(self, client: str, entity: str) -> str | None:
        """The client decides to stop; the run it sees is what its stop is based on."""
        seen = self.active_run()
        self.log(client, "stop.request", entity=entity, run=seen)
        return seen

    def stop_by_name(self, client: str, entity: str, seen: str | None) -> None:
        """Stop whatever run of the query is active now."""
        current = self.active_run()
        if current is not None:
            self.run.job.stop(self.handles[current], client=client)
        self.log(
            client,
            "status.write",
            entity=entity,
            to=STOPPED,
            version_read=seen,
            version_overwritten=current,
            **{"from": ACTIVE if current else STOPPED},
        )

    def stop_by_run(self, client: str, entity: str, seen: str | None) -> None:
        """Stop the run the client saw, and nothing else."""
        current = self.active_run()
        if seen is None or current != seen:
            self.log(client, "stop.skipped", entity=entity, seen=seen, active=current)
            return
        self.stop_by_name(client, entity, seen)

    def observe(self, entity: str, run_id: str) -> None:
        """Record a run that stopped without any client asking (Spark did it)."""
        if self.handles[run_id].isActive:
            return
        self.log(
            "spark",
            "status.write",
            entity=entity,
            to=STOPPED,
            version_read=None,
            version_overwritten=run_id,
            **{"from": ACTIVE},
        )

    def final(self) -> None:
        """Statuses at the end: an entity is ACTIVE while the run its last start made is."""
        statuses = {
            entity: ACTIVE if self.handles[run_id].isActive else STOPPED
            for entity, run_id in sorted(self.entity_run.items())
        }
        self.log("driver", "final", statuses=statuses)


def double_stop_resume(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    with TrialRun(spark, pipeline) as run:
        control, job = Controller(run), run.job
        job.add_input([("a", 1), ("b", 2)])
        first = control.resume("client-1", "q")
        control.handles[first].processAllAvailable()
        seen_by_1 = control.request_stop("client-1", "q")
        seen_by_2 = control.request_stop("client-2", "q")
        control.stop_by_run("client-1", "q", seen_by_1)
        second = control.resume("client-1", "q")
        late_stop = control.stop_by_run if guarded else control.stop_by_name
        late_stop("client-2", "q", seen_by_2)
        job.add_input([("a", 12), ("b", 13)])
        if control.handles[second].isActive:
            control.handles[second].processAllAvailable()
        control.final()
        run.note(
            "the late stop was based on run "
            f"{seen_by_2}; the resumed run {second} is "
            + ("still active" if control.handles[second].isActive else "stopped")
        )
        return run.judge(CHECKERS)


def second_start(spark: Any, pipeline: Pipeline, guarded: bool) -> Trial:
    conf = "spark.sql.streaming.stopActiveRunOnRestart"
    spark.conf.set(conf, "false" if guarded else "true")
    try:
        with TrialRun(spark, pipeline) as run:
            control, job = Controller(run), run.job
            run.recorder.log("driver", "config", key=conf, value=spark.conf.get(conf))
            job.add_input([("a", 1), ("b", 2)])
            first = control.resume("client-1", "q@client-1")
            control.handles[first].processAllAvailable()
            try:
                control.resume("client-2", "q@client-2")
            except Exception as exc:  # Spark refused the second start
                run.recorder.log("client-2", "start.refused", error=short_error(exc))
                run.note(f"the second start was refused: {short_error(exc)}")
            control.observe("q@client-1", first)
            control.final()
            return run.judge(CHECKERS)
    finally:
        spark.conf.set(conf, "true")
