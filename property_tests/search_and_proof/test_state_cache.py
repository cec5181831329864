"""The state cache: cut runs at explored states, never lose a reachable state, catch a bad fingerprint."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.toy_model import Toy, final_of, runner
from raceproof.sim import Budget, ChoiceSource, RunOutcome, prove
from raceproof.sim.state_cache import StateCacheMismatch

steps = st.tuples(st.sampled_from(("/a", "/b", "/c", "?")), st.booleans())
scripts = st.lists(
    st.lists(steps, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
).filter(
    lambda raw: sum(len(s) for s in raw) <= 7 and sum(p == "?" for s in raw for p, _ in s) <= 2
)
SAMPLE = (
    (("/a", True), ("/b", False)),
    (("/b", True), ("/a", True)),
    (("/a", False), ("/c", True)),
)


def _finals(toy: Toy, **options: object) -> tuple[set[str], object]:
    seen: set[str] = set()
    run = runner(toy)

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        seen.add(final_of(outcome))
        return outcome

    report = prove(recording, budget=Budget(examples=10**6), **options)  # type: ignore[arg-type]
    assert report.complete
    return seen, report


@settings(max_examples=40, deadline=None)
@given(scripts, st.booleans())
def test_the_state_cache_keeps_every_reachable_final_state(
    raw: list[tuple], reduction: bool
) -> None:
    full, _ = _finals(Toy(tuple(raw)), reduction=False)
    cached, _ = _finals(Toy(tuple(raw), state="right"), reduction=reduction, state_cache=True)
    assert cached == full


def test_the_state_cache_cuts_and_says_so() -> None:
    full, plain = _finals(Toy(SAMPLE), reduction=False)
    cached, report = _finals(Toy(SAMPLE, state="right"), reduction=False, state_cache=True)
    assert cached == full
    assert report.state_cache_cuts > 0 and report.states_seen > 0  # type: ignore[attr-defined]
    assert report.schedules < plain.schedules and report.complete  # type: ignore[attr-defined]


@pytest.mark.parametrize("reduction", [True, False])
def test_a_planted_violation_is_found_through_the_cache(reduction: bool) -> None:
    reachable = sorted(_finals(Toy(SAMPLE), reduction=False)[0])
    for planted in reachable[:: max(1, len(reachable) // 8)]:
        toy = dataclasses.replace(Toy(SAMPLE, state="right"), planted=planted)
        report = prove(
            runner(toy), budget=Budget(examples=10**6), reduction=reduction, state_cache=True
        )
        assert report.verdict == "violated", planted


def test_the_debug_mode_catches_a_fingerprint_that_leaves_state_out() -> None:
    with pytest.raises(StateCacheMismatch, match="leaves out state"):
        prove(
            runner(Toy(SAMPLE, state="wrong")),
            budget=Budget(examples=10**6),
            reduction=False,
            state_cache=True,
            state_cache_check=True,
        )
    # and the right fingerprint passes the same check
    _, report = _finals(
        Toy(SAMPLE, state="right"), reduction=False, state_cache=True, state_cache_check=True
    )
    assert report.state_cache_checked > 0  # type: ignore[attr-defined]
