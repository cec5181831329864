"""What each primitive's footprint records, pinned one by one; the state cache's two blind spots.

The reduction trusts these entries: a write recorded as a read (a queue take,
a file write), a lock release that records nothing, or a finishing step that
no longer touches everything would each let a reduced proof skip a schedule
that matters. So each is pinned here directly, and the footprint check
(``test_footprint_check.py``) catches what a model itself gets wrong. The
state cache is pinned on the two things its fingerprint and cover test must
not leave out: a pending timer, and the sleep set a state was explored with.
"""

from __future__ import annotations

from typing import Any

import pytest

from property_tests.touch_log import TouchLog
from raceproof.sim import EventQueue, FileSystem, Lock, QueueEmpty, Timer, World
from raceproof.sim.outcome import execute
from raceproof.sim.reduction import SleepSetSource
from raceproof.sim.state_cache import StateCache, kernel_fingerprint
from raceproof.sim.world import ProcessGenerator


def _since(log: TouchLog, start: int) -> list[tuple[str, bool]]:
    return log.touched[start:]


def _merged(log: TouchLog, start: int) -> dict[str, bool]:
    """The entries since ``start`` as a step's footprint: resource -> written."""
    footprint: dict[str, bool] = {}
    for resource, write in _since(log, start):
        footprint[resource] = write or footprint.get(resource, False)
    return footprint


def test_queue_puts_and_takes_are_writes_and_its_length_a_read() -> None:
    world = TouchLog()
    queue = EventQueue(world, "q")
    put = {"queue:q": True, "queue:q.getters": False}  # the items, and whether a taker waits
    taken = {"queue:q": True, "queue:q.getters": True}  # a taker waiting, handed an item
    for action, expected in (
        (lambda: queue.put(1), put),
        (lambda: queue.put_front(0), put),
        (queue.get, taken),
        (queue.get_nowait, {"queue:q": True}),
        (queue.get, {"queue:q": False, "queue:q.getters": True}),  # it waits: nothing queued
        (lambda: queue.put(2), taken),
    ):
        start = len(world.touched)
        action()
        assert _merged(world, start) == expected
    start = len(world.touched)
    assert len(queue) == 0
    assert _since(world, start) == [("queue:q", False)]


def test_get_nowait_takes_an_item_already_there_and_raises_on_an_empty_queue() -> None:
    world = TouchLog()
    queue = EventQueue(world, "q")
    with pytest.raises(QueueEmpty, match="queue q is empty"):
        queue.get_nowait()
    queue.put("a")
    queue.put("b")
    assert queue.get_nowait() == "a" and len(queue) == 1


def test_a_lock_records_itself_on_acquire_and_release_and_reads_it_on_locked() -> None:
    world = TouchLog()
    lock = Lock(world, "l")
    start = len(world.touched)
    lock.try_acquire("me")
    assert _merged(world, start) == {"lock:l": True}
    start = len(world.touched)
    assert lock.try_acquire("me") and lock.try_acquire("me")  # held already: only reads
    assert _merged(world, start) == {"lock:l": False}
    start = len(world.touched)
    lock.release("me")
    assert _merged(world, start) == {"lock:l": True, "lock:l.waiters": False}
    start = len(world.touched)
    assert not lock.locked
    assert _since(world, start) == [("lock:l", False)]


def test_a_file_write_is_a_write_and_a_file_read_a_read() -> None:
    world = TouchLog()
    fs = FileSystem(world, "disk")
    fs.mkdir("/d")
    start = len(world.touched)
    fs.write("/d/f", 1)  # a new file: the file, the folder's entries and its mtime
    written = {resource for resource, write in _since(world, start) if write}
    assert written == {"disk:file['/d/f']", "disk:entries['/d']", "disk:dir['/d']"}
    start = len(world.touched)
    fs.write("/d/f", 2)  # a rewrite: the file alone
    assert {resource for resource, write in _since(world, start) if write} == {"disk:file['/d/f']"}
    start = len(world.touched)
    fs.read("/d/f")
    assert _since(world, start) == [("disk:file['/d/f']", False)]


