"""Minimal reproduction: ``stop()`` during a Spark job inside ``foreachBatch`` kills the stream thread.

Run: ``python docs/howto/spark_stop_overflow.py`` (pyspark 4.x, Java 17). The
batch function waits until ``stop()`` has begun, then runs a one-row Spark job
of its own. The stop's interrupt fails that job with a py4j error whose message
carries a long Java stack trace; ``StreamExecution.isInterruptionException``
matches it against a ``(.|\\r\\n|\\r|\\n)*`` regex and the stream thread dies
with ``java.lang.StackOverflowError`` (printed on stderr as "Exception in
thread \\"stream execution thread for ...\\""), while ``query.exception()``
reports nothing. Nothing of raceproof is involved.
"""

import tempfile
import threading
import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[2]").appName("stop-overflow").getOrCreate()
entered, stop_begun = threading.Event(), threading.Event()


def batch_function(batch, batch_id):  # type: ignore[no-untyped-def]
    entered.set()
    stop_begun.wait(60)
    batch.sparkSession.range(0, 1, 1, 1).count()  # a Spark job the stop interrupts


query = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", 1)
    .load()
    .writeStream.foreachBatch(batch_function)
    .option("checkpointLocation", tempfile.mkdtemp())
    .start()
)
entered.wait(60)
stopper = threading.Thread(target=query.stop)
stopper.start()
while query.isActive:  # Spark marks the query terminated before it interrupts the thread
    time.sleep(0.02)
stop_begun.set()
stopper.join()
print("query.exception():", query.exception())
spark.stop()
