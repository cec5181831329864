"""Registers every scenario of the catalogue (imported once, by ``catalogue.get``)."""

from __future__ import annotations

from models import brooklin, counter
from scenarios.catalogue import Scenario, register
from scenarios.zookeeper import brooklin as zookeeper_brooklin
from sim import Bounds

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

BROOKLIN = register(
    Scenario(
        name="brooklin-double-stop",
        summary="Brooklin leader marks a resumed datastream STOPPED again from a stale cache (PR #974)",
        variants=brooklin.VARIANTS,
        expect_violation=frozenset({"buggy", "fix-zk-lookup"}),
        checkers=brooklin.CHECKERS,
        build=brooklin.build,
        config=brooklin.BrooklinConfig(),
        # Every schedule of: 2 followers, streams A and B stopped 10.333 s apart, A resumed
        # at once or after 8 s, the leader told at once or after 3 s, a task stopping in
        # 0.5 or 12 s, each leader write taking 5 ms or 2 s, and every order of ties.
        prove_config=brooklin.BrooklinConfig(
            stop_gap_ms=(10_333,),
            follower_notify_ms=(0,),
            leader_notify_ms=(0, 3_000),
            resume_think_ms=(0, 8_000),
            task_stop_ms=(500, 12_000),
            zk_write_ms=(5, 2_000),
        ),
        bounds=Bounds(max_time_ms=3_600_000, max_steps=100_000),
        # The seed: stop A at 0 s, stop B at 10 s; the first stop task marks A STOPPED; the
        # caller resumes A 8 s after its stop returned and the leader hears of it 3 s late,
        # so the second stop task, reading its stale cache, writes STOPPED over READY.
        report_script={("client-A.think", 0): 2, ("leader.notify-delay", 2): 1},
        report_variant="buggy",
        real_backends={"zookeeper": zookeeper_brooklin.run_forced},
        default_examples=2_000,
        default_budget_s=60.0,
    )
)
