"""Every simulated run is watched for Python's global ``random`` module: a model must not use it.

Why this module exists: a model that draws from the global ``random`` module
(``random.choice``, ``random.random``, ...) decides something no choice source
sees: no search varies it, no proof enumerates it, no replay repeats it. A
search re-runs what it found (``shrink.same_again``) and usually sees such a
model diverge, but a proof only replays prefixes, and one whose first run drew
no tie said PROVEN: two actors each sleeping ``random.choice([0, 5])``, a
checker wanting ``a0`` to finish first, ``prove`` said ok (exit 0) in 2 of 6
tries. So ``watched`` reads the generator's state (``random.getstate``) before
and after every run ``outcome.execute`` makes, and a run that changed it raises
``UsedGlobalRandom`` (the verdict ``error``, exit 4) whether or not it went
otherwise: a search, a proof (on ``-j N`` in each worker), a replay, a check and
the pytest fixture all refuse such a model, and none can say ``ok`` of it.

A model that reseeds the global generator (``random.seed(7)`` in its build) is
refused too, although each run then draws the same values: the check cannot tell
a reseed from a draw, and the values are still none of the run's choices, so a
proof would not be over what the model may do. A verdict must say less, never
more; the message names the two ways out (``world.source``, or a
``random.Random(seed)`` of the model's own, which nothing here watches). A model
that restores the state it found (``getstate``/``setstate`` around its use)
is not seen.

Where the message points: the run is made again on the choices it recorded,
from the state it started from, on a World that reads the state around every
step (``_Watched``): the first step that changed it names its actor and the
draws made before it; a change before the first step is the build's, one after
the last step a checker's. The watch costs two reads of the state and one
comparison per run (about 21 µs; see ``docs/maintaining/performance.md``), the
located re-run only a run that is refused anyway.

This module only reads the global generator's state (and puts back the state a
refused run began from, for its located re-run): the kernel never draws from it.
"""

from __future__ import annotations

import random
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
        if random.getstate() != before:
            raise located(run, world, before) from None
        raise
    if random.getstate() != before:
        raise located(run, world, before)
    return result


def located(run: Callable[[World], Any], world: World, before: object) -> UsedGlobalRandom:
    """Where ``run`` on ``world`` first used the global generator: the same choices run
    again from the state ``before`` it, on a World that reads the state around each step."""
    values = [choice.value for choice in world.source.record]
    random.setstate(before)  # type: ignore[arg-type]
    watch = _Watched(ReplaySource(values, strict=False), world.bounds)
    try:
        run(watch)
    except Exception:  # the kernel's cut or contract on a run that is refused anyway
        pass
    else:
        watch.look("in a checker or after the last step")
    if watch.first is None:  # the re-run did not use it again: say so without a place
        return UsedGlobalRandom("in a run")
    return UsedGlobalRandom(*watch.first)


class _Watched(World):
    """A World that notes where the global generator's state first changed (one re-run)."""

    def __init__(self, source: ReplaySource, bounds: Any) -> None:
        super().__init__(source, bounds)
        self.state = random.getstate()
        self.first: tuple[str, int | None, str | None] | None = None
        self._stepped = False

    def look(self, where: str, draw: int | None = None, actor: str | None = None) -> None:
        """Note ``where`` as the first use if the state changed since the last look."""
        if self.first is not None:
            return
        state = random.getstate()
        if state != self.state:
            self.first = (where, draw, actor)
        self.state = state

    def _process(self, entry: tuple[Any, Any, int, Any]) -> None:
        draws = len(self.source.drawn)
        if self._stepped:  # what ran since the last step's end: its step hooks (``always``)
            self.look("between two steps (in a step hook)", draws)
        else:
            self.look("while its world was built")
        self._stepped = True
        actor = self._actor_of(entry[3])
        try:
            super()._process(entry)
        finally:
            self.look("in a step", draws, actor)
