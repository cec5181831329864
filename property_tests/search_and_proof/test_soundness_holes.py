"""The reduction's holes the soundness generator found at larger budgets, each pinned by hand (issue 33).

``make soundness`` (``property_tests/soundness_models.py``) compares the reduced walk with the
full walk on random models; each hole it found is fixed at its cause in ``sim/`` and pinned
here on a hand-written model, both ways: the reduced walk reaches every ending of the full walk
and the proof gives the verdict it must, and a variant without the hole still holds, complete,
with the reduction still cutting schedules (the fix is no "reduction off").

1. **A step whose process raises ends the run** (40 examples: a ZooKeeper watch delivery
   beside a multi-op and a timer). A process that raises fails, and its failure, which
   nobody waits on, is processed at once: the model's exception ends the run, so no step
   runs after it. Its step's footprint named only what it touched, so the reduction took
   "the watch delivery, then the timer" as equivalent to "the timer, then the delivery"
   and walked only the first, which never runs the timer: the ending where the timer
   fired before the error was lost. A step whose process fails is now dependent on every
   other step (``World._observed_step``), as a step that finishes the run is.
2. **``--check-footprints`` passed a walk missing an ending** (the gap documented in
   d595170): a read put to sleep while another actor's write, created after the read was
   chosen, ran in the same instant. The "could have run later" claim is tested against
   every later step of the instant again (``delayable_steps``): the model that made d595170
   narrow it to steps due together was this same raising watch delivery, a real hole of the
   reduction then, not a false blame.
3. **A raising step in ``--check-footprints``**: once such a step counted as dependent on
   every step, the check tested no claim about it, and passed an untracked model whose step
   raises in one order only. It now tests what the step touched: moved first, or with a step
   delayed past it, it must end the run alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from property_tests.soundness_models import Op, Spec, runner
from property_tests.soundness_walks import MODES, full_walk, masked, walk
from raceproof.sim import Budget, ChoiceSource, RunOutcome, World, execute, prove
from raceproof.sim.footprint_check import FootprintMismatch
from raceproof.sim.outcome import Runner
from raceproof.sim.state_cache import ending
from raceproof.sim.verdicts import Verdict
from raceproof.sim.world import ProcessGenerator

# The generator's spec (make soundness at 40 examples; its watcher then raised on every
# delivery, now the key-1 watch does): a0 watches /n1, a1's multi-op sets /n1 (its watch
# delivery raises) and a1 starts a timer due at the same instant as the delivery.
WATCH_BESIDE_MULTI = Spec(
    actors=((Op("zk.get-watch", 1),), (Op("zk.multi", 0), Op("timer.start", 0))),
    final_checker=False,
)


def raising_beside_a_counter(world: World, *, raises: bool) -> None:
    """``a`` raises in its first step (``raises``) while ``b`` adds to a counter at the same instant."""
    world.declare_footprints()
    counter = world.shared.counter("c")
    spare = world.shared.counter("spare")

    def a() -> ProcessGenerator:
        yield world.sleep(0)
        spare.add(1)
        world.log("a", "step")
        if raises:
            raise ValueError("a's own bug")

    def b() -> ProcessGenerator:
        yield world.sleep(0)
        counter.add(1)
        world.log("b", "added", value=counter.value)

    def c() -> ProcessGenerator:  # a bystander: the reduction still orders it freely
        yield world.sleep(0)
        world.log("c", "idle")

    for name, body in (("a", a), ("b", b), ("c", c)):
        world.spawn(name, body(), interleave=True)


def _runner(raises: bool) -> Runner:
    def run(source: ChoiceSource) -> RunOutcome:
        return execute(lambda world: raising_beside_a_counter(world, raises=raises), source, [])

    return run


def _endings(run: Runner, *, reduction: bool) -> tuple[set[tuple[Any, ...]], int, bool]:
    """Every ending of the walk (findings do not stop it), its schedules and completeness."""
    found: set[tuple[Any, ...]] = set()

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        found.add(ending(outcome, 0))
        if outcome.status == Verdict.ERROR:
            return dataclasses.replace(outcome, status=Verdict.OK)
        return outcome

    report = prove(recording, budget=Budget(examples=2_000), reduction=reduction)
    return found, report.schedules, report.complete


def test_the_generators_watch_beside_a_multi_op_and_a_timer() -> None:
    full = full_walk(WATCH_BESIDE_MULTI)
    reduced = walk(WATCH_BESIDE_MULTI, reduction=True)
    fired_then_failed = [
        e for e in full.endings if e[0] == Verdict.ERROR and any(op[1] == "t1" for op in e[2])
    ]
    assert fired_then_failed, "the full walk has an error after the timer fired"
    assert reduced.endings == full.endings
    assert MODES["reduction"](WATCH_BESIDE_MULTI, full) == []
    report = prove(runner(WATCH_BESIDE_MULTI), budget=Budget(examples=2_000))
    assert report.verdict == Verdict.ERROR


def test_a_raising_step_keeps_every_ending_of_the_full_walk() -> None:
    full, _, _ = _endings(_runner(True), reduction=False)
    reduced, _, complete = _endings(_runner(True), reduction=True)
    after_b = [e for e in full if e[0] == Verdict.ERROR and any(op[1] == "b" for op in e[2])]
    assert after_b, "the full walk has the error after b's step"
    assert complete and reduced == full
    report = prove(_runner(True), budget=Budget(examples=2_000))
    assert report.verdict == Verdict.ERROR
    assert report.found is not None and report.found.error is not None
    assert "a's own bug" in report.found.error.message


def test_without_the_raise_the_proof_holds_and_still_reduces() -> None:
    full, full_schedules, _ = _endings(_runner(False), reduction=False)
    reduced, _, complete = _endings(_runner(False), reduction=True)
    assert complete and reduced == full and {e[0] for e in full} == {Verdict.OK}
    report = prove(_runner(False), budget=Budget(examples=2_000))
    assert report.verdict == Verdict.OK and report.complete
    assert report.schedules < full_schedules  # three independent steps: one class, not six


# a1 reads an untracked dict (untracked: no footprint records it) before a0's third step writes
# it; the write is created by a0's second step, after a1's read was chosen. Seed 0, ``("plain",)``
# focus, example 28 of the generator's first round.
LATE_WRITE = Spec(
    actors=(
        (Op("plain.read", 1), Op("plain.read", 1), Op("plain.write", 0)),
        (Op("plain.read", 0),),
    ),
    untracked=True,
    final_checker=False,
)


def test_the_footprint_check_tests_a_read_put_to_sleep_past_a_later_write() -> None:
    assert walk(LATE_WRITE, reduction=True).endings != full_walk(LATE_WRITE).endings  # unsound
    with pytest.raises(FootprintMismatch, match=r"step /a1#1@\d+ \(a1.*which ran after it"):
        prove(runner(LATE_WRITE), budget=Budget(examples=4_000), check_footprints=True)
    assert MODES["checkers"](LATE_WRITE, None) == []  # both checkers report it


@pytest.mark.parametrize(
    "spec",
    [
        # The same shape over a tracked dict: the reduction is sound, the check says nothing.
        Spec(
            actors=(
                (Op("dict.get", 0), Op("dict.get", 0), Op("dict.set", 0)),
                (Op("dict.get", 0),),
            ),
            final_checker=False,
        ),
        # The model d595170 took for a false blame: a dict write and a (raising) watch delivery.
        Spec(
            actors=((Op("zk.get-watch", 1),), (Op("zk.set", 1), Op("dict.set", 0))),
            final_checker=False,
        ),
    ],
    ids=["tracked-dict", "watch-delivery"],
)
def test_the_footprint_check_is_silent_on_a_sound_reduction_of_the_same_shape(spec: Spec) -> None:
    full = full_walk(spec)
    assert walk(spec, reduction=True).endings == full.endings
    # Findings masked: the whole walk runs, and every pair it offers is swapped and compared.
    report = prove(masked(runner(spec)), budget=Budget(examples=4_000), check_footprints=True)
    assert report.complete and report.footprints_checked
    assert MODES["checkers"](spec, full) == []


# 3. A raising step in the check (the generator's untracked models, after fix 1): a1 raises when
# it reads a0's write of an untracked dict. The reduction puts a0 to sleep past a1's steps where
# a1 does not raise, a claim only a cut run shows; the ended run shows a1 raising, and a step that
# ends the run cannot be compared by its endings (what it was moved past never runs). The check
# asks of it what its footprint vouches for: moved first, or with a step delayed past it, it
# ends the run alike (``_raised_alike``).
@pytest.mark.parametrize(
    "actors",
    [
        ((Op("plain.write", 0),), (Op("plain.raise", 0),)),  # a1's raise could have run first
        ((Op("plain.write", 0),), (Op("dict.set", 0), Op("plain.raise", 0))),  # a0 later
    ],
    ids=["moved-first", "delayed-past"],
)
def test_the_footprint_check_reports_a_step_that_raises_only_in_one_order(
    actors: tuple[tuple[Op, ...], ...],
) -> None:
    spec = Spec(actors=actors, untracked=True, final_checker=False)
    full = full_walk(spec)
    assert walk(spec, reduction=True).endings != full.endings  # unsound: a1's ok ending lost
    with pytest.raises(FootprintMismatch, match=r"a1"):
        prove(masked(runner(spec)), budget=Budget(examples=4_000), check_footprints=True)
    assert MODES["checkers"](spec, full) == []


# 4. A timer's firing beside the swap (make soundness at 300 random examples): a firing is a
# callback, not a process, and had no step key, so a swap whose runs met one among several due
# could not be followed by key; its pair was counted unverified and the check passed ("26 checked
# (5 could not be followed)", exit 0). A firing is now named by its timer resource and that
# resource's arm count (``World.arm_key``). Here a2's read is put to sleep past a0's write of an
# untracked dict while a1's timer is due: the reduced walk misses a2 reading None, and the check
# reports it. The same model over a tracked dict: the check follows every pair and is silent.
UNNAMED_TIMER = Spec(
    actors=(
        (Op("plain.write", 0),),
        (Op("timer.start", 0), Op("timer.start", 0)),
        (Op("plain.read", 0), Op("timer.start", 1)),
    ),
    untracked=True,
    final_checker=False,
)
TRACKED_TIMER = Spec(
    actors=(
        (Op("dict.set", 0),),
        (Op("timer.start", 0), Op("timer.start", 0)),
        (Op("dict.get", 0), Op("timer.start", 1)),
    ),
    final_checker=False,
)


def test_the_footprint_check_reports_a_pair_beside_a_timer_firing() -> None:
    full = full_walk(UNNAMED_TIMER)
    assert walk(UNNAMED_TIMER, reduction=True).endings != full.endings  # unsound
    with pytest.raises(FootprintMismatch, match=r"step /a2#\d+@\d+ \(a2.*/a0#0@\d+ \(a0"):
        prove(masked(runner(UNNAMED_TIMER)), budget=Budget(examples=4_000), check_footprints=True)


def test_the_footprint_check_follows_timer_firings_on_the_tracked_model() -> None:
    full = full_walk(TRACKED_TIMER)
    assert walk(TRACKED_TIMER, reduction=True).endings == full.endings
    report = prove(
        masked(runner(TRACKED_TIMER)), budget=Budget(examples=4_000), check_footprints=True
    )
    assert report.complete and report.footprints_checked
    assert report.footprints_unverified == 0  # every pair beside a firing is followed
    assert MODES["checkers"](TRACKED_TIMER, full) == []


# 4. A claim made only in a run the walk cut (the generator's checkers claim at 300 examples,
# 27 Nov): a0 writes an untracked dict then adds to a counter, a1 adds then writes. The reduced
# walk explores a0's write first; in the sibling branch the write sleeps past a1's add and then
# a1's write (untracked, so independent), and that run is cut when only the sleeping write is
# left: the ending where a1 wrote first is lost. In no ended run is a1's write due beside a0's,
# so a check of ended runs only passed (9 pairs, none unverified). The cut run's sleeping step
# now joins its steps (``StepRecord.asleep``) and both orders run on alike to an ending.
SLEEP_PAST_TWO = Spec(
    actors=(
        (Op("plain.write", 0), Op("counter.add", 0)),
        (Op("counter.add", 0), Op("plain.write", 0)),
    ),
    untracked=True,
    final_checker=False,
)


def test_the_footprint_check_reports_a_write_slept_past_two_steps_of_a_cut_run() -> None:
    assert walk(SLEEP_PAST_TWO, reduction=True).endings != full_walk(SLEEP_PAST_TWO).endings
    with pytest.raises(FootprintMismatch, match=r"step /a0#0@\d+ \(a0.*step /a1#1@\d+ \(a1"):
        prove(masked(runner(SLEEP_PAST_TWO)), budget=Budget(examples=4_000), check_footprints=True)


def test_the_same_shape_over_a_tracked_dict_is_sound_and_passes_the_check() -> None:
    tracked = dataclasses.replace(
        SLEEP_PAST_TWO,
        actors=(
            (Op("dict.set", 0), Op("counter.add", 0)),
            (Op("counter.add", 0), Op("dict.set", 0)),
        ),
        untracked=False,
    )
    assert walk(tracked, reduction=True).endings == full_walk(tracked).endings
    report = prove(masked(runner(tracked)), budget=Budget(examples=4_000), check_footprints=True)
    assert report.complete and report.footprints_checked and report.footprints_unverified == 0


# 5. The instant shortcut (the generator's checkers claim at 300 examples, 27 Nov, after
# e187311): the dict a0 and a1 write is untracked, so every draw's rest of the instant commutes
# pairwise by the footprints and ``_close_instant`` marks each draw: the reduced walk is one
# run. The check tested adjacent claims only (10 pairs, all commute), and a1's write and a0's
# write are never adjacent in that run. The instant's steps are now marked in the run's log
# and the check pulls each process's steps before the others' (``instant_pulls``).
INSTANT_SHORTCUT = Spec(
    actors=(
        (Op("plain.write", 0), Op("counter.add", 0)),
        (Op("dict.set", 0), Op("plain.write", 0)),
    ),
    untracked=True,
    final_checker=False,
)


def test_the_footprint_check_reports_two_writes_the_instant_shortcut_never_swaps() -> None:
    assert walk(INSTANT_SHORTCUT, reduction=True).endings != full_walk(INSTANT_SHORTCUT).endings
    with pytest.raises(
        FootprintMismatch, match=r"step /a1#1@\d+ \(a1.*step /a0#0@\d+ \(a0.*instant"
    ):
        prove(
            masked(runner(INSTANT_SHORTCUT)), budget=Budget(examples=4_000), check_footprints=True
        )


def test_an_instant_of_tracked_writes_the_shortcut_walks_once_passes_the_check() -> None:
    tracked = dataclasses.replace(
        INSTANT_SHORTCUT,
        actors=(
            (Op("dict.set", 0), Op("counter.add", 0)),
            (Op("dict.set", 1), Op("set.add", 0)),
        ),
        untracked=False,
    )
    full = full_walk(tracked)
    assert walk(tracked, reduction=True).endings == full.endings
    report = prove(masked(runner(tracked)), budget=Budget(examples=4_000), check_footprints=True)
    assert report.complete and report.footprints_unverified == 0
    assert report.footprints_checked and report.footprints_checked > 0
    assert MODES["checkers"](tracked, full) == []


# 6. The same gap, met by the snapshot's hunt with ``blind`` models of six ops (proofs.md said
# it was open): the reduced walk misses endings, --cross-check reported them and the check
# passed. The instant's pulled orders report it.
BLIND_SIX = Spec(
    actors=(
        (Op("plain.write", 1), Op("counter.read", 0)),
        (Op("queue.put", 1), Op("plain.write", 0)),
        (Op("counter.read", 0), Op("counter.read", 0)),
    ),
    untracked=True,
    state=True,
    final_checker=False,
)


def test_the_footprint_check_reports_the_blind_six_op_model() -> None:
    full = full_walk(BLIND_SIX)
    assert walk(BLIND_SIX, reduction=True).endings != full.endings
    assert MODES["checkers-strict"](BLIND_SIX, full) == []
    with pytest.raises(FootprintMismatch, match="instant the walk took as commuting"):
        prove(masked(runner(BLIND_SIX)), budget=Budget(examples=4_000), check_footprints=True)
