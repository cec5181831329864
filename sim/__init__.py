"""raceproof's kernel: a deterministic simulated world whose every decision is a recorded choice.

Imports nothing of ours; models, scenarios, reports and the Spark integration
build on what is re-exported here.
"""

from sim.checkers import (
    Checker,
    Verdict,
    checker,
    checker_name,
    first_violation,
    ok,
    quiescent,
    run_checkers,
    unknown,
    violated,
)
from sim.choices import (
    SCHEDULE_LABEL,
    Choice,
    ChoiceSource,
    HypothesisSource,
    PCTSource,
    RandomSource,
    ReplayMisaligned,
    ReplaySource,
    SplitMix64,
    decode_blob,
    derive_seed,
    deviations,
    encode_blob,
)
from sim.exhaustive import ProofReport, prove
from sim.explore import STRATEGIES, Budget, SearchReport, explore
from sim.faults import (
    FAULT_KINDS,
    Actor,
    FaultPlan,
    Nemesis,
    Network,
    crash_and_restart,
    maybe_pause,
)
from sim.fs import DiskWriteError, FileSystem, FsError
from sim.history import History, Op, canonical_json, first_divergence
from sim.primitives import EventQueue, Executor, Lock, every, poll_until
from sim.repro import Counterexample, CounterexampleError
from sim.shrink import shrink
from sim.store import (
    BadVersion,
    LaggingCache,
    NodeExists,
    NoNode,
    SessionExpired,
    StoreError,
    VersionedStore,
    WatchEvent,
)
from sim.world import BoundHit, Bounds, Runner, RunOutcome, World, execute

__all__ = [
    "FAULT_KINDS",
    "SCHEDULE_LABEL",
    "STRATEGIES",
    "Actor",
    "BadVersion",
    "BoundHit",
    "Bounds",
    "Budget",
    "Checker",
    "Choice",
    "ChoiceSource",
    "Counterexample",
    "CounterexampleError",
    "DiskWriteError",
    "EventQueue",
    "Executor",
    "FaultPlan",
    "FileSystem",
    "FsError",
    "History",
    "HypothesisSource",
    "LaggingCache",
    "Lock",
    "Nemesis",
    "Network",
    "NoNode",
    "NodeExists",
    "Op",
    "PCTSource",
    "ProofReport",
    "RandomSource",
    "ReplayMisaligned",
    "ReplaySource",
    "RunOutcome",
    "Runner",
    "SearchReport",
    "SessionExpired",
    "SplitMix64",
    "StoreError",
    "Verdict",
    "VersionedStore",
    "WatchEvent",
    "World",
    "canonical_json",
    "checker",
    "checker_name",
    "crash_and_restart",
    "decode_blob",
    "derive_seed",
    "deviations",
    "encode_blob",
    "every",
    "execute",
    "explore",
    "first_divergence",
    "first_violation",
    "maybe_pause",
    "ok",
    "poll_until",
    "prove",
    "quiescent",
    "run_checkers",
    "shrink",
    "unknown",
    "violated",
]
