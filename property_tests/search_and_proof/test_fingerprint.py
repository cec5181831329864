"""The kernel's own state fingerprint (issue 46 item 1): what it names, what it refuses, its claim.

``raceproof.sim.fingerprint`` names a run's state without a hand-written
function. These tests pin what the text must tell apart (a process's position,
a loop iterator on its stack, aliasing, a cell's value) and what it must not
(the insertion order of a ``CellMap``), that a value with no name by content
turns the cache off once and the proof stays the plain walk's, and the claim
of the soundness generator (``soundness_walks.fingerprint_problems``: the cached
walk reaches the plain walk's endings, probes and verdicts) on a hand-made model
where only one process's position tells two states apart: it holds, and the
planted slip that leaves that position out (``soundness_slips``) breaks it.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from property_tests.soundness_slips import SLIPS
from property_tests.soundness_walks import _orbits, builtin_problems, fingerprint_problems
from raceproof.scenarios.catalogue import Scenario
from raceproof.scenarios.library import COORDINATOR, LOST_UPDATE
from raceproof.sim import Bounds, Budget, CheckerResult, History, World, ok, prove
from raceproof.sim.cells import CellMap
from raceproof.sim.fingerprint import Unfingerprintable, _Encoder, state_text
from raceproof.sim.reduction import SleepSetSource
from raceproof.sim.state_cache import StateCache
from raceproof.sim.world import ProcessGenerator


def _world() -> World:
    """A World as a cached proof makes it: processes get identities, states get names."""
    return World(SleepSetSource((), None, reduce=True, cache=StateCache()))


def _encoded(value: Any) -> str:
    encoder = _Encoder(None, lambda name: name)
    encoder.enc(value)
    return "|".join(encoder.out)


def test_a_loop_iterator_on_the_stack_is_part_of_the_position() -> None:
    def walker() -> Any:
        for step in (5, 5, 9):  # the loop's iterator on the stack is the point
            seen = step
            yield seen

    once, twice = walker(), walker()
    next(once)
    next(twice), next(twice)  # the local ``step`` is 5 in both: only the iterator differs
    assert _encoded(once) != _encoded(twice)
    again = walker()
    next(again)
    assert _encoded(again) == _encoded(once)


def test_a_cell_map_is_named_by_content_and_aliasing_counts() -> None:
    world = _world()
    first, second = CellMap(world, "m"), CellMap(world, "m")
    first["b"], first["a"] = 1, 2
    second["a"], second["b"] = 2, 1
    assert _encoded(first) == _encoded(second)
    shared = [1]
    assert _encoded((shared, shared)) != _encoded(([1], [1]))
    assert _encoded({"x", "y"}) == _encoded({"y", "x"})


def test_a_deque_is_named_by_its_items_in_order() -> None:
    """A deque reduces to (deque, (), None, an iterator of its items), and the iterator's own
    reduction names only the deque and an index: two queues with different items had one text
    (0875e05 refused them instead, and the coordinator's cache stayed off). Its items, in
    order, and its maxlen are in the text; a defaultdict's pairs by the same path."""
    assert _encoded(deque([1])) != _encoded(deque([2]))
    assert _encoded(deque([1, 2])) != _encoded(deque([2, 1]))
    assert _encoded(deque([1, 2])) == _encoded(deque([1, 2]))
    assert _encoded(deque([1], maxlen=3)) != _encoded(deque([1]))
    held = deque([[7]])
    walker = (item for item in held)  # a loop over a deque: its iterator names the deque
    next(walker)
    held.append([8])
    assert "int:8" in _encoded(walker)
    assert _encoded(defaultdict(int, a=1)) != _encoded(defaultdict(int, a=2))


def test_two_worlds_apart_only_by_a_process_position_differ() -> None:
    texts = []
    for steps in (1, 2):
        world = _world()

        def body(world: World = world) -> ProcessGenerator:
            yield world.sleep(0)
            yield world.sleep(0)
            yield world.sleep(5)

        world.spawn("p", body())
        for _ in range(steps):
            world.step()
        texts.append(state_text(world))
    assert texts[0] != texts[1]


def test_a_bare_sentinel_cannot_be_named_and_the_proof_says_so_once() -> None:
    def build(world: World) -> None:
        marker = object()

        def body() -> ProcessGenerator:
            yield world.sleep(1)
            world.log("a", "saw", same=marker is not None)

        world.spawn("a", body())
        world.spawn("b", body())

    with pytest.raises(Unfingerprintable, match="sentinel"):
        _encoded(object())
    report = prove(_runner(build), budget=Budget(examples=100), state_cache=True)
    plain = prove(_runner(build), budget=Budget(examples=100))
    assert report.state_cache_off is not None and "sentinel" in report.state_cache_off
    assert (report.verdict, report.runs) == (plain.verdict, plain.runs)


@dataclass
class TwoDoors:
    """q and r race to open one gate at 0 ms; p, waiting on it, goes on by the door it opened.

    Both orders end with q and r done, nothing logged and p asleep for 1 ms: at
    1 ms, where p ties with s, the states differ only in where p is suspended (and
    the name in its local), so a fingerprint that leaves p's position out merges
    them and loses one ending.
    """

    state: bool = False
    untracked: bool = False

    def build(self, world: World) -> None:
        world.declare_footprints()
        gate = world.event()
        opened = world.shared.counter("opened")

        def p() -> ProcessGenerator:
            door = yield gate
            if door == "q":
                yield world.sleep(1)
                world.log("p", "through", door="q")
            else:
                yield world.sleep(1)
                world.log("p", "through", door="r")

        def opener(name: str) -> Callable[[], ProcessGenerator]:
            def body() -> ProcessGenerator:
                yield world.sleep(0)
                if opened.value == 0:
                    opened.add(1)
                    gate.succeed(name)

            return body

        def s() -> ProcessGenerator:  # due with p at 1 ms: a schedule draw, where states are named
            yield world.sleep(1)

        world.spawn("p", p())
        for name in ("q", "r"):
            world.spawn(name, opener(name)(), interleave=True)
        world.spawn("s", s())

    def checkers(self) -> list[Callable[[History], CheckerResult]]:
        return [lambda history: ok("through")]

    def bounds(self) -> Bounds:
        return Bounds(max_time_ms=100, max_steps=100)


def test_the_cached_walk_keeps_every_ending_and_a_slip_that_drops_a_position_does_not() -> None:
    assert fingerprint_problems(TwoDoors()) == []
    plant, mode, _ = SLIPS["fingerprint: one process's position left out"]
    assert mode == "fingerprint"
    with plant():
        problems = fingerprint_problems(TwoDoors())
    assert problems, "the slip went unnoticed"


def _runner(build: Callable[[World], None]) -> Any:
    from raceproof.sim import execute

    def run(source: Any) -> Any:
        return execute(build, source, [lambda history: ok("none")], Bounds())

    return run


@pytest.mark.parametrize(
    ("scenario", "variant", "cuts"),
    [(COORDINATOR, "sync-assumption", True), (LOST_UPDATE, "fix-cas", False)],
    ids=["coordinator/sync-assumption", "lost-update/fix-cas"],
)
def test_a_builtin_keeps_every_ending_of_the_plain_walk_with_the_kernel_fingerprint(
    scenario: Scenario, variant: str, cuts: bool
) -> None:
    """The built-ins' claim (``soundness_walks.builtin_problems``: every built-in at ``make soundness``), on
    a slice: a variant whose violations are among the endings, and one proven. The coordinator's
    cache cuts and merges images of states (its two event threads are declared symmetric): with
    its deques named by their items it was missing 4 endings of the exact comparison, each the
    image of a reached one with the threads swapped; the claim now compares those up to the
    permutation, and the cache without the symmetry exactly."""
    problems, counts = builtin_problems(scenario, variant)
    assert problems == [], problems
    if cuts:
        assert counts["cut"] > 0 and counts["cached_runs"] < counts["plain_runs"], counts
        assert counts["symmetric_merged"] > 0, counts


def test_an_ending_and_its_image_under_the_declared_actors_are_one() -> None:
    """``soundness_walks._orbits``: the claim's comparison of a symmetric cache's endings."""
    actors = (("processor0",), ("processor1",))

    def polled(first: str, second: str) -> tuple[Any, ...]:
        ops = ((0, first, "event.poll", "[('event', 'b0')]"), (0, second, "event.poll", "b1"))
        return ("ok", (), ops)

    one, image = polled("processor0", "processor1"), polled("processor1", "processor0")
    assert one != image and _orbits({one}, actors) == _orbits({image}, actors)
    assert _orbits({one}, actors) != _orbits({polled("processor0", "processor0")}, actors)
    assert len(_orbits({one, image}, actors)) == 1
