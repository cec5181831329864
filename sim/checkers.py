"""Checkers: pure functions of a history that say ok, violated or unknown.

A checker never sees the simulation, only ops, so the same function judges a
simulated run, a real ZooKeeper run and a real Spark run. A violation names
the op index where the property became false and a sentence saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from raceproof.sim.history import History

Status = Literal["ok", "violated", "unknown"]


@dataclass(frozen=True)
class Verdict:
    checker: str
    status: Status
    op_index: int | None = None
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "checker": self.checker,
            "status": self.status,
            "op_index": self.op_index,
            "message": self.message,
        }


Checker = Callable[[History], Verdict]


def ok(checker: str, message: str = "") -> Verdict:
    return Verdict(checker, "ok", None, message)


def violated(checker: str, op_index: int | None, message: str) -> Verdict:
    assert message, "a violation must say why"
    return Verdict(checker, "violated", op_index, message)


def unknown(checker: str, message: str) -> Verdict:
    return Verdict(checker, "unknown", None, message)


def checker(name: str) -> Callable[[Callable[[History], Verdict]], Checker]:
    """Decorator that names a checker (``fn.checker_name``) and checks it returns a Verdict."""

    def wrap(fn: Callable[[History], Verdict]) -> Checker:
        def run(history: History) -> Verdict:
            verdict = fn(history)
            assert isinstance(verdict, Verdict) and verdict.checker == name, (
                f"checker {name} returned {verdict!r}"
            )
            return verdict

        run.checker_name = name  # type: ignore[attr-defined]
        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return run

    return wrap


def checker_name(fn: Checker) -> str:
    return str(getattr(fn, "checker_name", fn.__name__))


def run_checkers(history: History, checkers: Iterable[Checker]) -> list[Verdict]:
    return [fn(history) for fn in checkers]


def first_violation(verdicts: Iterable[Verdict]) -> Verdict | None:
    """The violation that became false earliest in the history (None if none)."""
    found = [v for v in verdicts if v.status == "violated"]
    if not found:
        return None
    return min(found, key=lambda v: v.op_index if v.op_index is not None else 1 << 60)


def quiescent(history: History) -> bool:
    """True when the run ended because nothing was left to do, not at a bound."""
    ends = history.of_kind("run.end")
    return bool(ends) and ends[-1].get("reason") in ("quiescent", "finished")
