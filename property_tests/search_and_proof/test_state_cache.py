"""The state cache: cut runs at explored states, never lose a reachable state, catch a bad fingerprint."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.toy_model import SAMPLE, Toy, final_of, runner
from raceproof.scenarios.library import BROOKLIN, COORDINATOR
from raceproof.sim import Budget, ChoiceSource, RunOutcome, World, cover_races, prove
from raceproof.sim.reduction import SleepSetSource
from raceproof.sim.state_cache import (
    StateCache,
    StateCacheMismatch,
    Visit,
    compare,
    kernel_fingerprint,
)

steps = st.tuples(st.sampled_from(("/a", "/b", "/c", "?")), st.booleans())
scripts = st.lists(
    st.lists(steps, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
).filter(
    lambda raw: sum(len(s) for s in raw) <= 7 and sum(p == "?" for s in raw for p, _ in s) <= 2
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


# -- moved from test_proof_parts.py ---------------------------------------------------
visits = st.lists(
    st.tuples(
        st.sampled_from(["f1", "f2"]), st.frozensets(st.sampled_from("abc")), st.integers(0, 3)
    ),
    max_size=8,
)


@given(visits)
def test_a_state_is_covered_by_an_earlier_visit_with_less_asleep_and_no_more_deviations(
    sequence: list[tuple[str, frozenset[str], int]],
) -> None:
    cache = StateCache()
    remembered: list[tuple[str, frozenset[str], int]] = []
    hits = 0
    for fingerprint, sleep, depth in sequence:
        covering, new = cache.look_up(fingerprint, sleep, depth)
        expected = [
            (s, d) for f, s, d in remembered if f == fingerprint and s <= sleep and d <= depth
        ]
        if expected:
            hits += 1
            assert new is None and covering is not None
            assert (covering.sleep, covering.depth) == expected[0]  # the earliest that covers
        else:
            assert covering is None and new is not None
            assert (new.sleep, new.depth, new.endings) == (sleep, depth, set())
            remembered.append((fingerprint, sleep, depth))
    assert cache.hits == hits
    assert sum(len(v) for v in cache.visits.values()) == len(remembered)


def test_the_debug_mode_compares_the_endings_of_two_visits() -> None:
    first, again = Visit(frozenset(), 0), Visit(frozenset(), 1)
    first.endings |= {("ok", (), ()), ("ok", (("c", "ok"),), ())}
    again.endings |= {("ok", (), ())}
    with pytest.raises(
        StateCacheMismatch,
        match=r"abc.*\(1 endings only after the first visit, "
        r"0 only after the second\)",
    ):
        compare("abc", first, again)
    again.endings |= {("ok", (("c", "ok"),), ())}
    compare("abc", first, again)  # the same endings: nothing to say
    assert StateCache().check is False and StateCache(True).check is True


def test_a_proof_through_the_cache_cuts_repeated_states_and_its_debug_mode_cuts_none() -> None:
    toy = Toy(SAMPLE, state="right")
    plain = prove(runner(Toy(SAMPLE)), budget=Budget(), reduction=False)
    cached = prove(runner(toy), budget=Budget(), reduction=False, state_cache=True)
    assert cached.verdict == plain.verdict == "ok" and cached.complete
    assert cached.state_cache_cuts > 0 and cached.runs == cached.schedules + cached.state_cache_cuts
    assert cached.states_seen > 0 and cached.state_cache_checked == 0
    assert cached.accounting()["state_cache_cuts"] == cached.state_cache_cuts
    checked = prove(
        runner(toy), budget=Budget(), reduction=False, state_cache=True, state_cache_check=True
    )
    assert (checked.runs, checked.schedules) == (plain.runs, plain.schedules)
    # What the cache would have cut, over the whole walk; with no sleep sets (no reduction)
    # every such state is compared with its first visit.
    assert checked.state_cache_cuts >= cached.state_cache_cuts
    assert checked.state_cache_checked == checked.state_cache_cuts > 0


# -- moved from test_walk_edges.py ----------------------------------------------------
def _sleeper(world: World, first_ms: int, then_ms: int) -> Generator[Any, Any, None]:
    yield world.sleep(first_ms)
    yield world.sleep(then_ms)


def _world_at(first_ms: int, then_ms: int, bare_ms: int | None = None) -> World:
    world = World(SleepSetSource((), None, reduce=True))
    world.declare_footprints()
    if bare_ms is not None:
        world.timeout(bare_ms)  # nobody waits on it
    world.spawn("p", _sleeper(world, first_ms, then_ms))
    world.step()  # p starts and sleeps
    while world.now_ms < first_ms or world.peek() == first_ms:
        world.step()
    return world


def test_a_fingerprint_sees_pending_events_relative_to_now_and_ignores_bare_ones() -> None:
    def model() -> str:
        return "m"

    at_3, at_4 = _world_at(3, 5), _world_at(4, 5)
    assert (at_3.now_ms, at_4.now_ms) == (3, 4)
    assert kernel_fingerprint(at_3, model) == kernel_fingerprint(at_4, model)  # both: p wakes in 5
    assert kernel_fingerprint(at_3, model) != kernel_fingerprint(_world_at(3, 6), model)
    with_bare = _world_at(3, 5, bare_ms=4)
    assert kernel_fingerprint(with_bare, model) == kernel_fingerprint(at_3, model)
    assert kernel_fingerprint(with_bare, model) != kernel_fingerprint(_world_at(3, 6, 4), model)
    assert len(kernel_fingerprint(at_3, model) or "") == 32


# -- a run the cache covers with its instant open ---------------------------------------------
@pytest.mark.parametrize("variant", ["block-event-loop", "sync-assumption"])
def test_a_run_covered_mid_instant_still_closes_its_instant(variant: str) -> None:
    """A run covered with its instant open runs on to the instant's end, then is cut.

    Cut at once, it never closed that instant, so the draws before the cut were branched
    on orders that all commute, and those branches' runs were sleep-blocked: 25 of the
    431 classes of the coordinator's proof (1,025 runs), 0 with the instant closed (1,000).
    The walk is the same where it counts: the plain walk's verdict, complete when it holds,
    and the planted violation of ``sync-assumption`` found through the cache.
    """
    plain = COORDINATOR.prove(variant, Budget(examples=100_000), state_cache=False)
    cached = COORDINATOR.prove(variant, Budget(examples=100_000), state_cache=True)
    assert cached.verdict == plain.verdict
    if variant == "block-event-loop":
        assert plain.verdict == "ok" and cached.complete and plain.complete
        assert cached.state_cache_cuts > 0 and cached.sleep_blocked == 0
        assert cached.runs < plain.runs
    else:
        assert cached.verdict == "violated" and cached.found is not None


def _pauser(world: World, pause_ms: int) -> Generator[Any, Any, None]:
    world.node("n").pause(pause_ms)
    yield world.sleep(10)


def _paused_at_0(delay_ms: int, pause_ms: int) -> World:
    """p on node n sleeps 0 then ``delay_ms``; q pauses n for ``pause_ms`` between the two."""
    world = World(SleepSetSource((), None, reduce=True))
    world.declare_footprints()
    world.spawn("p", _sleeper(world, 0, delay_ms), node=world.node("n"))
    world.spawn("q", _pauser(world, pause_ms))
    while world.peek() == 0:
        world.step()
    return world


def test_a_step_a_pause_held_is_in_a_declared_fingerprint() -> None:
    """``RACEPROOF_SOUNDNESS_EXAMPLES=300`` found it (``test_soundness``'s ``HELD_BY_A_PAUSE``).

    Held: p's wake-up from its first sleep was held to 2 ms by the pause, p still at that
    sleep. Not held: p woke and sleeps 2 ms in its second. Both have taken 2 steps and wait
    until 2 ms (the held step moved p's count): the step keys alone made them one state.
    """

    def model() -> str:
        return "m"

    held, slept = _paused_at_0(0, 2), _paused_at_0(2, 0)
    assert [len([*w._due, *w._queue]) for w in (held, slept)] == [2, 2]  # p's wake-up, q's
    (process,) = (p for p in held.processes if p.rp_id.endswith("/p#0"))
    assert process.rp_steps == 2 and process.rp_held == 1  # type: ignore[attr-defined]
    assert kernel_fingerprint(held, model) != kernel_fingerprint(slept, model)
    # Neither held: the same two steps, the same fingerprint as ever.
    assert kernel_fingerprint(_paused_at_0(2, 0), model) == kernel_fingerprint(slept, model)


# -- the same counts under every PYTHONHASHSEED ---------------------------------------------
COUNTED = (
    "verdict",
    "runs",
    "schedules",
    "state_cache_cuts",
    "states_seen",
    "symmetric_merged",
    "sleep_blocked",
    "skipped_equivalent",
)


CACHED_PROOF = (
    "coordinator-async-append",
    "--variant",
    "block-event-loop",
    "--set",
    "writes=2",
    "--state-cache",
)


def _cached_proof_counts(hash_seed: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "raceproof", "prove", *CACHED_PROOF, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return {name: result.get(name) for name in COUNTED}


def test_a_cached_proof_counts_the_same_under_every_hash_seed() -> None:
    """The kernel's fingerprint labels each object it meets by ``id()``. At 548cf11 it let the
    temporaries of its own encoding (a deque's reduction) be freed, so a later temporary took a
    freed one's id and was written as a reference to it: which states met moved with the
    memory layout, and so with ``PYTHONHASHSEED`` (this proof there: 117, 114 and 118 classes
    in 144, 141 and 143 runs under seeds 1, 2 and 3; with only its labelled objects kept alive,
    as 0875e05 does, 113 in 141 under each). Two processes, two seeds: the same counts, field
    for field, with the cache cutting and merging images."""
    first, second = _cached_proof_counts("1"), _cached_proof_counts("2")
    assert first == second
    assert first["verdict"] == "ok" and first["state_cache_cuts"] and first["symmetric_merged"]


def test_a_covered_runs_draws_learn_their_races_along_the_summarys_paths() -> None:
    """Brooklin's ``fix-stop-dedupe`` with the cache: a covered run's draw that a step of the
    covering subtree races with was released in full, the summary not saying how that step
    is reached, and some of those branches ended sleep-blocked (8 of 1,767 runs). Along the
    summary's paths (``cover_races.paths``) the draw gets that race's wakeup sequence: 1,763
    runs, 4 sleep-blocked, those 4 a pause's races whose branches ran the pause's step without
    the pause; 1,759 and none since such a sequence ends with the pause (``races._with_earlier``).
    Every run ended or was cut at a state, the proof complete and ok."""
    proof = BROOKLIN.prove("fix-stop-dedupe", Budget(examples=100_000))
    assert proof.verdict == "ok" and proof.complete
    assert (proof.runs, proof.sleep_blocked) == (1_759, 0) and proof.state_cache_cuts > 0
    assert proof.runs == proof.schedules + proof.state_cache_cuts


run_steps = st.lists(
    st.tuples(
        st.sampled_from(("a#1", "a#2", "b#1", "b#2", None)),
        st.integers(0, 1),  # the instant
        st.sampled_from((None, "a#1", "b#1", "c#9")),  # the step that enabled it
        st.lists(st.integers(0, 2), max_size=1).map(tuple),  # the values it drew
    ),
    max_size=8,
)


@given(run_steps, st.integers(0, 8), st.integers(0, 8))
def test_a_summary_path_runs_from_its_visit_to_its_step(
    raw: list[tuple[str | None, int, str | None, tuple[int, ...]]], index: int, branch: int
) -> None:
    """Each path starts at the visit's draw, keeps the run's order within the visit's instant,
    ends with its step (one of the run's own: ended past ``branch``), and names as enabler
    only an earlier step of the path."""
    steps = [
        (n, n + 1, at_ms, key, drawn, {f"r{n % 3}": True}, by)
        for n, (key, at_ms, by, drawn) in enumerate(raw)
    ]
    found = cover_races.paths(steps, index, 0, branch)
    for (key, drawn), path in found.items():
        ends = [s for s in steps if s[3] == key and s[4] == drawn and s[1] > branch]
        assert ends and path[-1][0] == key and path[-1][6] == drawn
        inside = [s for s in steps if s[0] >= index and s[2] == 0]
        assert [p[0] for p in path] == [s[3] for s in inside][: len(path)]
        for j, step in enumerate(path):
            assert step[5] is None or step[5] in {p[0] for p in path[:j]}


def test_a_paths_step_woken_before_the_state_is_woken_by_the_covered_runs_step() -> None:
    """The coordinator at ``writes=4``: a covered run's replication step (``e``) woke processor 0,
    whose step the covering run's path from the state runs after processor 1's. The path keeps no
    enabler from before the state (the covering run's may not be this run's), so that step raced
    with ``e``, and the branch for its sequence was cut asleep (4 of the 12 sleep-blocked runs).
    The event pending at the cut says who triggered it in this run (``World.pending_enablers``):
    woken by ``e``, the step cannot run before it, and there is no race. Named by a step of no
    earlier instant of the cut, the race stays."""
    e = ("/p0#0/replication#3@1", {"p0": True, "runtime": True}, False, None, 0, None, ())
    path = (
        ("/p1#1@5", {"p1": True}, False, None, None, None, ()),
        ("/p0#0@6", {"p0": True, "runtime": True, "p1": True}, False, None, None, None, ()),
    )
    visit = Visit(frozenset(), 0)
    visit.paths[("/p0#0@6", ())] = [path]
    met = [(("/p0#0@6", ()), path[1][1])]
    for enablers, sequences in (
        (None, [("/p1#1@5", "/p0#0@6")]),
        ({"/p0#0@6": "/p9#9@0"}, [("/p1#1@5", "/p0#0@6")]),
        ({"/p0#0@6": e[0]}, []),
    ):
        draw = cover_races.Watch(
            node=None,  # type: ignore[arg-type]  # a path's races read only the steps
            chosen=0,
            footprint=e[1],
            process="/p0#0/replication#3",
            steps=[e],
            index=0,
            enablers=enablers,
        )
        found = cover_races._path_races(draw, met, visit)
        assert found is not None and [race[0] for race in found] == sequences, enablers
