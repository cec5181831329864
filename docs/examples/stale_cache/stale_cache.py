"""A cache refilled with a stale value: a reader that missed races a writer's invalidation.

The race report: "after we changed a user's e-mail address, the old one kept
coming back from the cache until the entry expired". The service reads
through a memcached-style cache in front of its database: a reader that
misses reads the database and sets the cache; a writer updates the database,
then deletes the cache entry. When the reader's database read happens before
the write and its cache fill after the delete, the old value sits in the
cache with nothing left to remove it ("stale sets", Nishtala et al., Scaling
Memcache at Facebook, NSDI 2013, section 3.2.1, which fixes it with leases).

Variants: ``buggy`` (plain set), ``fix-add-only`` (fill with add, only if
absent: a plausible fix that does not work, the delete left the key absent),
``fix-lease`` (a miss hands out a lease token, a delete voids the key's
leases, a fill whose lease is void is dropped).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import raceproof
from raceproof import History, Scenario, Verdict, VersionedStore, World

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


class Cache:
    """memcached's get, set, add and delete, with the leases of the NSDI paper."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.valid_leases: dict[str, set[int]] = {}
        self.issued = 0

    def get(self, key: str) -> tuple[Any, int | None]:
        if key in self.values:
            return self.values[key], None
        self.issued += 1
        self.valid_leases.setdefault(key, set()).add(self.issued)
        return None, self.issued

    def fill(self, key: str, value: Any, variant: str, lease: int | None) -> bool:
        if variant == "fix-add-only" and key in self.values:
            return False
        if variant == "fix-lease" and lease not in self.valid_leases.get(key, set()):
            return False
        self.values[key] = value
        return True

    def delete(self, key: str) -> None:
        self.values.pop(key, None)
        self.valid_leases.pop(key, None)  # every outstanding lease on the key is void


Process = Generator[Any, Any, None]


def build(world: World, variant: str, config: CacheConfig) -> None:
    db = VersionedStore(world, name="db")
    db.create(KEY, "old@example.com")
    cache = Cache()
    done = [world.event() for _ in range(config.readers + 1)]
    world.spawn("writer", writer(world, db, cache, config, done[0]))
    for index in range(config.readers):
        name = f"reader{index}"
        world.spawn(name, reader(world, name, db, cache, variant, config, done[index + 1]))
    world.spawn("observer", observer(world, db, cache, done))


def writer(
    world: World, db: VersionedStore, cache: Cache, config: CacheConfig, done: Any
) -> Process:
    yield world.sleep(config.write_at_ms)
    db.set(KEY, "new@example.com")
    world.log("writer", "db.write", value="new@example.com")
    yield world.sleep(world.source.choose("writer.invalidate", config.invalidate_ms))
    cache.delete(KEY)
    world.log("writer", "cache.delete")
    done.succeed()


def reader(
    world: World, me: str, db: VersionedStore, cache: Cache, variant: str, config: CacheConfig,
    done: Any,
) -> Process:  # fmt: skip
    yield world.sleep(world.source.choose(f"{me}.start", config.reader_start_ms))
    value, lease = cache.get(KEY)
    if value is None:
        world.log(me, "cache.miss", lease=lease)
        value, _ = db.get(KEY)
        world.log(me, "db.read", value=value)
        yield world.sleep(world.source.choose(f"{me}.db-read", config.db_read_ms))
        filled = cache.fill(KEY, value, variant, lease)
        world.log(me, "cache.fill" if filled else "cache.fill-dropped", value=value)
    else:
        world.log(me, "cache.hit", value=value)
    done.succeed()


def observer(world: World, db: VersionedStore, cache: Cache, done: list[Any]) -> Process:
    yield world.all_of(done)
    world.log("observer", "final", db=db.get(KEY)[0], cache=cache.values.get(KEY))


@raceproof.checker
def cache_not_stale(history: History) -> Verdict | None:
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


@raceproof.register
def stale_cache() -> Scenario:
    return Scenario(
        name="stale-cache",
        summary="a read-through cache refilled with a stale value after the writer's delete",
        variants=VARIANTS,
        expect_violation=frozenset({"buggy", "fix-add-only"}),
        checkers=(cache_not_stale,),
        build=build,
        config=CacheConfig(),
        prove_config=CacheConfig(),
        # The report's story: reader0 misses at 0 ms and its database round trip takes 30 ms.
        report_script={("reader0.db-read", 0): 1},
        report_variant="buggy",
        default_examples=300,
        default_budget_s=30.0,
    )
