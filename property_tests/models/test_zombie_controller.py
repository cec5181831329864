"""Issue 24 item 3: ties that commute on a session-bound ZooKeeper client.

The zombie-controller model (``property_tests/zombie_model.py``) in the
shape the issue describes: controllers on ``ZkClient`` sessions, a standby
that runs for election from a watch delivery when the zombie's ephemeral
``/controller`` dies, a GC pause past the session timeout, expiry notices
drawn late, and a feeder reading the controllers' (tracked) state at the
same instants. No ``touch``, no ``declare_footprints``.

Measured on this kernel (``prove``, schedules of the fix): 2 controllers,
85 reduced against 769 in the full walk; 3 controllers, 169 reduced against
6,913 full (127 and 253 before a timer's firing had a step key), and 2,401 when the client's expiry timer, notices and watch
deliveries touch everything (``test_precise_client_footprints_...``), which is
what precise footprints for them saves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from property_tests.zombie_model import ZombieConfig, runner
from raceproof.sim import Budget, ChoiceSource, RunOutcome, prove, session
from raceproof.sim.state_cache import ending

TWO = ZombieConfig(pause_ms=(0, 200, 300), notice_ms=(0, 50), feed_ms=50, feeds=8, watch=True)
THREE = ZombieConfig(
    pause_ms=(0, 200, 300), notice_ms=(0, 50), feed_ms=50, feeds=8, watch=True, controllers=3
)


def _endings(variant: str, config: ZombieConfig, reduction: bool) -> tuple[set[object], Any]:
    seen: set[object] = set()
    run = runner(variant, config)

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        seen.add(ending(outcome, 0))
        return outcome

    return seen, prove(recording, budget=Budget(examples=20_000), reduction=reduction)


@pytest.mark.parametrize("config", [TWO, THREE], ids=["two", "three"])
def test_the_zombie_is_found_and_its_fix_proven_under_1500_schedules(config: ZombieConfig) -> None:
    assert prove(runner("buggy", config), budget=Budget(examples=1_000)).verdict == "violated"
    fixed = prove(runner("fix", config), budget=Budget(examples=20_000))
    assert fixed.complete and fixed.verdict == "ok"
    assert fixed.schedules < 1_500


def test_the_reduced_walk_reaches_the_full_walks_final_states() -> None:
    reduced, small = _endings("fix", TWO, reduction=True)
    full, large = _endings("fix", TWO, reduction=False)
    assert small.complete and large.complete
    assert reduced == full
    assert small.schedules < large.schedules


@pytest.mark.parametrize("config", [TWO, THREE], ids=["two", "three"])
def test_the_zombie_models_footprints_pass_the_check_with_every_pair_followed(
    config: ZombieConfig,
) -> None:
    """The standby's step that a watch delivery wakes is not a step the delivery can be
    delayed past (``StepRecord.enabled_by``): no such order is tried, none is left unverified."""
    report = prove(runner("fix", config), budget=Budget(examples=20_000), check_footprints=True)
    assert report.complete and report.verdict == "ok"
    assert report.footprints_checked and report.footprints_unverified == 0


@contextlib.contextmanager
def client_touching_everything() -> Iterator[None]:
    """The session client before precise footprints: its timer, notices, deliveries touch all."""
    tell, expires = session.ZkClient._tell, session.ZkClient._server_expires
    deliver = session._SessionWatcher.__call__

    def coarse_tell(self: session.ZkClient, *args: Any) -> Any:
        inner = tell(self, *args)
        value = yield next(inner)  # the notice delay
        self.world.touch_all()
        try:
            while True:
                value = yield inner.send(value)
        except StopIteration:
            return

    def coarse_expires(self: session.ZkClient) -> None:
        self.world.touch_all()
        expires(self)

    def coarse_deliver(self: session._SessionWatcher, event: Any) -> None:
        self.client.world.touch_all()
        deliver(self, event)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(session.ZkClient, "_tell", coarse_tell)
        patch.setattr(session.ZkClient, "_server_expires", coarse_expires)
        patch.setattr(session._SessionWatcher, "__call__", coarse_deliver)
        yield


def test_precise_client_footprints_make_the_proof_smaller_than_touching_everything() -> None:
    precise = prove(runner("fix", THREE), budget=Budget(examples=20_000))
    with client_touching_everything():
        coarse = prove(runner("fix", THREE), budget=Budget(examples=20_000))
    assert precise.complete and coarse.complete and precise.verdict == coarse.verdict == "ok"
    assert precise.schedules < 1_000 < coarse.schedules  # 65 and 1,441 (0971966)
