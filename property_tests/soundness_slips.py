"""Planted slips and the hunt for them: the soundness generator must find each (issue 33 items 2 and 7).

Each slip is a mutant of the kernel, of its footprint checkers or of a
primitive's footprint (the last rounds' bugs and the issue's held-out ones): a
one-line change of the real source (``mutant``: the function recompiled with
one anchor string replaced, which must still be there), applied for one test
only. ``hunt`` draws models from the generator with a fixed seed, from the
families of primitives the slip lives in (``FOCUS``), and returns the first on
which the slip changes something one of the walks compares; with the slip
removed, the same model shows nothing. The suite hunts each slip it finds
within ``SLIP_EXAMPLES`` examples: the footprint slips of the kernel and its
primitives in ``property_tests/search_and_proof/test_soundness_slips.py``,
those of ``--check-footprints`` in ``test_soundness_checker_slips.py`` and
those of ``--cross-check``, a search and a proof in
``test_soundness_verdict_slips.py`` beside it (the state cache's sleep-set slip
is never found: it loses transitions, not states, as ``sleep_cache_census.py``
shows); ``python -m property_tests.soundness_slips N`` (``make
soundness``) hunts every slip with ``N`` examples, unfocused, and prints where
each was found. Unfocused means stratified: the ``N`` examples are shared out
evenly over every family a spec of the slip's kind may draw
(``soundness_models.strata``), so no family is starved and the hunt-only ones
are drawn too.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from random import Random
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample
from hypothesis.strategies import SearchStrategy

from property_tests import soundness_models
from property_tests.soundness_models import Spec, spec_strategy, strata
from property_tests.soundness_walks import MODES, TooBig, full_walk, patched
from raceproof.sim import (
    cover_races,
    exhaustive,
    fingerprint,
    footprint_check,
    primitives,
    reduction,
    shared,
    state_cache,
    world,
)
from raceproof.sim import cross_check as cross_check_module

SLIP_EXAMPLES = 60
# Slips the suite hunts longer: found past SLIP_EXAMPLES. The snapshot: example 59 once the check
# tested delays past every later step of the instant, 395 since it tests the claims of runs the
# walk cuts too (their orders run on to an ending), not found in 3,000 since it runs every order
# of an instant the walk took as commuting (``instant_pulls``): what is left to it, a state that
# differs right after the pair and converges again, loses no ending, so the suite pins it on a
# hand-made model instead (``test_soundness_checker_slips``); ``make soundness`` still hunts it.
HEADROOM = {"footprint check: a state snapshot ignored": 420}
# The suite's seed of a slip's focused hunt where seed 0 finds it late (0 otherwise): each hunt
# costs its examples' walks, so a seed that finds the slip early checks the same claim cheaper.
# Where each of seeds 0-5 found it within SLIP_EXAMPLES (example number; - for not found):
# a divergence left unverified 30, 9, 57, 15, 18, 53 (seed 0: 26.4 CPU s, seed 1: 6.5);
# an error verdict not compared 20, 58, -, -, 11, 5 (seed 0: 21.5 CPU s, seed 5: 1.4);
# finish touches nothing 7, 9, 3, 3, 7, 3 (seed 0: 6.0 CPU s, seed 3: 2.6);
# a tracked set's discard without its read 52, 44, 37, 43, 8, 15 (seed 0: 3.8 CPU s, seed 1: 1.6);
# a lock release records nothing 44, 37, -, -, -, - (seed 0: 3.6 CPU s, the cheapest).
SEEDS = {
    "footprint check: a divergence left unverified": 1,
    "cross-check: an error verdict not compared": 5,
    "finish touches nothing": 3,
    "a tracked set's discard without its read": 1,
}
# The module (the package exports a function of the same name).
explore = importlib.import_module("raceproof.sim.explore")


def problems_of(mode: str, spec: Spec) -> list[str]:
    if mode == "bounds":  # its claims need no full walk (one with bounded runs is never complete)
        return MODES[mode](spec, None)
    try:
        full = full_walk(spec)
    except TooBig:
        return []
    return MODES[mode](spec, full)


def mutant(owner: Any, name: str, old: str, new: str) -> contextlib.AbstractContextManager[None]:
    """``owner.name`` recompiled from its source with ``old`` (found exactly once) -> ``new``."""
    function = inspect.getattr_static(owner, name)
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(old) == 1, f"the slip's anchor left {owner.__name__}.{name}: {old!r}"
    namespace = dict(sys.modules[function.__module__].__dict__)
    exec(compile(source.replace(old, new), f"<slip in {name}>", "exec"), namespace)
    return patched(owner, name, namespace[name])


@contextlib.contextmanager
def touch_dropped(resource: str) -> Iterator[None]:
    original = world.World.touch

    def touch(self: world.World, name: str, write: bool = True) -> None:
        if name != resource:
            original(self, name, write)

    with patched(world.World, "touch", touch):
        yield


@contextlib.contextmanager
def unrecorded(
    owner: Any, name: str, reads: Callable[[Any], object] = lambda _self: None
) -> Iterator[None]:
    """``owner.name`` recording nothing it touches, once ``reads(self)`` has recorded its reads.

    A primitive keeps its state in cells, which record every access; the slip is a
    primitive's operation whose writes (or all of it) go unrecorded.
    """
    original = getattr(owner, name)

    def quiet(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads(self)
        footprint, self.world._footprint = self.world._footprint, None  # the slip
        try:
            return original(self, *args, **kwargs)
        finally:
            self.world._footprint = footprint

    with patched(owner, name, quiet):
        yield


Slip = tuple[Callable[[], contextlib.AbstractContextManager[None]], str, bool]
# name -> (plant, the mode that finds it, whether its models share an untracked object);
# FOCUS: the families of primitives the suite's cheap hunt draws from (``make soundness``
# hunts with every family).
SLIPS: dict[str, Slip] = {
    # Item 1's bug: the invariant's reads outside the step's footprint.
    "invariant reads unrecorded": (
        lambda: mutant(
            world.World,
            "_observed_step",
            "self._footprint = footprint\n        try:",
            "self._footprint = None\n        try:",
        ),
        "reduction",
        False,
    ),
    # The last round's four (property_tests/search_and_proof/test_footprint_slips.py).
    "queue take recorded as a read": (
        lambda: unrecorded(
            primitives.EventQueue, "get", lambda queue: (queue.items, queue.getters)
        ),
        "reduction",
        False,
    ),
    "finish touches nothing": (
        lambda: mutant(world.World, "finish", "self.touch_all()", "pass"),
        "reduction",
        False,
    ),
    "a model's touch deleted": (lambda: touch_dropped("model:m"), "reduction", False),
    "a lock release records nothing": (
        lambda: unrecorded(primitives.Lock, "release"),
        "reduction",
        False,
    ),
    # Issue 33 item 7's held-out mutants.
    "a tracked set's discard without its read": (
        lambda: mutant(
            shared.TrackedSet,
            "discard",
            "record(self._world, self._element(element), write=True)\n    if element in self._data:",
            "if element in self._data:\n        record(self._world, self._element(element), write=True)",
        ),
        "reduction",
        False,
    ),
    "footprint check: a divergence left unverified": (
        lambda: mutant(
            footprint_check.FootprintChecker,
            "_follow",
            "if diverged.ambiguous:",
            "if True:",
        ),
        "checkers-strict",
        True,
    ),
    "footprint check: a state snapshot ignored": (
        lambda: mutant(
            footprint_check.FootprintChecker,
            "_difference",
            "if src1.snapshot != src2.snapshot:",
            "if False:",
        ),
        "checkers-strict",
        True,
    ),
    "footprint check: an off-by-one in its seen keys": (
        lambda: mutant(
            footprint_check.FootprintChecker,
            "check",
            "steps[i : j + 1]",
            "steps[i:j]",
        ),
        "checkers",
        False,
    ),
    "cross-check: an error verdict not compared": (
        lambda: mutant(
            cross_check_module,
            "cross_check",
            "full.verdict in FINDINGS and reduced.verdict not in FINDINGS",
            'full.verdict == "violated" and reduced.verdict != "violated"',
        ),
        "checkers",
        True,
    ),
    "state cache: the sleep set ignored": (
        lambda: mutant(
            state_cache.StateCache,
            "look_up",
            "visit.sleep <= sleep and visit.depth <= depth",
            "visit.depth <= depth",
        ),
        "state-cache",
        False,
    ),
    # Issue 46 item 2's: a symmetry declared over actors that differ (the last one's last op).
    "symmetry over actors that differ": (
        lambda: mutant(
            soundness_models,
            "script_of",
            "spec.actors[0] if spec.symmetric else spec.actors[index]",
            "spec.actors[0] if index < len(spec.actors) - 1 else (*spec.actors[0][:-1], "
            'Op("set.add" if spec.actors[0][-1].kind == "counter.add" else "counter.add", 0))',
        ),
        "symmetry",
        False,
    ),
    # Issue 46 item 3: the commuting-instant shortcut excusing a dependent pair that no
    # trigger or process orders (every earlier step of the instant taken as a cause).
    "an instant's dependent pair excused without a trigger": (
        lambda: mutant(
            reduction,
            "causes",
            "(own or earlier == by)",
            "True",
        ),
        "reduction",
        False,
    ),
    # Issue 46 item 1: the kernel's fingerprint leaves out where one process is suspended
    # (its generator is never encoded: every state of it looks the same).
    "fingerprint: one process's position left out": (
        lambda: mutant(
            fingerprint._Encoder,
            "roots",
            "processes.sort(key=lambda p: self.rename(p.rp_id))",
            "processes.sort(key=lambda p: self.rename(p.rp_id))\n"
            "    if processes:\n"
            "        self.labels[id(processes[0]._generator)] = -1",
        ),
        "fingerprint",
        False,
    ),
    # Issue 46 item 3 under the state cache: a run covered with its instant open takes the
    # races of its draws before the cut from its own steps alone, as if the covering
    # subtree ran nothing else in the instant (``sim/cover_races.py``).
    "state cache: the covering subtree's steps ignored": (
        lambda: mutant(
            exhaustive.ProofWalk,
            "_cover_races",
            "learned = cover_races.watch(cut.covering, draw)",
            "learned = None",
        ),
        "fingerprint",
        False,
    ),
    # The same, where the summary knows the paths from the covering state to a step: the
    # races a covered run's draws have with it along them dropped (``cover_races.paths``).
    "state cache: a summary path's races dropped": (
        lambda: mutant(
            cover_races,
            "_path_races",
            "races.extend(race for race in found if race[0][-1] == step[0])",
            "pass",
        ),
        "fingerprint",
        False,
    ),
    # Item 7's last two: bounded runs counted as if they had ended.
    "a search counts one bound hit as ok": (
        lambda: mutant(
            explore,
            "_no_violation",
            "Verdict.INCONCLUSIVE if undecided.runs else Verdict.OK",
            "Verdict.INCONCLUSIVE if undecided.runs > 1 else Verdict.OK",
        ),
        "bounds",
        False,
    ),
    "a proof counts probes on a bounded run": (
        lambda: mutant(
            exhaustive.ProofWalk,
            "_run_one",
            "self.pruned[outcome.bound] = self.pruned.get(outcome.bound, 0) + 1",
            "self.pruned[outcome.bound] = self.pruned.get(outcome.bound, 0) + 1\n"
            "        count_probes(self.probes, outcome)",
        ),
        "bounds",
        False,
    ),
}


FOCUS: dict[str, tuple[str, ...]] = {
    "invariant reads unrecorded": ("record", "set"),
    "queue take recorded as a read": ("queue",),
    "finish touches nothing": ("misc",),
    "a model's touch deleted": ("touch",),
    "a lock release records nothing": ("lock", "record"),
    "a tracked set's discard without its read": ("set",),
    "footprint check: a divergence left unverified": ("diverge",),
    "footprint check: a state snapshot ignored": ("blind",),
    "footprint check: an off-by-one in its seen keys": (),  # any model: its accounting
    "cross-check: an error verdict not compared": ("plain",),
    "state cache: the sleep set ignored": ("record", "counter", "set", "dict"),
    "symmetry over actors that differ": ("counter",),
    "an instant's dependent pair excused without a trigger": ("record", "counter"),
    "fingerprint: one process's position left out": ("record", "counter", "set", "dict"),
    "state cache: the covering subtree's steps ignored": ("guard",),
    "state cache: a summary path's races dropped": ("guard",),
    "a search counts one bound hit as ok": ("bounds",),
    "a proof counts probes on a bounded run": ("bounds",),
}


DECLARED_STATE = ("footprint check: a state snapshot ignored",)


def _first(
    strategy: SearchStrategy[Spec], condition: Callable[[Spec], bool], examples: int, seed: Random
) -> tuple[Spec, int] | None:
    """The first of ``examples`` drawn specs that meets ``condition``, and its number; None."""
    tried, at = [0], [0]

    def counted(spec: Spec) -> bool:
        tried[0] += 1
        met = condition(spec)
        if met and not at[0]:
            at[0] = tried[0]
        return met

    try:
        found = find(
            strategy,
            counted,
            settings=settings(
                max_examples=examples,
                database=None,
                deadline=None,
                phases=(Phase.generate,),
                suppress_health_check=list(HealthCheck),
            ),
            random=seed,
        )
    except NoSuchExample:
        return None
    return found, at[0]


def _stratified(
    strategy_of: Callable[[str], SearchStrategy[Spec]],
    condition: Callable[[Spec], bool],
    examples: int,
    seed_value: int,
    families: tuple[str, ...],
) -> tuple[Spec, int] | None:
    """An unfocused hunt with the ``examples`` shared out evenly over ``families`` (strata).

    Round robin: stratum i's j-th spec is example (j - 1) * n + i + 1 of the hunt, so the
    number returned is where an interleaved hunt meets its first find. Each stratum draws
    from the seed's stream (a stratum that is a focused hunt's one family repeats that
    hunt's specs) and stops where it could no longer come first.
    """
    n, best = len(families), None
    for i, family in enumerate(families):
        limit = examples if best is None else best[1] - 1
        share = (limit - i - 1) // n + 1  # its j with (j - 1) * n + i + 1 <= limit
        if share <= 0:
            continue
        first = _first(strategy_of(family), condition, share, Random(seed_value))
        if first is not None:
            best = (first[0], (first[1] - 1) * n + i + 1)
    return best


def hunt(
    slip: str, examples: int, seed_value: int = 0, *, focused: bool = True
) -> tuple[Spec, int]:
    """The first spec on which the planted ``slip`` changes something, and its example number.

    Not shrunk (each example walks a model several times): the first one found;
    ``NoSuchExample`` when none is. ``focused``: drawn from the slip's ``FOCUS``
    families only (the suite's cheap hunt); unfocused, every family of the slip's
    kind of spec (``strata``) has an equal share of the examples (``_stratified``).
    In the ``checkers-strict`` mode (``--check-footprints`` must report every reduction
    that misses an ending) a spec counts only when the check without the slip does
    report it: where neither does, the check's open gap is at work
    (docs/explanation/proofs.md), not the slip.
    """
    plant, mode, untracked = SLIPS[slip]
    # A state snapshot is the model's declared state: without one there is little to compare.
    state = True if mode == "state-cache" or slip in DECLARED_STATE else None
    bounded, symmetric = mode == "bounds", mode == "symmetry"

    def shows(spec: Spec) -> bool:
        with plant():
            slipped = problems_of(mode, spec)
        return bool(slipped) and not (mode == "checkers-strict" and problems_of(mode, spec))

    def strategy_of(*families: str) -> SearchStrategy[Spec]:
        return spec_strategy(
            untracked=untracked,
            families=families,
            state=state,
            bounded=bounded,
            symmetric=symmetric,
        )

    if focused:
        first = _first(strategy_of(*FOCUS[slip]), shows, examples, Random(seed_value))
    else:
        first = _stratified(
            strategy_of, shows, examples, seed_value, strata(untracked=untracked, bounded=bounded)
        )
    if first is None:
        raise NoSuchExample(slip, f" in {examples} examples")
    return first


def hunted(slip: str) -> Spec:
    """The suite's hunt: ``slip`` found within ``SLIP_EXAMPLES`` (or its ``HEADROOM``) at its
    ``SEEDS`` seed, its model clean without it."""
    found, _ = hunt(slip, HEADROOM.get(slip, SLIP_EXAMPLES), SEEDS.get(slip, 0))
    _, mode, _ = SLIPS[slip]
    assert problems_of(mode, found) == [], f"{found} still shows the slip once it is removed"
    return found


# Unfocused hunts allowed more than ``make soundness``'s examples, as a factor: the snapshot's
# (as in the suite's HEADROOM) was not found at 1,000 and was at 1,500 (example 250).
UNFOCUSED_HEADROOM = {"footprint check: a state snapshot ignored": 1.5}


def main(examples: int) -> None:
    """Hunt every slip with ``examples`` unfocused examples (or its headroom); print where found."""
    for slip in sorted(SLIPS):
        started = time.monotonic()
        budget = round(examples * UNFOCUSED_HEADROOM.get(slip, 1))
        try:
            spec, tried = hunt(slip, budget, focused=False)
            found = f"found at example {tried}: {spec}"
        except NoSuchExample as missed:
            found = f"NOT found in {budget} examples ({type(missed).__name__})"
        print(f"{slip}: {found} ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
