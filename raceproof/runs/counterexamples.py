"""Replaying a counterexample file: exactly on its own variant, keyed on any other.

On the variant it was found on, a counterexample replays strictly: the same
draws, the same timeline, the same trace hash, or it is out of date.

On another variant (a fix) the positions of the draws differ, so it replays
keyed by (label, occurrence): "the 2nd ``reader0.db-read`` draw takes option 1",
every other draw FIFO. A keyed run that violates is ``violated``. One that
does not is **not reached** (never ``ok``) when either

1. one of the counterexample's deviations never came up in that run: the
   variant never made that occurrence of that label's draw, or made it with
   fewer options than the recorded value, so the schedule was not followed; or
2. the catalogue expects the variant to violate: its race exists, so a run
   that misses it shows only that this counterexample does not open that
   variant's window (Brooklin's report timeline on ``fix-zk-lookup``, whose
   race needs the resume between the ZooKeeper read and the write).

Otherwise (every deviation taken, a variant expected to hold) ``ok`` means
the variant holds against this counterexample.

The counterexample database is a folder of such files; each is a regression
test: its own variant must still violate, and every variant of its scenario
expected to hold must hold when the counterexample is replayed against it.

A file goes out of date when the model (or the kernel) changes what a run
logs or draws: the exact replay no longer gives the recorded timeline. Then
``staleness`` replays *the same choices* on the model as it is now (its
deviations keyed by label and occurrence, every other draw FIFO) and says
whether they still violate, and ``rerecord`` writes that run over the file
(``raceproof replay FILE --rerecord``; ``pytest --raceproof-rerecord`` for a
whole folder). A file whose choices no longer violate is never re-recorded:
the race it pinned is gone or moved, and a person decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raceproof.scenarios.catalogue import Scenario, UnknownName, config_from_json, get
from raceproof.sim import (
    Counterexample,
    CounterexampleError,
    KeyedReplaySource,
    ReplayMisaligned,
    ReplaySource,
    RunOutcome,
    first_divergence,
    keyed_deviations,
)
from raceproof.sim import repro as repro_files
from raceproof.sim.verdicts import Verdict


class OutOfDate(ValueError):
    """A counterexample that no longer fits its scenario; the message says where."""


class Diverged(OutOfDate):
    """Out of date: the exact replay no longer gives the recorded timeline (the model changed)."""


@dataclass
class Loaded:
    path: Path
    counterexample: Counterexample
    scenario: Scenario
    config: Any


@dataclass
class Replayed:
    variant: str
    mode: str  # "exact" on the counterexample's own variant, "keyed" on another
    verdict: Verdict  # violated, ok, inconclusive or not-reached
    outcome: RunOutcome
    not_reached: list[str] = field(default_factory=list)  # "label#occurrence=value"
    reason: str = ""  # why the verdict is not-reached


def load(path: Path) -> Loaded:
    """Read ``path`` and find its scenario; CounterexampleError or OutOfDate say what is wrong."""
    cx = repro_files.load(path)
    try:
        scenario = get(cx.scenario)
        scenario.check_variant(cx.variant)
        # Every configuration field is checked like `--set` (BadInput names the field).
        config = config_from_json(scenario.config, cx.config, source=f"{path}: config")
    except (UnknownName, TypeError) as exc:
        raise OutOfDate(f"{path}: out of date: {exc}") from None
    return Loaded(path=path, counterexample=cx, scenario=scenario, config=config)


def replay_exact(loaded: Loaded) -> RunOutcome:
    """The recorded choices, strictly, on the recorded variant; OutOfDate if anything moved."""
    cx = loaded.counterexample
    run = loaded.scenario.runner(cx.variant, loaded.config)
    try:
        outcome = run(ReplaySource(cx.choices, strict=True))
    except ReplayMisaligned as exc:
        raise Diverged(
            f"{loaded.path}: out of date, the model changed underneath it: {exc}"
        ) from None
    if outcome.trace_hash != cx.trace_hash:
        index = first_divergence(cx.history, outcome.history)
        where = ""
        if index is not None and index < min(len(cx.history), len(outcome.history)):
            where = f": recorded {cx.history[index].describe()} / now {outcome.history[index].describe()}"
        raise Diverged(
            f"{loaded.path}: out of date: the replay diverges from the recorded timeline "
            f"at op #{index}{where}"
        )
    return outcome


def replay_on(loaded: Loaded, variant: str | None) -> Replayed:
    """Replay on ``variant`` (default: its own): exactly on its own, keyed on another."""
    cx = loaded.counterexample
    if variant is None or variant == cx.variant:
        outcome = replay_exact(loaded)
        return Replayed(variant=cx.variant, mode="exact", verdict=outcome.status, outcome=outcome)
    loaded.scenario.check_variant(variant)
    wanted = keyed_deviations(cx.choices)
    outcome = loaded.scenario.runner(variant, loaded.config)(KeyedReplaySource(dict(wanted)))
    taken = keyed_deviations(outcome.choices)
    missing = [
        f"{label}#{occurrence}={value}"
        for (label, occurrence), value in sorted(wanted.items())
        if taken.get((label, occurrence)) != value
    ]
    verdict = outcome.status
    reason = ""
    if verdict == Verdict.ERROR:
        pass  # the model raised: that is the verdict, whatever was reached
    elif verdict != Verdict.VIOLATED and missing:
        verdict = Verdict.NOT_REACHED
        reason = f"its deviations {', '.join(missing)} never came up on {variant}"
    elif verdict != Verdict.VIOLATED and variant in loaded.scenario.expect_violation:
        verdict = Verdict.NOT_REACHED
        reason = (
            f"{variant} is expected to violate and this schedule does not reach its race "
            "window (every deviation was taken)"
        )
    return Replayed(
        variant=variant,
        mode="keyed",
        verdict=verdict,
        outcome=outcome,
        not_reached=missing,
        reason=reason,
    )


RERECORD_HINT = "pytest --raceproof-rerecord re-records a whole folder"


@dataclass
class Staleness:
    """What the same choices do on the model as it is now, for an out-of-date file."""

    outcome: RunOutcome
    recorded_checker: str | None

    @property
    def still_violates(self) -> bool:
        return self.outcome.status == Verdict.VIOLATED

    def sentence(self, path: Path) -> str:
        """One line: whether the same choices still violate, and what to do."""
        now = self.outcome.violation
        if now is not None and self.outcome.error is None:
            same = (
                ""
                if now.checker == self.recorded_checker
                else f" (recorded: {self.recorded_checker})"
            )
            return (
                f"the same choices still violate {now.checker}{same} at op #{now.op_index}; "
                f"re-record it: raceproof replay {path} --rerecord ({RERECORD_HINT})"
            )
        return (
            f"the same choices no longer violate (verdict now {self.outcome.status}): the race "
            f"this file pinned is gone or moved; nothing to re-record (delete the file, or "
            f"explore again)"
        )


def staleness(loaded: Loaded) -> Staleness:
    """Replay the file's deviations, keyed by (label, occurrence), on its own variant now."""
    cx = loaded.counterexample
    source = KeyedReplaySource(dict(keyed_deviations(cx.choices)))
    outcome = loaded.scenario.runner(cx.variant, loaded.config)(source)
    recorded = cx.verdict.get("checker") if isinstance(cx.verdict, dict) else None
    return Staleness(outcome, recorded if isinstance(recorded, str) else None)


