"""A zombie controller, as a user would write it: session-bound clients and a feeder.

Two controllers contend for ``/controller`` (an ephemeral znode) through
``ZkClient`` sessions. The first is elected, then may be paused (a GC pause
longer than its session timeout): the server expires its session, the
second takes over with a newer epoch. A feeder reads each controller's state
(tracked) and forwards a command from every controller that believes it is
active, stamped with its epoch. The brokers keep the highest epoch they saw.
``buggy``: they apply every command (the zombie's too); ``fix``: they reject
an epoch older than one they saw. The model has no ``touch`` and no
``declare_footprints``: its shared state is tracked, the rest is the
kernel's primitives, so its proof's size shows how precise the session
client's footprints are (issue 24, item 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raceproof.sim import (
    Bounds,
    ChoiceSource,
    History,
    RunOutcome,
    SessionEvent,
    VersionedStore,
    WatchEvent,
    World,
    ZkClient,
    execute,
    violated,
)
from raceproof.sim.checkers import CheckerResult, checker
from raceproof.sim.store import NodeExists


@dataclass(frozen=True)
class ZombieConfig:
    session_timeout_ms: int = 100
    pause_ms: tuple[int, ...] = (0, 300)
    notice_ms: tuple[int, ...] = (0, 10)
    poll_ms: int = 50
    polls: int = 4
    feed_ms: int = 150
    feeds: int = 3
    # Kafka's controller shape: a standby watches /controller and runs for election when
    # the zombie's ephemeral node dies (a watch delivery), instead of polling for it.
    watch: bool = False
    controllers: int = 2


def build(world: World, variant: str, config: ZombieConfig) -> None:
    # one function: the actors below close over this run's store and shared records
    zk = VersionedStore(world)
    zk.create("/epoch", None)
    names = [f"c{n + 1}" for n in range(config.controllers)]
    state = {name: world.shared.record(name, epoch=0, active=False) for name in names}
    broker = world.shared.record("broker", epoch=0, applied=0)

    def controller(me: str, start_ms: int) -> Any:
        client = ZkClient(
            world, zk, me, session_timeout_ms=config.session_timeout_ms, notice_ms=config.notice_ms
        )

        def on_session(event: SessionEvent) -> None:
            if event.state == "expired":
                state[me].active = False  # steps down when it hears of the expiry

        client.add_listener(on_session)
        yield world.sleep(start_ms)
        if config.watch:
            yield from by_watch(me, client)
            return
        for _ in range(config.polls):
            if not client.exists("/controller"):
                break
            yield world.sleep(config.poll_ms)
        else:
            return
        client.create("/controller", me, ephemeral=True)
        state[me].epoch, state[me].active = client.set("/epoch", me), True
        world.log(me, "elected", epoch=state[me].epoch)
        pause_ms = world.source.choose(f"{me}.pause", config.pause_ms) if me == "c1" else 0
        if pause_ms:
            client.pause(pause_ms)
            yield world.sleep(pause_ms)

    def elect(me: str, client: ZkClient) -> bool:
        try:
            client.create("/controller", me, ephemeral=True)
        except NodeExists:
            return False
        state[me].epoch, state[me].active = client.set("/epoch", me), True
        world.log(me, "elected", epoch=state[me].epoch)
        return True

    def by_watch(me: str, client: ZkClient) -> Any:
        """Run for election now and whenever /controller is deleted (a watch delivery)."""
        wake = world.event()

        def on_change(event: WatchEvent) -> None:
            if event.kind == "deleted" and not wake.triggered:
                wake.succeed()

        while not client.exists("/controller", watch=on_change):
            if elect(me, client):
                break
        else:
            yield wake
            if not state[me].active and client.connected:
                elect(me, client)
            return
        pause_ms = world.source.choose(f"{me}.pause", config.pause_ms) if me == "c1" else 0
        if pause_ms:
            client.pause(pause_ms)
            yield world.sleep(pause_ms)

    def feeder() -> Any:
        for _ in range(config.feeds):
            yield world.sleep(config.feed_ms)
            for name in names:
                if not state[name].active:
                    continue
                epoch = state[name].epoch
                accepted = variant == "buggy" or epoch >= broker.epoch
                if accepted:
                    broker.epoch, broker.applied = max(epoch, broker.epoch), broker.applied + 1
                world.log("broker", "command", by=name, epoch=epoch, accepted=accepted)

    for n, name in enumerate(names):
        world.spawn(name, controller(name, 10 * n))
    world.spawn("feeder", feeder())


@checker
def no_stale_command(history: History) -> CheckerResult | None:
    newest = 0
    for op in history.of_kind("command"):
        if op.get("accepted"):
            if op.get("epoch") < newest:
                return violated(
                    "no-stale-command", op.index, f"{op.get('by')} applied a stale epoch"
                )
            newest = op.get("epoch")
    return None


def runner(variant: str, config: ZombieConfig = ZombieConfig()) -> Any:
    def run(source: ChoiceSource) -> RunOutcome:
        return execute(
            lambda world: build(world, variant, config),
            source,
            [no_stale_command],
            Bounds(max_time_ms=100_000, max_steps=5_000),
        )

    return run
