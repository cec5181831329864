"""Choice sources: recording, replay alignment, blobs, the seeded generator, PCT."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim import (
    Choice,
    HypothesisSource,
    KeyedReplaySource,
    PCTSource,
    RandomSource,
    ReplayMisaligned,
    ReplaySource,
    SplitMix64,
    decode_blob,
    derive_seed,
    encode_blob,
)
from raceproof.sim.choices import MAX_DRAWS
from raceproof.sim.errors import KernelError


def test_splitmix_is_the_published_sequence() -> None:
    # First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
    rng = SplitMix64(0)
    assert [rng.next64() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]


def test_derive_seed_separates_sub_runs() -> None:
    seeds = {derive_seed(1, i) for i in range(1000)}
    assert len(seeds) == 1000
    assert derive_seed(1, 5) == derive_seed(1, 5)
    assert derive_seed(1, 5) != derive_seed(2, 5)


def test_every_draw_is_recorded_with_label_and_option_count() -> None:
    source = RandomSource(3)
    source.choose("colour", ["red", "green", "blue"])
    source.draw_int("delay", 10, 14)
    source.draw_bool("fault", 0.5)
    source.choose("only", ["x"])  # one option: no decision, not recorded
    assert [(c.label, c.n) for c in source.record] == [("colour", 3), ("delay", 5), ("fault", 2)]


def test_replay_returns_the_recorded_values() -> None:
    source = ReplaySource([Choice("colour", 3, 2), Choice("delay", 5, 4)])
    assert source.choose("colour", ["red", "green", "blue"]) == "blue"
    assert source.draw_int("delay", 10, 14) == 14
    source.finish()


@pytest.mark.parametrize(
    ("draw", "message"),
    [
        (lambda s: s.choose("other", ["a", "b", "c"]), "recorded 'colour' with 3 options"),
        (lambda s: s.choose("colour", ["a", "b"]), "the model now draws 'colour' with 2 options"),
    ],
)
def test_replay_names_the_first_misaligned_draw(draw: object, message: str) -> None:
    source = ReplaySource([Choice("colour", 3, 1)])
    with pytest.raises(ReplayMisaligned, match=message) as info:
        draw(source)  # type: ignore[operator]
    assert info.value.index == 0


def test_replay_of_a_blob_checks_range_and_length() -> None:
    source = ReplaySource([0, 4])
    source.draw_bool("a")
    with pytest.raises(ReplayMisaligned, match="recorded value 4 but draw 'b' has only 2"):
        source.draw_bool("b")
    short = ReplaySource([1])
    short.draw_bool("a")
    with pytest.raises(ReplayMisaligned, match="holds only 1 draws"):
        short.draw_bool("b")
    long = ReplaySource([1, 0])
    long.draw_bool("a")
    with pytest.raises(ReplayMisaligned, match="made 1 draws, the recording holds 2"):
        long.finish()


def test_prefix_replay_pads_with_choice_zero() -> None:
    source = ReplaySource([1, 7], strict=False)
    assert source.draw_bool("a") is True
    assert source.draw_int("b", 0, 3) == 0  # 7 is out of range: boring instead
    assert source.choose("c", ["x", "y"]) == "x"  # past the prefix: boring
    assert source.values == [1, 0, 0]


@given(st.lists(st.integers(0, 5), max_size=40))
def test_a_blob_round_trips_and_lists_only_deviations(values: list[int]) -> None:
    blob = encode_blob(values)
    assert decode_blob(blob) == values == decode_blob(f"  {blob}\n")
    assert blob.startswith(f"{len(values)}:")
    assert blob.count("=") == sum(1 for v in values if v)


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        ("", "not of the form"),
        ("3:1=2,", "not of the form"),
        ("3:5=1", "past its length"),
        ("4:2=1,1=1", "positions must increase"),
        ("4:2=0", "boring value 0"),
    ],
)
def test_malformed_blobs_are_named(blob: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_blob(blob)


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        ("3:3=1", "position 3 is past its length 3"),
        ("3:1=1,1=2", "positions must increase (1 after 1)"),
        ("3:2=1,1=2", "positions must increase (1 after 2)"),
        ("3:0=0", "position 0 lists the boring value 0"),
        (f"{MAX_DRAWS + 1}:", f"{MAX_DRAWS + 1} draws, at most {MAX_DRAWS}"),
    ],
)
def test_a_malformed_blob_says_what_is_wrong(blob: str, why: str) -> None:
    with pytest.raises(ValueError) as caught:
        decode_blob(blob)
    assert str(caught.value) == f"choice blob {blob!r}: {why}"


def test_the_edges_of_a_blob_are_accepted() -> None:
    assert decode_blob("3:2=1") == [0, 0, 1]  # the last position
    assert decode_blob("2:0=5") == [5, 0]  # position 0 after none
    assert len(decode_blob(f"{MAX_DRAWS}:")) == MAX_DRAWS
    with pytest.raises(ValueError, match="is not of the form LEN:POS=VAL,POS=VAL"):
        decode_blob("x")


def test_random_booleans_honour_their_probability() -> None:
    source = RandomSource(11)
    fired = sum(source.draw_bool("rare", 0.05) for _ in range(4000))
    assert 120 < fired < 280


def test_random_source_is_a_function_of_its_seed() -> None:
    def draws(seed: int) -> list[int]:
        source = RandomSource(seed)
        return [source.draw_int("x", 0, 100) for _ in range(20)]

    assert draws(5) == draws(5)
    assert draws(5) != draws(6)


def test_pct_runs_the_highest_priority_actor_until_a_change_point() -> None:
    source = PCTSource(seed=1, depth=1, expected_steps=10)  # depth 1: no change points
    keys = ["a", "b", "c"]
    picks = [source.schedule(3, lambda: keys) for _ in range(5)]
    assert len(set(picks)) == 1  # always the same actor: strict priorities
    favourite = keys[picks[0]]
    source2 = PCTSource(seed=1, depth=2, expected_steps=1)  # a change point at draw 0
    first = source2.schedule(3, lambda: keys)
    assert keys[first] != favourite  # the favourite was demoted at once


@given(
    st.integers(0, 2**64 - 1),
    st.integers(1, 4),
    st.integers(1, 6),
    st.lists(st.lists(st.sampled_from("abcd"), min_size=2, max_size=4), min_size=1, max_size=10),
)
def test_pct_runs_the_top_priority_and_demotes_it_at_each_change_point(
    seed: int, depth: int, expected_steps: int, offered: list[list[str]]
) -> None:
    """PCT's rule, draw by draw: first sight gives a priority in [10^6, 2*10^6); each
    schedule draw runs the highest (the earliest offered of equals); at a change point
    the actor it would run drops below every priority given so far, and the next runs."""
    source = PCTSource(seed=seed, depth=depth, expected_steps=expected_steps)
    points = sorted(source.change_points)
    assert len(points) <= depth - 1 and all(0 <= p < expected_steps for p in points)
    assert source.low == 0 and source.schedule_draws == 0
    demoted: list[int] = []
    for draw, keys in enumerate(offered):
        before = dict(source.priority)
        pick = source.schedule(len(keys), lambda keys=keys: keys)  # type: ignore[misc]
        for key in keys:
            if key in before:
                assert source.priority[key] == before[key] or source.priority[key] < 0
            else:
                assert 1_000_000 <= source.priority.get(key, -1) < 2_000_000 or (
                    source.priority[key] < 0
                )
        # Ranks before this draw's change point, if any: a key seen first now and demoted
        # at once was the top one.
        ranked = {
            k: before[k]
            if k in before
            else source.priority[k]
            if source.priority[k] >= 0
            else 10**9
            for k in keys
        }
        top = max(range(len(keys)), key=lambda i: (ranked[keys[i]], -i))
        if draw in points:
            demoted.append(source.priority[keys[top]])
            assert source.priority[keys[top]] == -len(demoted)  # below all given so far
            assert keys[pick] != keys[top] or len(set(keys)) == 1
            now = source.priority
            assert pick == max(range(len(keys)), key=lambda i: (now[keys[i]], -i))
        else:
            assert pick == top
        assert source.schedule_draws == draw + 1
    assert source.low == -len(demoted)
    assert source.change_points == [p for p in sorted(points, reverse=True) if p >= len(offered)]


def test_pct_leaves_other_draws_to_its_seeded_generator() -> None:
    source = PCTSource(seed=3, depth=2, expected_steps=5)
    points = list(source.change_points)
    reference = SplitMix64(3)
    for _ in range(1):  # the change points were drawn first
        reference.below(5)
    assert source.draw_bool("fault", 0.0) is False and source.draw_bool("fault", 1.0) is True
    reference.next64()
    reference.next64()
    assert source.choose("delay", (10, 20, 30)) == (10, 20, 30)[reference.below(3)]
    assert source.draw_int("n", 0, 1) == reference.below(2)  # n == 2 with no p: below(2)
    assert source.priority == {} and source.schedule_draws == 0 and source.change_points == points
    assert source.schedule(2, lambda: ["x", "x"]) in (0, 1)
    # A first sight takes 10^6 plus the generator's next draw below 10^6, in offer order.
    fresh, generator = PCTSource(seed=9, depth=1, expected_steps=1), SplitMix64(9)
    fresh.schedule(2, lambda: ["p", "q"])
    assert fresh.priority == {k: 1_000_000 + generator.below(1_000_000) for k in ("p", "q")}
    with pytest.raises(ValueError):
        PCTSource(seed=0, depth=0, expected_steps=1)
    with pytest.raises(ValueError):
        PCTSource(seed=0, depth=1, expected_steps=0)


class _FakeData:
    """Stands in for Hypothesis' ``data``: answers each draw with ``answer(top)``."""

    def __init__(self, answer: Callable[[int], int]) -> None:
        self.answer = answer
        self.asked: list[tuple[int, int]] = []  # (min, max) of each integers() drawn from

    def draw(self, strategy: Any) -> int:
        low, top = (int(v) for v in re.findall(r"-?\d+", repr(strategy)))
        self.asked.append((low, top))
        return self.answer(top)


