"""Step-level invariants: a predicate over model state, checked after every step of the World.

Some properties are easiest to say about the model's state ("never two
leaders at once", "a lease holder's session is live") rather than rebuilt
from the log. ``always`` checks such a predicate after each step; the first
time it is false it logs an ``invariant.violated`` op naming the invariant,
so the verdict still comes from a pure checker of the history
(``invariant_checker``), the timeline shows where it broke, and a real run
that logs the same op is judged the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from raceproof.sim.checkers import Checker, CheckerResult, checker, ok, violated
from raceproof.sim.history import History
from raceproof.sim.world import World

INVARIANT_OP = "invariant.violated"


def always(
    world: World,
    name: str,
    predicate: Callable[[], bool],
    *,
    explain: Callable[[], str] | None = None,
) -> Checker:
    """Check ``predicate()`` after each step; log its first violation. Returns its checker.

    ``explain()`` (optional) says why, read only when the predicate is false.
    The checker returned is ``invariant_checker(name)``: put it (or an equal
    one, built from the same name) in the scenario's checkers.
    """
    if not name:
        raise ValueError("an invariant needs a name")

    def after_step() -> None:
        if predicate():
            return
        message = explain() if explain is not None else f"invariant {name} became false"
        # No step count in the op: it would differ between orders of steps that commute (an
        # independent step run before or after), which the reduction treats as one schedule.
        world.log("invariant", INVARIANT_OP, invariant=name, message=message)
        world.after_step.remove(after_step)

    world.after_step.append(after_step)
    return invariant_checker(name)


def invariant_checker(name: str) -> Checker:
    """The checker of invariant ``name``: violated at its ``invariant.violated`` op, else ok."""

    @checker(name)
    def check(history: History) -> CheckerResult:
        for op in history.of_kind(INVARIANT_OP):
            if op.get("invariant") == name:
                return violated(str(op.get("message")), op.index)
        return ok()

    return check
