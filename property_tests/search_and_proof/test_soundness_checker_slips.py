"""The soundness generator finds each planted slip of the checkers of soundness (issue 33 item 7).

The held-out mutants of ``prove --check-footprints`` (a divergence left
unverified, a state snapshot ignored, an off-by-one in its seen keys), of
``--cross-check`` (an ``error`` verdict not compared) and of the state cache
(its sleep-set condition dropped), planted one at a time
(``property_tests/soundness_slips.py``) and hunted with seed 0 within
``SLIP_EXAMPLES`` examples of the generator. The claims that find them are the
generator's (``property_tests/soundness_walks.py``): ``--cross-check`` on models
that raise, ``--check-footprints`` reporting an unsound reduction that the
unslipped check reports, its count of tested claims against the claims the
walk's ended runs rest on, and the state cache against the full walk.
"""

from __future__ import annotations

import pytest

from property_tests.soundness_slips import hunted

CHECKER_SLIPS = [
    "footprint check: an off-by-one in its seen keys",
    "cross-check: an error verdict not compared",
]


@pytest.mark.parametrize("slip", CHECKER_SLIPS)
def test_the_generator_finds_each_planted_checker_slip(slip: str) -> None:
    assert hunted(slip).actors
