"""A lock held across a session expiry: the paused holder writes after its lease is gone.

The race report (Kleppmann, "How to do distributed locking", 2016; the Apache
Curator tech note 10): a worker holds a ZooKeeper lock (an ephemeral znode),
checks that its session is fine, and is paused (a long GC) before it writes
to the storage service. Meanwhile the server expires its session, the lock
znode goes, a second worker takes the lock and writes. The first worker
wakes up and writes too, over the newer data: checking the lock before the
write does not help, since the pause falls between the check and the write.

Variants: ``buggy`` (the storage accepts every write) and ``fix-fencing``
(each lock holder gets a fencing token, the lock epoch's new version; the
storage rejects a write whose token is older than one it has seen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import raceproof
from raceproof import CheckerResult, History, Scenario, VersionedStore, World, ZkClient


@dataclass(frozen=True)
class LeaseConfig:
    session_timeout_ms: int = 10_000
    gc_pause_ms: tuple[int, ...] = (0, 30_000)  # between the holder's check and its write
    poll_ms: int = 4_000  # how often the second worker looks at the lock
    polls: int = 5


def build(world: World, variant: str, config: LeaseConfig) -> None:
    zk = VersionedStore(world)
    zk.create("/epoch", None)
    storage = world.shared.record("storage", value=None, max_token=0)  # tracked shared state

    def write(me: str, token: int) -> None:
        accepted = variant != "fix-fencing" or token >= storage.max_token
        if accepted:
            storage.value, storage.max_token = me, max(token, storage.max_token)
        world.log(me, "storage.write", token=token, accepted=accepted)

    def worker(me: str, start_ms: int) -> Any:
        client = ZkClient(world, zk, me, session_timeout_ms=config.session_timeout_ms)
        yield world.sleep(start_ms)
        for _ in range(config.polls):
            if not client.exists("/lock"):
                break
            yield world.sleep(config.poll_ms)
        else:
            return  # never got the lock
        client.create("/lock", me, ephemeral=True)
        token = client.set("/epoch", me)  # the fencing token: the epoch's new version
        world.log(me, "lock.acquired", token=token)
        if not client.connected:
            return
        pause_ms = world.source.choose(f"{me}.gc-pause", config.gc_pause_ms)
        if pause_ms:
            client.pause(pause_ms)  # no heartbeats: the server may expire the session
            yield world.sleep(pause_ms)
        write(me, token)

    world.spawn("worker-a", worker("worker-a", 0))
    world.spawn("worker-b", worker("worker-b", 1_000))


@raceproof.checker
def writes_in_lock_order(history: History) -> CheckerResult | None:
    """An accepted write never carries an older fencing token than one accepted before it."""
    newest = 0
    for op in history.of_kind("storage.write"):
        if not op.get("accepted"):
            continue
        if op.get("token") < newest:
            return raceproof.violated(
                f"{op.actor} wrote with token {op.get('token')} at {op.time_ms} ms after a write "
                f"with token {newest}: its lock had expired and another holder had written",
                op.index,
            )
        newest = op.get("token")
    return None


raceproof.register(
    Scenario(
        name="fencing-lease",
        summary="a lock holder paused past its session expiry writes over the next holder",
        variants={"buggy": "storage accepts every write", "fix-fencing": "storage checks tokens"},
        expect_violation=frozenset({"buggy"}),
        checkers=(writes_in_lock_order,),
        build=build,
        config=LeaseConfig(),
        default_examples=300,
    )
)
