"""Whose exception it is decides the verdict: raceproof's own (a bug), or the model's (``error``).

A verdict must never come from raceproof's own bugs, and a crash is not a found
race. A ``KernelError`` is raised only where one of the kernel's contracts broke
(replay alignment, choice bounds, footprint bookkeeping, a proof's accounting)
and is reported as a bug in raceproof (exit 70); unlike ``assert``,
``contract`` survives ``python -O``.

An exception the model, its workload or its checker raises is the model's: its
own verdict, ``error`` (exit 4), never ``violated``, so a model that raises on
its buggy path (a typo in one branch) cannot pass a gate that expects
``violated``. ``model_error`` turns such an exception into what a user reads:
the exception, and the traceback frames of the user's own code, shown the way
pytest shows a failing test, with the frames of raceproof's kernel, SimPy and
Hypothesis left out. ``where`` (``file:line`` of the innermost frame of the
user's code) is what shrinking keeps fixed: a shrunk error is the same
exception type raised at the same place.

A model that wants some exception to count as a violation says so
explicitly, ``Scenario(violation_exceptions=(MyError,))``; then that exception
is reported by the pseudo-checker ``model-exception`` as a violation.
"""

from __future__ import annotations

import difflib
import linecache
import os
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import simpy

__all__ = [
    "FILE_MODULE_PREFIX",
    "KernelError",
    "ModelError",
    "Nondeterministic",
    "Signalled",
    "UsedGlobalRandom",
    "contract",
    "did_you_mean",
    "model_error",
    "said",
]


class KernelError(RuntimeError):
    """A contract of the kernel broke: a bug in raceproof (exit 70), never a verdict."""


# Where a model's nondeterminism usually comes from: said with every divergence.
LIKELY_CAUSES = (
    "likely causes: the global random module, the wall clock, hash or set iteration order, id()"
)


