"""Minimal reproduction: whether a batch stopped inside ``foreachBatch`` commits is a race.

Run: ``python docs/howto/spark_stop_commit_race.py [TRIALS]`` (pyspark 4.x,
Java 17, no native Hadoop library). Each trial starts a file-source query
whose ``foreachBatch`` holds batch 2 at its entry (Spark has written
``offsets/2``, not ``commits/2``), issues ``query.stop()`` from another
thread, lets the batch function return once the stop has begun, and, after
``stop()`` has returned, looks for ``commits/2``; then it restarts the query
on the same checkpoint and counts how often batch 2 ran.

``MicroBatchExecution.stop`` sets the state to TERMINATED (``isActive``
turns false), cancels the run's job group, then interrupts the stream thread
(``StreamExecution.interruptAndAwaitExecutionThreadTermination``). The thread
is inside the Python function (a py4j socket read, which an interrupt does
not break), so the interrupt stays pending. When the function returns, the
thread carries on to ``markMicroBatchEnd``, which writes ``commits/2``
(``CommitLog.add``) through Hadoop's local file system; without the native
library every step of that write forks a child (``readlink``, ``chmod``)
through ``org.apache.hadoop.util.Shell``, which waits with
``Process.waitFor``. The JDK's ``waitFor`` throws the pending interrupt only
if it has to wait: if the child has already been reaped, it returns, and the
write goes on. Shell turns a thrown ``InterruptedException`` into an
``InterruptedIOException``, the commit fails, ``runStream`` takes it for the
stop, and batch 2 re-runs on restart; otherwise ``commits/2`` is written and
nothing re-runs. The outcome therefore depends on how quickly the children
exit, not on when the function returns:

- ``release=immediate``: the function returns as soon as ``isActive`` is false;
- ``release=late``: it returns 1 s later, long after the interrupt.

Both modes give both outcomes. Nothing of raceproof is involved.
"""

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from pyspark.sql import SparkSession

TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
spark = (
    SparkSession.builder.master("local[2]")
    .appName("stop-commit-race")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")


def trial(release: str) -> tuple[bool, int]:
    """Whether commits/2 exists once stop() returned, and how often batch 2 ran by the end."""
    folder = Path(tempfile.mkdtemp())
    source, checkpoint = folder / "in", folder / "checkpoint"
    source.mkdir()
    entered, release_now = threading.Event(), threading.Event()
    ran: list[int] = []

    def add(n: int) -> None:
        staged = folder / f".{n}.json"
        staged.write_text(json.dumps({"n": n}) + "\n")
        staged.replace(source / f"{n}.json")

    def batch_function(batch, batch_id):  # type: ignore[no-untyped-def]
        ran.append(batch_id)
        if batch_id == 2 and not release_now.is_set():
            entered.set()
            release_now.wait(60)

    add(0)
    add(1)

    def start():  # type: ignore[no-untyped-def]
        return (
            spark.readStream.schema("n INT")
            .option("maxFilesPerTrigger", 1)
            .json(str(source))
            .writeStream.foreachBatch(batch_function)
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    query = start()
    query.processAllAvailable()  # batches 0 and 1 committed
    add(2)
    entered.wait(60)
    stopper = threading.Thread(target=query.stop)
    stopper.start()
    while query.isActive:  # the stop has begun: state TERMINATED, the interrupt follows
        time.sleep(0.02)
    if release == "late":
        time.sleep(1.0)
    release_now.set()
    stopper.join()
    committed = (checkpoint / "commits" / "2").exists()
    restarted = start()
    restarted.processAllAvailable()
    restarted.stop()
    return committed, ran.count(2)


for mode in ("immediate", "late"):
    for n in range(TRIALS):
        committed, runs = trial(mode)
        print(f"release={mode} trial {n}: commits/2 after stop(): {committed}; batch 2 ran {runs}x")
spark.stop()
