"""Every pair of operations, generated (issue 44 item 2), and the generator's locality claim (issue 45 item 1).

``property_tests/soundness_ops.py`` is the table of every public operation of
every kernel primitive and tracked container; ``soundness_pairs.py`` places
each pair of operations at one instant on related objects and
``soundness_coverage.py`` judges them by every claim of the soundness
generator (``make soundness``: all of them, with the coverage table). Here:

- the table holds every public operation (found by introspection) and nothing
  else, every class ``import raceproof`` exports is either in it or named as no
  primitive, the relations the issue names are drawn, and a slice of the pairs
  is judged by every claim;
- issue 44's four shapes, found from named seeds, both ways (``SEEDS``): with
  the fix reverted (a slip planted here) the generator's focused hunt
  (``soundness_coverage.hunt``) finds the shape at its seed and at no earlier
  one, with the fix the pair at that seed is silent. On main before the fixes
  (d361861, with the pair placement of 0a9f34c) the hunts found 1 at seed 6, 2 at
  184, 3 at 2 and 4 at 0; with each fix reverted on today's kernel:
  1. equal keys (``1``, ``1.0``, ``True``) named by ``repr``: seed 6 (a set's
     ``add(True)`` against ``remove(1)``); fix 7bb11b4 (``cells.key_part``);
  2. a recursive watch against a create below it: seed 184 (the store's
     ``remove_watch`` of a recursive watch on ``/a`` against
     ``ZkClient.ensure_path("/a/b/c")``); fix e84bcf7 (a write reads every
     ancestor's persistent watches);
  3. a session's end against its ephemeral's parent's child list: seed 0
     (``ZkClient.expire`` against ``ZkClient.children("/a")``; seed 2's
     ``expire_session`` against the store's ``children`` shows it too); fix
     e84bcf7 (the removal writes the parent's child list);
  4. a timer's cancel or re-arm at its own firing: seed 0 (``Debounce.cancel``
     against its own firing, armed after the actors start); fix 8ecaa06
     (``World.unschedule`` writes the step it removed);
- the locality claim (``soundness_locality.py``): random models of nodes making
  remote calls (``ZkClient.request``, ``ZkClient.retrying``, ``remote.call``)
  with one node fault; on the kernel (effects at the receiver, a182063) no call
  is delayed and every (fault, call) combination is exercised; with the slip
  ``applied_by_the_caller`` (each call applied in the caller's step after the
  latency, as before a182063) the claim fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

import raceproof
from property_tests.soundness_coverage import CLAIMS, SHAPES, cover, drawn, hunt, judge
from property_tests.soundness_locality import (
    COMBINATIONS,
    locality_cover,
    locality_problems,
    locality_spec,
)
from property_tests.soundness_ops import CLASSES, FIRING, PAIRS, TABLE, public_operations
from property_tests.soundness_pairs import place
from property_tests.soundness_slips import mutant
from property_tests.soundness_walks import patched
from raceproof.sim import ReplaySource, World, ZkClient, cells, shared
from raceproof.sim import remote as remote_calls
from raceproof.sim.store import VersionedStore

# What ``import raceproof`` exports that is no primitive a step operates on, and why.
NOT_OPERATED = {
    "data and results": (
        "Bounds Budget CheckStatus CheckerResult Choice Counterexample FaultPlan History Op "
        "ProofReport RunOutcome SearchReport SessionEvent TxOp WatchEvent"
    ),
    "errors": (
        "BadArguments BadInput BadVersion BoundHit ConnectionLoss CounterexampleError "
        "DiskWriteError FsError Nondeterministic NoChildrenForEphemerals NoNode NodeExists NotEmpty "
        "QueueEmpty RegistrationError "
        "ReplayMisaligned ScenarioLoadError SessionExpired StoreError TransactionFailed"
    ),
    "choice sources (the walk's, not a model's)": (
        "ChoiceSource HypothesisSource KeyedReplaySource PCTSource RandomSource ReplaySource "
        "SplitMix64 SwarmSource"
    ),
    # The runtime port's protocols: ``SimRuntime`` implements them (its queue and executor
    # are ``EventQueue`` and ``Executor``); the World's own operations are the runtime's.
    "protocols and the kernel": "ExecutorPort QueuePort Runtime World Scenario",
}


def test_the_table_holds_every_public_operation_and_no_other() -> None:
    """A new public method of a primitive fails here until the table draws it."""
    for name, cls in CLASSES.items():
        public = {f"{name}.{op}" for op in public_operations(cls)}
        tabled = {op for op in TABLE if op.split(".", 1)[0] == name and FIRING not in op}
        assert public - tabled == set(), (
            f"{name}: operations missing from the table: add each to TABLE in "
            "property_tests/soundness_ops.py or soundness_ops_zk.py (one line: what it aims "
            "at and how a step calls it)"
        )
        assert tabled - public == set(), f"{name}: the table names what is no public operation"


def test_every_class_of_the_api_is_in_the_table_or_named_as_no_primitive() -> None:
    exported = {n for n in raceproof.__all__ if isinstance(getattr(raceproof, n), type)}
    named = {n for names in NOT_OPERATED.values() for n in names.split()}
    assert exported - set(CLASSES) - named == set(), "a new class: table it or say why not"
    assert named & set(CLASSES) == set()
    world = World(ReplaySource([], strict=False))
    made = (world.shared.dict("d"), world.shared.set("s"), world.shared.counter("c"))
    assert {type(m).__name__ for m in made} | {"Record"} <= set(CLASSES)


def test_the_introspection_sees_a_new_method() -> None:
    """The check above can fail: a subclass with one more method has one more operation."""

    class Grown(CLASSES["Lock"]):  # type: ignore[misc, valid-type]
        def steal(self, owner: str) -> None: ...

    assert set(public_operations(Grown)) - set(public_operations(CLASSES["Lock"])) == {"steal"}


def test_each_relation_the_issue_names_is_drawn() -> None:
    relations = {place(pair, seed).relation for seed, pair in enumerate(PAIRS)}
    for wanted in (
        "same key",
        "equal keys",
        "ancestor",
        "descendant",
        "session and its ephemeral",
        "a timer and its firing",
        "a node and its client",
        "a lock and its waiters",
    ):
        assert wanted in relations


def test_each_shapes_hunt_draws_only_its_pairs() -> None:
    for shape, focus in SHAPES.items():
        for seed in range(20):
            spec = drawn(seed, focus)
            assert focus((spec.group, *spec.ops)) or focus((spec.group, *spec.ops[::-1])), shape


def test_a_slice_of_the_pairs_holds_every_claim() -> None:
    """Every 150th pair of the table, judged by every claim, as make soundness does."""
    sliced = PAIRS[::150]
    coverage = cover(sliced)
    assert coverage.problems == []
    assert coverage.too_big == []
    assert all(len(coverage.judged[claim]) == len(sliced) for claim in CLAIMS)
    assert coverage.complete()


# -- issue 44's four shapes ---------------------------------------------------------------
# The first seed at which the hunt finds each shape with its fix reverted (the slips below).
SEEDS = {
    "1 equal keys": 6,
    "2 recursive watch vs a descendant's create": 184,
    "3 session end vs the parent's child list": 0,
    "4 timer cancel or re-arm vs its own firing": 0,
}


def _by_repr(key: object) -> str:
    return f"[{key!r}]"


@contextlib.contextmanager
def keys_by_repr() -> Iterator[None]:
    """Shape 1's slip: a key named by its ``repr`` (``1``, ``1.0`` and ``True`` three resources)."""
    with patched(shared, "key_part", _by_repr), patched(cells, "key_part", _by_repr):
        yield


