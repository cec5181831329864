"""Faults at named points of a query's life, so a trial lands its fault at the same place every time.

A sleep puts a fault somewhere in a window that moves with the machine's
load; a named point does not. The points use Spark's own hooks:

- ``BatchGate``: the recording ``foreachBatch`` sink calls the gate when
  batch k starts and after each of its rows; a gate armed for (k, n) holds
  the batch thread there until the driver has done its fault and released it.
  At the entry of batch k (n = 0), Spark has written ``offsets/k`` and not yet
  ``commits/k``: the point "after batch k's offsets are written and before
  its commit", which ``at_offsets_not_committed`` checks on the checkpoint
  files themselves.
- ``wait_committed``: the checkpoint's ``commits/k`` file has appeared (with
  no input pending, the query is between two batches).
- ``BatchAbandon``: the process stops inside batch k, after its
  ``foreachBatch`` body has run and before Spark writes ``commits/k``: the
  sink raises ``ProcessStopped`` as its last act, so the batch fails and
  ``MicroBatchExecution`` never reaches ``markMicroBatchEnd`` (the commit).
  The checkpoint is then what a driver killed at that instant leaves:
  ``offsets/k`` without ``commits/k``, so a restart re-runs batch k
  (``populateStartOffsets``). A graceful ``query.stop()`` at the same point
  does not model this: whether it lets ``commits/k`` be written is a race
  inside Spark and Hadoop (docs/howto/spark-sinks.md, "Stable verdicts").
- ``TransientSinkFailure``: the user's own sink fails once in the middle of
  a batch: it is handed the first half of batch k's rows (which it writes),
  then the batch raises, as a sink whose connection drops mid-write does.
  Spark fails the batch (``offsets/k`` written, ``commits/k`` not), so the
  restart re-runs it whole: the retry every production sink sees.
- ``stop_landed``: a stop issued from another thread has begun (the query is
  no longer active), so the driver releases a held batch only once the stop
  is certain to hit it.
- ``wait_snapshot``: state-store maintenance is running: a ``.snapshot`` file
  has just appeared in the state directory. Only the maintenance task writes
  snapshots (HDFSBackedStateStoreProvider ``doMaintenance``), on its own
  thread every ``spark.sql.streaming.stateStore.maintenanceInterval``
  (default 60 s), once a store has ``minDeltasForSnapshot`` deltas since its
  last snapshot; the first one seen is returned at once, while the pass may
  still be writing the other partitions'.

Every wait is bounded; a point that is not reached is a note in the trial,
never a hang.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raceproof.spark_integration.sandbox import Sandbox

WAIT_S = 120.0
POLL_S = 0.02


@dataclass
class BatchGate:
    """Holds the batch thread at a named point until ``release``.

    ``rows`` 0: at the entry of batch ``batch``; ``rows`` n: after the n-th row
    the sink wrote of batch ``batch`` (``batch`` None: the first batch that
    writes n rows).
    """

    batch: int | None = None
    rows: int = 0
    reached_batch: int | None = None
    _reached: threading.Event = field(default_factory=threading.Event)
    _released: threading.Event = field(default_factory=threading.Event)

    def at(self, batch_id: int, rows_done: int) -> None:
        """Called by the sink at batch entry (rows_done 0) and after each row it wrote."""
        if self._reached.is_set() or rows_done != self.rows:
            return
        if self.batch is None and rows_done == 0:
            return
        if self.batch is None or batch_id == self.batch:
            self.reached_batch = batch_id
            self._reached.set()
            self._released.wait(WAIT_S)

    def wait(self, timeout_s: float = WAIT_S) -> bool:
        """Whether the batch thread reached the point (it is held there now)."""
        return self._reached.wait(timeout_s)

    def release(self) -> None:
        self._released.set()


class ProcessStopped(RuntimeError):
    """Raised in ``foreachBatch`` by ``BatchAbandon``: the process stops before Spark commits the batch."""


@dataclass
class BatchAbandon:
    """The process stops at the end of the first batch that wrote at least ``rows`` rows.

    ``after`` is the sink's last call for a batch; once armed and reached it
    records the batch, whether ``offsets/k`` is written and ``commits/k`` is not
    (on the files), and raises ``ProcessStopped``. It fires once.
    """

    rows: int = 1
    reached_batch: int | None = None
    at_point: bool = False

    def after(self, batch_id: int, rows_done: int, sandbox: Sandbox) -> None:
        if self.reached_batch is not None or rows_done < self.rows:
            return
        self.reached_batch = batch_id
        self.at_point = at_offsets_not_committed(sandbox, batch_id)
        raise ProcessStopped(
            f"raceproof fault: the process stops in batch {batch_id} after its foreachBatch ran, "
            f"before Spark commits it (commits/{batch_id})"
        )


class SinkFailedOnce(RuntimeError):
    """Raised in ``foreachBatch`` by ``TransientSinkFailure``: the sink failed mid-batch."""


@dataclass
class TransientSinkFailure:
    """The first batch with at least ``rows`` rows: its sink writes half, then the batch raises."""

    rows: int = 2
    reached_batch: int | None = None
    fired: bool = False

    def armed(self, batch_id: int, rows: int) -> bool:
        """Whether this batch is the one to fail (it is remembered; it fails once)."""
        if self.reached_batch is None and not self.fired and rows >= self.rows:
            self.reached_batch = batch_id
        return self.reached_batch == batch_id and not self.fired

    def fire(self) -> bool:
        if self.fired:
            return False
        self.fired = True
        return True

    def failure(self) -> SinkFailedOnce:
        return SinkFailedOnce(
            f"raceproof fault: the sink failed in batch {self.reached_batch} after writing half "
            "of its rows (a transient failure: the restart retries the batch)"
        )


def _poll(done: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(POLL_S)
    return bool(done())


def at_offsets_not_committed(sandbox: Sandbox, batch: int) -> bool:
    """``offsets/batch`` is written and ``commits/batch`` is not (checked on the files)."""
    offsets = sandbox.checkpoint / "offsets" / str(batch)
    commits = sandbox.checkpoint / "commits" / str(batch)
    return offsets.exists() and not commits.exists()


def wait_committed(sandbox: Sandbox, batch: int, timeout_s: float = WAIT_S) -> bool:
    """Until the checkpoint's ``commits/batch`` appears."""
    return _poll(lambda: (sandbox.checkpoint / "commits" / str(batch)).exists(), timeout_s)


def wait_snapshot(sandbox: Sandbox, timeout_s: float = WAIT_S) -> Path | None:
    """Until maintenance has written a state ``.snapshot`` (its hidden temp files are skipped)."""
    found: list[Path] = []

    def written() -> bool:
        try:
            snapshots = sorted(
                p
                for p in (sandbox.checkpoint / "state").rglob("*.snapshot")
                if not p.name.startswith(".")
            )
        except OSError:  # a temp file renamed away while listing
            return False
        found.extend(snapshots[:1])
        return bool(snapshots)

    return found[0] if _poll(written, timeout_s) else None


def stop_in_background(query: Any) -> threading.Thread:
    """Issue ``query.stop()`` from another thread (it blocks until the query thread ends)."""
    stopper = threading.Thread(target=query.stop, name="fault-stopper", daemon=True)
    stopper.start()
    return stopper


def stop_landed(query: Any, timeout_s: float = WAIT_S) -> bool:
    """Until a stop has begun: Spark marks the query terminated before it interrupts its thread."""
    return _poll(lambda: not query.isActive, timeout_s)
