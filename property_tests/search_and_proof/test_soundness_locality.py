"""The generator's locality claim holds, and fails on a kernel that applies a remote call in the caller's step (issue 45 item 1).

``property_tests/soundness_locality.py`` draws random models of nodes making
remote calls (``ZkClient.request``, ``ZkClient.retrying``, ``remote.call``) with
one node fault (a pause, a crash, a clock jump) and compares each call's apply
time with and without the fault. Both ways: on the kernel (the effect at the
receiver, a182063) no call is delayed over the seeds drawn, and every (fault,
call) combination is exercised; with the slip ``applied_by_the_caller`` (each
call applies its operation in the caller's step after the latency, as before
a182063), the claim fails, at the first seeds drawn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from typing import Any

from property_tests.soundness_locality import (
    COMBINATIONS,
    locality_cover,
    locality_problems,
    locality_spec,
)
from property_tests.soundness_walks import patched
from raceproof.sim import ZkClient
from raceproof.sim import remote as remote_calls

SEEDS = 60  # about 0.1 s of CPU


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
    exercised, problems = locality_cover(SEEDS)
    assert problems == []
    assert exercised == set(COMBINATIONS)


def test_the_claim_fails_when_the_caller_applies_its_own_remote_calls() -> None:
    with applied_by_the_caller():
        _, problems = locality_cover(SEEDS)
    assert problems, "the caller-side apply went unnoticed"
    assert any("its own node's pause" in p for p in problems)
    first = next(s for s in range(SEEDS) if "pause" in str(locality_spec(s)))
    assert locality_problems(locality_spec(first)).problems == []  # silent without the slip
