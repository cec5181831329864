"""Partial-order reduction of the proof's walk: sleep sets over the kernel's tie-breaks.

Two events due at the same instant commute when the steps that process them
touch no common resource with at least one of them writing it: running them
in either order reaches the same state and the same history up to the order
of their ops. The primitives record what each step touches (``World.touch``:
store paths, cache, queues, locks, executors, the file system, and each
actor's own stream of history ops); a step counts as touching everything when
the model has not declared its footprints (``World.declare_footprints``), when
it finishes the run or its process raises (the run ends on it: no step can
follow it), or when it interrupts or joins another process's event.
So an undeclared model is walked in full: the reduction only ever skips what
a declaration vouches for. A step that draws a model-level choice (a delay, a
fault) is one transition per value: it is never put to sleep (it counts as
touching everything for its later siblings), though after it runs, only its
actual footprint wakes the steps asleep, and its races are the value's.

The walk (``raceproof.sim.exhaustive``) is stateless and breadth-first by
deviations, with Godefroid's sleep sets as Loom and Shuttle use them: every
run starts from scratch and replays a prefix of choices. At a ``schedule``
draw the events whose step is *asleep* are not explored: an event goes to
sleep for the later siblings of the branch that explored it, and wakes as soon
as a step dependent on it runs. A run that would have to execute a sleeping
step is cut there (``SleepBlocked``): every schedule through it is equivalent
to one already explored. Model-level draws are enumerated in full but beside a step
asleep (below). A draw whose run shows the rest of its instant commuting
(``SleepSetSource._close_instant``) is not branched at all, which spares the
runs sleep sets would only cut later (``--check-footprints`` tests that claim
over every order of the instant: ``footprint_claims.instant_pulls``). Two steps
of that rest that do not commute still leave it commuting when no order of the
instant can run them the other way round: the later is a step of the same
process, or its event was triggered by the earlier, transitively (``races.causes``:
a queue's put resuming the getter it wakes, a process spawned or resumed). Every
order the kernel can take is then the run's order with commuting neighbours
swapped, so the draw has one class; on ``samza-drain``/``drain`` this spared
276 of the proof's 278 sleep-blocked runs (1,782 runs for 1,504 classes before,
1,506 after). A draw whose chosen step races with nothing in its instant holds its
other options back (``Node.deferred``) until a run through it shows that step racing
(``raced``: it drew, touches everything, or is dependent with a later step of the
instant that some order runs before it); the walk then branches them
(``exhaustive.ProofWalk._release``). That is DPOR's race feedback (Flanagan and
Godefroid 2005), with every option of the draw as the backtrack set: a step that races
with nothing in any run through its draw stands for a persistent set of one. Steps due
at different instants never race, so only the runs that branch inside the draw's own
instant can release it, and those are kept in one unit of a parallel proof
(``proof_units.race_group``). Brooklin's ``fix-conditional-write``: 1,335 runs ->
1,084 for its 1,016 classes (319 -> 68 sleep-blocked); ``samza-drain``/``drain``:
1,506 -> 1,504 (2 -> 0). A race adds one option, not all: source-DPOR's backtrack set
(Abdulla et al. 2014), an initial of its wakeup sequence (``races.wakeup_of``); that
branch's run follows the sequence (``SleepSetSource.guide``), so the race's second step
wakes what it touches before a sleeping step must run (1,084 -> 1,057 runs, 68 -> 41
sleep-blocked). Optimal DPOR's wakeup trees (Abdulla et al. 2014/2017) took it further
(``raceproof.sim.backtrack``): a sequence that a step asleep where the race's
run took its branch could start is covered already; else it goes down the branches taken
or queued whose step starts it, and queues the first held-back one that starts what is
left. A step that drew a model-level choice races as the value it drew (its other values
are other transitions, each with its runs through the same draw), and the branch that
reverses a race draws the values its steps drew (``SleepSetSource.forced``). Beside a
step asleep, a model draw's other values are held back too (``Node.deferred``): a value's
runs are new only where each step asleep is woken before it runs, and the run through
that step's branch shows the race that wakes it, whose sequence comes down to the value.
Where nothing is asleep, or a run through a draw above it did not know its races (a cut
instant; a step without a key, ``Node.unknown``), every value is branched.
``fix-conditional-write``: 1,057 runs for 1,016 classes (41 sleep-blocked) -> 987 for 964
(23); ``fix-stop-dedupe`` 4,350 for 4,096 (254) -> 4,332 for 4,084 (248); ``samza-drain``
/``drain`` 1,504 for 1,504 -> 576 for 576. The classes that went were equivalent to
another: the same 737, 3,300 and 576 Mazurkiewicz traces (runs in normal form under this
dependency) and the same endings; a step that drew was never asleep, so a run with it
before a step it commutes with, and one after, both counted. Left: a step that touches
everything (an interrupt, a join: what it does to the others is not described) has no
known races, so its draw still branches every option and every value below it in its
instant (computing its races as any step's lost an ending of the soundness generator's
crash-and-pause model); and a race whose wakeup sequence starts with an event the kernel
does not name (a Brooklin JVM pause's resumption) has no option to queue. Then a node's
pause, which touches everything only by holding its processes' events past the instant
(``World.touch_all(holds=True)``), races as a step dependent on every later step of its
instant (a crash's interrupt makes another step under the same key: its races stay
unknown); an event that resumes nothing reads no pause (the unnamed steps above); and a
branch queued for wakeup sequences whose sibling, queued before it, turned out once run
to be a weak initial of each is not run: the sequences go down that sibling
(``backtrack.covered``). ``fix-conditional-write`` 987 runs for 964 classes (23
sleep-blocked) -> 964 for 964 (0); ``fix-stop-dedupe`` 4,332 for 4,084 (248) -> 4,084 for
4,084 (0); the same traces, endings and probes.

With the state cache a run is cut where it meets a state explored before
(``state_cache``). Met with its instant still open, the run goes on to the instant's end
(``_cover``), but the runs past the cut are the covering visit's, made from another
prefix: what they show racing was never told to this run's draws, so every draw of the
instant was taken as racing with its races unknown, and released in full (``fix-
conditional-write`` 679 runs for 522 classes, 39 sleep-blocked; ``fix-stop-dedupe`` 1,884
for 1,488, 118; the coordinator's ``block-event-loop`` at ``writes=4`` 10,442 runs, 12).
Steps due at different instants never race, so each visit now keeps what the steps past
it in its instant touch, in every run through it and through the visits that cover one
(``raceproof.sim.cover_races``), and a draw before a cut waits on the covering visit: it
is released in full only once a step there may race with its step, or, for a node's
pause (whose race with a later step is reversed by that step alone), each such step is
its race's wakeup sequence. A state met after the last step of its instant cuts at once,
the instant closed first: its races are all the run's. And beside a step asleep a model
draw's values are held back with the cache too (``backtrack.hold_values``): a run through
that step's branch that a cover cut is released in full there once its covering subtree
may race with it. ``fix-conditional-write`` 679 -> 629 runs for its 522 classes (39 -> 0
sleep-blocked), ``fix-stop-dedupe`` 1,884 -> 1,796 runs (118 -> 3; 1,520 classes judged
where 1,488 were: the cache cuts at other places), the same verdicts and probes.
Those 3 were draws released in full: a summary named the step that may race, not the steps
that lead to it from the covering state, so it had no wakeup sequence to give. A summary now
keeps those paths (``cover_races.paths``, at most 8 a step), and a covered run's draw gets the
races of its run continued along each: ``fix-stop-dedupe`` 1,796 -> 1,793 runs (3 -> 0).

``make soundness`` then found the reduction losing an ending, with or without the cache: a
read guarded by a counter raced with a toggle of the field it reads, and the sequence that
reverses the race (the toggle) was taken as covered by the counter's add, asleep there and
independent of the toggle. Run first, the add makes the guarded read read the counter only,
and the race is gone. A step asleep covers a sequence only if it also commutes with the
race's earlier step, which runs after the sequence (``races.wakeup_of`` gives the sequence's
last step that step's footprint too). No built-in proof's verdict or classes changed; some
branches the old test skipped now run and are cut asleep: ``fix-conditional-write`` 964 ->
967 runs without the cache (3 sleep-blocked), ``fix-stop-dedupe`` 4,084 -> 4,107 (23); with
the cache 632 (3) and 1,763 (4; 8 without the summaries' paths). Those were all a pause's
race: its branch ran the stop step again without the pause and was cut on the step asleep the
pause would have woken. A race of a step that drew now ends its sequence with that step and
its values (``races._with_earlier``): 964 and 4,084 runs, 629 and 1,759 with the cache, none
sleep-blocked.
Sleep sets are sound for every
reachable state (each Mazurkiewicz trace of the configuration keeps at least one
representative), so a reduced proof that is otherwise unpruned is complete.

A branch is named by data alone: its choice prefix and the sleep set it
starts with (``Shard``), so the same walk can be split across processes or a
Spark campaign (``raceproof.sim.sharding``).

No plain ``assert``: a state look-up without a cache is a ``KernelError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from raceproof.sim import cover_races
from raceproof.sim.choices import SCHEDULE_LABEL, Choice, ChoiceSource
from raceproof.sim.errors import KernelError
from raceproof.sim.fingerprint import Memo, Unfingerprintable
from raceproof.sim.footprint_claims import StepRecord
from raceproof.sim.races import (
    Footprint,
    Insertion,
    InstantStep,
    Wakeup,
    causes,
    dependent,
    process_of,
    races_of,
)
from raceproof.sim.races import (
    union as union,
)
from raceproof.sim.state_cache import AUTOMATIC, Seen, StateCache, StateSeen, Visit, kernel_state
from raceproof.sim.world import DISABLED, ENDS_RUN, SleepBlocked, World

# A step of a run, for the state cache's summaries (``cover_races``): the draw indices it
# started and ended at, its instant, its key, the values it drew and its footprint.
RunStep = tuple[int, int, int | None, str | None, tuple[int, ...], Footprint, str | None]


@dataclass
class DrawRecord:
    """One draw of a run past its replayed prefix: what the walk needs to branch there."""

    label: str
    n: int
    value: int
    keys: tuple[str | None, ...] | None  # the step key of each option (schedule draws)
    sleep: dict[str, Footprint]  # the sleep set when the draw was made
    footprint: Footprint = None  # of the step the chosen option ran (schedule draws)
    # The steps from this draw's to the end of its instant commute pairwise and draw
    # nothing: every order of them is equivalent, so its other options need no branch.
    commutes: bool = False
    at_ms: int | None = None  # the virtual instant of the draw (its node's race group)


@dataclass(frozen=True)
class Shard:
    """A subtree of the walk, described by data: its prefix and its starting sleep set."""

    prefix: tuple[int, ...]
    sleep: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...] = ()
    depth: int = 0  # branchings taken to reach it (for the deviation cap)

    def sleep_set(self) -> dict[str, Footprint]:
        return {key: dict(fp) for key, fp in self.sleep}

    @staticmethod
    def freeze(sleep: dict[str, Footprint]) -> tuple[tuple[str, tuple[tuple[str, bool], ...]], ...]:
        return tuple(sorted((k, tuple(sorted((fp or {}).items()))) for k, fp in sleep.items()))


class SleepSetSource(ChoiceSource):
    """Replays ``prefix``, then picks the first option whose step is awake.

    ``reduce=False`` records the same draws but never puts a step to sleep:
    the full walk, with identical bookkeeping.
    """

    observes_steps = True

    def __init__(
        self,
        prefix: Sequence[int],
        sleep: dict[str, Footprint] | None,
        *,
        reduce: bool,
        cache: StateCache | None = None,
        depth: int = 0,
        log_steps: bool = False,
        guide: Sequence[str] = (),
        forced: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        super().__init__()
        self.cache, self.depth = cache, depth
        self._memo = Memo()  # the automatic fingerprint's texts of this run's ops
        # ``log_steps``: every step of the run, for the footprint check (``footprint_check``).
        self.steps: list[StepRecord] | None = [] if log_steps else None
        self._clock: World | None = None  # the run's World, for each logged step's instant
        self._options: tuple[str | None, ...] | None = None
        # Per schedule draw past the prefix, with the state cache: the visit made
        # there and its op index; in the debug mode also the earlier visit it repeats.
        self.visit_at: dict[int, tuple[Visit, int, str]] = {}
        self.compare_at: dict[int, Visit] = {}
        self.prefix = tuple(prefix)
        self._init_cover()
        self.start_sleep = dict(sleep or {}) if reduce else {}
        self.reduce = reduce
        # Sleep sets are tracked from the last prefix draw on (the walk knows the rest).
        self.tracking = not self.prefix
        self.sleep: dict[str, Footprint] = {}
        self.draws: list[DrawRecord] = []  # from position len(prefix) - 1 on
        self._drew = False
        self._drew_last = False  # a step drew a model-level choice since the last look-up
        self._open: DrawRecord | None = None  # the schedule draw whose step is running
        # Per schedule draw (prefix included): the footprint of the step it chose,
        # whether that step drew model-level choices, and which step each draw is in.
        self._step_at: int | None = None
        self.step_footprints: dict[int, Footprint] = {}
        self.step_drew: dict[int, bool] = {}
        self.draw_step: dict[int, int] = {}
        # The steps of the current instant, from the first schedule draw on (commuting instants).
        self._world: World | None = None
        self._instant_ms: int | None = None
        # Per step: its process, footprint, whether it drew, its draw, its logged step's index
        # and the key of the step that triggered its event.
        self._instant: list[InstantStep] = []
        self._instant_at: list[int | None] = []  # per step of the instant: the draw that chose it
        # Per step of the instant: it touched everything, but only by holding other steps'
        # events (a node's pause, ``World.step_races_known``): its races are still known.
        self._instant_holds: list[bool] = []
        # Schedule draws (positions, the prefix's too) whose chosen step raced in its instant
        # (``_mark_races``): the walk branches a deferred draw's other options only then.
        self.raced: set[int] = set()
        # Cut where a step asleep had to run next (every step due asleep, or one due alone).
        self.all_asleep = False
        # The wakeup sequence this run follows past its prefix (``_pick_awake``), and the
        # races of each draw whose step raced (``_races``), for the walk's backtrack sets.
        self.guide = list(guide)
        self.wakeups: dict[int, list[Wakeup] | None] = {}
        # Per step of the sequence that drew: the values it drew in the race's run, drawn
        # again past the prefix (a model draw of the step, in order; ``_pick``).
        self.forced = dict(forced or {})
        self._forced: list[int] = []  # the running step's values still to draw
        self._values: list[int] = []  # the values the running step drew

    def _init_cover(self) -> None:
        """The state the cache needs beside the walk's: where a cover was met, what waits."""
        # A state the cache covers, met with its instant open (``_cover``): the cut to make
        # once the instant closes.
        self.covered: StateSeen | None = None
        # At a cover with its instant open: the instant's steps before the cut, the cut's draw
        # index and instant, whether the covering visit names resources as this run does
        # (``cover_races.frame``), and per draw before the cut whose races the run knows, what
        # waits on the covering visit's summary: (position, footprint, process, a pause's).
        self.cover_at = 0
        self.cover_index = 0
        self.cover_ms: int | None = None
        self.cover_framed = False
        self.watches: list[tuple[int, Footprint, str | None, bool, int]] = []
        self.cover_steps: list[InstantStep] = []  # the instant's steps before the cut
        self.cover_enablers: dict[str, str] = {}  # who triggered each step pending at the cut
        # With the state cache, every step of the run: the draw indices it started and ended
        # at, its instant, its key, the values it drew and its footprint (``cover_races``:
        # the visits' summaries).
        self.run_steps: list[RunStep] = []
        self._step_start = 0

    # -- draws ---------------------------------------------------------------
    def _replayed(self, index: int, n: int) -> int:
        value = self.prefix[index] if self.prefix[index] < n else 0
        if index == len(self.prefix) - 1:
            self.tracking = True
            self.sleep = dict(self.start_sleep)
        return value

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        index = len(self.record)
        self._drew = True
        if self._step_at is not None:
            self.draw_step[index] = self._step_at
        forced = self._forced.pop(0) if self._forced else 0
        if index < len(self.prefix):
            value = self._replayed(index, n)
        else:
            value = forced if forced < n else 0
        self._values.append(value)
        if self.tracking:
            self.draws.append(
                DrawRecord(
                    label=label,
                    n=n,
                    value=value,
                    keys=None,
                    sleep=dict(self.sleep),
                    at_ms=self._at(),
                )
            )
        return value

    def _at(self) -> int | None:
        return self._clock.now_ms if self._clock is not None else None

    def schedule_steps(self, keys: list[str | None], world: World | None = None) -> int:
        n = len(keys)
        index = len(self.record)
        self._step_at = index
        self._options = tuple(keys)
        if world is not None and self.reduce:
            self._world = world
        if index < len(self.prefix):
            value = self._replayed(index, n)
        elif self.covered is not None:
            value = 0
        else:
            if self.cache is not None and world is not None and world.state_fingerprint:
                self._look_up(world, world.state_fingerprint, index)
            value = self._pick_awake(keys)
            if value < 0:
                for key in keys:
                    self._log_asleep(key)
                self.all_asleep = True
                raise SleepBlocked("every step due now is asleep")
        self.record.append(Choice(SCHEDULE_LABEL, n, value))
        if self.tracking:
            record = DrawRecord(
                label=SCHEDULE_LABEL,
                n=n,
                value=value,
                keys=tuple(keys),
                sleep=dict(self.sleep),
                at_ms=_due_at(world) if world is not None else self._at(),
            )
            self.draws.append(record)
            self._open = record
        return value

    def _pick_awake(self, keys: Sequence[str | None]) -> int:
        """The option to take past the prefix: the first awake one, or, while this run follows
        a wakeup sequence, its earliest step among the awake options (-1: none is awake)."""
        awake = [i for i, key in enumerate(keys) if key not in self.sleep]
        for step in self.guide:
            for i in awake:
                if keys[i] == step:
                    return i
        return awake[0] if awake else -1

    def _look_up(self, world: World, model: Callable[[], str], index: int) -> None:
        """Cut the run here if the state cache covers this state (``StateSeen``)."""
        if self.cache is None:
            raise KernelError("a state look-up without a state cache")
        if index in self.visit_at:  # looked up already before this draw: its node is taken
            return
        seen = self._state(world, model)  # canonical over the declared symmetric actors
        if seen is None:
            return
        fingerprint, sleep = seen.fingerprint, frozenset(map(seen.rename, self.sleep))
        frame = cover_races.frame(world, seen.raw)
        covering, new = self.cache.look_up(
            fingerprint, sleep, self.depth, seen, world.steps, world.now_ms, frame
        )
        if covering is not None and not self.cache.check:
            seen_here = StateSeen(
                fingerprint, covering=covering, steps=world.steps, now_ms=world.now_ms
            )
            if self._world is None or not self._instant:
                raise seen_here
            if not self._instant_open(world):  # every step of it ran: its races are all seen
                self._close_instant()
                raise seen_here
            self.cover_at, self.cover_index, self.cover_ms = (
                len(self._instant),
                index,
                self._instant_ms,
            )
            self.cover_framed = frame is not None and covering.frame == frame
            self.cover_enablers = world.pending_enablers()
            self._cover(seen_here)
            return
        if new is None:  # the debug mode: walk it anyway, compare when it is done
            new = Visit(
                sleep, self.depth, steps=world.steps, now_ms=world.now_ms, seen=seen, frame=frame
            )
            if covering is not None and covering.sleep == sleep:
                self.compare_at[index] = covering
        self.visit_at[index] = (new, len(world.history), fingerprint)

    def _instant_open(self, world: World) -> bool:
        """A step of the instant this run is in is still due (a test's clock: say so)."""
        peek = getattr(world, "peek", None)
        return peek is None or peek() == self._instant_ms

    def _cover(self, seen: StateSeen) -> None:
        """The state is covered, but its instant is open: run on to the instant's end, then cut.

        The rest of this run is covered by ``seen.covering``'s subtree, so nothing past
        here is branched, put to sleep or looked up (``tracking`` off) and the run takes
        option 0 at every draw. But the draws of the open instant before here can still be
        closed as commuting (``_close_instant``): that claim is about the steps this run
        takes from each such draw to the instant's end, in whatever order, so the run
        takes them, and is cut (``seen``, with the counts at this state) right after the
        instant closes. A run that ends first is cut all the same (``covered``: the walk
        counts it as this cut, whatever it ended with). What the covering subtree does in the
        rest of the instant may still race with the steps before the cut: those draws wait on
        its visit (``_mark_races``, ``raceproof.sim.cover_races``). A state met once every
        step of its instant has run (the next is due later) is cut at once, the instant
        closed first (``_look_up``): its races are all this run's.
        """
        self.covered = seen
        self.tracking = False
        self.sleep = {}

    def _state(self, world: World, model: Callable[[], str]) -> Seen | None:
        """The state as the cache keys it; None when it has no name (said once, then stateless)."""
        if self.cache is None or (model is AUTOMATIC and self.cache.off is not None):
            return None
        try:
            return kernel_state(world, model, self._memo)
        except Unfingerprintable as exc:
            self.cache.off = str(exc)  # said once (the report's ``state_cache_off``)
            return None

    # -- steps ---------------------------------------------------------------
    def watch_world(self, world: World) -> None:
        """The World of this run (it calls this when it starts): logged steps carry its time.

        With a state cache that names states itself, the World is told so before the
        model is built (``declare_state`` in the build then replaces it).
        """
        self._clock = world
        cache = self.cache
        if cache is None:
            return
        world.at_state = self._at_state
        if cache.automatic and cache.off is None:
            world.state_fingerprint = AUTOMATIC

    @property
    def world(self) -> World | None:
        """The World of the run (``watch_world``), once it started."""
        return self._clock

    def _at_state(self, world: World) -> None:
        """Between two steps past the replayed prefix: look the state up (``_look_up``).

        A state between steps determines every draw of the next step, model-level
        ones included; its visit hangs on the next draw's node (the first draw of
        the runs that share this state's prefix). Looked up after a step that drew a
        model-level choice (where runs part) and at every schedule draw (where they
        part too, ``schedule_steps``): two runs that meet again meet at such a point.
        """
        self._step_start = len(self.record)
        if not self._drew_last:
            return
        self._drew_last = False
        index = len(self.record)
        if self.tracking and index >= len(self.prefix) and world.state_fingerprint is not None:
            self._look_up(world, world.state_fingerprint, index)

    def before_step(self, key: str | None) -> None:
        self._drew = False
        self._values = []
        self._forced = list(self.forced.pop(key, ())) if key is not None else []
        if self.tracking and key is not None and key in self.sleep:
            self._log_asleep(key)
            self.all_asleep = True
            raise SleepBlocked(f"step {key} is asleep")

    def _log_asleep(self, key: str | None) -> None:
        """The run is cut on ``key``, asleep: the footprint check tests its claim too."""
        if self.steps is not None and key is not None:
            at_ms = self._clock.now_ms if self._clock is not None else None
            self.steps.append(
                StepRecord(
                    key=key,
                    footprint=self.sleep[key],
                    drew=False,
                    options=None,
                    at_ms=at_ms,
                    asleep=True,
                )
            )

    def after_step(self, key: str | None, footprint: Footprint) -> None:
        touched, ends = footprint, False
        if footprint is not None and ENDS_RUN in footprint:
            # Its process raised and the run ends on it: no step runs after it, so no step
            # may sleep past it or count as commuting with it (the walk would lose the
            # endings where that step ran first, then the error).
            touched = {r: w for r, w in footprint.items() if r != ENDS_RUN}
            footprint, ends = None, True
        if self.steps is not None:
            clock = self._clock
            self.steps.append(
                StepRecord(
                    key=key,
                    footprint=touched,
                    drew=self._drew,
                    options=self._options,
                    at_ms=clock.now_ms if clock is not None else None,
                    ends_run=ends,
                    enabled_by=clock.enabled_by if clock is not None else None,
                    disabled=tuple(clock.disabled) if clock is not None else (),
                )
            )
        self._options = None
        if key is not None and key in self.guide:
            self.guide.remove(key)
        self._drew_last = self._drew_last or self._drew
        if self.cache is not None and self._clock is not None:
            self._ran(key, footprint)
        if self._world is not None:
            now = self._world.now_ms
            if now != self._instant_ms:
                self._close_instant()
                if self.covered is not None:
                    raise self.covered
                self._instant_ms = now
            logged = len(self.steps) - 1 if self.steps is not None else None
            by = getattr(self._world, "enabled_by", None)  # a test's clock has none
            step = (key, footprint, self._drew, self._open, logged, by, tuple(self._values))
            self._instant.append(step)
            self._instant_at.append(self._step_at)
            self._instant_holds.append(
                footprint is None and not ends and getattr(self._world, "step_races_known", False)
            )
            for cancelled in self._world.disabled:
                self._instant_at.append(None)
                self._instant_holds.append(False)
                # The step it cancelled was due in this instant and never runs in this order:
                # still one of the instant's steps, the one it is dependent with (``World._disables``).
                self._instant.append(
                    (None, {DISABLED + cancelled: True}, False, None, None, None, ())
                )
        if self._step_at is not None:
            self.step_footprints[self._step_at] = footprint
            self.step_drew[self._step_at] = self._drew
            self._step_at = None
        if self._open is not None:
            self._open.footprint = footprint
            self._open = None
        if self.tracking and self.sleep:
            self.sleep = {k: fp for k, fp in self.sleep.items() if not dependent(fp, footprint)}

    def _ran(self, key: str | None, footprint: Footprint) -> None:
        """Log a step for the visits' summaries (``cover_races``), and the steps it cancelled."""
        clock = self._clock
        now = clock.now_ms if clock is not None else None
        start, end, drawn = self._step_start, len(self.record), tuple(self._values)
        by = getattr(clock, "enabled_by", None)  # a test's clock has none
        self.run_steps.append((start, end, now, key, drawn, footprint, by))
        for cancelled in getattr(clock, "disabled", ()):
            self.run_steps.append((start, end, now, None, (), {DISABLED + cancelled: True}, None))

    def _mark_races(
        self,
        steps: Sequence[InstantStep],
        after: list[set[int]],
        *,
        complete: bool,
        whole: bool = True,
    ) -> None:
        """Add to ``raced`` the draws of an instant whose chosen step raced in it.

        A step races when it drew a model-level choice, touches everything, or is
        dependent with a later step of the instant that some order could run before it
        (``races.causes``). Every draw of the instant counts as racing when the run did not see
        the instant whole (``complete`` False: cut, bounded or ended inside it).
        A race keeps its wakeup sequence (``wakeups``) only if the run saw the instant
        ``whole``: one cut on a step asleep counts as complete, but knows no race past the
        cut, so its draws that raced need every option (None).

        The state cache covered the run with the instant open (``_cover``): the draws before
        the cut race as above with the steps the run took to the instant's end, and each
        whose races are known also waits on the covering visit (``watches``): the walk
        releases it in full once a step of that visit's subtree in the instant may race
        with its step (``raceproof.sim.cover_races``). Past the cut the draws are not the
        walk's. A covering visit that names resources otherwise (``cover_framed`` False)
        tells nothing: every draw of the instant counts as racing, its races unknown.
        """
        at, self._instant_at = self._instant_at, []
        holds, self._instant_holds = self._instant_holds, []
        covered = self.covered is not None
        if not complete or (covered and not self.cover_framed):
            for p in at:
                if p is not None:
                    self.raced.add(p)
                    self.wakeups[p] = None
            return
        if covered:
            self.cover_steps = list(steps[: self.cover_at])
        for i, position in enumerate(at):
            if position is None or (covered and i >= self.cover_at):
                continue  # past the cut: the covering visit's draws, not the walk's
            races = races_of(steps, after, i, known=holds[i])
            if races is None or races:
                self.raced.add(position)
                self.wakeups[position] = races if whole else None
            if covered and races is not None:
                watch = (position, steps[i][1], process_of(steps[i][0]), holds[i], i)
                self.watches.append(watch)

    def end_races(self, ended: bool) -> None:
        """The run is over: mark the races of its last instant.

        ``ended``: the run ended unbounded, or was cut with every step due asleep; its
        last instant is whole only if nothing more was due at that instant then.
        """
        steps, self._instant = self._instant, []
        world = self._world
        # Cut where a step asleep had to run: it ran in the run that put it to sleep, which
        # sees its races (and those of the steps it enables) with this instant's steps.
        whole = ended and world is not None and not world.instant_open()
        self._mark_races(steps, causes(steps), complete=self.all_asleep or whole, whole=whole)

    def remembered_footprint(self, position: int) -> Footprint:
        """What a later sibling of the step chosen at draw ``position`` may sleep on.

        That step's footprint; None (dependent on everything) if it drew a
        model-level choice, since it then stands for one transition per value,
        or if it never finished.
        """
        return self.step_footprints.get(position) if self.step_drew.get(position) is False else None

    def _close_instant(self) -> None:
        """Time moved on: mark the draws of the instant just ended whose rest commutes.

        From a draw's state, the steps the run took from there to the end of the
        instant are all the steps that instant holds in any order (time moves on
        only when nothing is due). If they commute pairwise (steps of one process
        keep their order anyway) and none draws a model-level choice, each of them
        behaves the same in every order and every order is equivalent to the one
        run: the draw is a persistent set of one option, and with the sleep sets
        still sound (Godefroid's persistent sets with sleep sets). A step the run
        cancelled in the instant (a timer's firing) is one of its steps too, placed
        where it was cancelled with the footprint its cancel wrote (``World._disables``):
        no draw at or before its cancel is marked. A run cut before
        its instant ended (a sleeping step, a bound, the end of the run) never
        closes it, so nothing is marked on a partial view; a run the state cache
        covers runs on to its instant's end first (``_cover``).
        """
        steps, self._instant = self._instant, []
        after = causes(steps)
        self._mark_races(steps, after, complete=True)
        start = len(steps)
        for j in range(len(steps) - 1, -1, -1):
            footprint, drew = steps[j][1], steps[j][2]
            if footprint is None or drew:
                break
            if any(
                dependent(footprint, steps[k][1]) and j not in after[k]
                for k in range(j + 1, len(steps))
            ):
                break
            start = j
        marked = False
        for _, _, _, record, logged, _, _ in steps[start:]:
            if record is not None:
                record.commutes = marked = True
            if marked and logged is not None and self.steps is not None:
                # The footprint check tests the claim: every order of these steps is equivalent.
                self.steps[logged] = replace(self.steps[logged], commutes=True)


