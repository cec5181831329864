"""The kernel self-test model: a counter read-modify-written by concurrent clients."""

from raceproof.models.counter.model import (
    VARIANTS,
    CounterConfig,
    build,
    clients,
    final_equals_acks,
)

__all__ = ["VARIANTS", "CounterConfig", "build", "clients", "final_equals_acks"]
