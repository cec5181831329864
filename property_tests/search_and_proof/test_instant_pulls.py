"""The orders ``--check-footprints`` tests for an instant the walk took as commuting (issue 33).

The walk branches nowhere in such an instant (``SleepSetSource._close_instant``), so its
claim is that every order of the instant's steps the kernel allows is equivalent.
``instant_pulls`` turns that claim into a handful of orders to run. Over random instants
(processes, each step triggered by its process's previous step or by another's), each
order must be one a run could take (every step after its process's earlier steps and after
the step that triggered it), and together they must reverse every pair of steps that could
run in either order, however far apart they ran: the adjacent claims reach only steps due
together, the hole the generator found at 300 examples.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim.footprint_claims import StepRecord, instant_pulls


@st.composite
def instants(draw: st.DrawFn) -> list[StepRecord]:
    """One instant's steps as a run logged them: keys, triggers, all marked commuting."""
    count = draw(st.integers(min_value=1, max_value=7))
    steps: list[StepRecord] = []
    made: dict[int, int] = {}
    for n in range(count):
        process = draw(st.integers(min_value=0, max_value=2))
        made[process] = made.get(process, 0) + 1
        key = f"/p{process}#{process}@{made[process]}"
        earlier = [s.key for s in steps]
        trigger = draw(st.sampled_from([None, *earlier])) if earlier else None
        steps.append(
            StepRecord(
                key=key,
                footprint={f"r{n}": True},
                drew=False,
                options=(key,),
                at_ms=10,
                enabled_by=trigger,
                commutes=True,
            )
        )
    return steps


def must_precede(steps: list[StepRecord]) -> dict[int, set[int]]:
    """For each step, the steps that must run before it in any order (transitively)."""
    before: dict[int, set[int]] = {}
    for j, step in enumerate(steps):
        assert step.key is not None
        process = step.key.rsplit("@", 1)[0]
        direct = {
            i
            for i in range(j)
            if str(steps[i].key).rsplit("@", 1)[0] == process or steps[i].key == step.enabled_by
        }
        before[j] = set(direct).union(*(before[i] for i in direct))
    return before


@given(instants())
def test_every_pulled_order_is_one_a_run_could_take(steps: list[StepRecord]) -> None:
    before = must_precede(steps)
    for q, v, order in instant_pulls(steps):
        assert sorted(order) == list(range(q, v + 1))
        assert order != list(range(q, v + 1))  # an order that reorders nothing is not offered
        place = {step: n for n, step in enumerate(order)}
        for step in order:
            assert all(place[p] < place[step] for p in before[step] if p >= q)


@given(instants())
def test_the_pulled_orders_reverse_every_pair_that_could_run_either_way(
    steps: list[StepRecord],
) -> None:
    before = must_precede(steps)
    reversed_pairs = set()
    for _, _, order in instant_pulls(steps):
        place = {step: n for n, step in enumerate(order)}
        reversed_pairs |= {(u, w) for u in place for w in place if u < w and place[w] < place[u]}
    free = {(u, w) for w in range(len(steps)) for u in range(w) if u not in before[w]}
    assert free <= reversed_pairs


@given(instants(), st.integers(min_value=0, max_value=6))
def test_only_marked_steps_of_one_instant_are_pulled(steps: list[StepRecord], cut: int) -> None:
    """Steps not marked are no claim; a later instant's steps are a claim of their own."""
    cut = min(cut, len(steps))
    unmarked = [StepRecord(**{**vars(s), "commutes": False}) for s in steps[:cut]]
    later = [StepRecord(**{**vars(s), "at_ms": 20}) for s in steps[cut:]]
    for q, v, _ in instant_pulls([*unmarked, *later]):
        assert cut <= q <= v < len(steps)
    assert instant_pulls([*unmarked, *later]) == [
        (q + cut, v + cut, [s + cut for s in order]) for q, v, order in instant_pulls(later)
    ]
