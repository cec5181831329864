"""Tests of the built-in models: Brooklin, Kafka Streams, Samza, the group coordinator, the zombie controller."""
