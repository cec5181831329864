"""The soundness generator finds each planted slip of ``--check-footprints`` (issue 33 item 7).

The held-out mutants of ``prove --check-footprints`` (a divergence left
unverified, a state snapshot ignored, an off-by-one in its seen keys), planted
one at a time (``property_tests/soundness_slips.py``) and hunted with seed 0
within ``SLIP_EXAMPLES`` examples of the generator. The claims that find them
are the generator's (``property_tests/soundness_walks.py``): the check reports
an unsound reduction that the unslipped check reports (on models whose
untracked state decides whether an actor draws, and on models that write it
blindly and declare their state), and its count of tested claims equals the
claims the walk's ended runs rest on. The other checkers' slips are in
``test_soundness_verdict_slips.py``.
"""

from __future__ import annotations

import pytest

from property_tests.soundness_slips import hunted

CHECKER_SLIPS = [
    "footprint check: a divergence left unverified",
    "footprint check: a state snapshot ignored",
    "footprint check: an off-by-one in its seen keys",
]


@pytest.mark.parametrize("slip", CHECKER_SLIPS)
def test_the_generator_finds_each_planted_checker_slip(slip: str) -> None:
    assert hunted(slip).actors
