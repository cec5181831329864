"""Checkers: pure functions of a history that say ok, violated or unknown.

A checker never sees the simulation, only ops, so the same function judges a
simulated run, a real ZooKeeper run and a real Spark run. A violation names
the op index where the property became false and a sentence saying why.

Inside a function decorated with ``@checker`` the verdict helpers need no
name: ``violated("why", op_index)``, ``ok()`` and ``unknown("why")`` leave it
blank and the decorator fills in the checker's name (returning ``None`` is
``ok``). Outside one, the named forms ``violated(name, op_index, why)``,
``ok(name)`` and ``unknown(name, why)`` are used.

No plain ``assert``: a checker used wrongly (no name, no reason, a verdict of
another checker) raises ``TypeError``/``ValueError``, also under ``python -O``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, overload

from raceproof.sim.history import History
from raceproof.sim.verdicts import CheckStatus


@dataclass(frozen=True)
class CheckerResult:
    """What one checker says about one history.

    Named ``Verdict`` before; ``raceproof.Verdict`` is its deprecated alias.
    """

    checker: str
    status: CheckStatus
    op_index: int | None = None
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "checker": self.checker,
            "status": self.status,
            "op_index": self.op_index,
            "message": self.message,
        }


Checker = Callable[[History], CheckerResult]


def ok(checker: str = "", message: str = "") -> CheckerResult:
    """The property holds. ``ok()`` inside a ``@checker`` function; ``ok(name)`` outside."""
    return CheckerResult(checker=checker, status=CheckStatus.OK, op_index=None, message=message)


@overload
def violated(message: str, op_index: int | None, /) -> CheckerResult: ...
@overload
def violated(checker: str, op_index: int | None, message: str, /) -> CheckerResult: ...
def violated(*args: Any) -> CheckerResult:
    """The property became false at op ``op_index``, for the reason ``message``.

    ``violated(message, op_index)`` inside a ``@checker`` function (the name is
    filled in); ``violated(checker, op_index, message)`` outside one.
    """
    if len(args) == 2:
        (message, op_index), name = args, ""
    else:
        if len(args) != 3:
            raise TypeError(
                f"violated takes (message, op_index) or (checker, op_index, message), got {args!r}"
            )
        name, op_index, message = args
    if not (isinstance(message, str) and message):
        raise ValueError("a violation must say why")
    if not (op_index is None or isinstance(op_index, int)):
        raise TypeError(f"op_index must be an int, got {op_index!r}")
    return CheckerResult(
        checker=name, status=CheckStatus.VIOLATED, op_index=op_index, message=message
    )


@overload
def unknown(message: str, /) -> CheckerResult: ...
@overload
def unknown(checker: str, message: str, /) -> CheckerResult: ...
def unknown(*args: str) -> CheckerResult:
    """The history cannot tell. ``unknown(message)`` inside a ``@checker``; ``unknown(name, message)`` outside."""
    if len(args) not in (1, 2):
        raise TypeError(f"unknown takes (message) or (checker, message), got {args!r}")
    name, message = ("", args[0]) if len(args) == 1 else args
    return CheckerResult(checker=name, status=CheckStatus.UNKNOWN, op_index=None, message=message)


CheckFunction = Callable[[History], CheckerResult | None]


@overload
def checker(name: str) -> Callable[[CheckFunction], Checker]: ...
@overload
def checker(name: CheckFunction) -> Checker: ...
def checker(name: str | CheckFunction) -> Callable[[CheckFunction], Checker] | Checker:
    """Decorator that names a checker and fills that name into every verdict it returns.

    ``@checker("no-lost-update")`` names it; bare ``@checker`` takes the
    function's name with dashes (``no_lost_update`` -> ``no-lost-update``).
    The function may return a verdict with no name (``violated(why, index)``),
    one with its own name, or ``None`` for ok; another checker's name is a bug.
    """
    if callable(name):
        return _named(name.__name__.strip("_").replace("_", "-"))(name)
    return _named(name)


def _named(name: str) -> Callable[[CheckFunction], Checker]:
    if not (isinstance(name, str) and name):
        raise ValueError("a checker needs a name")

    def wrap(fn: CheckFunction) -> Checker:
        def run(history: History) -> CheckerResult:
            verdict = fn(history)
            if verdict is None:
                return ok(name)
            if not (isinstance(verdict, CheckerResult) and verdict.checker in ("", name)):
                raise TypeError(f"checker {name} returned {verdict!r}")
            return replace(verdict, checker=name)  # it may have left its name blank

        run.checker_name = name  # type: ignore[attr-defined]
        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return run

    return wrap


def checker_name(fn: Checker) -> str:
    return str(getattr(fn, "checker_name", fn.__name__))


def run_checkers(history: History, checkers: Iterable[Checker]) -> list[CheckerResult]:
    return [_judged(fn, fn(history)) for fn in checkers]


def _judged(fn: Checker, verdict: object) -> CheckerResult:
    """``verdict`` if it is one; else the user's checker is named (most often: no ``@checker``)."""
    if isinstance(verdict, CheckerResult):
        return verdict
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    hint = (
        ": decorate it with @raceproof.checker (then None means ok)"
        if not hasattr(fn, "checker_name")
        else ""
    )
    raise TypeError(
        f"checker {getattr(fn, '__qualname__', fn)!r}{where} returned "
        f"{type(verdict).__name__}, not a verdict{hint}"
    )


def first_violation(verdicts: Iterable[CheckerResult]) -> CheckerResult | None:
    """The violation that became false earliest in the history (None if none)."""
    found = [v for v in verdicts if v.status == CheckStatus.VIOLATED]
    if not found:
        return None
    return min(found, key=lambda v: v.op_index if v.op_index is not None else 1 << 60)


def quiescent(history: History) -> bool:
    """True when the run ended because nothing was left to do, not at a bound."""
    ends = history.of_kind("run.end")
    return bool(ends) and ends[-1].get("reason") in ("quiescent", "finished")
