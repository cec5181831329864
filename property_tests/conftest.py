"""Shared test settings: a derandomized Hypothesis profile for CI (never flaky)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    print_blob=True,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
# `make mutation` runs the tests once per mutant: fewer examples, same derandomized draws.
settings.register_profile(
    "mutation",
    derandomize=True,
    deadline=None,
    max_examples=25,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))
