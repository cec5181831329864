"""The simulated network: per-link draws, the nemesis' drop, duplicate and delay, latency in ms.

A message's fate is drawn on its link and logged; replaying the same draws must
deliver the same messages at the same simulated times.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from raceproof.sim import (
    FaultPlan,
    Nemesis,
    Network,
    ReplaySource,
    World,
)


@given(
    st.sampled_from(
        [frozenset(), frozenset({"drop"}), frozenset({"duplicate"}), frozenset({"delay"})]
    ),
    st.lists(st.integers(0, 1), max_size=12),
)
def test_the_network_draws_per_link_and_delivers_after_the_drawn_latency(
    kinds: frozenset[str], values: list[int]
) -> None:
    world = World(ReplaySource(values, strict=False))
    plan = FaultPlan(kinds=kinds, max_faults=2, p=0.5, delay_ms=(10, 30))
    network = Network(world, Nemesis(world, plan), latency_ms=(1, 4))
    delivered: list[tuple[int, str]] = []
    network.send("a", "b", "m", lambda message: delivered.append((world.now_ms, message)))
    world.run()
    draws = [
        (c.label, c.n, c.value)
        for c in world.source.record
        if c.label.split(".")[0] in ("fault", "latency", "delay")  # not the scheduler's ties
    ]
    labels = [label for label, _, _ in draws]
    assert labels and all(label.endswith(".a->b") for label in labels)
    struck = {
        label.split(".")[1] for label, _, value in draws if label.startswith("fault.") and value
    }
    if "drop" in struck:
        assert delivered == [] and labels == ["fault.drop.a->b"]
        return
    copies = 2 if "duplicate" in struck else 1
    assert len(delivered) == copies and {m for _, m in delivered} == {"m"}
    expected: list[int] = []
    latencies = iter(draws)
    for label, _, value in latencies:
        if label.startswith("latency."):
            latency = (1, 4)[value]
            if "delay" in kinds:
                fault = next(latencies)
                assert fault[0] == "fault.delay.a->b"
                if fault[2]:
                    extra = next(latencies)
                    assert extra[0] == "delay.a->b"
                    latency += (10, 30)[extra[2]]
            expected.append(latency)
    assert sorted(t for t, _ in delivered) == sorted(expected)
    actors = {op.actor for op in world.history if op.actor.startswith("net:")}
    assert actors <= {"net:a->b"}
