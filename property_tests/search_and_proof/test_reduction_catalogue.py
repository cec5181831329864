"""Every scenario of the catalogue: the reduced walk reaches what the full walk reaches.

For each scenario and variant, on a small configuration (the proof
configuration with a few options fixed, so that the full walk stays in the
hundreds of schedules but still has the ties the reduction works on), the
walk with the partial-order reduction and the walk without it must reach the
same set of final states, each with the same verdicts. A final state is the
run's history up to the order of ops logged at the same instant (what
commuting steps may reorder). A footprint the model forgot to declare (a
``touch`` missing where two actors share state) shows here as a final state
the reduced walk never reaches. Violations do not stop either walk.

A scenario registered later without an entry in ``SMALL`` is checked on its
proof configuration. That every variant expected to be violated is still
found by ``prove``, whose reduction is on by default, is
``test_catalogue.test_prove_agrees_with_the_catalogue``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from property_tests.toy_model import history_fingerprint
from raceproof.scenarios import library
from raceproof.scenarios.catalogue import Scenario, judged_together, same_runs
from raceproof.sim import Budget, ChoiceSource, RunOutcome, prove

# name -> overrides of the proof configuration (each full walk: at most a few hundred schedules)
SMALL: dict[str, dict[str, Any]] = {
    # One stream (issue 45: with every call a request in two halves, two streams' full walk is
    # over 20,000 schedules even with stops 10.333 s apart and no pause); 1 s pauses at the
    # decision and before updateDataSerialized's setData.
    "brooklin-double-stop": {
        "streams": ("A",),
        "resume_think_ms": (8_000,),
        "leader_notify_ms": (3_000,),
        "fault_points": ("decided", "write"),
    },
    "streams-checkpoint-resurrection": {"first_rebalance_ms": (45_000,), "delete_ms": (5_000,)},
    "coordinator-async-append": {"writes": 2},
    # One container: the full walk of the two-container proof configuration is tens of
    # thousands of schedules, and a broken variant's walked past its violation is larger.
    "samza-drain": {
        "containers": 1,
        "source_interval_ms": 20_000,
        "stop_at_ms": (5_000,),
        "container_start_ms": (0,),
        "process_ms": 700,
        "restart": (False,),
    },
}

# (name, variant) -> further overrides: a variant whose runs go on to the horizon polling
# (its drain never finishes) walks a much larger tree past its violation.
SMALL_VARIANT: dict[tuple[str, str], dict[str, Any]] = {
    ("samza-drain", "stop-intermediate-consumers"): {"horizon_ms": 30_000},
}

# The built-in catalogue only (other tests in a process may register user scenarios).
BUILTIN = sorted(
    (v for v in vars(library).values() if isinstance(v, Scenario)), key=lambda s: s.name
)
# brooklin-redundant-stop is brooklin-double-stop's model under another checker (same_runs): the
# same runs on any configuration, so each walk of double-stop's small configuration is judged by
# both scenarios' checkers (judged_together) instead of a second walk of each variant. It had a
# small configuration of its own (no pause, a 500 ms task stop: 23 CPU s for its four variants).
JUDGED_WITH = {"brooklin-redundant-stop": "brooklin-double-stop"}


def judged(scenario: Scenario, variant: str) -> Scenario:
    """``scenario`` with the checkers of the scenarios whose walks of ``variant`` are its own."""
    others = [s for s in BUILTIN if JUDGED_WITH.get(s.name) == scenario.name]
    assert all(same_runs(scenario, other, variant) for other in others), scenario.name
    return judged_together(scenario, others) if others else scenario


CASES = [(judged(s, v), v) for s in BUILTIN if s.name not in JUDGED_WITH for v in s.variants]


def small_config(scenario: Scenario, variant: str) -> Any:
    name = scenario.name.split("+")[0]  # a walk judged together: the host's configuration
    overrides = {**SMALL.get(name, {}), **SMALL_VARIANT.get((name, variant), {})}
    return dataclasses.replace(scenario.prove_config, **overrides)


def test_every_builtin_scenario_has_a_small_configuration() -> None:
    builtin = {s.name for s in BUILTIN}
    assert "samza-drain" in builtin and builtin - {"lost-update"} <= {*SMALL, *JUDGED_WITH}
    # Every scenario's variants are walked, alone or judged with their host's.
    walked = {(name, v) for s, v in CASES for name in s.name.split("+")}
    assert walked == {(s.name, v) for s in BUILTIN for v in s.variants}


@pytest.mark.parametrize(("scenario", "variant"), CASES, ids=[f"{s.name}/{v}" for s, v in CASES])
def test_reduced_and_full_walks_reach_the_same_final_states(
    scenario: Scenario, variant: str
) -> None:
    run = scenario.runner(variant, small_config(scenario, variant))
    reached: dict[bool, set[tuple[Any, ...]]] = {True: set(), False: set()}
    counts: dict[bool, int] = {}
    for reduction in (True, False):

        def recording(source: ChoiceSource, reduction: bool = reduction) -> RunOutcome:
            outcome = run(source)
            verdicts = tuple(sorted((v.checker, v.status) for v in outcome.verdicts))
            reached[reduction].add((verdicts, history_fingerprint(outcome)))
            return dataclasses.replace(outcome, status="ok")  # walk on past violations

        # The reduced walk also swap-tests its footprints (--check-footprints) over every
        # schedule of the small configuration: a model's own footprint slip fails here.
        report = prove(
            recording,
            budget=Budget(examples=20_000),
            reduction=reduction,
            check_footprints=reduction and scenario.declares_footprints,
        )
        assert report.complete, (reduction, report.pruned)
        counts[reduction] = report.schedules
    assert reached[True] == reached[False], (
        f"only in the full walk: {len(reached[False] - reached[True])}, "
        f"only in the reduced walk: {len(reached[True] - reached[False])}"
    )
    assert counts[True] <= counts[False]
    if scenario.declares_footprints and scenario.name.split("+")[0] in SMALL:
        # The small configurations keep ties the declared footprints let the walk skip.
        assert counts[True] < counts[False], counts
