"""The built-in pipelines, each written against ``spark_integration.pipeline`` exactly as a user's is."""
