"""Registers every scenario of the built-in catalogue.

It is loaded the way a user's scenarios are: through the ``raceproof.scenarios``
entry point ``builtin`` declared in ``pyproject.toml`` (``discovery``), and each
scenario enters the catalogue through the public ``register``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raceproof.models import brooklin, counter, group_coordinator, kafka_streams, samza
from raceproof.models.brooklin.model import (
    STALE_MARK_WINDOW,
    STOP_AGAIN_WINDOW,
    WRITE_CONFLICT_WINDOW,
)
from raceproof.models.counter.model import WINDOW as COUNTER_WINDOW
from raceproof.models.group_coordinator.model import VERIFY_WINDOW
from raceproof.models.kafka_streams.state_dir import DELETE_WINDOW
from raceproof.models.samza.model import (
    ASYNC_COMMIT_WINDOW,
    DRAIN_WINDOW,
    EARLY_DRAIN_WINDOW,
    PANE_WINDOW,
)
from raceproof.scenarios.catalogue import Scenario, register
from raceproof.sim import Bounds
from raceproof.zookeeper import brooklin as zookeeper_brooklin


def _on_spark(name: str) -> Callable[..., Any]:
    """A real backend of ``spark_integration.forced``, imported only when a run asks for Spark."""

    def run(*args: Any) -> Any:
        from raceproof.spark_integration import forced

        return getattr(forced, name)(*args)

    return run


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
        # Clients share only the store; the observer waits on their `finished` events
        # through all_of (a step that counts as touching everything); the checker counts.
        declares_footprints=True,
        # The clients run the same code on the same counter: a state and its image with two
        # clients exchanged are one (the state cache's symmetry).
        symmetric=counter.clients,
        # What the checker reads of the past (the acks and the final value), and no clock.
        past=counter.PAST,
        # Where the race window opens (world.reach in the model): an ok that never got there is not.
        probes=(COUNTER_WINDOW,),
        default_examples=2_000,
        default_budget_s=30.0,
    )
)

# Every schedule of: 2 followers, streams A and B stopped exactly 10 s apart, A resumed at once
# or after 8 s, the leader told at once or after 3 s, a task stopping in 0.5 or 12 s, every
# ZooKeeper call a request applied at the server 1 ms after it leaves and answered 1 ms later
# (a token poll is one countChildren per stream), the whole leader JVM paused 1 s (GC) or not
# wherever a stop task has decided and not yet written (at the decision; between each readData
# reply of updateDataSerialized and its setData), and every order of ties. #974 loses a resume
# here (after 42 runs, 29 classes): both stop tasks read A STOPPING (follower0 takes 12 s, so
# both token polls find every token claimed at once); stop-task1 writes STOPPED; the leader JVM
# pauses after stop-task2's readData reply and before its setData leaves; the caller sees
# STOPPED and resumes A during the pause; stop-task2's setData then meets BadVersion and its
# retry writes STOPPED over READY. With pauses drawn only at the decision it is proven (1,472
# classes): the loss needs a pause between a read and its setData (docs/models/brooklin.md).
BROOKLIN_PROVE = brooklin.BrooklinConfig(
    stop_gap_ms=(10_000,),
    follower_notify_ms=(0,),
    leader_notify_ms=(0, 3_000),
    resume_think_ms=(0, 8_000),
    task_stop_ms=(500, 12_000),
    gc_pause_ms=(0, 1_000),
    zk_connection_loss_ms=(0,),
)

ONE_TASK = (
    "each (stream, STOPPING version) goes to one stop task, the only writer after the STOPPING "
    "it read"
)

BROOKLIN = register(
    Scenario(
        name="brooklin-double-stop",
        summary="Brooklin leader marks a resumed datastream STOPPED again from a stale cache (PR #974)",
        variants=brooklin.VARIANTS,
        # fix-zk-lookup (#974 as merged) loses a resume when a JVM pause holds a stop task
        # between its read of the stream and its setData while another stop task's STOPPED
        # lands, long enough for the caller's next status poll and its resume: its
        # updateDataSerialized then writes STOPPED over READY (it writes whatever it reads).
        expect_violation=frozenset({"buggy", "fix-zk-lookup"}),
        found_by_proof=frozenset({"fix-zk-lookup"}),
        checkers=brooklin.CHECKERS,
        build=brooklin.build,
        config=brooklin.BrooklinConfig(),
        prove_config=BROOKLIN_PROVE,
        bounds=Bounds(max_time_ms=3_600_000, max_steps=100_000),
        # Shared Python state is named with rt.touch (models/brooklin/model.py's docstring).
        declares_footprints=True,
        # Where the race windows open (world.reach in the model): an ok that never got there is
        # not. A lost resume needs a STOPPED write landing on something its writer did not decide
        # on: a decision on a copy older than ZooKeeper's (the stale cache, before #974) or a
        # STOPPED write that met BadVersion (#974's updateDataSerialized then writes over what it
        # reads again). Under fix-stop-dedupe neither opens (0 of its proof's 4,096 classes).
        probes=(STALE_MARK_WINDOW, WRITE_CONFLICT_WINDOW),
        unreachable_probes={
            "fix-stop-dedupe": {STALE_MARK_WINDOW: ONE_TASK, WRITE_CONFLICT_WINDOW: ONE_TASK},
        },
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

# The seed's other finding, kept apart so that it never hides the lost resume: a stop is
# processed by more than one stop task ("more work ... stopping other data streams twice").
BROOKLIN_REDUNDANT = register(
    Scenario(
        name="brooklin-redundant-stop",
        summary="Brooklin's leader processes one stop in several stop tasks (seed 000, PR #974)",
        variants=brooklin.VARIANTS,
        expect_violation=frozenset({"buggy", "fix-zk-lookup", "fix-conditional-write"}),
        checkers=brooklin.WORK_CHECKERS,
        build=brooklin.build,
        config=brooklin.BrooklinConfig(),
        prove_config=BROOKLIN_PROVE,
        bounds=Bounds(max_time_ms=3_600_000, max_steps=100_000),
        declares_footprints=True,
        # Where the race window opens: an assignment hands a stop already given to a stop task
        # to another one (before fix-stop-dedupe's guard, which closes it).
        probes=(STOP_AGAIN_WINDOW,),
        default_examples=2_000,
        default_budget_s=60.0,
    )
)

STREAMS = register(
    Scenario(
        name="streams-checkpoint-resurrection",
        summary="Kafka Streams loses state-store records: a task reads .checkpoint before its lock, "
        "the cleaner deletes the directory, the lock re-creates it empty (KAFKA-8187, 2.1.1)",
        variants=kafka_streams.VARIANTS,
        expect_violation=frozenset({"buggy", "fix-checkpoint-under-lock", "fix-standby-running"}),
        checkers=kafka_streams.CHECKERS,
        build=kafka_streams.build,
        config=kafka_streams.StreamsConfig(),
        # Every schedule of: the first rebalance at 45 s or 2 min, standby 1_0 then moving to
        # thread B or to another instance; the second rebalance at 7 min, 25 min or 300 ms after
        # the cleaner's run at 20 min started, 1_0 then on thread B or A; a directory taking
        # 0.1 s or 5 s to delete; both listing orders; either thread handling each assignment
        # first; every order of events that tie.
        prove_config=kafka_streams.StreamsConfig(),
        bounds=Bounds(max_time_ms=4 * 3_600_000, max_steps=200_000),
        # Shared Python state is named with world.touch (models/kafka_streams/model.py).
        declares_footprints=True,
        # Where the race window opens (world.reach in the model): an ok that never got there is not.
        probes=(DELETE_WINDOW,),
        # The JIRA's first half (B handles the first assignment while A still holds the lock,
        # and goes RUNNING with its standby never initialized), then the window the code has:
        # the second rebalance starts while the cleaner's pass is deleting another directory;
        # B reads .checkpoint, the pass deletes 1_0, B's lock re-creates it empty.
        report_script={
            ("rebalance1.first", 0): 1,
            ("rebalance2.at", 0): 2,
            ("cleaner.delete_ms", 0): 1,
        },
        report_variant="buggy",
        real_backends={"spark": _on_spark("streams_resurrection")},
        default_examples=2_000,
        default_budget_s=60.0,
    )
)

COORDINATOR = register(
    Scenario(
        name="coordinator-async-append",
        summary="Kafka group coordinator: an append assumed synchronous completes asynchronously "
        "(PR #14705)",
        variants=group_coordinator.VARIANTS,
        expect_violation=frozenset({"sync-assumption"}),
        checkers=group_coordinator.CHECKERS,
        build=group_coordinator.build,
        config=group_coordinator.CoordinatorConfig(),
        # Every schedule of: 2 event threads, 2 partitions, 3 commits 3 ms or 0 ms apart, each
        # plain or transactional, verification 5 ms, replication 2 ms, every choice of the next
        # partition and every order of events that tie.
        prove_config=group_coordinator.CoordinatorConfig(threads=2, writes=3, replication_ms=(2,)),
        bounds=Bounds(max_time_ms=600_000, max_steps=200_000),
        # Partitions and the runtime are named with world.touch (models/group_coordinator).
        declares_footprints=True,
        # The event threads run one loop over one queue: a state and its image with the two
        # threads exchanged are one (the state cache's symmetry).
        symmetric=group_coordinator.processors,
        # Where the race window opens (world.reach in the model): an ok that never got there is not.
        probes=(VERIFY_WINDOW,),
        default_examples=2_000,
        default_budget_s=60.0,
    )
)

SAMZA = register(
    Scenario(
        name="samza-drain",
        summary="Samza drains a two-stage pipeline before an incompatible upgrade (SAMZA-2741, SEP-31)",
        variants=samza.VARIANTS,
        expect_violation=frozenset(samza.VARIANTS) - {"drain"},
        checkers=samza.CHECKERS,
        build=samza.build,
        config=samza.SamzaConfig(),
        # Every schedule of: 2 containers, 2 source and 2 intermediate partitions, one message
        # in flight per source partition plus the previous run's stale DrainMessages, the drain
        # requested at 5 s, each container's consumers starting at once or after 70 s (then its
        # monitor's 60 s poll finds the drain first, and with both late no data is on its way:
        # the schedules that do not reach the drain-with-data probe), container c0 restarted
        # mid-drain or not (1 s or 3 s in: its monitor then finds the notification before its
        # consumers start), every RunLoop choice and every order of events that tie. With free
        # start and drain times (README, "Samza drain"): --set 'stop_at_ms=[5000,30000,95000]'
        # --set 'container_start_ms=[0,20000]' --set 'restart=[false]'.
        prove_config=samza.SamzaConfig(
            source_interval_ms=20_000,
            stop_at_ms=(5_000,),
            container_start_ms=(0, 70_000),
            process_ms=700,
        ),
        bounds=Bounds(max_time_ms=3 * 3_600_000, max_steps=400_000),
        real_backends={"spark": _on_spark("samza_drain")},
        # Every shared object of the model is named with world.touch (models/samza/model.py's
        # docstring lists the resources), so the proof's reduction applies.
        declares_footprints=True,
        # Where the race windows open (world.reach in the model): an ok that never got there is
        # not. A drain begun with data in the shuffle; the aggregate's inputs drained with a pane
        # open; a commit due while a task drains (async commit must be off); a drain found
        # before consumers start.
        probes=(DRAIN_WINDOW, PANE_WINDOW, ASYNC_COMMIT_WINDOW, EARLY_DRAIN_WINDOW),
        unreachable_probes={
            "kill": {
                DRAIN_WINDOW: "the status quo stops containers abruptly: no task ever drains",
                PANE_WINDOW: "the status quo stops containers abruptly: no window drains",
                ASYNC_COMMIT_WINDOW: "the status quo stops containers abruptly: nothing drains",
                EARLY_DRAIN_WINDOW: "the status quo stops containers abruptly: nothing drains",
            }
        },
        default_examples=2_000,
        default_budget_s=60.0,
    )
)
