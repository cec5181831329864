"""One run of a model, judged: ``execute`` and the ``RunOutcome`` it returns.

Why it exists: the World (``world.py``) is the kernel that orders a run's
events; what a run *means* is a separate concern: build the actors, run the
World to its end, close the history, apply the checkers, and say the run's
status (``error`` before ``violated`` before ``inconclusive`` before ``ok``).
Every caller that runs a model (the searches, the proof's walk, shrinking, the
cross-check, the footprint check) goes through ``execute`` and reads a
``RunOutcome``; it lives here so that the kernel module stays about the kernel.

What leaves the model's code is the model's (status ``error``, the user's
frames in ``RunOutcome.error``) unless ``not_the_models`` says it is
raceproof's, Hypothesis' or a real signal's: those propagate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from raceproof.sim.checkers import Checker, CheckerResult, first_violation, run_checkers, violated
from raceproof.sim.choices import Choice, ChoiceSource, ReplaySource
from raceproof.sim.errors import ModelError, Signalled, model_error
from raceproof.sim.global_random import watched
from raceproof.sim.history import History, JSONValue
from raceproof.sim.verdicts import CheckStatus, Verdict
from raceproof.sim.visibility import observes_op_order
from raceproof.sim.world import BoundHit, Bounds, World, not_the_models

# a run is ok, violated, inconclusive (a bound hit, or a checker undecided) or error
RunStatus = Verdict


@dataclass
class RunOutcome:
    """Everything one run produced."""

    status: RunStatus
    verdicts: list[CheckerResult]
    history: History
    choices: list[Choice]
    steps: int
    virtual_ms: int
    end_reason: str
    bound: str | None = None
    extra: dict[str, JSONValue] = field(default_factory=dict)
    # draw index -> (the actor that ran, the actor it overtook), per schedule deviation
    overtaken: dict[int, tuple[str, str]] = field(default_factory=dict)
    error: ModelError | None = None  # the model's own exception (status ``error``)
    probes: dict[str, int] = field(default_factory=dict)  # probe -> times reached in this run
    actors_named: bool = True  # ``overtaken`` was recorded (see ``ChoiceSource.names_deviations``)

    @property
    def violation(self) -> CheckerResult | None:
        return first_violation(self.verdicts)

    @property
    def undecided_by(self) -> list[str]:
        """The checkers that could not tell on this run (``unknown``): undecided, never a pass."""
        return [v.checker for v in self.verdicts if v.status == CheckStatus.UNKNOWN]

    @property
    def trace_hash(self) -> str:
        return self.history.trace_hash()

    @property
    def values(self) -> list[int]:
        return [c.value for c in self.choices]


Build = Callable[[World], None]
DEFAULT_BOUNDS = Bounds()  # a frozen dataclass: one shared default is safe
Runner = Callable[[ChoiceSource], RunOutcome]


def execute(
    build: Build,
    source: ChoiceSource,
    checkers: Sequence[Checker],
    bounds: Bounds = DEFAULT_BOUNDS,
    violation_exceptions: tuple[type[BaseException], ...] = (),
) -> RunOutcome:
    """Run one model under ``source`` and judge its history.

    An exception raised by the model, its workload or a checker is the status
    ``error`` (``RunOutcome.error`` holds the user's frames), never a
    violation, unless its type is one of ``violation_exceptions``: those the
    model declared to count as violations, reported by the pseudo-checker
    ``model-exception``. The model's code may leave by any ``BaseException``
    (``sys.exit(0)``, a ``KeyboardInterrupt`` it raises, ``GeneratorExit``, a
    subclass of its own): each is the model's, ``error``. Only what is not the
    model's propagates (``not_the_models``): a replay that no longer fits the
    model, the reduction's cut, a broken kernel contract, Hypothesis' own
    control flow and a real signal (``Signalled``). A run that changed the state
    of Python's global ``random`` module raises ``UsedGlobalRandom``, the model's
    mistake, whatever else it did (``raceproof.sim.global_random``).
    """
    world = World(source, bounds)
    return watched(lambda world: _judged(world, build, checkers, violation_exceptions), world)


def _judged(
    world: World,
    build: Build,
    checkers: Sequence[Checker],
    violation_exceptions: tuple[type[BaseException], ...],
) -> RunOutcome:
    """``execute``'s run on ``world`` (and its source), the global random module unwatched."""
    source = world.source
    world.op_order_read = observes_op_order(checkers)
    bound: str | None = None
    crash: CheckerResult | None = None
    error: ModelError | None = None
    try:
        build(world)
        reason = world.run_to_end()
        _raise_pending_signal(world)
    except BoundHit as hit:
        bound, reason = hit.bound, f"bound:{hit.bound}"
        _raise_pending_signal(world)
    except BaseException as exc:  # the model's code may leave by anything
        if not_the_models(exc):  # a kernel bug, the search's control flow, a real signal
            raise
        reason = str(Verdict.ERROR)  # the run ended in the model's own exception
        error = model_error(exc)
        if violation_exceptions and isinstance(exc, violation_exceptions):
            reason = "crash"
            crash, error = _declared_violation(world, exc, error), None
    if isinstance(source, ReplaySource):
        source.finish()
    world.log("kernel", "run.end", reason=reason, steps=world.steps)
    verdicts: list[CheckerResult] = []
    if error is None:
        try:
            verdicts = run_checkers(world.history, checkers)
        except BaseException as exc:  # a checker's own bug: the user's code too
            if not_the_models(exc):
                raise
            error = model_error(exc)
    if crash is not None:
        verdicts.insert(0, crash)
    return RunOutcome(
        status=_status(error, verdicts, bound),
        verdicts=verdicts,
        history=world.history,
        choices=list(source.record),
        steps=world.steps,
        virtual_ms=world.now_ms,
        end_reason=reason,
        bound=bound,
        overtaken=dict(world.overtaken),
        error=error,
        probes=dict(sorted(world.probes.items())),
        actors_named=world.names_deviations,
    )


def _declared_violation(world: World, exc: BaseException, error: ModelError) -> CheckerResult:
    """The ``model-exception`` violation of an exception the model declared one, logged."""
    # Only what the model's code says: no path of this checkout, so the trace
    # hash is the same in every folder the project is copied to.
    declared = f"{type(exc).__qualname__}: {error.message}".removesuffix(": ")
    at = _portable(error.where)
    world.log("kernel", "model.exception", error=declared, at=at)
    return violated(
        "model-exception",
        len(world.history) - 1,
        f"the model raised {declared} at {at} (declared a violation)",
    )


def _status(
    error: ModelError | None, verdicts: list[CheckerResult], bound: str | None
) -> RunStatus:
    """A run's status: error before violated before inconclusive (a bound, an unknown) before ok."""
    if error is not None:
        return Verdict.ERROR
    if first_violation(verdicts) is not None:
        return Verdict.VIOLATED
    if bound is not None or any(v.status == CheckStatus.UNKNOWN for v in verdicts):
        return Verdict.INCONCLUSIVE
    return Verdict.OK


def _raise_pending_signal(world: World) -> None:
    """A real signal that failed a process in the run's last step still stops the command.

    A signal handler raises ``Signalled`` wherever the main thread is: inside a
    model's generator, SimPy takes it as that process's failure and schedules
    it, and the World raises it when that event is processed. A run that ends
    in the same step (another process it resumed called ``finish``, a bound)
    never processes it: without this, the command would go on and the first
    Ctrl-C would be lost (the handler counts it as received).
    """
    for entry in (*world._due, *world._queue):
        event = entry[3]
        if getattr(event, "_ok", True) is False and isinstance(event._value, Signalled):
            raise event._value


def _portable(where: str) -> str:
    """``FILE:LINE`` as the file's own name and line: no folder of this checkout in it."""
    path, _, line = where.rpartition(":")
    return f"{Path(path).name}:{line}" if path else where
