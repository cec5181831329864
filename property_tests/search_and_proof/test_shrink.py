"""The shrinker and its keyed replay, on a model whose every draw is visible.

The model draws four integers in [0, 2] under two labels and logs them; its
checker fails on a predicate of the four. So what the shrinker tries, in
which order, how many runs it spends and where it stops can be stated
exactly, and the keyed replay (deviations named by label and occurrence) can
be checked against the recording it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim import (
    Bounds,
    CheckerResult,
    ChoiceSource,
    History,
    KeyedReplaySource,
    RandomSource,
    ReplaySource,
    RunOutcome,
    World,
    checker,
    execute,
    ok,
    violated,
)
from raceproof.sim.choices import Choice, keyed_deviations
from raceproof.sim.shrink import shrink, shrink_key

Predicate = Callable[[list[int]], bool]


def _model(predicate: Predicate) -> Callable[[ChoiceSource], RunOutcome]:
    def build(world: World) -> None:
        def actor() -> Generator[Any, Any, None]:
            values = [world.source.draw_int(f"d{i % 2}", 0, 2) for i in range(4)]
            world.log("a", "drew", values=values)
            yield world.sleep(0)

        world.spawn("a", actor())

    @checker("pred")
    def check(history: History) -> CheckerResult:
        (op,) = history.of_kind("drew")
        values = list(op.get("values"))
        return violated("pred", op.index, f"{values}") if predicate(values) else ok("pred")

    return lambda source: execute(build, source, [check], Bounds())


def _recording(run: Callable[[ChoiceSource], RunOutcome], tried: list[object]) -> Any:
    def recorded(source: ChoiceSource) -> RunOutcome:
        if isinstance(source, KeyedReplaySource):
            tried.append(dict(source.keyed))
        elif isinstance(source, ReplaySource):
            tried.append(list(source.raw))
        return run(source)

    return recorded


# -- keyed deviations and their replay -------------------------------------------------
records = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(2, 4), st.integers(0, 3)).map(
        lambda t: Choice(t[0], t[1], t[2] % t[1])
    ),
    max_size=12,
)


@given(records)
def test_keyed_deviations_name_each_nonzero_draw_by_label_and_occurrence(
    record: list[Choice],
) -> None:
    keyed = keyed_deviations(record)
    assert len(keyed) == sum(1 for c in record if c.value)
    for (label, occurrence), value in keyed.items():
        same = [c for c in record if c.label == label]
        assert same[occurrence].value == value != 0
    replay = KeyedReplaySource(keyed)
    assert [replay._draw(c.label, c.n) for c in record] == [c.value for c in record]


def test_a_keyed_replay_gives_zero_for_unnamed_or_out_of_range_draws() -> None:
    replay = KeyedReplaySource({("x", 1): 2, ("y", 0): 5})
    assert [replay._draw("x", 3), replay._draw("x", 3), replay._draw("x", 3)] == [0, 2, 0]
    assert replay._draw("y", 3) == 0  # 5 does not fit 3 options
    assert replay._draw("y", 6) == 0  # the first y was that occurrence
    assert RandomSource(7).seed == 7


# -- the shrinker ------------------------------------------------------------------------
def test_only_a_violating_run_can_be_shrunk() -> None:
    run = _model(lambda v: False)
    with pytest.raises(ValueError, match=r"^only a violating or erring run can be shrunk(\n|$)"):
        shrink(run, run(ReplaySource([], strict=False)))


def test_three_deviations_are_first_cut_to_each_one_and_each_pair() -> None:
    run = _model(lambda v: v[0] > 0 and v[3] > 0)  # needs two: d0#0 and d1#1
    found = run(ReplaySource([1, 1, 1, 1], strict=False))
    tried: list[object] = []
    result = shrink(_recording(run, tried), found, max_walk_runs=1)
    singles = [{("d0", 0): 1}, {("d0", 1): 1}, {("d1", 0): 1}, {("d1", 1): 1}]
    pairs = [
        {("d0", 0): 1, ("d0", 1): 1},
        {("d0", 0): 1, ("d1", 0): 1},
        {("d0", 0): 1, ("d1", 1): 1},
    ]
    assert tried[: len(singles) + len(pairs)] == singles + pairs  # stops at the first pair kept
    assert result.outcome.values == [1, 0, 0, 1]
    assert shrink_key(result.outcome) < shrink_key(found)


def test_the_shrinker_counts_its_runs_and_stops_at_its_cap() -> None:
    run = _model(lambda v: v[0] + v[2] >= 3)  # two deviations: 1 + 2 or 2 + 1
    found = run(ReplaySource([2, 1, 2, 1], strict=False))
    capped = shrink(run, found, max_runs=0, max_walk_runs=1)
    assert (capped.runs, capped.exhausted, capped.outcome) == (1, True, found)
    one = shrink(run, found, max_runs=1, max_walk_runs=1)
    assert one.runs == 2 and one.exhausted
    three = shrink(run, found, max_runs=3, max_walk_runs=1)  # three single deviations fail
    assert three.runs == 4 and three.exhausted and three.outcome == found
    full = shrink(run, found)
    assert not full.exhausted and full.runs == 53  # 20 in the passes, 33 in the final walk
    roomy = shrink(run, found, max_runs=21)  # the passes' cap: the walk's runs do not count
    assert (roomy.runs, roomy.exhausted) == (53, False)
    cut_walk = shrink(run, found, max_walk_runs=2)  # schedules were left: not a fixed point
    assert (cut_walk.runs, cut_walk.exhausted) == (22, True)
    assert sorted(full.outcome.values) == [0, 0, 1, 2]  # the fewest deviations, the smallest sum
    assert full.outcome.values[0] + full.outcome.values[2] == 3
    again = shrink(run, full.outcome)  # a fixed point: nothing smaller violates
    assert again.outcome.values == full.outcome.values


def test_two_deviations_go_through_the_cut_drop_and_lower_passes_in_order() -> None:
    run = _model(lambda v: v[3] > 0)  # only the second d1 draw matters
    found = run(ReplaySource([0, 1, 0, 2], strict=False))
    tried: list[object] = []
    result = shrink(_recording(run, tried), found, max_walk_runs=1)
    assert result.outcome.values == [0, 0, 0, 1]
    # Draws alternate d0, d1, d0, d1: the deviations are d1#0 = 1 and d1#1 = 2.
    assert tried[:-1] == [
        [0, 0, 0, 0],
        [0, 1, 0, 0],  # keep the first 0, then 1 deviations: no
        [0, 1, 0, 0],
        {("d1", 0): 1},  # drop the last (at its place, then by key): no
        [0, 0, 0, 2],  # drop the first: kept
        [0, 0, 0, 1],  # lower what is left, 2 to 1: kept
        [0, 0, 0, 0],  # next round: keep none: no
        [0, 0, 0, 0],
        {},  # drop the one left: no; nothing lower than 1: done
    ]
    assert result.runs == len(tried) == 10
    assert tried[-1] == []  # the walk's FIFO run (max_walk_runs=1)


def test_every_pass_of_the_shrinker_in_order_on_a_worked_example() -> None:
    """[2, 1, 2, 1] violates "v0 + v2 >= 3"; the draws are d0, d1, d0, d1."""
    run = _model(lambda v: v[0] + v[2] >= 3)
    found = run(ReplaySource([2, 1, 2, 1], strict=False))
    tried: list[object] = []
    result = shrink(_recording(run, tried), found, max_walk_runs=1)
    assert tried == [
        # 0. four deviations: each alone, then pairs until one violates ([2, 0, 2, 0])
        {("d0", 0): 2},
        {("d0", 1): 2},
        {("d1", 0): 1},
        {("d1", 1): 1},
        {("d0", 0): 2, ("d0", 1): 2},
        # 1. keep the first k deviations: none, then the first
        [0, 0, 0, 0],
        [2, 0, 0, 0],
        # 2. drop one, last first, by position and then by (label, occurrence)
        [2, 0, 0, 0],
        {("d0", 0): 2},
        [0, 0, 2, 0],
        {("d0", 1): 2},
        # 3. lower: v0 to 1 violates (kept, next draw); v2 to 1 does not
        [1, 0, 2, 0],
        [1, 0, 1, 0],
        # the same passes again from [1, 0, 2, 0]: nothing is kept, a fixed point
        [0, 0, 0, 0],
        [1, 0, 0, 0],
        [1, 0, 0, 0],
        {("d0", 0): 1},
        [0, 0, 2, 0],
        {("d0", 1): 2},
        [1, 0, 1, 0],
        # 5. the final walk, cut to its first run (FIFO)
        [],
    ]
    assert (result.runs, result.outcome.values, result.exhausted) == (21, [1, 0, 2, 0], True)
    assert shrink(run, found, max_runs=1).exhausted  # the passes' cap, the walk complete


KEEP_FIRST = [  # [1, 1, 0, 0] violates "v0 >= 1": pass 1 keeps the first deviation only
    [0, 0, 0, 0],
    [1, 0, 0, 0],
    [0, 0, 0, 0],
    [0, 0, 0, 0],
    {},
    [],  # again from [1, 0, 0, 0]: a fixed point; the walk
]
DROP_ONE = [  # [1, 0, 1, 0] violates "v2 >= 1": pass 2 drops the first deviation
    [0, 0, 0, 0],
    [1, 0, 0, 0],  # pass 1 fails
    [1, 0, 0, 0],
    {("d0", 0): 1},
    [0, 0, 1, 0],  # the last dropped fails; the first, kept
    [0, 0, 0, 0],
    [0, 0, 0, 0],
    {},
    [],
]
THREE_NEEDED = [  # [1, 1, 1, 0] violates "v0, v1 and v2": nothing smaller does
    {("d0", 0): 1},
    {("d0", 1): 1},
    {("d1", 0): 1},
    {("d0", 0): 1, ("d0", 1): 1},
    {("d0", 0): 1, ("d1", 0): 1},
    {("d0", 1): 1, ("d1", 0): 1},
    [0, 0, 0, 0],
    [1, 0, 0, 0],
    [1, 1, 0, 0],
    [1, 1, 0, 0],
    {("d0", 0): 1, ("d1", 0): 1},
    [1, 0, 1, 0],
    {("d0", 0): 1, ("d0", 1): 1},
    [0, 1, 1, 0],
    {("d1", 0): 1, ("d0", 1): 1},
    # 4. three deviations left: move each onto the one draw that has none, d1#1, as 1 or 2
    {("d1", 0): 1, ("d0", 1): 1, ("d1", 1): 1},
    {("d1", 0): 1, ("d0", 1): 1, ("d1", 1): 2},
    {("d0", 0): 1, ("d1", 0): 1, ("d1", 1): 1},
    {("d0", 0): 1, ("d1", 0): 1, ("d1", 1): 2},
    {("d0", 0): 1, ("d0", 1): 1, ("d1", 1): 1},
    {("d0", 0): 1, ("d0", 1): 1, ("d1", 1): 2},
    [],
]


@pytest.mark.parametrize(
    ("predicate", "start", "expected", "best"),
    [
        (lambda v: v[0] >= 1, [1, 1, 0, 0], KEEP_FIRST, [1, 0, 0, 0]),
        (lambda v: v[2] >= 1, [1, 0, 1, 0], DROP_ONE, [0, 0, 1, 0]),
        (lambda v: v[0] and v[1] and v[2], [1, 1, 1, 0], THREE_NEEDED, [1, 1, 1, 0]),
    ],
    ids=["keep-first", "drop-one", "three-needed"],
)
def test_each_pass_that_succeeds_restarts_the_passes(
    predicate: Predicate, start: list[int], expected: list[object], best: list[int]
) -> None:
    run = _model(predicate)
    tried: list[object] = []
    result = shrink(_recording(run, tried), run(ReplaySource(start, strict=False)), max_walk_runs=1)
    assert tried == expected
    assert (result.outcome.values, result.runs) == (best, len(expected))


def test_the_final_walk_stays_within_two_deviations_even_from_three() -> None:
    run = _model(lambda v: v[0] and v[1] and v[2])
    result = shrink(run, run(ReplaySource([1, 1, 1, 0], strict=False)))
    # 21 runs of passes, then every schedule of four three-option draws with at most two
    # deviations: 1 + 4 * 2 + 6 * 2 * 2 = 33 (three deviations would add 4 * 2 ** 3 = 32).
    assert (result.runs, result.exhausted) == (21 + 33, False)


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_swapping_one_deviation_tries_every_other_draw_and_value_in_order() -> None:
    from types import SimpleNamespace

    from raceproof.sim.choices import Choice
    from raceproof.sim.shrink import _swap_one

    best = SimpleNamespace(
        choices=[Choice("s", 2, 1), Choice("s", 3, 0), Choice("d", 2, 0), Choice("s", 2, 1)]
    )
    tried: list[dict[tuple[str, int], int]] = []

    def refuse(candidate: dict[tuple[str, int], int]) -> bool:
        tried.append(candidate)
        return False

    assert _swap_one(best, refuse) is False  # type: ignore[arg-type]
    # Deviations at (s,0) and (s,2); free draws (s,1) with values 1..2 and (d,0) with 1.
    assert tried == [
        {("s", 2): 1, ("s", 1): 1},
        {("s", 2): 1, ("s", 1): 2},
        {("s", 2): 1, ("d", 0): 1},
        {("s", 0): 1, ("s", 1): 1},
        {("s", 0): 1, ("s", 1): 2},
        {("s", 0): 1, ("d", 0): 1},
    ]
    tried.clear()
    assert _swap_one(best, lambda c: refuse(c) or len(tried) == 2) is True  # type: ignore[arg-type]
    assert len(tried) == 2
