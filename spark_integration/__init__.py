"""Real PySpark: the user's streaming pipeline under faults, and campaigns distributed on Spark.

``pipeline`` is the interface a user's job implements (``raceproof spark-check
--pipeline MODULE:FACTORY``); ``experiments``, ``faults``, ``trial`` and
``forced`` run fault experiments on local-mode Spark and judge their histories
with the kernel's checkers; ``session`` and ``sandbox`` start and confine Spark;
``campaign*`` runs scenario × variant × strategy × seed and proofs in rounds as
Spark tasks into Parquet; ``pipelines`` holds the built-in example jobs.
"""
