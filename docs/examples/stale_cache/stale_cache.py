"""A cache refilled with a stale value: a reader that missed races a writer's invalidation.

The race report: "after we changed a user's e-mail address, the old one kept
coming back from the cache". A reader that misses reads the database and
sets the cache; a writer updates the database, then deletes the cache entry.
A database read before the write and a fill after the delete leave the old
value cached for good ("stale sets", Scaling Memcache at Facebook, NSDI 2013,
section 3.2.1, fixed there with leases). Variants: ``buggy`` (set),
``fix-add-only`` (add: set only if absent, which does not help) and
``fix-lease`` (a miss hands out a lease, a delete voids it, a void fill is dropped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import raceproof
from raceproof import CheckerResult, History, Scenario, VersionedStore, World

VARIANTS = {
    "buggy": "on a miss, read the database, then set the cache",
    "fix-add-only": "on a miss, read the database, then add (set only if absent)",
    "fix-lease": "a miss gets a lease; the writer's delete voids it; a void lease's fill is dropped",
}
KEY = "/email"  # the user's address, in the database and in the cache


@dataclass(frozen=True)
class CacheConfig:
    readers: int = 2
    reader_start_ms: tuple[int, ...] = (0, 10)  # when each reader looks the key up
    db_read_ms: tuple[int, ...] = (1, 30)  # the reader's round trip to the database
    write_at_ms: int = 5  # when the writer changes the address
    invalidate_ms: tuple[int, ...] = (1, 20)  # from the database write to the cache delete


def build(world: World, variant: str, config: CacheConfig) -> None:
    db = VersionedStore(world, name="db")
    db.create(KEY, "old@example.com")
    # Shared state the actors see, tracked: every read and write is recorded for the proof.
    cache = world.shared.dict("cache")  # key -> value
    lease = world.shared.record("lease", issued=0, valid=frozenset())  # memcached's leases

    def writer() -> Any:
        yield world.sleep(config.write_at_ms)
        db.set(KEY, "new@example.com")
        world.log("writer", "db.write", value="new@example.com")
        yield world.sleep(world.source.choose("writer.invalidate", config.invalidate_ms))
        cache.pop(KEY, None)
        lease.valid = frozenset()  # every outstanding lease on the key is void
        world.log("writer", "cache.delete")

    def reader(me: str) -> Any:
        yield world.sleep(world.source.choose(f"{me}.start", config.reader_start_ms))
        if KEY in cache:
            world.log(me, "cache.hit", value=cache[KEY])
            return
        lease.issued += 1
        token, lease.valid = lease.issued, lease.valid | {lease.issued}
        world.log(me, "cache.miss", lease=token)
        value, _ = db.get(KEY)
        world.log(me, "db.read", value=value)
        yield world.sleep(world.source.choose(f"{me}.db-read", config.db_read_ms))
        dropped = (variant == "fix-add-only" and KEY in cache) or (
            variant == "fix-lease" and token not in lease.valid
        )
        if not dropped:
            cache[KEY] = value
        world.log(me, "cache.fill-dropped" if dropped else "cache.fill", value=value)

    done = [world.event() for _ in range(config.readers + 1)]

    def actor(body: Any, finished: Any) -> Any:
        yield from body
        finished.succeed()  # the observer waits for these events, not for the processes

    world.spawn("writer", actor(writer(), done[0]))
    for i in range(config.readers):
        world.spawn(f"reader{i}", actor(reader(f"reader{i}"), done[i + 1]))

    def observer() -> Any:
        yield world.all_of(done)
        world.log("observer", "final", db=db.get(KEY)[0], cache=cache.get(KEY))

    world.spawn("observer", observer())


@raceproof.checker
def cache_not_stale(history: History) -> CheckerResult | None:
    """Once everyone is done, the cache holds the database's value or nothing."""
    finals = history.of_kind("final")
    if not finals:
        return raceproof.unknown("the run ended before the final read")
    final = finals[-1]
    if final.get("cache") in (None, final.get("db")):
        return None  # ok
    fill = [op for op in history.of_kind("cache.fill") if op.get("value") == final.get("cache")][-1]
    return raceproof.violated(
        f"the cache serves {final.get('cache')} for good, the database holds {final.get('db')}: "
        f"{fill.actor} filled it at {fill.time_ms} ms with what it read before the write",
        fill.index,
    )


raceproof.register(
    Scenario(
        name="stale-cache",
        summary="a read-through cache refilled with a stale value after the writer's delete",
        variants=VARIANTS,
        expect_violation=frozenset({"buggy", "fix-add-only"}),
        checkers=(cache_not_stale,),
        build=build,
        config=CacheConfig(),
        # The report's story: reader0 misses at 0 ms and its database round trip takes 30 ms.
        report_script={("reader0.db-read", 0): 1},
        report_variant="buggy",
        default_examples=300,
        default_budget_s=30.0,
    )
)
