"""The soundness generator finds each planted footprint slip of the kernel and its primitives.

Issue 33 items 2 and 7: item 1's invariant reads left out of the step's
footprint, the last round's four footprint slips (a queue take recorded as a
read, ``finish`` touching nothing, a model's ``touch`` deleted, a lock release
recording nothing) and a tracked set's ``discard`` recorded without its read.
Each is planted (``property_tests/soundness_slips.py``) and hunted with seed 0
within ``SLIP_EXAMPLES`` examples of the generator, drawn from the families of
primitives the slip lives in; the model found must show nothing once the slip
is removed. The checkers' own slips are in ``test_soundness_checker_slips.py``.
"""

from __future__ import annotations

import pytest

from property_tests.soundness_slips import hunted

FOOTPRINT_SLIPS = [
    "invariant reads unrecorded",
    "queue take recorded as a read",
    "finish touches nothing",
    "a model's touch deleted",
    "a lock release records nothing",
    "a tracked set's discard without its read",
]


@pytest.mark.parametrize("slip", FOOTPRINT_SLIPS)
def test_the_generator_finds_each_planted_footprint_slip(slip: str) -> None:
    assert hunted(slip).actors
