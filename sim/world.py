"""World: a SimPy environment in integer virtual milliseconds whose tie-breaks are choices.

SimPy processes events in (time, priority, insertion) order. The World keeps
that order as choice 0 but, whenever several events with something waiting on
them are due at the same instant, asks the run's choice source which goes
first. Every other nondeterminism (delays, cache lags, faults) is drawn by the
model through ``world.source``. Bounds on virtual time and on steps stop a
run that would otherwise go on; a run stopped by a bound is inconclusive.

``execute`` (``outcome.py``) is the one way a model is run: build the actors
on a World, run it to the end, close the history, apply the checkers.

Its checks survive ``python -O``: virtual time staying integer is a ``KernelError``
(exit 70, and ``execute`` never turns one into a finding); a model's bad delay,
actor name or footprint entry is a ``ValueError``/``TypeError`` naming the call.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush
from typing import Any, Protocol

import simpy
from simpy.core import EmptySchedule
from simpy.events import (
    NORMAL,
    URGENT,
    Condition,
    Event,
    EventPriority,
    Interruption,
    Process,
    Timeout,
)

from raceproof.sim.choices import ChoiceSource, RandomSource, ReplayMisaligned
from raceproof.sim.errors import KernelError, Signalled, did_you_mean
from raceproof.sim.history import History, JSONValue
from raceproof.sim.nodes import Node, hold_paused
from raceproof.sim.past import Past
from raceproof.sim.shared import Shared
from raceproof.sim.symmetry import declared
from raceproof.sim.visibility import OP_ORDER

ProcessGenerator = Generator[Event, Any, Any]


class SleepBlocked(Exception):
    """The partial-order reduction proved the rest of this run equivalent to one explored."""


class BoundHit(Exception):
    """A run reached one of its bounds before it finished."""

    def __init__(self, bound: str, detail: str) -> None:
        super().__init__(f"{bound} bound hit: {detail}")
        self.bound, self.detail = bound, detail

    def __reduce__(self) -> tuple[type[BoundHit], tuple[str, str]]:
        return BoundHit, (self.bound, self.detail)  # it crosses process pools intact


@dataclass(frozen=True)
class Bounds:
    """Limits on one run. Hitting one makes the run inconclusive."""

    max_time_ms: int = 3_600_000
    max_steps: int = 200_000

    def to_json(self) -> dict[str, int]:
        return {"max_time_ms": self.max_time_ms, "max_steps": self.max_steps}


class World(simpy.Environment):
    """The simulated world of one run: virtual ms, one choice source, one history."""

    def __init__(self, source: ChoiceSource, bounds: Bounds = Bounds()) -> None:
        super().__init__(initial_time=0)
        self.source = source
        self.bounds = bounds
        self.history = History()
        self.steps = 0
        self._max_steps = bounds.max_steps  # read on every step
        self.finished: str | None = None
        self._due: list[tuple[Any, EventPriority, int, Event]] = []
        self.after_step: list[Callable[[], None]] = []  # step-level invariants (see ``always``)
        # Footprints, for the proof's partial-order reduction (raceproof.sim.reduction):
        # only a source that observes steps turns recording on.
        observes = getattr(source, "observes_steps", False)
        self.observer: StepObserver | None = source if observes else None  # type: ignore[assignment]
        self.footprints_declared = False
        self.untracked: list[str] = []  # primitives in use that record no footprints
        # The step just observed touched everything but its races are known (``HOLDS``).
        self.step_races_known = False
        self.state_fingerprint: Callable[[], str] | None = None
        self.at_state: Callable[[World], None] | None = None  # called between steps (the cache)
        # Interchangeable actors (``declare_symmetric``) and the process ids spawned under each
        # name, which the state cache renames (``raceproof.sim.symmetry``).
        self.symmetric: tuple[tuple[str, ...], ...] = ()
        self.processes_of: dict[str, list[str]] = {}
        self.past: Past | None = None  # what of the history the checkers read (``declare_past``)
        self._footprint: dict[str, bool] | None = None
        self._spawned: dict[str, int] = {}
        self.processes: list[Process] = []  # processes with an identity (``rp_id``), spawn order
        self._arms: dict[str, int] = {}  # timer resource -> arms so far (``arm_key``)
        self._context = ""  # who spawns when no process is active (a timer's firing)
        # Event names (``_name_event``): only a proof's observer reads step keys.
        self._names_events = observes
        self._stepping: str | None = "start"  # the key of the step being processed
        self._named: dict[str, int] = {}  # per naming step: events it triggered so far
        self._keyed: Process | None = None  # the process whose step ``_stepping`` names, if one
        self.enabled_by: str | None = None  # the key of the step that triggered this step's event
        self.disabled: list[str] = []  # the keys of this instant's steps this step cancelled
        self._shared: Shared | None = None
        # Per schedule draw that left FIFO: the actor that ran and the one it overtook. A
        # search's sources do not ask for it (``ChoiceSource.names_deviations``): the
        # finding it reports is replayed, and named, by ``shrink``.
        self.overtaken: dict[int, tuple[str, str]] = {}
        self.names_deviations: bool = source.names_deviations
        self.nodes: dict[str, Node] = {}  # hosts / JVMs grouping processes (raceproof.sim.nodes)
        self.paused_nodes: list[Node] = []  # nodes in a pause: their processes' events are held
        self.probes: dict[str, int] = {}  # race-window probe -> times reached (see ``reach``)
        # The scenario's declared probes (``Scenario.build_for`` sets them): ``reach`` of a
        # name a typo away from one of them is the model's error, not a new probe.
        self.declared_probes: tuple[str, ...] = ()
        self.op_order_read = False  # a checker reads the order of ops (``visibility``)
        self._due_keys = self._due_actors  # bound once: the schedule draw's lazy actor names
        self._draw_schedule = source.schedule  # bound once: called on nearly every step
        # A plain ``RandomSource``'s ``schedule``, inlined by ``step`` (its values computed
        # ahead and the appends that record a draw): a search's hottest call, saved per step.
        self._ahead: list[int] | None = None
        if type(source) is RandomSource:
            self._ahead, self._record_value, self._record_size = source.inlined_schedule()
        # Whether a due event may have nobody waiting on it (see ``step``): set when one joins
        # ``_due`` with no callbacks and after SimPy takes callbacks off events (an interrupt,
        # a condition's cleanup); cleared by a scan that finds every due event waited on.
        self._scan_waiters = False
        if observes and hasattr(source, "watch_world"):
            source.watch_world(self)  # the footprint check's log reads each step's instant

    # -- time ----------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        now = self._now
        if now.__class__ is not int and not isinstance(now, int):  # inline: the hot path
            raise KernelError(f"virtual time must stay integer ms, got {now!r}")
        return now

    def schedule(self, event: Event, priority: EventPriority = NORMAL, delay: Any = 0) -> None:
        if not (delay.__class__ is int or isinstance(delay, int)) or delay < 0:  # the hot path
            raise ValueError(f"World.schedule: delays are integer ms >= 0, got {delay!r}")
        unhooks = _UNHOOKING.get(event.__class__)
        if unhooks is None:  # first event of its class: decided once, ``isinstance`` after that
            unhooks = _UNHOOKING[event.__class__] = isinstance(event, _UNHOOKS)
        if unhooks:
            # Processing it takes callbacks off other events (``Interruption._interrupt``,
            # ``Condition._build_value``): after that, a due event may have nobody waiting.
            event.callbacks.append(self._waiters_changed)
            if self._footprint is not None and type(event) is Interruption:
                self._footprint[ALL] = True  # an interrupt changes what another process waits on
        if self._names_events:
            self._name_event(event)
        # SimPy's own ``schedule``, inlined: this runs for every event of every run.
        heappush(self._queue, (self._now + delay, priority, next(self._eid), event))

    def timeout(self, delay: int = 0, value: Any = None) -> Timeout:  # type: ignore[override]
        """SimPy's ``Timeout``, built without its bound-class descriptor and ``schedule`` call.

        Every sleep of every actor makes one: the same object, the same checks
        (a negative delay is SimPy's ValueError), the same heap entry.
        """
        if delay.__class__ is not int or delay < 0:  # the usual delay passes one test
            if delay < 0:
                raise ValueError(f"Negative delay {delay}")
            if not isinstance(delay, int):
                raise ValueError(f"World.timeout: delays are integer ms >= 0, got {delay!r}")
        timeout = _new_timeout(Timeout)
        timeout.env, timeout.callbacks, timeout._value = self, [], value
        timeout._delay, timeout._ok = delay, True
        if self._names_events:
            self._name_event(timeout)
        heappush(self._queue, (self._now + delay, NORMAL, next(self._eid), timeout))
        return timeout

    def sleep(self, delay_ms: int) -> Event:
        """A timeout of ``delay_ms`` virtual milliseconds."""
        return self.timeout(delay_ms)

    def unschedule(self, event: Event, resource: str | None = None) -> bool:
        """Take a scheduled, not yet processed event out of the schedule (a cancelled timer).

        Nothing is left behind at its instant: no step, no tie, no later end of
        the run. False if the event was not scheduled. What the cancel touches
        (``_disables``): the ``resource`` the caller names, and the step the event
        would have run, so that the step is dependent on this one although it
        never runs in this order.
        """
        self._disables(event, resource)
        for table in (self._due, self._queue):
            for position, entry in enumerate(table):
                if entry[3] is event:
                    del table[position]
                    if table is self._queue:
                        heapify(table)
                    if entry[0] == self._now and self._footprint is not None:
                        key = _step_key(event)
                        if key is not None:  # a step of this instant that will not run
                            self.disabled.append(key)
                    return True
        return False

    def _disables(self, event: Event, resource: str | None) -> None:
        """Record what cancelling ``event`` touches: the rule that a step which cancels,
        disables or re-arms an event is dependent with the step that event would have run.

        That step never runs in this order, so no footprint of it is ever compared
        with this one: the cancel writes the step's own resource (``step:<key>``,
        ``DISABLED``), which the step writes when it runs (``_observed_step``). The
        reduction then walks the order where it runs first; the instant shortcut
        counts it among the steps of its instant (``SleepSetSource.after_step``), and
        ``--check-footprints`` runs that order when a walk took them as commuting
        (``footprint_claims.cancelled_pulls``). An event nobody waits on runs no step:
        only ``resource`` (everything if none is named: a process may wait on it later).
        One a process waits on, or one with no step key, changes what another step
        waits on: everything.
        """
        if resource is not None:
            self.touch(resource)
        footprint = self._footprint
        if footprint is None:
            return
        if not event.callbacks:
            if resource is None:
                footprint[ALL] = True
            return
        key = _step_key(event)
        if key is None or _owner(event) is not None:
            footprint[ALL] = True
        else:
            footprint[DISABLED + key] = True

    # -- actors --------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node (host, JVM) called ``name``, made on first use (``raceproof.sim.nodes``)."""
        found = self.nodes.get(name)
        if found is None:
            found = self.nodes[name] = Node(self, name)
        return found

    def spawn(
        self,
        actor: str,
        generator: ProcessGenerator | Callable[[], Any],
        *,
        interleave: bool = False,
        node: Node | None = None,
    ) -> Process:
        """Start a process that acts as ``actor`` (the name shown in schedules).

        A process starts the moment it is spawned and runs to its first yield.
        With ``interleave`` its first step waits for a zero-delay event of its
        own instead, so the start is a scheduling decision among the events of
        that instant; choice 0 runs it where SimPy would run ``sleep(0)``.
        ``generator`` may also be a plain function of no arguments: a one-shot
        actor whose whole body is one step (``spawn("stop", stop, interleave=True)``).
        On a ``node`` it pauses, crashes and restarts with that node.
        """
        if not (isinstance(actor, str) and actor):
            raise ValueError(f"World.spawn: an actor needs a name, got {actor!r}")
        if not isinstance(generator, Generator):
            if not callable(generator):
                raise TypeError(
                    f"World.spawn({actor!r}): a generator or a function, got {generator!r}"
                )
            generator = _one_shot(generator)
        if interleave:
            generator = self._started_after_tie(generator)
        if node is not None:
            generator = node.guard(generator)
        process = self.process(generator)
        process.actor = actor  # type: ignore[attr-defined]
        if node is not None:
            node.adopt(process)
        if self.observer is not None and (
            self.footprints_declared or self.state_fingerprint is not None
        ):
            # An identity that does not depend on how other actors interleave: the
            # spawning process's identity, the actor name and the spawner's count.
            parent = getattr(self.active_process, "rp_id", self._context)
            count = self._spawned.get(parent, 0)
            self._spawned[parent] = count + 1
            pid = process.rp_id = f"{parent}/{actor}#{count}"  # type: ignore[attr-defined]
            process.rp_steps = 0  # type: ignore[attr-defined]
            self.processes_of.setdefault(actor, []).append(pid)
            self.processes.append(process)  # the state fingerprint's roots (``fingerprint``)
        return process

    def _waiters_changed(self, _event: Event) -> None:
        self._scan_waiters = True

    def _started_after_tie(self, generator: ProcessGenerator) -> ProcessGenerator:
        yield self.timeout(0)
        return (yield from generator)

    # -- footprints ------------------------------------------------------------
    def declare_footprints(self) -> None:
        """The model's promise that makes the proof's reduction apply to it.

        Its actors share state only through the kernel's primitives (store,
        cache, queues, locks, executors, file system, each of which records
        what a step touches) and through resources the model names itself
        with :meth:`touch`; no two actors share a Python object or a SimPy
        event otherwise; and its checkers do not depend on the relative order,
        in the history, of ops logged at the same instant by steps that touch
        no common resource. Without this declaration every step is dependent
        on every other and the reduction skips nothing.
        """
        self.footprints_declared = True

    @property
    def shared(self) -> Shared:
        """Tracked shared state (``raceproof.sim.shared``): it records its own footprints."""
        if self._shared is None:
            self._shared = Shared(self)
        return self._shared

    def untracked_primitive(self, name: str) -> None:
        """A primitive that does not record footprints is in use: every step touches everything."""
        self.untracked.append(name)

    def declare_state(self, fingerprint: Callable[[], str]) -> None:
        """Opt in to the proof's state cache (``raceproof.sim.state_cache``).

        ``fingerprint()`` is a canonical text of the model's state; equal texts
        must mean equal futures and verdicts (see the soundness condition there).
        It may also return a collection of texts (entries): with symmetric actors
        declared, they are renamed and sorted again, so images of a state merge.
        """
        self.state_fingerprint = fingerprint

    def declare_symmetric(self, *actors: str | Sequence[str]) -> None:
        """Declare ``actors`` interchangeable (``raceproof.sim.symmetry``): the state cache
        counts states that differ only by a permutation of them once.

        Each actor is its name, or a tuple of the names that belong to it (its own
        first; every actor as many). The model's promise: its code, checkers and
        probes treat them alike but for their names (``--check-symmetry`` checks it).
        """
        self.symmetric = declared(actors)

    def declare_past(self, past: Past) -> None:
        """Declare what of the past the checkers judge (``raceproof.sim.past``): the state
        fingerprint holds ``past.summary(history)`` in place of the ops, and no virtual
        time if ``past.absolute_time`` is False. ``--check-state-cache`` checks it."""
        if not isinstance(past, Past):
            raise TypeError(f"World.declare_past: expected a Past, got {past!r}")
        self.past = past

    def touch(self, resource: str, write: bool = True) -> None:
        """Record that the current step reads or writes ``resource`` (shared state)."""
        # ``isinstance(resource, str)`` and ``isinstance(write, bool)``, the usual case first.
        if not (
            (resource.__class__ is str or isinstance(resource, str))
            and resource
            and (write is True or write is False)
        ):
            raise TypeError(
                f"World.touch: a footprint entry is a resource name and a bool, got {resource!r}, {write!r}"
            )
        footprint = self._footprint
        if footprint is not None:
            if write:
                footprint[resource] = True
            elif resource not in footprint:  # a read after a write stays a write
                footprint[resource] = False

    def alive(self, process: Process) -> bool:
        """``process.is_alive``, recorded as a read of that process's end (see ``_observed_step``)."""
        rp_id = getattr(process, "rp_id", None)
        if rp_id is None:
            self.touch_all()
        else:
            self.touch(f"proc:{rp_id}", write=False)
        return process.is_alive

    def spawning_as(self, context: str) -> str:
        """Name the spawner of processes started outside any process; returns the previous name.

        A timer's callback runs in no process; what it spawns is named after
        ``context`` (the timer and its firing count), so the name does not
        depend on how other steps of its instant interleave.
        """
        previous, self._context = self._context, context
        return previous

    def arm_key(self, resource: str) -> str:
        """The step key of the firing of the next arm of the timer resource ``resource``.

        A timer's firing is a callback, not a process step, so ``_step_key`` cannot name
        it by a process; it is named by its resource and the count of arms of that
        resource so far. Every arm writes the resource (``Timer.start`` cancels first),
        so the arms of one resource, of one timer or of several sharing its name, keep
        their order in every equivalent run: the name does not depend on how other
        steps interleave, and no two firings of a run share it.
        """
        count = self._arms.get(resource, 0) + 1
        self._arms[resource] = count
        return f"{resource}#{count}@fire"

    def _name_event(self, event: Event) -> None:
        """Name ``event`` by the step that triggered it, for steps no one process owns.

        Processing an event is a step named by the process it resumes (``_step_key``)
        when it resumes exactly one; an event several processes wait on, or one a
        condition (``AllOf``/``AnyOf``) waits on, has no such owner. It is named here,
        when it is triggered (scheduled, or made as a timeout): by the step that
        triggers it -- the active process's step key, else the key of the step being
        processed (a timer's firing, a condition's check), else "start" before the
        first step -- and the count of events that step triggered before it. A step
        key does not depend on how other steps interleave, and a step triggers the
        same events in the same order in every equivalent run (it reads the same
        state); every event is triggered once, so no two steps of a run share a name.
        The callbacks a named event runs are the same in equivalent runs too: a
        process joining an event another already waits on touches everything
        (``_observed_step``), so joins keep their order. Left unnamed (its step
        key None, as before names) when the triggering step has no name itself, is
        a process not started through ``spawn`` (no identity), or would make a
        name past ``_NAME_CHARS`` (a chain of callbacks, each triggering the next),
        or is a condition (``AllOf``/``AnyOf``): its check triggers it in the step of
        whichever awaited event completes it, and two of those that commute run in
        either order, so its trigger depends on the interleaving. (The awaited events
        themselves are named; the condition's step, which resumes its waiter beside
        SimPy's own callbacks, stays unnamed, and a pair beside it unverified.)
        Every event also keeps the triggering step's key (``rp_by``, read into
        ``enabled_by`` when it is processed): the footprint check never delays a
        step past one it triggered (``delayable_steps``).
        """
        process = self._active_proc  # SimPy's ``active_process``, without the property
        if process is None or process is self._keyed:  # (the process whose step this is)
            step = self._stepping
        elif (owner := getattr(process, "rp_id", None)) is not None:
            step = f"{owner}@{process.rp_steps}"  # type: ignore[attr-defined]
        else:
            return
        event.rp_by = step  # type: ignore[attr-defined]  # who enabled its step (``enabled_by``)
        if step is None or len(step) > _NAME_CHARS or isinstance(event, Condition):
            return
        count = self._named.get(step, 0)
        self._named[step] = count + 1
        event.rp_key = f"{step}!{count}@event"  # type: ignore[attr-defined]

    def touch_all(self, *, holds: bool = False) -> None:
        """The current step is dependent on every other step.

        ``holds``: all it does to another step beyond its footprint is hold that step's
        event past the instant, the step still running now with its own key (a node's pause,
        ``nodes.hold_paused``): no step is taken off the instant or put in it unseen, so its
        races are those of a step dependent on each later one (``step_races_known``).
        """
        if self._footprint is not None:
            self._footprint[HOLDS if holds else ALL] = True

    def log(self, actor: str, kind: str, **fields: JSONValue) -> None:
        if self._footprint is not None:
            self.touch(f"history:{actor}")
            if self.op_order_read:  # a checker reads the order of every op (``visibility``)
                self.touch(OP_ORDER)
        self.history.add(self._now, actor, kind, fields)  # type: ignore[arg-type]  # int-checked there

    def reach(self, probe: str) -> None:
        """Mark that this run reached the race window named ``probe``.

        A probe adds no op to the history (trace hashes do not change) and no
        footprint (it is not shared state); the run counts it beside its
        history, and a search or proof counts the runs that reached it. A
        scenario that declares the probe (``Scenario(probes=...)``) is never
        judged ``ok`` when no run reached it: the verdict is ``not-reached``.
        A probe is named by a non-empty string (``TypeError`` otherwise: the
        model's error, named, never a count that cannot be sorted).
        """
        if not (isinstance(probe, str) and probe):
            raise TypeError(f"World.reach: a probe is named by a non-empty string, got {probe!r}")
        if probe not in self.probes and probe not in self.declared_probes:
            # A model shared by scenarios may reach probes another one declares; a name a
            # typo away from a declared one (difflib, 0.85) is no new probe: the model's error.
            near = did_you_mean(probe, self.declared_probes, cutoff=0.85)
            if near:
                raise ValueError(
                    f"World.reach({probe!r}): the scenario declares no such probe{near}; "
                    f"it declares {', '.join(map(repr, self.declared_probes))}"
                )
        self.probes[probe] = self.probes.get(probe, 0) + 1

    def finish(self, reason: str = "finished") -> None:
        """End the run after the current step (the workload is done)."""
        self.touch_all()
        self.finished = reason

    # -- the scheduler ---------------------------------------------------------
    @staticmethod
    def _actor_of(event: Event) -> str:
        for callback in event.callbacks or ():
            owner = getattr(callback, "__self__", None)
            actor = getattr(owner, "actor", None)
            if actor is not None:
                return str(actor)
        return type(event).__name__

    def _due_actors(self) -> list[str]:
        return [self._actor_of(entry[3]) for entry in self._due]

    @property
    def due_ms(self) -> int:
        """The instant of the events due now (a schedule draw's, before the clock moves to it)."""
        return int(self._due[0][0]) if self._due else self.now_ms

    def instant_open(self) -> bool:
        """An event is still due at the current instant (a run stopped inside it)."""
        queue = self._queue
        return bool(self._due) or bool(queue and queue[0][0] == self._now)

    def peek(self) -> Any:
        return self._due[0][0] if self._due else super().peek()

    def pending_enablers(self) -> dict[str, str]:
        """Per step whose event is already triggered, the key of the step that triggered it
        (``rp_by``): what a covered run's state cannot tell, since the fingerprint leaves out
        who made an event (``raceproof.sim.cover_races``)."""
        found: dict[str, str] = {}
        for table in (self._due, self._queue):
            for entry in table:
                key, by = _step_key(entry[3]), getattr(entry[3], "rp_by", None)
                if key is not None and by is not None:
                    found[key] = by
        return found

    def step(self) -> None:
        """Process one event; among those due now, the choice source picks which.

        Events due at the current instant are moved from SimPy's heap to
        ``_due`` once, kept in SimPy order (priority, insertion), and the
        choice is an index into that list: 0 is exactly SimPy's own order.

        Urgent events (a process starting, an interrupt) run first, in order,
        without a draw: an actor begins the moment it is spawned and runs
        until its first yield. A model that wants its start to interleave
        with other events of the same instant spawns it with ``interleave``.
        The ``after_step`` hooks run after each step; under a proof's observer,
        inside the step's footprint (what they read is visible to the reduction).
        """
        if self.at_state is not None:  # the proof's state cache looks the state up (or cuts)
            self.at_state(self)
        queue, due = self._queue, self._due
        if not due:
            if not queue:
                raise EmptySchedule
            head_time = queue[0][0]
            if head_time > self.bounds.max_time_ms:
                raise BoundHit(
                    "virtual_time", f"next event at {head_time} ms > {self.bounds.max_time_ms}"
                )
        else:
            head_time = due[0][0]
        if queue and queue[0][0] == head_time:
            joined = len(due)
            while queue and queue[0][0] == head_time:
                entry = heappop(queue)
                due.append(entry)
                if not entry[3].callbacks:
                    self._scan_waiters = True
            # Both runs are in (priority, insertion) order and the new entries were inserted
            # later: only an urgent one joining normal ones puts the list out of order. Every
            # entry is (head_time, priority, unique id, event): comparing two never reaches
            # the events.
            if joined and due[joined - 1] > due[joined]:
                due.sort()
        self.steps += 1
        if self.steps > self._max_steps:
            raise BoundHit("steps", f"more than {self._max_steps} steps")
        observer = self.observer
        index = 0 if len(due) < 2 or due[0][1] == URGENT else self._choose(due, observer)
        if observer is None:
            # One ``_process`` for every path: the copy once inlined here saved no measurable
            # time (3000 random runs of brooklin-double-stop/fix-conditional-write: 5.01 s
            # inlined, 5.02 s called; samza-drain/drain x1500: 6.81 s, 6.97 s; CPU s, 3 each).
            self._process(due.pop(index))
            if self.after_step:
                self._run_hooks()
        elif not (self.footprints_declared or self.state_fingerprint is not None):
            # Nothing declared: every step touches everything, nothing to record.
            self.step_races_known = False
            observer.before_step(None)
            self._process(due.pop(index))
            self._run_hooks()
            observer.after_step(None, None)
        else:
            self._observed_step(due.pop(index), observer)  # the hooks run inside its footprint

    def _choose(
        self, due: list[tuple[Any, EventPriority, int, Event]], observer: StepObserver | None
    ) -> int:
        """Which of two or more due (non-urgent) events runs now: a schedule draw, or no choice.

        Events nobody waits on go first: ordering them changes nothing. Looked for
        only when one may be there (``_scan_waiters``): the scan is O(due) per step.
        """
        index = -1
        if self._scan_waiters:
            index = _first_unwaited(due)
            if index >= 0:
                return index
            self._scan_waiters = False
        if observer is not None:
            tracked = self.footprints_declared or self.state_fingerprint is not None
            keys = [_step_key(e[3]) if tracked else None for e in due]
            index = observer.schedule_steps(keys, self)
        elif ahead := self._ahead:  # ``RandomSource.schedule``, inlined: same value and record
            n = len(due)
            index = (ahead.pop() * n) >> 64
            self._record_value(index)
            self._record_size(n)
        else:
            index = self._draw_schedule(len(due), self._due_keys)
        if index and self.names_deviations:  # name who ran and whom it overtook
            self.overtaken[len(self.source.drawn) - 1] = (
                self._actor_of(due[index][3]),
                self._actor_of(due[0][3]),
            )
        return index

    def _run_hooks(self) -> None:
        """The ``after_step`` observers (invariants), over a copy: one may remove itself."""
        for hook in list(self.after_step):
            hook()

    def _observed_step(
        self, entry: tuple[Any, EventPriority, int, Event], observer: StepObserver
    ) -> None:
        """Process ``entry`` recording its footprint for the proof's reduction."""
        event = entry[3]
        owner = _owner(event)  # once: the step's key and its processes (``_step_key``)
        if owner is not None:
            key: str | None = f"{owner.rp_id}@{owner.rp_steps}"  # type: ignore[attr-defined]
            owners: Sequence[Process] = (owner,)
        else:
            callbacks = event.callbacks
            key = getattr(event, "rp_key", None) if callbacks else None
            owners = _owners(callbacks) if callbacks else ()
        observer.before_step(key)
        self._stepping = key
        self._named.clear()  # names are per step: an earlier step's counts are never used again
        self.enabled_by = getattr(event, "rp_by", None)
        if self.disabled:
            self.disabled.clear()  # the observer copied the last step's (``after_step``)
        self._footprint = footprint = {}
        if key is not None and owner is None:
            # A step no one process owns (a timer's firing) can be cancelled: see ``_disables``.
            footprint[DISABLED + key] = True
        self._keyed = owner  # its key is ``key`` until its step count moves, after ``_process``
        try:
            self._process(entry)
        finally:
            self._footprint = self._keyed = None
        for process in owners:
            process.rp_steps += 1  # type: ignore[attr-defined]
            if not process.is_alive:  # its end: read by whoever joins it or asks ``alive``
                footprint[f"proc:{process.rp_id}"] = True  # type: ignore[attr-defined]
                if not process.ok:  # it raised: the run ends on it, no step runs after it
                    footprint[ENDS_RUN] = True
            target = process._target
            if target is not None and target.callbacks is not None and len(target.callbacks) > 1:
                footprint[ALL] = True  # it joined an event another process waits on
            joined = getattr(target, "rp_id", None)
            if isinstance(target, Process) and joined is not None:
                footprint.setdefault(f"proc:{joined}", False)  # it waits for that process's end
        if self.after_step:
            # What the observers read between steps joins the step's footprint (visibility,
            # ``raceproof.sim.visibility``): a step writing what an invariant reads then never
            # commutes with one the invariant saw it beside.
            self._footprint = footprint
            try:
                self._run_hooks()
            finally:
                self._footprint = None
        declared = self.footprints_declared and not self.untracked
        self.step_races_known = declared and ALL not in footprint
        everything = ALL in footprint or HOLDS in footprint
        observer.after_step(key, footprint if declared and not everything else None)

    def _process(self, entry: tuple[Any, EventPriority, int, Event]) -> None:
        """SimPy's event processing (``Environment.step`` after the pop).

        A failed process event re-raises its original exception, not SimPy's
        copy: the original keeps its traceback into model code, and control
        flow exceptions of the choice source (Hypothesis' StopTest,
        ReplayMisaligned) pass through unchanged.
        """
        self._now, _, _, event = entry
        if not event._ok and _passes_through(event._value):
            if isinstance(event._value, ReplayMisaligned) and event._value.actor is None:
                event._value.actor = getattr(event, "actor", None)  # the process that drew
            # Not the model's exception (Hypothesis' StopTest, a replay's misalignment,
            # the reduction's cut, a kernel contract): SimPy would throw a *copy* of it
            # into every process waiting on this one, which no longer is what the
            # choice source or the kernel raised. The original ends the run, now.
            raise event._value
        callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
        if self.paused_nodes:
            callbacks = hold_paused(self, event, callbacks)
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            raise event._value

    def run_to_end(self) -> str:
        """Step until the model finishes or nothing is left; raise BoundHit at a bound."""
        while self.finished is None:
            try:
                self.step()
            except EmptySchedule:
                return "quiescent"
        return self.finished


