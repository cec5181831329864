"""raceproof's kernel: a deterministic simulated world whose every decision is a recorded choice.

Imports nothing of ours; models, scenarios, reports and the Spark integration
build on what is re-exported here.
"""

from raceproof.sim.checkers import (
    Checker,
    CheckerResult,
    checker,
    checker_name,
    first_violation,
    ok,
    quiescent,
    run_checkers,
    unknown,
    violated,
)
from raceproof.sim.choices import (
    SCHEDULE_LABEL,
    Choice,
    ChoiceSource,
    HypothesisSource,
    KeyedReplaySource,
    PCTSource,
    RandomSource,
    ReplayMisaligned,
    ReplaySource,
    SplitMix64,
    SwarmSource,
    decode_blob,
    derive_seed,
    deviations,
    encode_blob,
    keyed_deviations,
)
from raceproof.sim.configs import BadInput, limits, require
from raceproof.sim.errors import Nondeterministic
from raceproof.sim.exhaustive import ProofReport, prove
from raceproof.sim.explore import SEARCH_STRATEGIES, STRATEGIES, Budget, SearchReport, explore
from raceproof.sim.faults import (
    FAULT_KINDS,
    Actor,
    FaultPlan,
    Nemesis,
    Network,
    crash_and_restart,
    crash_and_restart_node,
    maybe_expire_session,
    maybe_jump_clock,
    maybe_lose_connection,
    maybe_pause,
    maybe_pause_node,
    pause_with_session,
    stall_thread,
)
from raceproof.sim.fs import DiskWriteError, FileSystem, FsError
from raceproof.sim.history import History, Op, canonical_json, first_divergence
from raceproof.sim.invariants import INVARIANT_OP, always, invariant_checker
from raceproof.sim.nodes import Node
from raceproof.sim.outcome import Runner, RunOutcome, execute
from raceproof.sim.primitives import EventQueue, Executor, Lock, QueueEmpty, every
from raceproof.sim.repro import Counterexample, CounterexampleError
from raceproof.sim.runtime import ExecutorPort, QueuePort, Runtime, SimRuntime, poll_until
from raceproof.sim.session import SessionEvent, SessionState, ZkClient
from raceproof.sim.shrink import shrink
from raceproof.sim.store import (
    BadArguments,
    BadVersion,
    ConnectionLoss,
    LaggingCache,
    NoChildrenForEphemerals,
    NodeExists,
    NoNode,
    NotEmpty,
    SessionExpired,
    StoreError,
    Transaction,
    TransactionFailed,
    TxOp,
    VersionedStore,
    WatchEvent,
)
from raceproof.sim.timers import Debounce, Timer
from raceproof.sim.verdicts import CheckStatus
from raceproof.sim.visibility import reads_op_order
from raceproof.sim.world import BoundHit, Bounds, World

__all__ = [
    "FAULT_KINDS",
    "INVARIANT_OP",
    "SCHEDULE_LABEL",
    "SEARCH_STRATEGIES",
    "STRATEGIES",
    "Actor",
    "BadArguments",
    "BadInput",
    "BadVersion",
    "BoundHit",
    "Bounds",
    "Budget",
    "CheckStatus",
    "Checker",
    "CheckerResult",
    "Choice",
    "ChoiceSource",
    "ConnectionLoss",
    "Counterexample",
    "CounterexampleError",
    "Debounce",
    "DiskWriteError",
    "EventQueue",
    "Executor",
    "ExecutorPort",
    "FaultPlan",
    "FileSystem",
    "FsError",
    "History",
    "HypothesisSource",
    "KeyedReplaySource",
    "LaggingCache",
    "Lock",
    "Nemesis",
    "Network",
    "NoChildrenForEphemerals",
    "NoNode",
    "Node",
    "NodeExists",
    "Nondeterministic",
    "NotEmpty",
    "Op",
    "PCTSource",
    "ProofReport",
    "QueueEmpty",
    "QueuePort",
    "RandomSource",
    "ReplayMisaligned",
    "ReplaySource",
    "RunOutcome",
    "Runner",
    "Runtime",
    "SearchReport",
    "SessionEvent",
    "SessionExpired",
    "SessionState",
    "SimRuntime",
    "SplitMix64",
    "StoreError",
    "SwarmSource",
    "Timer",
    "Transaction",
    "TransactionFailed",
    "TxOp",
    "VersionedStore",
    "WatchEvent",
    "World",
    "ZkClient",
    "always",
    "canonical_json",
    "checker",
    "checker_name",
    "crash_and_restart",
    "crash_and_restart_node",
    "decode_blob",
    "derive_seed",
    "deviations",
    "encode_blob",
    "every",
    "execute",
    "explore",
    "first_divergence",
    "first_violation",
    "invariant_checker",
    "keyed_deviations",
    "limits",
    "maybe_expire_session",
    "maybe_jump_clock",
    "maybe_lose_connection",
    "maybe_pause",
    "maybe_pause_node",
    "ok",
    "pause_with_session",
    "poll_until",
    "prove",
    "quiescent",
    "reads_op_order",
    "require",
    "run_checkers",
    "shrink",
    "stall_thread",
    "unknown",
    "violated",
]


def __getattr__(name: str) -> object:
    """``Verdict``, the checker result's old name, still imports, with a DeprecationWarning."""
    if name == "Verdict":
        import warnings

        warnings.warn(
            "raceproof.Verdict is renamed CheckerResult"
            " (the verdict words are raceproof.sim.verdicts.Verdict)",
            DeprecationWarning,
            stacklevel=2,
        )
        return CheckerResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
