"""The state cache's sleep-set condition guards transitions, not states: a census slice (issue 33).

``property_tests/sleep_cache_census.py`` replicates the proof walk (breadth
first by deviations, sleep sets, the state cache) over every model of a shape
and compares it with the full state space. On every three-process model of up
to five ops over one variable: dropping the sleep-set condition (the planted
slip no hunt finds) changes the walk and loses (state, step) transitions, but
never a state nor a final state; the cache as it is loses nothing; and a cache
whose fingerprint leaves the variables out, which is unsound, loses final
states (the census can see a loss when there is one).
"""

from __future__ import annotations

from property_tests.sleep_cache_census import State, Walk, census, space


def test_the_slip_loses_transitions_but_never_a_state() -> None:
    tally = census([(3, 5)], variables=1)
    assert tally.models == 2035
    assert tally.changed > 0 and tally.lost_transitions > 0  # the slip is seen at work
    assert (tally.lost_states, tally.lost_finals, tally.cache_wrong) == (0, 0, 0), str(tally)


class _Blind(Walk):
    """A cache whose fingerprint leaves the variables out: it matches states that differ."""

    def covered(self, state: State, sleep: frozenset[tuple[int, int]]) -> bool:
        return super().covered((state[0], ()), sleep)


def test_the_census_sees_a_cache_that_loses_final_states() -> None:
    """A write of 0 before or after another process's write of 1: the two orders reach the
    same positions with different values, and the blind cache cuts the second before its
    increment; the real one reaches every final state."""
    scripts = [(("w0", 0),), (("w1", 0), ("inc", 0))]
    _, finals = space(scripts, 1)
    assert len(finals) == 3
    assert _Blind(scripts, 1, slip=False).walk().finals < finals
    assert Walk(scripts, 1, slip=False).walk().finals == finals
