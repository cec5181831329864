"""The project's race gate: the paused holder's stale write is found; fencing tokens fix it."""

from typing import Any


def test_the_paused_holder_overwrites_the_next_one(raceproof: Any) -> None:
    raceproof.explore("fencing-lease", variant="buggy", expect="violated")


def test_fencing_tokens_fix_it(raceproof: Any) -> None:
    raceproof.explore("fencing-lease", variant="fix-fencing", expect="ok")
    raceproof.prove("fencing-lease", variant="fix-fencing", expect="ok")