_NAME_CHARS = 400  # the longest step key an event is named after (``World._name_event``)
ALL = "*"  # the footprint entry of a step dependent on every other
# The entry of a step dependent on every other whose races are still known: it only holds
# other steps' events past the instant (``World.touch_all``'s ``holds``).
HOLDS = "*holds"
# The prefix of the resource a step no one process owns writes, named by its key, which the
# step that cancels its event writes too (``World._disables``).
DISABLED = "step:"
# The footprint entry of a step whose process raised: the run ends on it, so to the reduction
# it is dependent on every other step (``SleepSetSource.after_step``); the footprint check
# still tests moving it earlier by what it touched.
ENDS_RUN = "*ends"
# Exceptions that are the kernel's or the choice source's control flow, never the model's.
_CONTROL = (ReplayMisaligned, SleepBlocked, BoundHit, KernelError)
_NOT_THE_MODELS = (*_CONTROL, Signalled)  # and Hypothesis' own BaseExceptions (``not_the_models``)


def _first_unwaited(due: list[tuple[Any, EventPriority, int, Event]]) -> int:
    """The position of the first due event nobody waits on, or -1."""
    for position, entry in enumerate(due):
        if not entry[3].callbacks:
            return position
    return -1


def not_the_models(exc: BaseException) -> bool:
    """``exc`` is raceproof's, Hypothesis' or a real signal's, never the model's own exception.

    The kernel's control flow and contracts (``_CONTROL``), a real signal (a
    handler raises ``Signalled``), and Hypothesis' own ``BaseException``s (its
    ``StopTest`` ends an example from inside a draw). Everything else that
    leaves the model's code, whatever its class, is the model's.
    """
    if isinstance(exc, _NOT_THE_MODELS):
        return True
    return not isinstance(exc, Exception) and type(exc).__module__.partition(".")[0] == "hypothesis"


