"""Tests of the Spark integration: real local-mode Spark, pipelines, sinks, campaigns, generated input."""
