"""The walk over every schedule, breadth-first by number of deviations from choice 0.

Shared by the proof (which judges every schedule) and the shrinker (which
looks for the shortest counterexample among those with the fewest
deviations). A schedule's children are its recording cut at a position past
its own prefix, with one more nonzero value there; so each schedule is run
once, and all schedules with d deviations come before any with d + 1.

A prefix that replays differently (a nondeterministic model) raises
``Nondeterministic`` (the user's mistake, exit 4), also under ``python -O``: the
walk's count depends on it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from raceproof.sim.choices import ReplaySource
from raceproof.sim.errors import Nondeterministic
from raceproof.sim.outcome import Runner, RunOutcome

Prune = Callable[[str, int], None]


def not_replayed(prefix: tuple[int, ...], recorded: tuple[int, ...]) -> Nondeterministic:
    """A prefix whose replay drew otherwise: the model is not deterministic (the user's mistake)."""
    pairs = enumerate(zip(prefix, recorded, strict=False))
    draw = next((i for i, (a, b) in pairs if a != b), min(len(prefix), len(recorded)))
    return Nondeterministic(f"the prefix {prefix} replayed as {recorded[: len(prefix)]}", draw=draw)


class Walk:
    """An iterator over schedules that also tells how many are still queued."""

    def __init__(
        self,
        run: Runner,
        max_deviations: int | None,
        max_branch: int | None,
        on_prune: Prune | None,
    ) -> None:
        self.run = run
        self.max_deviations = max_deviations
        self.max_branch = max_branch
        self.on_prune = on_prune or (lambda _bound, _count: None)
        self.frontier: deque[tuple[tuple[int, ...], int, int, int]] = deque([((), 0, 0, 0)])

    def __iter__(self) -> Iterator[tuple[RunOutcome, int]]:
        while self.frontier:
            parent, position, value, depth = self.frontier.popleft()
            prefix = (*parent[:position], value) if depth else ()
            outcome = self.run(ReplaySource(prefix, strict=False))
            recorded = tuple(outcome.values)
            if recorded[: len(prefix)] != prefix:
                raise not_replayed(prefix, recorded)
            self._expand(outcome, recorded, len(prefix), depth)
            yield outcome, depth

    def _expand(
        self, outcome: RunOutcome, recorded: tuple[int, ...], start: int, depth: int
    ) -> None:
        for i in range(start, len(outcome.choices)):
            n = outcome.choices[i].n
            options = n - 1
            if self.max_branch is not None and n > self.max_branch:
                self.on_prune("max_branch", n - self.max_branch)
                options = self.max_branch - 1
            if self.max_deviations is not None and depth + 1 > self.max_deviations:
                if options > 0:
                    self.on_prune("max_deviations", options)
                continue
            for v in range(1, options + 1):
                self.frontier.append((recorded, i, v, depth + 1))