def _passes_through(exc: BaseException) -> bool:
    """``exc`` is not the model's own: a BaseException (StopTest) or the kernel's control flow."""
    return not isinstance(exc, Exception) or isinstance(exc, _CONTROL)


def _one_shot(function: Callable[[], Any]) -> ProcessGenerator:
    """A plain function as a process: one step (or the generator it returns)."""
    result = function()
    if isinstance(result, Generator):
        return (yield from result)
    return result
    yield  # a generator function, whose body runs as the process's first step


_new_timeout = Timeout.__new__
# Events whose processing takes callbacks off other events (see ``World.schedule``).
_UNHOOKS = (Interruption, Condition)
_UNHOOKING: dict[type, bool] = {}  # per event class: is it one of ``_UNHOOKS``


def _owners(callbacks: list[Any]) -> list[Process]:
    found = (getattr(callback, "__self__", None) for callback in callbacks)
    return [p for p in found if isinstance(p, Process) and hasattr(p, "rp_id")]


def _owner(event: Event) -> Process | None:
    """The one process ``event`` resumes, if it resumes exactly one tracked process."""
    callbacks = event.callbacks
    if callbacks is None or len(callbacks) != 1:
        return None
    owner = getattr(callbacks[0], "__self__", None)
    return owner if isinstance(owner, Process) and hasattr(owner, "rp_id") else None


def _step_key(event: Event) -> str | None:
    """Which step processing ``event`` is: its process and that process's step count; else
    the event's own name, the timer firing it is (``World.arm_key``) or the step that
    triggered it (``World._name_event``); None when the kernel cannot name it, or when
    nothing waits on it (a condition's cleanup took its callbacks: it does nothing)."""
    owner = _owner(event)
    if owner is None:
        return getattr(event, "rp_key", None) if event.callbacks else None
    return f"{owner.rp_id}@{owner.rp_steps}"  # type: ignore[attr-defined]


def _process_step_key(event: Event) -> str | None:
    """``_step_key`` for a step that resumes one tracked process; None for anything else."""
    owner = _owner(event)
    if owner is None:
        return None
    return f"{owner.rp_id}@{owner.rp_steps}"  # type: ignore[attr-defined]


class StepObserver(Protocol):
    """A choice source that watches every step (the reduction's sleep-set source)."""

    observes_steps: bool

    def schedule_steps(self, keys: list[str | None], world: World) -> int: ...
    def before_step(self, key: str | None) -> None: ...
    def after_step(self, key: str | None, footprint: dict[str, bool] | None) -> None: ...
