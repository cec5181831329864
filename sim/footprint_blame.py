"""Whose footprint is missing, when two steps the footprints call independent do not commute.

``prove --check-footprints`` (``raceproof.sim.footprint_check``) runs a pair of
steps in both orders; when the orders end differently although the recorded
footprints share nothing written, something the two steps share was not
recorded. Either the model's own (a plain object its actors share, a
hand-placed ``world.touch`` naming too little, a footprint declaration it made
itself): the user's to fix, bad input, exit 2. Or a kernel primitive's, or a
tracked container's, whose footprints raceproof records itself
(``raceproof.sim.cells``): then telling the user to "track it" is wrong, and the
report is raceproof's bug, exit 70, naming the two operations.

Telling them apart takes one more run of the order checked, under a profile
hook (``sys.setprofile``, for that run only) that notes per step each call from
the model's code into a kernel object (``VersionedStore.children``,
``TrackedDict.__setitem__``) and whether a footprint was written while it ran,
and whether the model recorded or declared footprints by hand (``World.touch``,
``World.declare_footprints``, from outside the kernel). It is raceproof's bug
when the model did neither and the two steps worked on one kernel object, one of
them writing through it. Otherwise the model is told to track what it shares: a
heuristic that leans that way (two steps that share a plain object and also read
one primitive are the model's; a primitive that records a write as a read, or two
primitives that share state inside the kernel, are not caught by it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from raceproof.sim.choices import ChoiceSource
from raceproof.sim.errors import KernelError
from raceproof.sim.outcome import Runner
from raceproof.sim.world import SleepBlocked

KERNEL = os.path.dirname(os.path.abspath(__file__)) + os.sep
# The World's own calls (time, spawning, history, probes) and the draws: no shared state
# of a primitive. ``World.touch`` and ``World.declare_footprints`` are noted as the model's.
NOT_PRIMITIVES = frozenset({"world.py", "choices.py", "footprint_blame.py", "errors.py"})
BY_HAND = frozenset({"World.touch", "World.declare_footprints"})


class FootprintBug(KernelError):
    """A kernel primitive's footprint left out what a step shares: raceproof's bug (exit 70)."""


@dataclass
class Operations:
    """What one run's steps called in the kernel, and whether the model placed footprints."""

    by_step: dict[str, dict[int, list[str]]] = field(default_factory=dict)  # object -> ops
    wrote: set[tuple[str, int]] = field(default_factory=set)  # (step, object) it wrote through
    by_hand: bool = False

    def note(self, step: str | None, name: str, obj: int) -> None:
        if step is not None:
            called = self.by_step.setdefault(step, {}).setdefault(obj, [])
            if name not in called:
                called.append(name)

    def shared(self, a: str, b: str) -> tuple[list[str], list[str]] | None:
        """The two steps' operations on one kernel object that one of them wrote through."""
        on_a, on_b = self.by_step.get(a, {}), self.by_step.get(b, {})
        for obj in sorted(on_a.keys() & on_b.keys()):
            if (a, obj) in self.wrote or (b, obj) in self.wrote:
                return on_a[obj], on_b[obj]
        return None


def operations(run: Runner, source: ChoiceSource) -> Operations:
    """Run ``run`` on ``source`` noting, per step, the kernel operations the model called.

    An operation is a call from outside the kernel into a method of a kernel object
    (the World's own and the draws aside); a footprint written while it runs is noted
    as written through that object.
    """
    found = Operations()
    step: list[str | None] = [None]
    active: list[tuple[FrameType, int]] = []  # the model's calls into the kernel under way
    before: Callable[[str | None], None] = source.before_step  # type: ignore[attr-defined]

    def before_step(key: str | None) -> None:
        step[0] = key
        before(key)

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        code = frame.f_code
        if not code.co_filename.startswith(KERNEL):
            return
        if event == "return":
            if active and active[-1][0] is frame:
                active.pop()
            return
        if event != "call":
            return
        caller = frame.f_back
        inside = caller is not None and caller.f_code.co_filename.startswith(KERNEL)
        if code.co_qualname in BY_HAND:
            if not inside:
                found.by_hand = True
            elif active and step[0] is not None and frame.f_locals.get("write", True):
                found.wrote.add((step[0], active[-1][1]))
            return
        obj = frame.f_locals.get("self")
        if inside or obj is None or os.path.basename(code.co_filename) in NOT_PRIMITIVES:
            return
        active.append((frame, id(obj)))
        found.note(step[0], code.co_qualname, id(obj))

    source.before_step = before_step  # type: ignore[attr-defined]  # this run's steps, named
    _profiled(profile, lambda: run(source))
    return found


def _profiled(profile: Callable[[FrameType, str, Any], None], body: Callable[[], Any]) -> None:
    """``body`` under ``profile``, the caller's own profile function put back after."""
    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        body()
    except SleepBlocked:  # a followed order that diverged: what ran is noted all the same
        pass
    finally:
        sys.setprofile(previous)


def blame(run: Runner, source: ChoiceSource, pair: tuple[str, str], said: str) -> None:
    """Raise ``FootprintBug`` if the pair's missing footprint is a kernel primitive's.

    ``source`` follows the order the check ran; ``said``: the mismatch as the check
    words it. Returns when the model's own footprints may be the ones missing.
    """
    found = operations(run, source)
    called = found.shared(*pair)
    if found.by_hand or called is None:
        return
    raise FootprintBug(
        f"{said}. This is raceproof's bug, not your model's: step {pair[0]} called "
        f"{', '.join(called[0])} and step {pair[1]} called {', '.join(called[1])} on one "
        f"kernel primitive or tracked container, whose footprints raceproof records itself "
        f"(the model recorded and declared no footprint by hand); one of those operations "
        f"leaves out what the other reads or writes"
    )
