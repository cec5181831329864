"""Kafka Streams' state directory and the checkpoint resurrection race (seed 001, KAFKA-8187)."""

from raceproof.models.kafka_streams.checkers import (
    CHECKERS,
    checkpoint_soundness,
    no_record_lost,
    no_stale_read,
)
from raceproof.models.kafka_streams.model import TASK, VARIANTS, Instance, StreamsConfig, build

__all__ = [
    "CHECKERS",
    "TASK",
    "VARIANTS",
    "Instance",
    "StreamsConfig",
    "build",
    "checkpoint_soundness",
    "no_record_lost",
    "no_stale_read",
]
