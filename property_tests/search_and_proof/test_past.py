"""A scenario's declared summary of the past, dead locals and relative step keys (issue 46's sizes).

The state cache merges two states only when their fingerprints are equal. What
kept ``lost-update``'s equal states apart was how they were reached: the
history with its op times, the virtual time, each process's step count, and
locals a client no longer reads (``raceproof.sim.past``, ``raceproof.sim.liveness``).
These tests pin each of those abstractions both ways -- what still tells states
apart, what no longer does -- and the claim that keeps them honest: the cached
walk of ``lost-update`` reaches the plain walk's endings as the declaration reads
them, and the debug mode catches a declared summary that leaves out what a
checker reads (a planted slip, on a model whose past lives only in its history:
lost-update's store already counts its acknowledgements in its version).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import pytest

from property_tests.soundness_walks import builtin_problems, walk_runner
from raceproof.models.counter.model import CounterConfig, acks_and_final
from raceproof.scenarios.library import LOST_UPDATE
from raceproof.sim import (
    Bounds,
    Budget,
    CheckerResult,
    History,
    World,
    execute,
    ok,
    prove,
    violated,
)
from raceproof.sim.fingerprint import _Encoder
from raceproof.sim.liveness import live_locals
from raceproof.sim.past import Past
from raceproof.sim.state_cache import StateCacheMismatch
from raceproof.sim.world import ProcessGenerator


def _encoded(value: Any) -> str:
    encoder = _Encoder(None, lambda name: name)
    encoder.enc(value)
    return "|".join(encoder.out)


def _reader(first: int) -> Generator[int, Any, None]:
    value = first  # read once, then dead: written again before the next read
    yield value
    value = 0
    yield value


def _keeper(first: int) -> Generator[int, Any, None]:
    value = first
    yield 1
    yield value  # still read after the first yield: live


def _handler(first: int) -> Generator[int, Any, None]:
    kept = first
    try:
        yield 1
        raise ValueError
    except ValueError:
        yield kept  # read only in the handler: live across the try body


def test_a_dead_local_is_left_out_and_a_live_one_is_not() -> None:
    one, two = _reader(1), _reader(2)
    next(one), next(two)
    assert _encoded(one) == _encoded(two)  # ``value`` is dead at the first yield
    kept_one, kept_two = _keeper(1), _keeper(2)
    next(kept_one), next(kept_two)
    assert _encoded(kept_one) != _encoded(kept_two)
    caught_one, caught_two = _handler(1), _handler(2)
    next(caught_one), next(caught_two)
    assert _encoded(caught_one) != _encoded(caught_two)


def test_liveness_gives_no_answer_where_a_closure_or_locals_reads_the_frame() -> None:
    def closure(first: int) -> Generator[int, Any, None]:
        value = first
        yield 1

        def inner() -> int:
            return value

        yield inner()

    def introspecting(first: int) -> Generator[Any, Any, None]:
        value = first  # read through locals()
        yield 1
        yield locals()

    for function in (closure, introspecting):
        generator = function(3)
        next(generator)
        assert live_locals(generator.gi_code, generator.gi_frame.f_lasti) is None
    reader = _reader(3)
    next(reader)
    assert live_locals(reader.gi_code, reader.gi_frame.f_lasti) == frozenset()


def test_the_counter_summary_is_what_its_checker_reads() -> None:
    history = History()
    history.append(0, "client0", "ack")
    history.append(3, "client1", "ack")
    assert acks_and_final(history) == (2, None)
    history.append(9, "observer", "final", value=2)
    assert acks_and_final(history) == (2, 2)
    with pytest.raises(TypeError):
        Past(summary=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("variant", ["fix-cas", "buggy"])
def test_lost_update_keeps_every_ending_through_its_declared_past(variant: str) -> None:
    """``make soundness``'s claim on the built-in: the cached walk (time and history
    abstracted, dead locals out, symmetric clients) reaches the plain walk's endings as
    the declaration reads them, its probes and statuses, and its debug mode is silent."""
    problems, counts = builtin_problems(LOST_UPDATE, variant)
    assert problems == [], problems
    assert counts["cut"] > 0 and counts["cached_runs"] <= counts["plain_runs"], counts


def _picks(history: History) -> Any:
    """What ``_no_bad_pick`` reads: how many picks were bad (a fold; the status follows)."""
    return sum(1 for op in history.of_kind("pick") if op.get("bad"))


def _dones(history: History) -> Any:
    """The planted slip: what the checker does not read -- the picks left out."""
    return len(history.of_kind("done"))


def _no_bad_pick(history: History) -> CheckerResult:
    bad = [op for op in history.of_kind("pick") if op.get("bad")]
    return violated("no-bad-pick", bad[0].index, "a bad pick") if bad else ok("no-bad-pick")


def _picking(past: Past) -> Any:
    """Two actors each draw a pick, log it and sleep: after the log, the pick is gone from
    the state (a dead local) and only the history -- or its summary -- remembers it."""

    def actor(world: World, name: str) -> ProcessGenerator:
        pick = world.source.choose(f"{name}.pick", (0, 1))
        world.log(name, "pick", bad=pick == 1)
        yield world.sleep(1)
        world.log(name, "done")

    def build(world: World) -> None:
        world.declare_past(past)
        for name in ("a", "b"):
            world.spawn(name, actor(world, name))

    def run(source: Any) -> Any:
        return execute(build, source, [_no_bad_pick], Bounds())

    return run


def test_the_debug_mode_catches_a_summary_that_leaves_out_what_the_checker_reads() -> None:
    right = Past(_picks, absolute_time=False)
    walk = walk_runner(_picking(right), reduction=True, check=True, past=right)  # silent
    assert walk.statuses == {"ok", "violated"}
    assert walk.report.state_cache_checked > 0
    slipped = Past(_dones, absolute_time=False)
    with pytest.raises(StateCacheMismatch, match="leaves out state that matters"):
        walk_runner(_picking(slipped), reduction=True, check=True, past=slipped)


@pytest.mark.parametrize("max_time_ms", [44, 56, 86, 104, 107])
def test_a_state_covered_by_one_reached_earlier_keeps_the_time_bound(max_time_ms: int) -> None:
    """A state reached earlier covers a later visit (the clock is not in the fingerprint);
    where a run past it went further than the later visit's room, the walk counts the
    bound the plain walk hits there (``StateCache.overruns``): complete iff it is."""
    scenario = dataclasses.replace(LOST_UPDATE, bounds=Bounds(max_time_ms=max_time_ms))
    run = scenario.runner("fix-cas", CounterConfig(clients=2))
    plain = prove(run, budget=Budget(examples=10_000))
    cached = prove(run, budget=Budget(examples=10_000), state_cache=True)
    assert cached.complete == plain.complete == (max_time_ms >= 107)
    assert bool(cached.pruned) == bool(plain.pruned)


def test_a_state_met_again_on_its_own_run_is_a_run_without_end() -> None:
    """A process that sleeps forever meets its own state again (no clock in the text): the
    cover makes a cycle: a run without end, counted as a bound hit as the plain walk's is."""

    def build(world: World) -> None:
        world.declare_past(Past(len, absolute_time=False))

        def ticker() -> ProcessGenerator:
            while True:
                yield world.sleep(world.source.choose("tick", (1, 2)))

        world.spawn("ticker", ticker())

    def run(source: Any) -> Any:
        return execute(build, source, [lambda history: ok("none")], Bounds(max_time_ms=50))

    cached = prove(run, budget=Budget(examples=10_000), state_cache=True)
    assert not cached.complete and cached.pruned.get("steps", 0) > 0  # no end: past both
    assert cached.runs < 100  # the cycle was cut, and counted
