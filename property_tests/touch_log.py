"""A World that lists every footprint entry its primitives record, in the order made.

Several suites pin exactly what a step reads and writes (the partial-order
reduction trusts those entries); they share this one recorder.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from raceproof.sim import ChoiceSource, ReplaySource, World


class TouchLog(World):
    """FIFO unless given a source; ``touched`` holds every (resource, write) entry."""

    def __init__(self, source: ChoiceSource | None = None) -> None:
        super().__init__(source or ReplaySource([], strict=False))
        self.touched: list[tuple[str, bool]] = []

    def touch(self, resource: str, write: bool = True) -> None:
        self.touched.append((resource, write))
        super().touch(resource, write)


class Draws(ReplaySource):
    """A replay (boring past its values) that lists every draw asked of it, with its probability."""

    def __init__(self, values: Sequence[int]) -> None:
        super().__init__(list(values), strict=False)
        self.asked: list[tuple[str, int, float | None]] = []

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        self.asked.append((label, n, p_nonzero))
        return super()._pick(label, n, p_nonzero, keys)


class DrawLog(TouchLog):
    """FIFO, listing every footprint entry and every draw with its probability."""

    def __init__(self, values: Sequence[int] = (), source: ChoiceSource | None = None) -> None:
        super().__init__(source or Draws(values))


def after(world: World, delay_ms: int, action: Any) -> Generator[Any, Any, None]:
    """A process that sleeps ``delay_ms`` and then calls ``action``."""
    yield world.sleep(delay_ms)
    action()


def fifo_world(values: Sequence[int] = ()) -> World:
    """A plain world that replays ``values`` and then takes the boring choice (FIFO) forever."""
    return World(ReplaySource(list(values), strict=False))
