"""The ``kill`` experiment: a driver process really killed (SIGKILL) after its sink wrote batch k.

Why it exists: ``stop-before-commit`` models a driver that goes away between
the sink's writes of batch k and Spark's ``commits/k`` by failing the batch
from inside ``foreachBatch``; this experiment does the thing itself. The
trial's first batches run in the command's own Spark session; then a second
driver, a Python process of its own with its own JVM (``python -m
raceproof.spark_integration.killed SPEC SANDBOX keyed|plain``), loads the same
pipeline by its ``--pipeline`` spec, starts the query on the trial's
checkpoint and sink, and holds batch k at the named point once its
``foreachBatch`` has run: the user's sink has written, ``offsets/k`` is
written, ``commits/k`` is not (``KillPoint`` writes what it found to
``sink/killed-at``). The command then kills that process's whole group with
SIGKILL (the driver, its JVM and its Python workers: no shutdown hook runs),
restarts the query in its own session on the checkpoint left behind, drains,
and judges the sink's content against the reference, as every experiment is
judged. A pipeline made in-process rather than loaded by a spec has no
counterpart in another process: the experiment does not apply to it.

The second driver's temporary files (its JVM log, Spark's local folders) live in
the trial's sandbox (``TMPDIR`` and ``SPARK_LOCAL_DIRS``), so a kill leaves
nothing behind once the sandbox is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from raceproof.runs import processes
from raceproof.spark_integration.faults import WAIT_S, BatchAbandon, at_offsets_not_committed
from raceproof.spark_integration.sandbox import Sandbox
from raceproof.spark_integration.standalone import group_alive

MARKER = "sink/killed-at"  # written by the second driver at the point, read by the command
HOLD_S = 600.0  # how long the second driver holds the batch (it is killed long before)
CHILD_TMP = "driver-tmp"


class KillPoint(BatchAbandon):
    """Holds the first batch that wrote at least ``rows`` rows once its foreachBatch ran."""

    def after(self, batch_id: int, rows_done: int, sandbox: Sandbox) -> None:
        if self.reached_batch is not None or rows_done < self.rows:
            return
        self.reached_batch = batch_id
        self.at_point = at_offsets_not_committed(sandbox, batch_id)
        found = {"batch": batch_id, "at_point": self.at_point}
        staged = sandbox.inside("sink").joinpath(".killed-at.tmp")
        staged.write_text(json.dumps(found))
        staged.replace(sandbox.inside("sink") / "killed-at")
        threading.Event().wait(HOLD_S)  # the process is killed here


def driver_main(argv: list[str]) -> int:
    """The second driver: the query on the trial's checkpoint until the kill lands at batch k."""
    from raceproof.spark_integration.job import PipelineJob, Recorder
    from raceproof.spark_integration.pipeline import load_pipeline, settings_of
    from raceproof.spark_integration.session import spark_session

    spec, root, sink = argv
    pipeline = load_pipeline(spec)
    spark = spark_session(settings_of([pipeline]))
    job = PipelineJob(
        spark,
        sandbox=Sandbox(Path(root)),
        recorder=Recorder(),
        pipeline=pipeline,
        keyed_sink=sink == "keyed",
    )
    job.abandon = KillPoint(rows=1)
    failed = job.run()
    print(f"the query ended before the kill point: {failed or 'no batch wrote a row'}")
    return 0


def kill_at_point(spec: str, sandbox: Sandbox, *, keyed: bool) -> dict[str, Any]:
    """Run the second driver until its batch k is held at the point, then SIGKILL its group.

    What was found: ``batch`` (None if the point was never reached), ``at_point``
    (``offsets/k`` written, ``commits/k`` not, on the files) and ``said`` (what the
    second driver printed, when it ended by itself).
    """
    tmp = sandbox.root / CHILD_TMP
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp), SPARK_LOCAL_DIRS=str(tmp))
    argv = [sys.executable, "-m", __name__, spec, str(sandbox.root), "keyed" if keyed else "plain"]
    output = tmp / "driver.out"
    with output.open("wb") as said:
        child = processes.spawn(argv, env=env, stdout=said, stderr=subprocess.STDOUT)
    marker = sandbox.root / MARKER
    deadline = time.monotonic() + WAIT_S * 2  # the second driver starts a JVM of its own
    try:
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        kill_group(child)
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    return {"batch": None, "at_point": False, "said": output.read_text(errors="replace")[-2000:]}


def kill_group(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the second driver's whole group (no shutdown hook runs), until it is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    processes.stop(child)  # reaps the leader, deregisters it
    deadline = time.monotonic() + WAIT_S
    while group_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(driver_main(sys.argv[1:]))
