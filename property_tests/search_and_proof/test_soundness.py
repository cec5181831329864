"""Every shortcut of a proof against the full walk, over generated models (issue 33 item 2).

``property_tests/soundness_models.py`` draws small models from every primitive a
user has (``soundness_walks.py`` walks them); for each, the full walk (no
reduction) is the reference, and:

- the reduced walk reaches the same endings (verdicts, ops) and probes, and the
  reduced proof finds a violation or an error exactly when the full walk does;
- the state cache (the model declaring its state) reaches the same final states
  and statuses, and its proof agrees with the full walk; so does it with identical
  actors declared interchangeable (final states up to a permutation), and the
  symmetry's check (``--check-symmetry``) stays silent;
- the state cache on the kernel's own fingerprint (the model declaring nothing)
  reaches the same endings, probes and verdicts as the full walk;
- ``prove -j 2`` (a scenario's public ``prove``) agrees with the full walk;
- ``--check-footprints`` and ``--cross-check`` stay silent on a model of tracked
  state and report every model whose own untracked object makes the reduction
  miss an ending.

In ``make test`` each runs ``RACEPROOF_SOUNDNESS_EXAMPLES`` examples (default 8,
derandomized: a few seconds each); ``make soundness`` runs them with many more,
randomized. The planted slips are in ``test_soundness_slips.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, example, given, settings

from property_tests.soundness_models import Op, Spec, spec_strategy
from property_tests.soundness_walks import MODES, TooBig, full_walk

SOUNDNESS_EXAMPLES = int(os.environ.get("RACEPROOF_SOUNDNESS_EXAMPLES", "8"))
# Symmetric specs run three actors (a few seconds each): make test runs 3, make soundness all.
SYMMETRY_EXAMPLES = SOUNDNESS_EXAMPLES if "RACEPROOF_SOUNDNESS_EXAMPLES" in os.environ else 3
GENERATED = settings(
    max_examples=SOUNDNESS_EXAMPLES,
    deadline=None,
    database=None,
    derandomize="RACEPROOF_SOUNDNESS_EXAMPLES" not in os.environ,
    suppress_health_check=list(HealthCheck),
)


def _judge(mode: str, spec: Spec) -> None:
    try:
        full = full_walk(spec)
    except TooBig:
        assume(False)
        return
    problems = MODES[mode](spec, full)
    assert not problems, f"{spec}: {problems}"


# ``make soundness`` found it (the footprint checks' claim, at 300 examples): a2's read of
# the record's field is guarded by the counter, which a1 adds to. After a0's guarded read the
# walk ran a1's add first, then a2's read first, where a2 read the field and a0's toggle wrote
# it later. That race's sequence, a0's toggle, was taken as covered by a1's add asleep there
# (independent of the toggle), but run after the add a2's read touches the counter only: the
# ending where a2 reads a0's toggle, with the counter still 0, was never walked. A race's
# later step now counts as touching everything in its sequence: it runs there without the
# step it raced with before it, and may read otherwise.
READ_GUARDED_BY_THE_RACE = Spec(
    actors=(
        (Op("record.guarded", 0), Op("record.toggle", 1)),
        (Op("counter.add", 0),),
        (Op("record.guarded", 1),),
    ),
    final_checker=False,
)


@GENERATED
@given(spec_strategy())
@example(READ_GUARDED_BY_THE_RACE)
def test_the_reduced_walk_agrees_with_the_full_walk(spec: Spec) -> None:
    _judge("reduction", spec)


@GENERATED
@given(spec_strategy())
def test_the_state_cache_agrees_with_the_full_walk(spec: Spec) -> None:
    _judge("state-cache", spec)


# ``RACEPROOF_SOUNDNESS_EXAMPLES=300`` found it: a1 paused node0 after a0 drew its delay (0, its
# step held until the pause ended) or before (a0 drew 2 later): a0's step counts were the same
# and its places in its code were not, so a state's declared fingerprint (which the kernel gives
# the step counts of pending events) merged the two, and ``--check-symmetry`` saw the two
# subtrees end differently. A held step now says so in its pending entry.
HELD_BY_A_PAUSE = Spec(
    actors=((Op("draw", 1), Op("node.pause", 1), Op("draw", 0)), (Op("draw", 0),)),
    state=True,
    final_checker=False,
    symmetric=True,
)


@settings(GENERATED, max_examples=min(SOUNDNESS_EXAMPLES, SYMMETRY_EXAMPLES))
@given(spec_strategy(symmetric=True))
@example(HELD_BY_A_PAUSE)
def test_the_symmetric_state_cache_agrees_with_the_full_walk(spec: Spec) -> None:
    """Identical actors declared interchangeable: merging a state with its images changes no
    final state (up to the permutation), status, probe or verdict, and the check is silent."""
    _judge("symmetry", spec)


# Issue 46 item 3 under the state cache: a1's toggle, then a0's (the pair's other order,
# the state of a0's then a1's), is covered with a0's add and a2's guarded read still due. Its
# own rest of the instant adds first, so the guarded read touches only the counter; the
# covering subtree also reads first, where the read touches the field a0's toggle wrote.
# Taking the covered run's races from its own steps alone loses the ending where a2 reads a1's
# toggle (the planted slip "state cache: the covering subtree's steps ignored").
GUARDED_READ_PAST_A_COVER = Spec(
    actors=(
        (Op("record.toggle", 0), Op("counter.add", 0)),
        (Op("record.toggle", 0),),
        (Op("counter.read", 0), Op("record.guarded", 0)),
    ),
    final_checker=False,
)


@GENERATED
@given(spec_strategy())
@example(GUARDED_READ_PAST_A_COVER)
def test_the_kernel_fingerprint_agrees_with_the_full_walk(spec: Spec) -> None:
    _judge("fingerprint", spec)


@GENERATED
@given(spec_strategy(max_ops=4))
def test_prove_j2_agrees_with_the_full_walk(spec: Spec) -> None:
    _judge("parallel", spec)


@GENERATED
@given(spec_strategy())
def test_the_footprint_checks_are_silent_on_tracked_models(spec: Spec) -> None:
    _judge("checkers", spec)


@GENERATED
@given(spec_strategy(untracked=True))
def test_the_footprint_checks_report_every_unsound_reduction(spec: Spec) -> None:
    _judge("checkers", spec)


# Planted counter-case: a bounded run reaches the probe (a proof that counts probes on a
# bounded run fails here; ``test_soundness_verdict_slips.py`` finds it at example 4).
BOUNDED_PROBE = Spec(
    actors=(
        (Op("dict.set", 0), Op("probe", 1), Op("counter.add", 0)),
        (Op("counter.add", 0),),
        (Op("set.add", 0),),
    ),
    invariant="dict-not-both",
    final_checker=False,
    max_steps=13,
)


@GENERATED
@given(spec_strategy(families=("bounds",), bounded=True))
@example(BOUNDED_PROBE)
def test_bounded_runs_are_never_a_pass_nor_a_probe_witness(spec: Spec) -> None:
    """A step bound some runs hit: the proof's probes come from its judged runs only, and
    neither the proof nor a search that met a bound says ``ok``."""
    problems = MODES["bounds"](spec, None)
    assert not problems, f"{spec}: {problems}"


def test_an_invariant_op_is_the_same_whatever_independent_steps_ran_before_it() -> None:
    """``make soundness`` (60 examples) found it: the op carried the World's step count, so
    delaying a1's empty step past a0's violating one changed it and ``--check-footprints``
    blamed a model of tracked state only."""
    counters = Spec(
        actors=((Op("counter.add", 0), Op("counter.add", 0)), (Op("counter.add", 0),)),
        invariant="counter-below-2",
        final_checker=False,
    )
    assert MODES["checkers"](counters, None) == []
    assert MODES["reduction"](counters, None) == []
