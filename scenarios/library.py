"""Registers every scenario of the catalogue (imported once, by ``catalogue.get``)."""

from __future__ import annotations

from models import counter
from scenarios.catalogue import Scenario, register

LOST_UPDATE = register(
    Scenario(
        name="lost-update",
        summary="kernel self-test: two clients read-modify-write a counter in the versioned store",
        variants=counter.VARIANTS,
        expect_violation=frozenset({"buggy"}),
        checkers=(counter.final_equals_acks,),
        build=counter.build,
        config=counter.CounterConfig(),
        prove_config=counter.CounterConfig(),
        default_examples=2_000,
        default_budget_s=30.0,
    )
)
