"""What the proof's reduction must keep visible: observers of the states between steps.

The partial-order reduction (``raceproof.sim.reduction``) treats two steps as
commuting when their footprints share no resource with a write: either order
reaches the same final state. That is enough for a property judged on the
final state or on the ops each actor logged, and not enough for anything that
looks at the states *between* steps, because two commuting steps pass through
different intermediate states (the classic visibility condition of
partial-order reduction). raceproof has three such observers, and each is
made visible to the reduction:

1. **Step invariants** (``always``) and any other ``World.after_step`` hook.
   Under a proof the hooks run inside the footprint of the step they follow
   (``World._observed_step``), so what a predicate reads (through tracked state
   or ``world.touch``) joins that step's footprint as a read. Two adjacent
   steps ``a`` then ``b`` are then independent only if neither writes what the
   hooks read after the other; in that case the hooks read the same resources
   with the same values after ``a``, after ``b`` and after both (each
   evaluation follows the same path), so every order shows the predicate the
   same sequence of values up to repetition, and its verdict (first violated
   at the same step, at the same instant) is the same. A step that writes what
   an invariant reads (a *visible* step) therefore never commutes with another
   visible step, nor with any step the invariant read beside it; steps that
   write nothing an observer reads still commute. A predicate that short-
   circuits reads less in some states: the rule holds per state, because the
   footprints are recorded in the states the run passed through.
2. **Probes** (``world.reach``). A probe reached from an actor's step is
   decided by what that step read, which its footprint records: every step of
   the full walk has an equivalent step in an explored schedule, which reaches
   the same probes. A probe placed in an ``after_step`` hook is an observer as
   in 1.
3. **Checkers that read the order of ops of different actors** (for example
   "the first ``took`` op is c1's"). ``declare_footprints`` promises that no
   checker does; a checker that does is marked with :func:`reads_op_order`,
   and a run judged by one records every ``world.log`` as a write of the one
   resource ``history`` (``World.log``), so no two logging steps commute and
   every explored schedule keeps the order of every pair of ops. An unmarked
   checker that does read the order is found by ``prove --check-footprints``
   and ``--cross-check``: swapping two steps changes its verdict while the ops
   stay the same, and the message names the checker.

``prove --check-footprints`` names an invariant as the cause when the verdict
that differs after a swap is an invariant's (its predicate reads state that no
footprint records); the property tests' generator of random models
(``property_tests/soundness_models.py``, ``make soundness``) checks all three
against the full walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

OP_ORDER = "history"  # the resource every op is a write of, under an order-reading checker

C = TypeVar("C", bound=Callable[..., Any])


def reads_op_order(check: C) -> C:
    """Mark ``check`` as reading the order of ops logged by different actors.

    A run judged by such a checker keeps every pair of ops in order under the
    reduction (each ``world.log`` writes ``history``): the proof walks more
    schedules and the verdict cannot depend on an order the reduction chose.
    Returns the same checker, so it can decorate a ``@checker`` function.
    """
    check.reads_op_order = True  # type: ignore[attr-defined]
    return check


def observes_op_order(checkers: Iterable[Callable[..., Any]]) -> bool:
    """True when any of ``checkers`` is marked with :func:`reads_op_order`."""
    return any(getattr(check, "reads_op_order", False) is True for check in checkers)
