"""Every simulated run is watched for Python's global ``random`` module: a model must not use it.

Why this module exists: a model that draws from the global ``random`` module
(``random.choice``, ``random.random``, ...) decides something no choice source
sees: no search varies it, no proof enumerates it, no replay repeats it. A
search re-runs what it found (``shrink.same_again``) and usually sees such a
model diverge, but a proof only replays prefixes, and one whose first run drew
no tie said PROVEN: two actors each sleeping ``random.choice([0, 5])``, a
checker wanting ``a0`` to finish first, ``prove`` said ok (exit 0) in 2 of 8
tries. So ``watched`` reads the generator's state (``random.getstate``) before
and after every run ``outcome.execute`` makes, and a run that changed it raises
``UsedGlobalRandom`` (the verdict ``error``, exit 4) whether or not it went
otherwise: a search, a proof (on ``-j N`` in each worker), a replay, a check and
the pytest fixture all refuse such a model, and none can say ``ok`` of it.

A model that reseeds the global generator (``random.seed(7)`` in its build) is
refused too, although each run then draws the same values: the values are still
none of the run's choices, so a proof would not be over what the model may do (a
verdict must say less, never more). The message names the two ways out
(``world.source``, or a ``random.Random(seed)`` of the model's own, which nothing
here watches). A model that restores the state it found (``getstate`` and
``setstate`` around its use) is not seen.

Where the message points (``located``): the run is made again on the choices it
recorded, on a World that knows which part of the run is running (``_Watched``),
under a profile function of this thread that notes the first call of the global
instance's drawing or reseeding methods: in a step (its actor, and the draws made
before it), while the world was built, between two steps (a step hook), in a
checker. That re-run also tells a change of another thread's from the run's own:
a process may hold a thread that draws from the global generator (kazoo's
connection loop draws a jitter on every turn), and the state then changes under a
run that never calls it; such a change is no use of the model's when the re-run's
thread made no call. With no other thread, a change is the run's whatever the
re-run shows.

The watch costs two reads of the state and one comparison per run (21 µs on an
idle core, about 45 µs on this shared machine under load; see
``docs/maintaining/performance.md``); the located re-run runs only when the state
changed. The kernel never draws from the global generator nor sets its state.
"""

from __future__ import annotations

import random  # nondeterminism-ok: it reads the global module's state to refuse a model that uses it, never draws
import sys
import threading  # nondeterminism-ok: it only asks whether another thread is alive (kazoo's draw too)
from collections.abc import Callable
from typing import Any, TypeVar

from raceproof.sim.choices import ReplayMisaligned, ReplaySource
from raceproof.sim.errors import UsedGlobalRandom
from raceproof.sim.world import SleepBlocked, World

T = TypeVar("T")


def watched(run: Callable[[World], T], world: World) -> T:
    """``run(world)``, or ``UsedGlobalRandom`` if it changed the global ``random`` state.

    A run cut short by the kernel's control flow (the reduction's cut, a strict
    replay that misaligned) is refused as well when it changed the state: its
    use is the better-named cause. Anything else that leaves ``run`` (a kernel
    bug, a real signal, Hypothesis' own flow) passes unchanged.
    """
    before = random.getstate()
    try:
        result = run(world)
    except (SleepBlocked, ReplayMisaligned):
        if random.getstate() != before and (used := models_use(run, world)):
            raise used from None
        raise
    if random.getstate() != before and (used := models_use(run, world)):
        raise used
    return result


def models_use(run: Callable[[World], Any], world: World) -> UsedGlobalRandom | None:
    """The run's use of the global generator, located; None if another thread changed it.

    With one thread, nothing but the run can have changed it: its use, where the
    located re-run finds it, or ``in a run`` if that re-run made no call. With
    others, the change is the model's only if the re-run's own thread calls the
    generator: a kazoo client's connection loop draws a jitter from it on every
    turn (in the pytest process of a user's real-ZooKeeper tests, say), and a run
    beside it changed the state 1 run in a few without using it.
    """
    used = located(run, world)
    if used is None and threading.active_count() == 1:
        return UsedGlobalRandom("in a run")
    return used


def located(run: Callable[[World], Any], world: World) -> UsedGlobalRandom | None:
    """Where ``run`` on ``world`` first calls the global generator, or None if it does not.

    The same choices are run again on a World that knows where it is (the build, a
    step and its actor, between steps, the checkers), under a profile function of
    this thread alone (``sys.setprofile``) that notes the first call of the global
    instance's C methods that draw or reseed (``_DRAWS``: every function of the
    module goes through one of them). Where a model first calls it does not depend
    on the state it finds, so the state is left as it is.
    """
    values = [choice.value for choice in world.source.record]
    watch = _Watched(ReplaySource(values, strict=False), world.bounds)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if (
            event == "c_call"
            and watch.first is None
            and getattr(arg, "__self__", None) is _GLOBAL
            and getattr(arg, "__name__", None) in _DRAWS
        ):
            watch.first = watch.where

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run(watch)
    except Exception:  # the kernel's cut or contract on a run that is refused anyway
        pass
    finally:
        sys.setprofile(previous)
    return None if watch.first is None else UsedGlobalRandom(*watch.first)


# The module's own instance (what ``random.random`` and the rest are bound to), and the
# C methods of it that draw or reseed.
_GLOBAL = random.seed.__self__  # type: ignore[attr-defined]
_DRAWS = frozenset({"random", "getrandbits", "seed", "setstate"})


class _Watched(World):
    """A World that knows which part of the run is running (for ``located``'s profile)."""

    def __init__(self, source: ReplaySource, bounds: Any) -> None:
        super().__init__(source, bounds)
        self.where: tuple[str, int | None, str | None] = ("while its world was built", None, None)
        self.first: tuple[str, int | None, str | None] | None = None

    def _process(self, entry: tuple[Any, Any, int, Any]) -> None:
        self.where = ("in a step", len(self.source.drawn), self._actor_of(entry[3]))
        try:
            super()._process(entry)
        finally:  # what runs next, until the next step: its step hooks (``always``)
            self.where = ("between two steps (in a step hook)", len(self.source.drawn), None)

    def run_to_end(self) -> str:
        try:
            return super().run_to_end()
        finally:
            self.where = ("in a checker or after the last step", None, None)