@pytest.mark.parametrize(("p", "top"), [(0.1, 9), (0.25, 3), (0.4, 1), (0.49, 1), (0.01, 99)])
def test_a_rare_draw_is_nonzero_only_at_the_top_of_a_wider_range(p: float, top: int) -> None:
    at_top = HypothesisSource(_FakeData(lambda t: t))
    assert at_top.draw_bool("rare", p) is True
    assert at_top.data.asked == [(0, top)]  # type: ignore[attr-defined]
    below = HypothesisSource(_FakeData(lambda t: t - 1))
    assert below.draw_bool("rare", p) is False
    zero = HypothesisSource(_FakeData(lambda t: 0))
    assert zero.draw_bool("rare", p) is False


@pytest.mark.parametrize("p", [0.0, 0.5, 0.9, 1.0])
def test_other_draws_are_integers_over_the_options(p: float) -> None:
    source = HypothesisSource(_FakeData(lambda t: t))
    assert source.draw_bool("b", p) is True  # the top of integers(0, 1)
    assert source.choose("c", ("x", "y", "z")) == "z"
    assert source.data.asked == [(0, 1), (0, 2)]  # type: ignore[attr-defined]


def test_a_replay_names_where_and_how_it_no_longer_fits() -> None:
    strict = ReplaySource([1, 2])
    assert strict.choose("a", (0, 1)) == 1
    with pytest.raises(ReplayMisaligned) as misfit:  # 2 of two options: out of range
        strict.choose("b", (0, 1))
    assert misfit.value.args == (1, "recorded value 2 but draw 'b' has only 2 options")
    short = ReplaySource([1])
    short.choose("a", (0, 1))
    with pytest.raises(ReplayMisaligned) as misfit:
        short.choose("b", (0, 1, 2))
    assert misfit.value.args == (
        1,
        "the model asked for draw 'b' (3 options) but the recording holds only 1 draws",
    )
    unused = ReplaySource([1, 1])
    unused.choose("a", (0, 1))
    with pytest.raises(ReplayMisaligned) as misfit:
        unused.finish()
    assert misfit.value.args == (1, "the model made 1 draws, the recording holds 2")
    prefix = ReplaySource([2], strict=False)  # a prefix: out of range becomes the boring 0
    assert prefix.choose("b", (0, 1)) == 0
    assert KeyedReplaySource({("b", 0): 2, ("b", 1): 1}).choose("b", (0, 1)) == 0


