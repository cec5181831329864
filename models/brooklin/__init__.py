"""Brooklin's leader coordinator and the double-STOP race (seed 000, PR #974).

``CHECKERS`` judge data: the resume is kept, every transition is legal, no
write overwrites a change it did not see. ``WORK_CHECKERS`` judge work: each
stop is processed once (the seed's "stopping other data streams twice"),
kept apart so a redundant, idempotent stop never hides the lost resume.
"""

from raceproof.models.brooklin.cluster import Cluster, build
from raceproof.models.brooklin.model import (
    LEGAL_TRANSITIONS,
    READY,
    STOPPED,
    STOPPING,
    VARIANTS,
    BrooklinConfig,
    Datastream,
    DatastreamCache,
    Store,
)
from raceproof.sim.lifecycle import (
    acknowledged_resume_holds,
    legal_transitions,
    no_lost_update,
    processed_once,
)

CHECKERS = (
    legal_transitions("legal-transitions", LEGAL_TRANSITIONS),
    acknowledged_resume_holds("acknowledged-resume-holds", READY),
    no_lost_update("no-lost-update"),
)
WORK_CHECKERS = (processed_once("each-stop-processed-once"),)

__all__ = [
    "CHECKERS",
    "LEGAL_TRANSITIONS",
    "READY",
    "STOPPED",
    "STOPPING",
    "VARIANTS",
    "WORK_CHECKERS",
    "BrooklinConfig",
    "Cluster",
    "Datastream",
    "DatastreamCache",
    "Store",
    "build",
]
