"""What of the past a scenario's future and verdicts depend on: the state cache's abstraction.

The kernel's state fingerprint (``raceproof.sim.fingerprint``) must hold
everything the checkers still judge. Without a declaration that is the whole
history: every op with its actor, kind, fields and virtual time. Two runs of
``lost-update`` that interleave two clients' independent steps differently end
in the same store, the same processes and the same pending events, yet their
histories differ in the order the ops were logged and in their times -- so the
cache merged almost nothing (measured at ``clients=3``: 5,063 distinct texts
among 5,513 look-ups, 2,975 once the history and the clock were left out).

A scenario declares instead what its checkers need of the past
(``Scenario(past=Past(summary))``, ``World.declare_past``): ``summary(history)``,
a value the fingerprint encodes in place of the ops (renamed like the rest of
the state under declared symmetry). ``lost-update``'s checker needs only the
number of acknowledged increments and the final value read.

Soundness condition, the scenario author's to keep (``prove --check-state-cache``
and ``make soundness`` check it against the plain walk):

1. the summary is a fold over the ops: for every two histories ``a`` and ``b``
   with ``summary(a) == summary(b)`` and any ops ``f`` logged after them,
   ``summary(a + f) == summary(b + f)``;
2. every checker's status is a function of the summary of the whole history
   (a checker's message may say more, its status may not);
3. nothing else reads the history: the model, its probes and its workload do not.

With ``absolute_time=False`` the scenario also promises that nothing it runs
reads the clock's absolute value or holds one: its processes sleep for
durations, compute no deadline from ``world.now_ms`` and use none of the
primitives that keep a deadline (timers, nodes' pauses and clocks, sessions'
reconnects, faults, the file system's times). Then the fingerprint leaves out
the virtual time: states reached at different times but otherwise equal are
one (pending events are already relative to now). The walk keeps one rule for
the bounds: a state covers a later visit only if it was reached no earlier and
after no fewer steps (it had no more room before ``Bounds``' time and step caps,
so any bound the later visit would hit, its subtree hit too and the proof says so).

The debug mode compares, for two visits of one fingerprint, the verdicts and the
ops their subtrees logged from there on with their times relative to the state
(``state_cache.ending``); a summary that leaves out what a checker reads merges
states whose subtrees end with different verdicts, and ``StateCacheMismatch``
names it (``property_tests/search_and_proof/test_past.py`` plants one).
``past_ending`` is the soundness claims' ending under the declaration: status,
verdicts and the summary of the whole history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raceproof.sim.history import History


@dataclass(frozen=True)
class Past:
    """A scenario's declared abstraction of the past (see the module docstring)."""

    summary: Callable[[History], Any]
    absolute_time: bool = True  # False: nothing reads or holds the clock's absolute value

    def __post_init__(self) -> None:
        if not callable(self.summary):
            raise TypeError(
                f"Past: summary must be a function of the history, got {self.summary!r}"
            )
        if not isinstance(self.absolute_time, bool):
            raise TypeError(f"Past: absolute_time must be a bool, got {self.absolute_time!r}")


def past_ending(outcome: Any, past: Past) -> tuple[Any, ...]:
    """A run's ending as far as the declaration lets anything read it: its status, each
    checker's status and the summary of its whole history (``repr``: a canonical value)."""
    return (
        outcome.status,
        tuple((v.checker, v.status) for v in outcome.verdicts),
        repr(past.summary(outcome.history)),
    )
