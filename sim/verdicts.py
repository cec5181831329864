"""The verdict vocabulary: the one home of the words a run, search, proof or check can end with.

A verdict is raceproof's product, so its words live in one place instead of
being spelled out as strings wherever a result is built or read:

- ``Verdict``: what a run, a search, a proof, a replay, a gate check or a
  campaign cell says (``ok``, ``violated``, ``inconclusive``,
  ``not-reached``, ``error``). It is a ``StrEnum``, so JSON output, history
  fields, trace hashes and f-strings still read the plain words.
- ``CheckStatus``: what one checker says about one history (``ok``,
  ``violated``, ``unknown``). ``unknown`` is never a pass: it makes the run
  undecided, that is ``inconclusive``.
- ``ExitCode`` and ``exit_code_for``: the command line's exit codes and the
  one mapping from a verdict to its exit code (DESIGN.md, "Command line").

Why exit codes live in the kernel: the mapping is part of the vocabulary (a
``not-reached`` window exits like ``inconclusive``, never like ``ok``), and
one home means the CLI, the gate and the campaigns cannot disagree on it. The
module imports nothing, so every layer may use it.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Verdict(StrEnum):
    """What a run, search, proof, replay, check or campaign cell concludes."""

    OK = "ok"  # the property held everywhere it was looked for
    VIOLATED = "violated"  # a checker found the property false
    INCONCLUSIVE = "inconclusive"  # a bound was hit or a checker said unknown: never a pass
    NOT_REACHED = "not-reached"  # a declared race window was never reached: never a pass
    ERROR = "error"  # the user's model, workload, checker or pipeline raised

    @property
    def is_finding(self) -> bool:
        """True for the verdicts that end a search: a violation or the model's own exception."""
        return self in FINDINGS

    @property
    def exit_code(self) -> ExitCode:
        return EXIT_FOR_VERDICT[self]


FINDINGS = frozenset({Verdict.VIOLATED, Verdict.ERROR})


class CheckStatus(StrEnum):
    """What one checker says about one history."""

    OK = "ok"
    VIOLATED = "violated"
    UNKNOWN = "unknown"  # the history cannot tell: the run is undecided, never a pass


class ExitCode(IntEnum):
    """The command line's exit codes (DESIGN.md, "Command line")."""

    OK = 0  # holds, nothing found
    VIOLATED = 1  # a violation was found
    USAGE = 2  # bad usage or bad input: one line, nothing written half-way
    INCONCLUSIVE = 3  # a bound was hit, a checker was undecided or a window not reached
    ERROR = 4  # the user's code raised: the verdict ``error``, never a found race
    INTERNAL = 70  # EX_SOFTWARE: a bug in raceproof itself, never mistaken for a found race
    INTERRUPTED = 130  # SIGINT
    TERMINATED = 143  # SIGTERM


EXIT_FOR_VERDICT: dict[Verdict, ExitCode] = {
    Verdict.OK: ExitCode.OK,
    Verdict.VIOLATED: ExitCode.VIOLATED,
    Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
    Verdict.NOT_REACHED: ExitCode.INCONCLUSIVE,
    Verdict.ERROR: ExitCode.ERROR,
}


def exit_code_for(verdict: str) -> ExitCode:
    """The exit code of a verdict, given as a ``Verdict`` or its word; an unknown word is a bug."""
    return EXIT_FOR_VERDICT[Verdict(verdict)]


class GateStatus(StrEnum):
    """What the gate makes of a verdict against the expected one (``raceproof check``, the plugin)."""

    PASS = "pass"  # the expected verdict
    FAIL = "fail"  # the opposite verdict: a fix that does not hold, or a race no longer found
    ERROR = Verdict.ERROR.value  # the model raised: never a pass, whatever was expected
    INCONCLUSIVE = Verdict.INCONCLUSIVE.value  # a bound, an undecided checker, an unreached window

    @classmethod
    def of(cls, expected: str, verdict: str) -> GateStatus:
        """The status of ``verdict`` where ``expected`` (``ok`` or ``violated``) was expected."""
        if verdict == expected:
            return cls.PASS
        if verdict == Verdict.ERROR:
            return cls.ERROR
        if verdict in (Verdict.INCONCLUSIVE, Verdict.NOT_REACHED):
            return cls.INCONCLUSIVE
        return cls.FAIL

    @property
    def exit_code(self) -> ExitCode:
        return EXIT_FOR_GATE_STATUS[self]


EXIT_FOR_GATE_STATUS: dict[GateStatus, ExitCode] = {
    GateStatus.PASS: ExitCode.OK,
    GateStatus.FAIL: ExitCode.VIOLATED,
    GateStatus.ERROR: ExitCode.ERROR,
    GateStatus.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}


def gate_exit_code(statuses: set[GateStatus]) -> ExitCode:
    """The gate's exit: any failure 1, else any error 4, else anything undecided 3, else 0."""
    for status in (GateStatus.FAIL, GateStatus.ERROR, GateStatus.INCONCLUSIVE):
        if status in statuses:
            return status.exit_code
    return ExitCode.OK