def check_current(loaded: Loaded) -> None:
    """Raise ``Diverged`` (its message extended by what the same choices do now) if out of date."""
    try:
        replay_exact(loaded)
    except Diverged as exc:
        raise Diverged(f"{exc}; {staleness(loaded).sentence(loaded.path)}") from None


def rerecord(loaded: Loaded) -> Staleness | None:
    """Write the same choices' run on the model as it is now over the file, if it still violates.

    None when the file is up to date (nothing written); the ``Staleness``
    otherwise, written over ``loaded.path`` only if ``still_violates``.
    """
    from raceproof.runs.runner import counterexample_of  # runner stamps version and commit

    try:
        replay_exact(loaded)
        return None
    except Diverged:
        pass
    stale = staleness(loaded)
    if stale.still_violates and stale.outcome.error is None:
        cx = loaded.counterexample
        fresh = counterexample_of(
            loaded.scenario, cx.variant, loaded.config, stale.outcome, cx.strategy or "rerecord"
        )
        repro_files.save(loaded.path, fresh)
        loaded.counterexample = fresh
    return stale


def regression_expectations(loaded: Loaded) -> list[tuple[str, Verdict]]:
    """(variant, expected verdict): its own must violate, every variant expected to hold must hold."""
    cx, scenario = loaded.counterexample, loaded.scenario
    expectations = [(cx.variant, Verdict.VIOLATED)]
    expectations += [
        (v, Verdict.OK)
        for v in scenario.variants
        if v not in scenario.expect_violation and v != cx.variant
    ]
    return expectations


def database_files(folder: Path) -> list[Path]:
    """The counterexample files of a database folder, sorted (listing order is not stable)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))


def load_for_cli(path: Path) -> Loaded:
    """``load`` with every problem as a ValueError message (the command line's exit 2)."""
    try:
        return load(path)
    except CounterexampleError as exc:
        raise OutOfDate(str(exc)) from None
