"""Issue 44's four shapes, found by the pair generator from named seeds with their fixes reverted (issue 44 item 2).

``soundness_coverage.hunt(shape, n)`` draws pairs of the shape's operations
(``SHAPES``), each placed from its seed, and returns the first seed whose pair
fails the reduction claim (the reduced walk misses an ending of the full walk).
Both ways, for each shape whose fix has landed: with the fix reverted (the
slip) the generator finds it at ``SEEDS[shape]`` and at no earlier seed; with
the fix, the pair at that seed is silent. The seeds were first found on main
before the fixes (d361861, 19:50 UTC) and are the same with the fixes reverted:

1. equal keys (``1``, ``1.0``, ``True``) named by ``repr``: seed 6 (a set's ``add(True)``
   against ``remove(1)``); fix 7bb11b4 (``cells.key_part`` names a key by value);
2. a recursive watch against a create below it: seed 184 (the store's ``remove_watch``
   of a recursive watch on ``/a`` against ``ZkClient.ensure_path("/a/b/c")``), unfixed
   on main when this was written (owner: cells);
3. a session's end against its ephemeral's parent's child list: seed 2
   (``store.children("/a")`` against ``expire_session`` of the owner of ``/a/e0``),
   unfixed on main when this was written (owner: cells);
4. a timer's cancel or re-arm at its own firing: seed 0 (``Debounce.cancel`` against
   the debounce's firing, the firing armed after the actors start); fix 8ecaa06
   (``World.unschedule`` writes the step it removed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from property_tests.soundness_coverage import SHAPES, drawn, hunt, judge
from property_tests.soundness_walks import patched
from raceproof.sim import cells, shared
from raceproof.sim.world import World

SEEDS = {
    "1 equal keys": 6,
    "2 recursive watch vs a descendant's create": 184,
    "3 session end vs the parent's child list": 2,
    "4 timer cancel or re-arm vs its own firing": 0,
}


def _by_repr(key: object) -> str:
    return f"[{key!r}]"


@contextlib.contextmanager
def keys_by_repr() -> Iterator[None]:
    """Shape 1's slip: a key named by its ``repr`` (``1``, ``1.0`` and ``True`` three resources)."""
    with patched(shared, "key_part", _by_repr), patched(cells, "key_part", _by_repr):
        yield


def _disables(self: World, event: object, resource: str | None) -> None:
    if resource is not None:
        self.touch(resource)


@contextlib.contextmanager
def cancel_records_nothing() -> Iterator[None]:
    """Shape 4's slip: a cancel records nothing of the step it removed (as before 8ecaa06)."""
    with patched(World, "_disables", _disables):
        yield


FIXED: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "1 equal keys": keys_by_repr,
    "4 timer cancel or re-arm vs its own firing": cancel_records_nothing,
}


@pytest.mark.parametrize("shape", sorted(FIXED))
def test_the_generator_finds_the_shape_at_its_seed_with_the_fix_reverted(shape: str) -> None:
    seed = SEEDS[shape]
    with FIXED[shape]():
        found = hunt(shape, seed + 1)
    assert found is not None and found[0] == seed


@pytest.mark.parametrize("shape", sorted(FIXED))
def test_the_pair_at_the_seed_is_silent_with_the_fix(shape: str) -> None:
    spec = drawn(SEEDS[shape], SHAPES[shape])
    assert judge(spec, ("reduction",)) == {"reduction": []}


@pytest.mark.parametrize("shape", sorted(SEEDS))
def test_the_seed_draws_a_pair_of_the_shape(shape: str) -> None:
    spec = drawn(SEEDS[shape], SHAPES[shape])
    assert SHAPES[shape]((spec.group, *spec.ops))
