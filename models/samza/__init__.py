"""Samza's drain of a pipeline before an incompatible upgrade (seed 002, SAMZA-2741)."""

from raceproof.models.samza.checkers import CHECKERS
from raceproof.models.samza.model import VARIANTS, Pipeline, SamzaConfig, build

__all__ = ["CHECKERS", "VARIANTS", "Pipeline", "SamzaConfig", "build"]
