"""The kernel self-test model: a counter read-modify-written by concurrent clients."""

from raceproof.models.counter.model import (
    PAST,
    VARIANTS,
    CounterConfig,
    build,
    clients,
    final_equals_acks,
)

__all__ = ["PAST", "VARIANTS", "CounterConfig", "build", "clients", "final_equals_acks"]