def _disables(self: World, event: object, resource: str | None) -> None:
    if resource is not None:
        self.touch(resource)


@contextlib.contextmanager
def cancel_records_nothing() -> Iterator[None]:
    """Shape 4's slip: a cancel records nothing of the step it removed (as before 8ecaa06)."""
    with patched(World, "_disables", _disables):
        yield


def ancestors_watches_unread() -> contextlib.AbstractContextManager[None]:
    """Shape 2's slip: a write reads its own path's persistent watches, not its ancestors'."""
    return mutant(
        VersionedStore,
        "_persistent_for",
        "for watcher, recursive in self.persistent_watches.get(at) or ():",
        "for watcher, recursive in (self.persistent_watches.get(at) if at == path "
        "else self.persistent_watches.peek().get(at)) or ():",
    )


def child_list_unwritten() -> contextlib.AbstractContextManager[None]:
    """Shape 3's slip: a removal changes its parent's child list without recording it."""
    return mutant(
        VersionedStore,
        "_remove",
        "self.child_lists[parent] = tuple(n for n in self.child_lists[parent] if n != name)",
        "self.child_lists._data[parent] = "
        "tuple(n for n in self.child_lists._data[parent] if n != name)",
    )


FIXED: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "1 equal keys": keys_by_repr,
    "2 recursive watch vs a descendant's create": ancestors_watches_unread,
    "3 session end vs the parent's child list": child_list_unwritten,
    "4 timer cancel or re-arm vs its own firing": cancel_records_nothing,
}


