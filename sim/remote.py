"""Remote calls in two halves: a request takes effect at the receiver, at the receiver's time.

Why it exists (DESIGN principle 16, issue 45): a fault is local to its node.
A model that sleeps a round trip and then applies a ZooKeeper write in the
caller's own step makes the caller's faults act on the server: a GC pause of
the caller's JVM that begins while the request travels delays the write until
the pause ends, and a crash cancels it, although the server received it and
applied it long before. Real ZooKeeper applies a request it has received
whatever the client's JVM is doing. So a remote call here is two halves:

- **the send** is a step of the caller. If the caller's node is paused at
  that moment (a pause that began earlier in the same step, or an instant
  before), the request waits with the node: a request its node has not sent
  is the node's own work (``hold_send``);
- **the arrival** is a step of the receiver (``receiver``, an actor on no
  node): ``one_way_ms`` after the send it applies ``operation`` at the
  receiver's time. No fault of the caller's node holds it; it is named and
  scheduled like any other event of its instant, so the choice of order
  among ties covers it;
- **the reply** reaches the caller ``back_ms`` after the arrival, and reading
  it is again a step of the caller, held while the caller's node is paused
  (the kernel holds every event that would resume a paused node's process,
  ``raceproof.sim.nodes.hold_paused``). What ``operation`` returned is the
  reply; what it raised (``BadVersion``, ``NoNode``, the model's own error)
  is raised in the caller at the reply, never in the receiver's step.

A pause can therefore begin between any two steps of a node: between a reply
read and the next request sent (the send waits), between a send and its reply
(the request is applied meanwhile, the reply waits). A crash of the caller's
node ends the caller; its requests already sent are applied all the same.

``call`` is the plain form (no session: a REST host's or a follower's
request to a server no fault of theirs can stop); ``ZkClient.request``
(``raceproof.sim.session``) adds the session's rules on top of ``send`` and
``RemoteCall``: a request on a connection that broke before it arrived is not
applied, and the caller hears ``ConnectionLoss``.

Footprints (for the proof's reduction): the send touches nothing shared; the
arrival step records what ``operation`` touches (the store's own footprints)
and nothing else, so two requests to different znodes commute; the reply is
a step of the caller's process. ``guard`` lets a session read its own state
in the arrival step (``ZkClient`` reads whether the connection it went on is
still up).

Misuse is a ``ValueError`` naming the call (a negative or non-int latency).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

from simpy.events import NORMAL, Event

from raceproof.sim.world import World, not_the_models

T = TypeVar("T")
Gen = Generator[Event, Any, Any]


def _check_ms(name: str, value: Any) -> int:
    if value.__class__ is int and value >= 0:  # the usual latency: one test
        return value
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        raise ValueError(f"remote call: {name} must be an int >= 0 ms, got {value!r}")
    return value


def hold_send(world: World) -> Gen:
    """Wait, before a send, while the calling process's node is paused.

    ``yield from hold_send(world)``: no step at all when the caller's node is
    up and running (the usual case); when a pause has begun (in this very step,
    say, from a fault drawn after the last reply was read), one zero-delay step
    that the kernel holds until the pause ends, so the request leaves then.
    """
    if send_held(world):
        yield world.sleep(0)


def send_held(world: World) -> bool:
    """The calling process's node is paused: its send waits (``hold_send``).

    Callers test it before ``yield from hold_send(world)``: a generator made
    and finished on every request costs more than the request's own checks.
    """
    node = getattr(world._active_proc, "rp_node", None)  # SimPy's ``active_process``
    return node is not None and node.paused  # (a pause touches everything: no read to record)


class RemoteCall(Generic[T]):
    """One request on the wire: its arrival at the receiver and its reply to the caller.

    Made by the send (in the caller's step). ``reply`` is the event the
    caller waits on; ``guard()`` (optional) runs at the arrival, in the
    receiver's step, and returns an exception to answer with instead of
    applying ``operation`` (the connection it went on broke).
    """

    def __init__(
        self,
        world: World,
        receiver: str,
        operation: Callable[[], T],
        *,
        one_way_ms: int,
        back_ms: int,
        guard: Callable[[], BaseException | None] | None = None,
    ) -> None:
        self.world = world
        self.actor = receiver  # read by World._actor_of: the arrival is the receiver's step
        self.operation = operation
        self.back_ms = _check_ms("back_ms", back_ms)
        self.guard = guard
        self.applied = False
        self.reply = Event(world)
        arrival = world.timeout(_check_ms("one_way_ms", one_way_ms))
        arrival.callbacks.append(self.arrive)

    def arrive(self, _event: Event) -> None:
        """At the receiver, at the receiver's time: apply, then send the reply back."""
        failure = self.guard() if self.guard is not None else None
        value: Any = failure
        ok = failure is None
        if ok:
            try:
                value = self.operation()
                self.applied = True
            except Exception as exc:  # the reply carries it to the caller
                if not_the_models(exc):
                    raise  # the kernel's or the choice source's control flow: not a reply
                value, ok = exc, False
        reply = self.reply
        reply._ok, reply._value = ok, value
        if not ok:
            reply._defused = True  # a crashed caller reads no reply
        self.world.schedule(reply, NORMAL, self.back_ms)


def call(
    world: World,
    operation: Callable[[], T],
    *,
    one_way_ms: int,
    back_ms: int | None = None,
    receiver: str = "server",
) -> Generator[Event, Any, T]:
    """``result = yield from call(world, lambda: store.set(...), one_way_ms=1)``.

    The request leaves now (or when the caller's node's pause ends), is
    applied at ``receiver`` ``one_way_ms`` later, and its reply is read
    ``back_ms`` (default: ``one_way_ms``) after that. An exception raised by
    ``operation`` is raised here, at the reply.
    """
    if send_held(world):
        yield from hold_send(world)
    back = one_way_ms if back_ms is None else back_ms
    request: RemoteCall[T] = RemoteCall(
        world, receiver, operation, one_way_ms=one_way_ms, back_ms=back
    )
    result: T = yield request.reply
    return result


def round_trip_halves(round_trip_ms: int) -> tuple[int, int]:
    """A round trip's two one-way latencies: the request's half first (an odd ms goes back)."""
    _check_ms("round_trip_ms", round_trip_ms)
    return round_trip_ms // 2, round_trip_ms - round_trip_ms // 2
