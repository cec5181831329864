"""The Kafka group coordinator runtime and the async append (seed 003, PR #14705)."""

from raceproof.models.group_coordinator.checkers import CHECKERS
from raceproof.models.group_coordinator.model import (
    VARIANTS,
    Coordinator,
    CoordinatorConfig,
    build,
    processors,
)

__all__ = ["CHECKERS", "VARIANTS", "Coordinator", "CoordinatorConfig", "build", "processors"]