def test_tracked_state_records_keys_fields_and_membership() -> None:
    world = TouchLog()
    table = world.shared.dict("t")
    members = world.shared.set("s")
    count = world.shared.counter("c")
    lease = world.shared.record("lease", holder=None)
    steps: list[tuple[Any, list[tuple[str, bool]]]] = [
        (lambda: table.__setitem__("k", 1), [("shared:t['k']", True), ("shared:t", True)]),
        (lambda: table.__setitem__("k", 2), [("shared:t['k']", True)]),  # keys unchanged
        (lambda: table["k"], [("shared:t['k']", False)]),
        (lambda: "k" in table, [("shared:t['k']", False)]),
        (lambda: len(table), [("shared:t", False)]),
        (lambda: table.__delitem__("k"), [("shared:t['k']", True), ("shared:t", True)]),
        (lambda: members.add(3), [("shared:s[3]", True), ("shared:s", True)]),
        (lambda: 3 in members, [("shared:s[3]", False)]),
        (lambda: [x for x in members], [("shared:s", False)]),
        (lambda: count.add(2), [("shared:c", True)]),
        (lambda: count.value, [("shared:c", False)]),
        (lambda: lease.holder, [("shared:lease.holder", False)]),
        (lambda: setattr(lease, "holder", "a"), [("shared:lease.holder", True)]),
    ]
    for action, expected in steps:
        start = len(world.touched)
        action()
        assert _since(world, start) == expected
    assert world.footprints_declared  # creating tracked state declares the footprints
    with pytest.raises(AttributeError, match="no field 'owner'"):
        lease.owner = "b"
    with pytest.raises(ValueError, match="already exists"):
        world.shared.dict("t")


def test_a_record_may_have_a_field_called_name() -> None:
    world = TouchLog()
    member = world.shared.record("member", name="c1", epoch=0)
    start = len(world.touched)
    assert member.name == "c1"
    member.name = "c2"
    assert member.name == "c2" and member.epoch == 0
    assert _since(world, start)[:2] == [
        ("shared:member.name", False),
        ("shared:member.name", True),
    ]
    with pytest.raises(ValueError, match=r"\['_world'\] are the record's own"):
        world.shared.record("bad", _world=1)


def _step_footprints(build: Any) -> list[Any]:
    source = SleepSetSource((), {}, reduce=True, log_steps=True)

    def declared(world: World) -> None:
        world.declare_footprints()
        build(world)

    execute(declared, source, [])
    assert source.steps is not None
    return [(step.key, step.footprint) for step in source.steps]


def test_the_step_that_finishes_the_run_touches_everything() -> None:
    def build(world: World) -> None:
        def quiet() -> ProcessGenerator:
            yield world.sleep(1)

        def finisher() -> ProcessGenerator:
            yield world.sleep(1)
            world.finish()

        world.spawn("quiet", quiet())
        world.spawn("finisher", finisher())

    footprints = dict(_step_footprints(build))
    finishing = [fp for key, fp in footprints.items() if key and "finisher" in key and "@1" in key]
    assert finishing == [None]  # dependent on every step
    quiet = [fp for key, fp in footprints.items() if key and "quiet" in key and "@1" in key]
    assert quiet and quiet[0] is not None


def test_a_one_shot_actor_is_a_plain_function_and_one_step() -> None:
    ran: list[int] = []

    def build(world: World) -> None:
        world.spawn("once", lambda: ran.append(world.now_ms), interleave=True)

    keys = [key for key, _ in _step_footprints(build) if key]
    assert ran == [0] and [k for k in keys if "once" in k]


def _world_waiting(arm: Any) -> World:
    """A world whose processes have started and now wait: ``arm(world)`` sets them up."""
    world = World(SleepSetSource((), {}, reduce=True))
    world.declare_footprints()
    world.declare_state(lambda: "same model state")
    arm(world)
    while world._queue and world._queue[0][0] == 0 and world._queue[0][1] == 0:
        world.step()  # the urgent starts
    return world


def test_the_state_fingerprint_sees_a_pending_timer_and_how_long_it_has_left() -> None:
    def sleeper(delay_ms: int) -> Any:
        def arm(world: World) -> None:
            def body() -> ProcessGenerator:
                yield world.sleep(delay_ms)

            world.spawn("sleeper", body())

        return arm

    def fingerprint(world: World) -> str | None:
        assert world.state_fingerprint is not None
        return kernel_fingerprint(world, world.state_fingerprint)

    five, seven = _world_waiting(sleeper(5)), _world_waiting(sleeper(7))
    assert fingerprint(five) is not None and fingerprint(five) != fingerprint(seven)
    assert fingerprint(five) == fingerprint(_world_waiting(sleeper(5)))

    def armed(world: World) -> None:
        sleeper(5)(world)
        Timer(world, "lease", lambda: None).start(10)

    # A pending timer is either in the fingerprint or makes the state unknown (None):
    # never the same state as the world without it.
    assert fingerprint(_world_waiting(armed)) != fingerprint(five)