def test_a_draw_needs_a_text_label_an_integer_count_and_an_answer_in_range() -> None:
    source = ReplaySource([], strict=False)
    with pytest.raises(ValueError, match=r"^a draw needs a label"):
        source.choose(5, (0, 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^draw 'x' needs at least one option, got 1.5"):
        source._draw("x", 1.5)  # type: ignore[arg-type]

    class Broken(ReplaySource):
        def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Any) -> int:
            return n

    with pytest.raises(KernelError, match=r"^provider returned 2 for 2 options"):
        Broken([]).choose("x", (0, 1))


# -- moved from test_kernel_edges.py: preconditions, messages and less-used paths a
# mutation run found unpinned (docs/maintaining/mutation.md) -------------------------------
def test_a_draw_between_equal_bounds_is_that_bound() -> None:
    source = ReplaySource([], strict=False)
    assert source.draw_int("x", 4, 4) == 4
    with pytest.raises(ValueError, match=r"draw_int 'y': empty range \[5, 4\]"):
        source.draw_int("y", 5, 4)


def test_a_misaligned_replay_keeps_its_arguments() -> None:
    error = ReplayMisaligned(3, "label a, recorded b")
    assert error.args == (3, "label a, recorded b")


def test_draw_bool_takes_probabilities_from_zero_to_one_inclusive() -> None:
    source = ReplaySource([], strict=False)
    assert source.draw_bool("never", 0.0) is False and source.draw_bool("always", 1.0) is False
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"draw_bool 'x': p={bad} is not a probability"):
            source.draw_bool("x", bad)


def test_pct_is_told_the_fifo_runs_schedule_draws_at_least_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from property_tests.toy_model import Toy, runner
    from raceproof.sim import Budget

    explore_module = importlib.import_module("raceproof.sim.explore")  # not the function
    from raceproof.sim.choices import PCTSource

    told: list[int] = []

    class Told(PCTSource):
        def __init__(self, seed: int, depth: int, expected_steps: int) -> None:
            told.append(expected_steps)
            super().__init__(seed, depth, expected_steps)

    monkeypatch.setattr(explore_module, "PCTSource", Told)
    alone = ((("/a", True),),)  # one actor: no tie, no schedule draw
    pair = ((("/a", True),), (("/a", True),))  # two writers: one schedule draw
    for scripts, draws in ((alone, 0), (pair, 1)):
        told.clear()
        explore_module.explore_pct(runner(Toy(scripts)), 0, Budget(examples=2), None, 2)
        assert told == [max(1, draws)] * 2
    with pytest.raises(KernelError, match="a schedule draw of 2 options names 1 actors"):
        PCTSource(0, 1, 1).schedule(2, lambda: ["a"])