def did_you_mean(name: object, valid: Iterable[str], cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` for a near miss of one of ``valid`` (difflib), else nothing."""
    close = difflib.get_close_matches(str(name), list(valid), n=1, cutoff=cutoff) if name else []
    return f" (did you mean {close[0]!r}?)" if close else ""


class Nondeterministic(Exception):
    """The model's own run, replayed on the same choices, went differently: the user's mistake.

    Not a bug in raceproof and not a verdict on the race: the verdict ``error``
    (exit 4), in one line naming the draw (or op) and the actor where the two runs
    parted, and the usual causes. ``draw`` is the index of the first diverging draw,
    or ``None`` when the draws agreed and the histories differ (``op`` then says where).
    """

    def __init__(self, detail: str, draw: int | None = None, actor: str | None = None) -> None:
        super().__init__(detail, draw, actor)  # all in ``args``: it pickles from a worker whole
        self.detail, self.draw, self.actor = detail, draw, actor

    def __str__(self) -> str:
        where = f"at draw #{self.draw}" if self.draw is not None else "in its history"
        return (
            f"the model is not deterministic: run again on the same choices it diverged "
            f"{where}{self.who}: {self.detail}; {LIKELY_CAUSES}"
        )

    @property
    def who(self) -> str:
        """`` (actor a0)`` when the actor is known, else nothing."""
        return f" (actor {self.actor})" if self.actor else ""


class UsedGlobalRandom(Nondeterministic):
    """A run changed the state of Python's global ``random`` module: the user's mistake.

    Its draws are no choices of the run's source: no search varies them, no proof
    enumerates them, no replay repeats them, so a verdict on such a model would say
    more than the runs showed (``raceproof.sim.global_random`` watches every run for
    it). The verdict ``error`` (exit 4), like every ``Nondeterministic``, in one line
    naming where the run first used it: ``detail`` is where (``"in a step"``, ``"while
    its world was built"``, ...), ``draw`` the draws made before that step and
    ``actor`` the step's actor, when the watch could tell.
    """

    def __str__(self) -> str:
        at = f" at draw #{self.draw}" if self.draw is not None else ""
        return (
            f"the model is not deterministic: it used the global random module {self.detail}"
            f"{at}{self.who}, whose draws raceproof neither varies nor replays (draw from "
            f"world.source, or from a random.Random(seed) of the model's own); {LIKELY_CAUSES}"
        )


class Signalled(KeyboardInterrupt):
    """A real signal, raised by a signal handler: the one interrupt a run lets out.

    Model, checker and hook code may raise ``KeyboardInterrupt`` (or ``SystemExit``,
    ``GeneratorExit``, any ``BaseException``) itself: that is the model's exception,
    the verdict ``error``, never an interrupt. A handler of a real SIGINT or SIGTERM
    raises this subclass (the command line's ``Interrupted``, the pytest plugin's), so
    the kernel can tell the two apart and let only this one stop the run.
    """


def contract(condition: object, message: str) -> None:
    """Raise ``KernelError(message)`` unless ``condition`` holds; kept under ``python -O``."""
    if not condition:
        raise KernelError(message)


# -- the model's exceptions: the verdict ``error`` -------------------------------------
# The loader's module name for a scenario file (``raceproof.scenarios.discovery``): it
# holds a digest of the file's path, so an error names its class without it.
FILE_MODULE_PREFIX = "raceproof_user_"

_SIM_DIR = str(Path(__file__).resolve().parent) + os.sep
# The catalogue's own wrapper around a scenario's build is raceproof's frame too.
_CATALOGUE = str(Path(__file__).resolve().parent.parent / "scenarios" / "catalogue.py")
_SKIPPED = (_SIM_DIR, _CATALOGUE, str(Path(simpy.__file__).resolve().parent) + os.sep)


def _skipped(filename: str) -> bool:
    """A frame of raceproof's kernel, SimPy or Hypothesis: not the user's code."""
    resolved = str(Path(filename).resolve()) if filename and filename[0] != "<" else filename
    return resolved.startswith(_SKIPPED) or f"{os.sep}hypothesis{os.sep}" in resolved


@dataclass(frozen=True)
class Frame:
    filename: str
    lineno: int
    name: str
    line: str

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.filename,
            "line": self.lineno,
            "function": self.name,
            "code": self.line,
        }


@dataclass(frozen=True)
class ModelError:
    """An exception of the model's own code, as the user needs to read it."""

    type: str
    message: str
    frames: tuple[Frame, ...]

    @property
    def where(self) -> str:
        """``file:line`` of the innermost frame of the user's code (``?`` if there is none)."""
        if not self.frames:
            return "?"
        last = self.frames[-1]
        return f"{last.filename}:{last.lineno}"

    @property
    def headline(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def same_as(self, other: ModelError | None) -> bool:
        """The same exception type raised at the same place (what shrinking keeps)."""
        return other is not None and other.type == self.type and other.where == self.where

    def render(self) -> str:
        """The traceback of the user's code, pytest-style: each frame, its line, then the error."""
        lines = []
        for frame in self.frames:
            lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
            if frame.line:
                lines.append(f"    {frame.line}")
        lines.append(f"E   {self.headline}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {
            "type": self.type,
            "message": self.message,
            "where": self.where,
            "frames": [frame.to_json() for frame in self.frames],
        }


def _original(exc: BaseException) -> BaseException:
    """SimPy throws a copy of a failed process's exception into its waiter; use the original."""
    cause = exc.__cause__
    while cause is not None and type(cause) is type(exc) and cause.args == exc.args:
        exc, cause = cause, cause.__cause__
    return exc


def said(exc: BaseException) -> str:
    """What ``exc`` says, whatever it is: ``str(exc)``, never an exception of its own.

    ``sys.exit(code)`` says ``sys.exit(code)``; an exception whose ``__str__``
    raises (or returns junk) is named with what its ``__str__`` did, so a
    hostile exception still reads as the model's error, never as raceproof's.
    """
    if isinstance(exc, SystemExit):
        return f"sys.exit({exc.code!r})" if exc.code is not None else "sys.exit()"
    try:
        text = str(exc)
    except BaseException as inner:  # the model's __str__: anything goes
        return f"<its str() raised {type(inner).__name__}>"
    return text if isinstance(text, str) else f"<its str() returned {type(text).__name__}>"


def model_error(exc: BaseException) -> ModelError:
    """The ``ModelError`` of ``exc``: its type, message and the user's frames of its traceback."""
    exc = _original(exc)
    frames = []
    for summary in traceback.extract_tb(exc.__traceback__):
        if _skipped(summary.filename):
            continue
        line = (summary.line or linecache.getline(summary.filename, summary.lineno or 0)).strip()
        frames.append(
            Frame(
                filename=summary.filename, lineno=summary.lineno or 0, name=summary.name, line=line
            )
        )
    name = type(exc).__qualname__
    module = type(exc).__module__
    if module not in ("builtins", "__main__") and not module.startswith(FILE_MODULE_PREFIX):
        name = f"{module}.{name}"
    return ModelError(name, said(exc), tuple(frames))
