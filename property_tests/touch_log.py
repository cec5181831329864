"""A World that lists every footprint entry its primitives record, in the order made.

Several suites pin exactly what a step reads and writes (the partial-order
reduction trusts those entries); they share this one recorder.
"""

from __future__ import annotations

from raceproof.sim import ChoiceSource, ReplaySource, World


class TouchLog(World):
    """FIFO unless given a source; ``touched`` holds every (resource, write) entry."""

    def __init__(self, source: ChoiceSource | None = None) -> None:
        super().__init__(source or ReplaySource([], strict=False))
        self.touched: list[tuple[str, bool]] = []

    def touch(self, resource: str, write: bool = True) -> None:
        self.touched.append((resource, write))
        super().touch(resource, write)
