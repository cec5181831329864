"""Every pair of operations, generated: the operation table is the API, and a slice of its pairs holds (issue 44 item 2).

``property_tests/soundness_ops.py`` is the table of every public operation of
every kernel primitive and tracked container; ``soundness_pairs.py`` places
each pair of operations at one instant on related objects and
``soundness_coverage.py`` judges them by every claim of the soundness
generator (``make soundness``: all of them, with the coverage table). Here:
the table holds every public operation (found by introspection) and nothing
else, every class ``import raceproof`` exports is either in it or named as
no primitive, the relations are drawn, and a slice of the pairs is judged by
every claim.
"""

from __future__ import annotations

import raceproof
from property_tests.soundness_coverage import CLAIMS, SHAPES, cover, drawn
from property_tests.soundness_ops import CLASSES, FIRING, PAIRS, TABLE, public_operations
from property_tests.soundness_pairs import place
from raceproof.sim import ReplaySource, World

# What ``import raceproof`` exports that is no primitive a step operates on, and why.
NOT_OPERATED = {
    "data and results": (
        "Bounds Budget CheckStatus CheckerResult Choice Counterexample FaultPlan History Op "
        "ProofReport RunOutcome SearchReport SessionEvent TxOp WatchEvent"
    ),
    "errors": (
        "BadArguments BadInput BadVersion BoundHit ConnectionLoss CounterexampleError "
        "DiskWriteError FsError Nondeterministic NoNode NodeExists NotEmpty QueueEmpty RegistrationError "
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
