"""The project's race gate: the bug is found, the wrong fix is caught, the right fix is proven."""

from typing import Any


def test_the_reported_race_is_found(raceproof: Any) -> None:
    raceproof.explore("stale-cache", variant="buggy", expect="violated")


def test_fill_with_add_does_not_fix_it(raceproof: Any) -> None:
    raceproof.explore("stale-cache", variant="fix-add-only", expect="violated")


def test_leases_fix_it(raceproof: Any) -> None:
    raceproof.explore("stale-cache", variant="fix-lease", expect="ok")
    raceproof.prove("stale-cache", variant="fix-lease", expect="ok")