def test_a_state_explored_with_a_smaller_sleep_set_covers_it_and_not_the_other_way() -> None:
    cache = StateCache()
    covering, new = cache.look_up("s", frozenset({"a"}), depth=1)
    assert covering is None and new is not None
    # Explored before with "a" asleep: "a" was never run from there, so a visit that
    # must run it is not covered; nor is one with more deviations left (lower depth).
    assert cache.look_up("s", frozenset(), depth=1)[0] is None
    assert cache.look_up("s", frozenset({"a", "b"}), depth=0)[0] is None
    assert cache.look_up("s", frozenset({"a", "b"}), depth=2)[0] is not None
    assert cache.look_up("other", frozenset({"a"}), depth=1)[0] is None


def test_a_watch_delivery_reads_the_client_and_writes_it_only_when_it_holds_the_event() -> None:
    """Connected: the delivery reads the client. Paused (the socket open): it is held. The
    connection lost: the watch is kept to be sent again on reconnection (ZooKeeper 3.6.3)."""
    from raceproof.sim import VersionedStore, ZkClient

    def deliver(gone: str | None) -> list[tuple[str, bool]]:
        world = TouchLog()
        store = VersionedStore(world)
        client = ZkClient(world, store, "c")
        seen: list[object] = []
        client.exists("/a", watch=seen.append)
        if gone is not None:
            client.disconnect(broken=gone == "lost")
        store.create("/a", 1)
        start = len(world.touched)
        world.run_to_end()
        assert bool(seen) is (gone is None)  # neither told while disconnected
        return [e for e in world.touched[start:] if e[0].startswith(f"{client.resource}.")]

    delivered = deliver(None)
    assert delivered and not any(write for _, write in delivered)  # reads only
    paused, lost = deliver("paused"), deliver("lost")
    assert ("zk-client:c.held", True) in paused
    assert ("zk-client:c.lost-watches", True) not in paused
    assert ("zk-client:c.lost-watches", True) in lost and ("zk-client:c.held", True) not in lost


def test_a_step_is_never_delayed_past_a_step_it_triggered() -> None:
    """``delayable_steps``: ``late`` wakes ``woken`` (its event was triggered by ``late``), so
    no order runs ``woken`` first; the same steps with the trigger unknown are a claim."""
    from raceproof.sim.footprint_claims import StepRecord, delayable_steps

    def steps(enabled_by: str | None) -> list[StepRecord]:
        return [
            StepRecord(
                key="/a#0@1",
                footprint={"x": True},
                drew=False,
                options=("/a#0@1", "/c#2@0"),
                at_ms=5,
            ),
            StepRecord(
                key="/b#1@1",
                footprint={"y": True},
                drew=False,
                options=None,
                at_ms=5,
                enabled_by=enabled_by,
            ),
            StepRecord(key="/c#2@0", footprint={"z": True}, drew=False, options=None, at_ms=5),
        ]

    assert delayable_steps(steps(None)) == [(0, 1), (0, 2)]
    assert delayable_steps(steps("/c#2@0")) == [(0, 1), (0, 2)]  # another step woke it
    assert delayable_steps(steps("/a#0@1")) == []


def test_a_claim_across_a_step_with_no_key_is_counted_unverified() -> None:
    """A condition's step (no key: it holds in no order) between a pair: the reduction may
    let ``/c`` sleep past it, no swap can follow it, so the check counts the claim unverified
    (the command then says INCONCLUSIVE) instead of skipping it; with the step named, the
    claim is an ordinary one and nothing is left to count."""
    from raceproof.sim.footprint_check import FootprintChecker
    from raceproof.sim.footprint_claims import StepRecord, movable_steps, unnamed_claims

    def steps(middle: str | None) -> list[StepRecord]:
        first = StepRecord(
            key="/a#0@1", footprint={"x": True}, drew=False, options=("/a#0@1", "/c#2@0"), at_ms=5
        )
        condition = StepRecord(
            key=middle, footprint={"y": True}, drew=False, options=(middle, "/c#2@0"), at_ms=5
        )
        moved = StepRecord(key="/c#2@0", footprint={"z": True}, drew=False, options=None, at_ms=5)
        return [first, condition, moved]

    unnamed = steps(None)
    assert (0, 2) not in movable_steps(unnamed)
    assert ("unnamed", "/a#0@1", None, "/c#2@0") in unnamed_claims(unnamed)
    assert unnamed_claims(steps("/b#1@1")) == set()

    checker = FootprintChecker(run=lambda source: pytest.fail("no claim here can be followed"))
    checker.check(unnamed, [])
    assert checker.unverified == len(unnamed_claims(unnamed)) >= 1 and checker.checked == 0
