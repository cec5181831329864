"""The cheap draw keeps every value and every record: the generator's batches, the bare ints.

``SplitMix64`` computes values ahead in NumPy batches once a generator has drawn
64, and ``RandomSource.schedule`` records a bare value (its ``n`` in a list
beside) that ``record`` turns into a ``Choice`` when read. Both are pure speed: the values must
be bit-identical to the published pure-Python generator, at every batch
boundary and whatever else is drawn in between, and ``record`` must read exactly
as the eager ``Choice`` list it replaces, however often and whenever it is read.
The World names who overtook whom without ``_actor_of``'s frames when both
events resume actors; a plain event and an actor-less SimPy process still get
the names ``_actor_of`` gives.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.sim import Choice, RandomSource, ReplaySource, SplitMix64, World

MASK = (1 << 64) - 1


class Reference:
    """Vigna's SplitMix64, one value at a time, as the kernel had it before batching."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


SEEDS = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, MASK, 2**63, MASK - 1]))


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS, count=st.integers(0, 9_000))
def test_the_batched_generator_is_the_published_sequence_and_state(seed: int, count: int) -> None:
    fast, slow = SplitMix64(seed), Reference(seed)
    assert [fast.next64() for _ in range(count)] == [slow.next64() for _ in range(count)]
    assert fast.state == slow.state  # values computed ahead do not count as drawn
    assert fast.next64() == slow.next64()


def test_a_long_generator_batches_and_still_matches() -> None:
    fast, slow = SplitMix64(42), Reference(42)
    values = [fast.next64() for _ in range(20_000)]
    assert fast.buffer, "past 64 draws the generator computes ahead"
    assert values == [slow.next64() for _ in range(20_000)]
    assert values[:1] != [Reference(43).next64()]  # the comparison can fail


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("schedule"), st.integers(1, 70)),
        st.tuples(st.just("int"), st.integers(0, 9)),
        st.tuples(st.just("bool"), st.sampled_from([0.0, 0.1, 0.5, 1.0])),
        st.tuples(st.just("read"), st.just(0)),
    ),
    max_size=400,
)


def _reference_run(seed: int, ops: list[tuple[str, Any]]) -> tuple[list[int], list[Choice]]:
    rng, record, values = Reference(seed), [], []
    for op, arg in ops:
        if op == "schedule" and arg >= 2:
            value = (rng.next64() * arg) >> 64
            record.append(Choice("schedule", arg, value))
        elif op == "int" and arg >= 1:
            value = (rng.next64() * (arg + 1)) >> 64
            record.append(Choice("k", arg + 1, value))
        elif op == "bool":
            value = 1 if rng.next64() < int(arg * (1 << 64)) else 0
            record.append(Choice("b", 2, value))
        else:
            continue
        values.append(value)
    return values, record


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, ops=OPS, batch=st.integers(0, 5_000))
def test_random_draws_and_their_record_are_those_of_the_eager_source(
    seed: int, ops: list[tuple[str, Any]], batch: int
) -> None:
    source = RandomSource(seed)
    ahead, reference = RandomSource(seed), Reference(seed)
    for _ in range(batch):  # the same run, starting at any point of the batches
        ahead.rng.next64()
        reference.next64()
    expected_values, expected_record = _reference_run(seed, ops)
    values = []
    for op, arg in ops:
        if op == "schedule":
            value = source.schedule(arg, lambda: [])
            if arg >= 2:
                values.append(value)
        elif op == "int":
            if arg >= 1:
                values.append(source.draw_int("k", 0, arg))
        elif op == "bool":
            values.append(int(source.draw_bool("b", arg)))
        else:
            first = source.record
            assert first is source.record and all(type(c) is Choice for c in first)
    assert values == expected_values
    assert source.record == expected_record and len(source.drawn) == len(expected_record)
    assert all(type(c) is Choice for c in source.record)
    assert source.values == [c.value for c in expected_record]
    assert ahead.schedule(7, lambda: []) == (reference.next64() * 7) >> 64


def test_a_long_random_record_replays_strictly() -> None:
    source = RandomSource(5)
    drawn = [source.schedule(2 + i % 9, lambda: []) for i in range(3_000)]
    replay = ReplaySource(source.record, strict=True)
    assert [replay.schedule(2 + i % 9, lambda: []) for i in range(3_000)] == drawn
    replay.finish()
    assert replay.record == source.record and any(drawn)


def test_deviations_name_actors_and_fall_back_for_plain_events() -> None:
    # Draw 0 picks the actor's wake-up over an earlier plain timeout; draw 1 an actor-less
    # SimPy process over an actor: names as ``_actor_of`` gives them.
    world = World(ReplaySource([1, 1], strict=True))

    def sleeper(delay_ms: int) -> Generator[Any, Any, None]:
        yield world.sleep(delay_ms)

    plain = world.timeout(1)
    plain.callbacks.append(lambda _event: None)
    world.spawn("a", sleeper(1))
    world.spawn("b", sleeper(2))
    world.process(sleeper(2))
    world.run_to_end()
    assert world.overtaken == {0: ("a", "Timeout"), 1: ("Timeout", "b")}
    assert world.source.record == [Choice("schedule", 2, 1)] * 2


def _ties_with_model_draws(world: World, actors: int) -> None:
    """Actors whose wake-ups tie, with the model's own draws between the schedule draws."""

    def actor(index: int) -> Generator[Any, Any, None]:
        for step in range(30):
            yield world.sleep((index * 3 + step) % 4)
            if world.source.draw_bool(f"flip.{index}", 0.3):
                world.log(f"a{index}", "flip", step=step)
            yield world.sleep(world.source.draw_int("pause", 0, 2))

    for index in range(actors):
        world.spawn(f"a{index}", actor(index))


def _inlined_and_called(seed: int, actors: int) -> list[tuple[Any, ...]]:
    runs = []
    for inline in (True, False):
        world = World(RandomSource(seed))
        assert world._ahead is not None, "a plain RandomSource's draw is inlined"
        if not inline:
            world._ahead = None
        _ties_with_model_draws(world, actors)
        world.run_to_end()
        runs.append((world.source.record, world.history.trace_hash(), world.overtaken))
    return runs


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), actors=st.integers(2, 12))
def test_the_worlds_inlined_random_draw_is_the_sources_own(seed: int, actors: int) -> None:
    # ``World.step`` inlines ``RandomSource.schedule`` for a plain RandomSource; with the
    # inlining switched off the World calls the method. Same draws, record and history.
    inlined, called = _inlined_and_called(seed, actors)
    assert inlined == called


def test_the_inlined_draw_is_checked_past_the_generators_batching() -> None:
    inlined, called = _inlined_and_called(3, 12)
    assert inlined == called
    assert sum(c.label == "schedule" for c in inlined[0]) > 200  # several batches
    assert any(c.label != "schedule" for c in inlined[0]) and inlined[2]