def _due_at(world: World) -> int | None:
    """The instant a schedule draw of ``world`` is in (a test's clock may know only its time)."""
    due = getattr(world, "due_ms", None)
    return due if due is not None else getattr(world, "now_ms", None)


@dataclass
class Node:
    """A draw of the walk, the branches still to try there and what its siblings touched."""

    position: int
    record: DrawRecord
    depth: int  # branchings taken on the path up to here
    pending: list[int] = field(default_factory=list)
    # Options held back until a run through this draw shows its step racing (the walk's
    # ``defer``), and the walk-order chain of each option released (``exhaustive``).
    deferred: list[int] = field(default_factory=list)
    released: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    # Per option: the wakeup sequence its branch's run follows past it (``SleepSetSource.guide``)
    # and the values its steps that drew draw again (``SleepSetSource.forced``).
    guides: dict[int, tuple[str, ...]] = field(default_factory=dict)
    forced: dict[int, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    # The options queued here (``backtrack.backtrack``), and the sleep set each started with.
    branched: set[int] = field(default_factory=set)
    sleeps: dict[int, dict[str, Footprint]] = field(default_factory=dict)
    # The draw each branch's run made next (the walk's tree, for ``backtrack.insert``), and
    # the wakeup sequences waiting for a branch queued here to run before they go down it.
    children: dict[int, Node] = field(default_factory=dict)
    waiting: dict[int, list[Insertion]] = field(default_factory=dict)
    # Per option queued only for wakeup sequences (``backtrack._step``): those sequences, as
    # they came to this draw; and the options queued for any other reason (every option
    # held back: ``backtrack._release_all``), which run whatever ran since.
    asked: dict[int, list[Insertion]] = field(default_factory=dict)
    must: set[int] = field(default_factory=set)
    # It branched or held options or values back at its making (its race group:
    # ``proof_units``), and a run through it did not know its races (every value held back
    # below it is queued).
    defers: bool = False
    unknown: bool = False
    explored: dict[str, Footprint] = field(default_factory=dict)  # key -> footprint
    visit: tuple[Visit, int, str] | None = None  # the state cache's visit here, op index
    repeats: Visit | None = None  # debug mode: the earlier visit of the same state
    prefix: tuple[int, ...] = ()  # the choices that lead to this draw
    parent: Node | None = None  # the draw before it on its path
    # The deviations (position, value) of the run that made this draw, in order: with its
    # own branch appended, a branch's place in the walk's order (``raceproof.sim.proof_units``).
    chain: tuple[tuple[int, int], ...] = ()

    def holds(self) -> bool:
        """It branches (or holds options or values back) from its making on: the runs below
        it in its instant are all those that can release anything below it, races of the
        draws above it included (``backtrack.insert``), and it is their race group."""
        return self.defers


def branch_options(
    record: DrawRecord,
    depth: int,
    max_branch: int | None,
    max_deviations: int | None,
    cut: dict[str, int],
) -> tuple[list[int], int]:
    """The values still to try at a new node, and how many the sleep set skips."""
    n = record.n
    limit = n if max_branch is None else min(n, max_branch)
    if limit < n:
        cut["max_branch"] = cut.get("max_branch", 0) + (n - limit)
    others = [v for v in range(limit) if v != record.value]
    skipped = 0
    if record.keys is not None:
        awake = [] if record.commutes else [v for v in others if record.keys[v] not in record.sleep]
        skipped = len(others) - len(awake)
        others = awake
    if others and max_deviations is not None and depth + 1 > max_deviations:
        cut["max_deviations"] = cut.get("max_deviations", 0) + len(others)
        others = []
    return others, skipped
