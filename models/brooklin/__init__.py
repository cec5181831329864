"""Brooklin's leader coordinator and the double-STOP race (seed 000, PR #974)."""

from raceproof.models.brooklin.model import (
    LEGAL_TRANSITIONS,
    READY,
    STOPPED,
    STOPPING,
    VARIANTS,
    BrooklinConfig,
    Cluster,
    Store,
    build,
)
from raceproof.sim.lifecycle import acknowledged_resume_holds, legal_transitions, no_lost_update

CHECKERS = (
    legal_transitions("legal-transitions", LEGAL_TRANSITIONS),
    acknowledged_resume_holds("acknowledged-resume-holds", READY),
    no_lost_update("no-lost-update"),
)

__all__ = [
    "CHECKERS",
    "LEGAL_TRANSITIONS",
    "READY",
    "STOPPED",
    "STOPPING",
    "VARIANTS",
    "BrooklinConfig",
    "Cluster",
    "Store",
    "build",
]