@pytest.mark.parametrize("shape", sorted(FIXED))
def test_the_generator_finds_the_shape_at_its_seed_with_the_fix_reverted(shape: str) -> None:
    seed = SEEDS[shape]
    with FIXED[shape]():
        found = hunt(shape, seed + 1)
    assert found is not None and found[0] == seed


@pytest.mark.parametrize("shape", sorted(FIXED))
def test_the_pair_at_the_seed_is_silent_with_the_fix(shape: str) -> None:
    spec = drawn(SEEDS[shape], SHAPES[shape])
    assert judge(spec, ("reduction",)) == {"reduction": []}


@pytest.mark.parametrize("shape", sorted(SEEDS))
def test_the_seed_draws_a_pair_of_the_shape(shape: str) -> None:
    spec = drawn(SEEDS[shape], SHAPES[shape])
    assert SHAPES[shape]((spec.group, *spec.ops))


# -- issue 45: the locality claim -----------------------------------------------------------
LOCALITY_MODELS = 60  # about 0.1 s of CPU


def _request(self: ZkClient, operation: Callable[[], Any]) -> Generator[Any, Any, Any]:
    one_way = self.world.source.choose(f"{self.name}.latency", self.latency_ms)
    yield self.world.sleep(one_way)
    result = operation()  # in the caller's step: held while the caller's node is paused
    yield self.world.sleep(one_way)
    return result


def _retrying(
    self: ZkClient, round_trip_ms: int, operation: Callable[[], Any] | None = None
) -> Generator[Any, Any, Any]:
    yield self.world.sleep(round_trip_ms)
    return None if operation is None else operation()


def _call(world: Any, operation: Callable[[], Any], *, one_way_ms: int, **_: Any) -> Any:
    yield world.sleep(one_way_ms)
    result = operation()
    yield world.sleep(one_way_ms)
    return result


@contextlib.contextmanager
def applied_by_the_caller() -> Iterator[None]:
    """The slip: every remote call applies its operation in the caller's own step."""
    with (
        patched(ZkClient, "request", _request),
        patched(ZkClient, "retrying", _retrying),
        patched(remote_calls, "call", _call),
    ):
        yield


def test_no_fault_of_a_node_delays_an_effect_elsewhere() -> None:
    exercised, problems = locality_cover(LOCALITY_MODELS)
    assert problems == []
    assert exercised == set(COMBINATIONS)


def test_the_claim_fails_when_the_caller_applies_its_own_remote_calls() -> None:
    with applied_by_the_caller():
        _, problems = locality_cover(LOCALITY_MODELS)
    assert problems, "the caller-side apply went unnoticed"
    assert any("its own node's pause" in p for p in problems)
    first = next(s for s in range(LOCALITY_MODELS) if "pause" in str(locality_spec(s)))
    assert locality_problems(locality_spec(first)).problems == []  # silent without the slip
