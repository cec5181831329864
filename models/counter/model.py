"""Clients increment a counter in the versioned store: the smallest race there is.

It exists to test the kernel end to end: the ``buggy`` variant reads, waits
for the round trip, and writes back unconditionally, so an increment is lost
when another client's write lands in between; ``fix-cas`` writes with the
version it read and retries on BadVersion, which closes the window. Choice 0
runs the clients one after another, so the race needs at least one deviation
(a slow round trip, or a tie broken the other way).
"""

from __future__ import annotations

from dataclasses import dataclass

from simpy.events import Event

from raceproof.sim import (
    BadVersion,
    CheckerResult,
    History,
    VersionedStore,
    World,
    checker,
    ok,
    require,
    unknown,
    violated,
)
from raceproof.sim.past import Past
from raceproof.sim.world import ProcessGenerator

VARIANTS = {
    "buggy": "read, then an unconditional write: increments can be lost",
    "fix-cas": "write with the version read; on BadVersion read again and retry",
}
COUNTER = "/counter"
WINDOW = "another client wrote between a read and its write"  # the race window's probe


@dataclass(frozen=True)
class CounterConfig:
    clients: int = 2
    increments: int = 2
    start_gap_ms: int = 5
    rpc_ms: tuple[int, ...] = (1, 20)
    think_ms: int = 10

    def __post_init__(self) -> None:
        require(self.clients >= 1, "clients must be >= 1: need at least one client")
        require(self.increments >= 1, "increments must be >= 1: need at least one increment")
        require(self.rpc_ms and all(d >= 0 for d in self.rpc_ms), "rpc_ms needs delays >= 0")


def clients(config: CounterConfig) -> list[str]:
    """The clients' names: interchangeable once started (``Scenario(symmetric=...)``)."""
    return [f"client{index}" for index in range(config.clients)]


def build(world: World, variant: str, config: CounterConfig) -> None:
    require(variant in VARIANTS, f"unknown variant {variant}")
    store = VersionedStore(world)
    store.create(COUNTER, 0)
    finished = [world.event() for _ in range(config.clients)]
    for index, name in enumerate(clients(config)):
        world.spawn(name, _client(world, store, variant, config, index, finished[index]))
    world.spawn("observer", _observer(world, store, finished))


def _client(
    world: World,
    store: VersionedStore,
    variant: str,
    config: CounterConfig,
    index: int,
    done: Event,
) -> ProcessGenerator:
    me = f"client{index}"
    yield world.sleep(index * config.start_gap_ms)
    # Started: from here on the clients differ only by their names (the scenario declares them
    # symmetric), so none keeps its index (a process's state is what its frame holds).
    del index
    for _ in range(config.increments):
        while True:
            value, version = store.get(COUNTER)
            world.log(me, "read", value=value, version=version)
            yield world.sleep(world.source.choose(f"rpc.{me}", config.rpc_ms))
            if store.nodes[COUNTER].version != version:
                world.reach(WINDOW)
            if variant == "buggy":
                new_version = store.set(COUNTER, value + 1)
            else:
                try:
                    new_version = store.set(COUNTER, value + 1, version)
                except BadVersion:
                    world.log(me, "conflict", expected_version=version)
                    continue
            world.log(me, "write", value=value + 1, version=new_version)
            break
        world.log(me, "ack")
        yield world.sleep(config.think_ms)
    done.succeed()


def _observer(world: World, store: VersionedStore, finished: list[Event]) -> ProcessGenerator:
    yield world.all_of(finished)
    value, _ = store.get(COUNTER)
    world.log("observer", "final", value=value)


@checker("final-equals-acks")
def final_equals_acks(history: History) -> CheckerResult:
    """The counter's final value equals the number of acknowledged increments."""
    finals = history.of_kind("final")
    if not finals:
        return unknown("final-equals-acks", "the run ended before the final read")
    acks = len(history.of_kind("ack"))
    final = finals[-1]
    if final.get("value") != acks:
        return violated(
            "final-equals-acks",
            final.index,
            f"{acks} increments were acknowledged but the counter reads {final.get('value')}: "
            f"{acks - int(final.get('value'))} lost",
        )
    return ok("final-equals-acks")


def acks_and_final(history: History) -> tuple[int, object]:
    """What ``final-equals-acks`` reads of the past: the acknowledgements and the final value.

    A fold over the ops (an ack adds one, a final replaces the value), and the checker's
    status is a function of it: the state cache's abstraction of the history (``PAST``).
    """
    finals = history.of_kind("final")
    return len(history.of_kind("ack")), finals[-1].get("value") if finals else None


# The clients sleep for durations only and hold no time: states at different times merge.
PAST = Past(acks_and_final, absolute_time=False)
