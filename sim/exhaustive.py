"""Bounded exhaustive exploration: every schedule of a configuration, or an honest no.

The choice tree is walked breadth-first by number of deviations, statelessly:
every run starts from scratch and replays a prefix of choices, then takes the
walk's default at every later draw (choice 0, or with the reduction the first
option whose step is awake). Each run is a distinct path of the tree, and a
buggy variant's violation is found with the fewest deviations it needs. The
sleep set of a branch holds the footprints of its earlier siblings, each
learned by the sibling's first run, which the queue runs first. With the partial-order
reduction (``raceproof.sim.reduction``, on by default) a ``schedule`` draw is
not branched on an event whose step commutes with everything run since a
sibling explored it, and a run that would repeat an explored equivalence
class is cut where it starts to (``SleepBlocked``); model-level draws
(delays, faults) are enumerated in full where no step is asleep (beside one, a value
waits for a wakeup sequence to ask for it: ``backtrack.hold_values``). A schedule draw whose step races with
nothing in its instant holds its other options back until a run through it shows a
race there (``WalkOptions.defer``, ``raceproof.sim.reduction``); the options it then
releases take the releasing run's chain with their own place appended, so the frontier
stays in walk order (``entry_chain``).

What the report claims: ``complete`` means every equivalence class of
schedules of this configuration ran to its end and was judged — classes of
schedules that differ only in the order of commuting steps, where the
model's footprint declaration says which steps commute (a model without one is
walked in full, every schedule its own class). It is never claimed when
anything pruned the walk: a run stopped at a step or time bound, a cap on
deviations or on options per draw, or a budget spent with branches left. Each
of those is named in ``pruned`` with how much it cut. What the reduction
skipped is counted apart (``skipped_equivalent``, ``sleep_blocked``): it is
sound, so it does not make a proof incomplete.

No plain ``assert``: a prefix that replays differently (a nondeterministic
model: ``Nondeterministic``, the user's mistake, exit 4) or a repeat without its
first visit (``KernelError``, exit 70) breaks the proof's accounting and raises,
also under ``python -O``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raceproof.sim import cover_races
from raceproof.sim.backtrack import backtrack, covered, hold_values, insert
from raceproof.sim.enumeration import not_replayed
from raceproof.sim.errors import KernelError
from raceproof.sim.explore import Budget, Progress, count_probes
from raceproof.sim.footprint_check import FootprintChecker
from raceproof.sim.outcome import Runner, RunOutcome
from raceproof.sim.races import Wakeup
from raceproof.sim.reduction import (
    Footprint,
    Node,
    Shard,
    SleepSetSource,
    branch_options,
    union,
)
from raceproof.sim.shrink import shrink_found
from raceproof.sim.state_cache import StateCache, StateSeen, compare, ending
from raceproof.sim.verdicts import FINDINGS, Verdict
from raceproof.sim.world import SleepBlocked

ProofVerdict = Verdict  # a proof is ok, violated, inconclusive or error (never not-reached)


@dataclass
class ProofReport:
    verdict: ProofVerdict
    complete: bool
    schedules: int  # distinct schedules run to their end and judged
    runs: int  # every run, including those stopped at a bound or cut as equivalent
    max_deviations_seen: int
    pruned: dict[str, int] = field(default_factory=dict)  # bound -> branches cut
    found: RunOutcome | None = None
    shrunk: RunOutcome | None = None
    frontier_left: int = 0
    reduction: bool = True
    skipped_equivalent: int = 0  # branches the sleep sets skipped (covered by another)
    sleep_blocked: int = 0  # runs cut where they became equivalent to an explored one
    shards: int = 1
    state_cache_cuts: int = 0  # runs cut at a state the walk had explored before
    states_seen: int = 0  # distinct state fingerprints (with the state cache)
    symmetric_merged: int = 0  # cache hits on an image of a state seen (declared symmetry)
    state_cache_checked: int = 0  # debug mode: cuts run anyway and compared
    # Why the kernel could not name a state (``raceproof.sim.fingerprint``): said once, and
    # the walk went on stateless from there.
    state_cache_off: str | None = None
    footprints_checked: int | None = None  # --check-footprints: step pairs swapped and compared
    footprints_unverified: int = 0  # pairs whose swap could not be followed (unnamed steps)
    probes: dict[str, int] = field(default_factory=dict)  # probe -> judged schedules reaching it
    cross_checked: int | None = None  # --cross-check: the full walk's schedules, same endings
    # The deviations (position, value) of the run that found ``found``: its place in walk order.
    found_chain: tuple[tuple[int, int], ...] | None = None
    # A balanced proof's plan: each worker's work, the largest unit, the speedup it allows.
    balance: dict[str, object] | None = None
    # The first run a checker left undecided (``unknown``): the proof is inconclusive, and
    # ``pruned`` counts such runs under ``undecided by CHECKER``; this run gives the repro.
    undecided: RunOutcome | None = None

    @property
    def runs_per_class(self) -> float | None:
        """Runs made per class judged (1.0: no run wasted); None when no class was judged.

        A run the state cache cut is not counted: it stands for classes judged from the
        state it met, not for a run wasted (``sleep_blocked`` are).
        """
        judged = self.runs - self.state_cache_cuts
        return round(judged / self.schedules, 3) if self.schedules else None

    def accounting(self) -> dict[str, object]:
        """The report's fields for JSON output."""
        return {
            "complete": self.complete,
            "schedules": self.schedules,
            "runs": self.runs,
            "bounds_pruned": dict(sorted(self.pruned.items())),
            "reduction": self.reduction,
            "skipped_equivalent": self.skipped_equivalent,
            "sleep_blocked": self.sleep_blocked,
            "frontier_left": self.frontier_left,
            "shards": self.shards,
            "state_cache_cuts": self.state_cache_cuts,
            "states_seen": self.states_seen,
            "symmetric_merged": self.symmetric_merged,
            "state_cache_checked": self.state_cache_checked,
            **({} if self.state_cache_off is None else {"state_cache_off": self.state_cache_off}),
            "probes": dict(sorted(self.probes.items())),
            **({} if self.cross_checked is None else {"cross_checked": self.cross_checked}),
            **({} if self.balance is None else {"balance": self.balance}),
        } | (
            {}
            if self.footprints_checked is None
            else {
                "footprints_checked": self.footprints_checked,
                "footprints_unverified": self.footprints_unverified,
            }
        )


UNDECIDED = "undecided by "  # ``pruned`` key prefix: runs a checker left undecided


def count_undecided(pruned: dict[str, int], outcome: RunOutcome) -> None:
    """Count a run that no checker violated but one said ``unknown`` of, under each such checker.

    Never a judged schedule: the proof cannot be ``complete`` over it (``pruned`` is not empty).
    """
    for name in outcome.undecided_by or ["?"]:
        key = UNDECIDED + name
        pruned[key] = pruned.get(key, 0) + 1


def _explored(node: Node, key: str | None, source: SleepSetSource, position: int) -> None:
    """Remember the footprint of the branch ``key`` took at ``node`` (for its later siblings)."""
    if key is not None:
        node.explored[key] = source.remembered_footprint(position)


def _child_sleep(node: Node, reduce: bool) -> dict[str, Footprint]:
    """The sleep set a new branch at ``node`` starts with: the node's, plus explored siblings."""
    if not reduce:
        return {}
    sleep = dict(node.record.sleep)
    if node.record.keys is not None:
        for key, footprint in node.explored.items():
            if footprint is not None:
                sleep[key] = footprint
    return sleep


@dataclass(frozen=True)
class WalkOptions:
    """How a walk branches and what it checks on the way (``prove``'s keyword options)."""

    max_deviations: int | None = None
    max_branch: int | None = None
    reduction: bool = True
    state_cache: bool = False
    state_cache_check: bool = False
    check_footprints: bool = False
    defer: bool = True  # with the reduction: a draw's options wait for its step to race


# A branch still to walk: the draw it leaves from and the value it takes there.
Entry = tuple[Node, int]


def entry_chain(entry: Entry) -> tuple[tuple[int, int], ...]:
    """A branch's place in walk order (by length, then by value): the run's ``chain``.

    The deviations that lead to it; for an option released at a deferred draw, the
    chain of the run that released it with that option appended (``ProofWalk._release``).
    """
    node, value = entry
    released = node.released.get(value)
    return released if released is not None else (*node.chain, (node.position, value))


@dataclass
class WalkStart:
    """One run to make: the prefix it replays, the sleep set it starts with, where it hangs."""

    prefix: tuple[int, ...]
    sleep: dict[str, Footprint]
    depth: int
    parent: Node | None = None
    chain: tuple[tuple[int, int], ...] = ()
    guide: tuple[str, ...] = ()  # the wakeup sequence to follow past the branch (``Node.guides``)
    forced: dict[str, tuple[int, ...]] | None = None  # the values it draws (``Node.forced``)

    @staticmethod
    def of_entry(entry: Entry, reduce: bool) -> WalkStart:
        node, value = entry
        sleep = node.sleeps[value] = _child_sleep(node, reduce)
        return WalkStart(
            prefix=(*node.prefix, value),
            sleep=sleep,
            depth=node.depth + 1,
            parent=node,
            chain=entry_chain(entry),
            guide=node.guides.get(value, ()),
            forced=node.forced.get(value),
        )


class ProofWalk:
    """A breadth-first walk over a part of the choice tree, with its counts.

    ``prove`` walks the whole tree with one; a unit of a balanced proof
    (``raceproof.sim.proof_units``) walks a list of branches with one, for a
    bounded number of runs, and hands back the ``frontier`` it left.
    """

    def __init__(
        self,
        run: Runner,
        options: WalkOptions,
        *,
        progress: Progress | None = None,
        shrink_found: bool = True,
    ) -> None:
        self.run, self.options, self.progress = run, options, progress
        self.shrink_found = shrink_found
        self.cache = StateCache(options.state_cache_check) if options.state_cache else None
        self.checker = FootprintChecker(run) if options.check_footprints else None
        self.cache_cuts = self.schedules = self.runs = self.deepest = 0
        self.skipped = self.blocked = 0
        self.pruned: dict[str, int] = {}
        self.bounds: Any = None  # the runs' Bounds, once a run told them (``_went``)
        self.probes: dict[str, int] = {}
        self.frontier: deque[Entry] = deque()
        self.repeats: list[Node] = []  # debug mode: nodes at states seen before
        self.found: RunOutcome | None = None
        self.shrunk: RunOutcome | None = None
        self.undecided: RunOutcome | None = None
        self.found_chain: tuple[tuple[int, int], ...] | None = None
        # Draws of covered runs waiting on their covering visits (``_cover_races``).
        self.watching: list[cover_races.Watch] = []

    def walk(
        self,
        budget: Budget,
        start: WalkStart | None,
        *,
        entries: Sequence[Entry] = (),
        stop_depth: int | None = None,
    ) -> None:
        """Run ``start`` (if any), then the queued ``entries`` and all below them, in order.

        Stops at a finding, when the frontier is empty, when ``budget`` is spent
        (the frontier is left queued) or before a branch deeper than ``stop_depth``.
        """
        budget.start()
        self.frontier.extend(entries)
        current = start
        while True:
            if current is None:
                if not self.frontier:
                    return
                if stop_depth is not None and len(entry_chain(self.frontier[0])) > stop_depth:
                    return
                entry = self.frontier.popleft()
                instead = covered(*entry) if self.options.reduction else None
                if instead is not None:  # its sequences go down a sibling that ran since
                    self.frontier.extend(instead)
                    continue
                current = WalkStart.of_entry(entry, self.options.reduction)
            if self._run_one(current, budget):
                return
            if self.runs >= budget.examples or budget.out_of_time():
                return
            current = None

    def _run_one(self, start: WalkStart, budget: Budget) -> bool:
        """One run and the branches it opens; True when it found a violation or an error."""
        source = SleepSetSource(
            start.prefix,
            start.sleep,
            reduce=self.options.reduction,
            cache=self.cache,
            depth=start.depth,
            log_steps=self.options.check_footprints,
            guide=start.guide,
            forced=start.forced,
        )
        outcome: RunOutcome | None
        cut: StateSeen | None = None
        try:
            outcome = self.run(source)
        except StateSeen as seen:
            outcome, cut, self.cache_cuts = None, seen, self.cache_cuts + 1
        except SleepBlocked:
            outcome, self.blocked = None, self.blocked + 1
        source.end_races(outcome is not None and outcome.bound is None)
        if outcome is not None and source.covered is not None:
            # Covered, and ended (or hit a bound) before its open instant closed: the cut.
            outcome, cut, self.cache_cuts = None, source.covered, self.cache_cuts + 1
        self.runs += 1
        prefix = start.prefix
        recorded = tuple(source.values)
        if recorded[: len(prefix)] != prefix:
            raise not_replayed(prefix, recorded)
        last = self._branch(start, source, recorded)
        if self.cache is not None and self.cache.stretch:
            self._went(start, source, cut)
        if self.cache is not None and self.cache.check and outcome is not None:
            walk = last
            while walk is not None:
                if walk.visit is not None:
                    visit = walk.visit[0]
                    visit.endings.add(ending(outcome, walk.visit[1], visit.seen, visit.now_ms))
                walk = walk.parent
        self.deepest = max(self.deepest, start.depth)
        if self.checker is not None and source.steps is not None:
            self.checker.check(source.steps, source.record, cut=outcome is None)
        if outcome is None:
            pass
        elif outcome.status in FINDINGS:  # a violation, or the model's own exception
            self.schedules += 1
            count_probes(self.probes, outcome)
            self.found, self.found_chain = outcome, start.chain
            if self.shrink_found:
                self.shrunk = shrink_found(self.run, outcome).outcome
            return True
        elif outcome.bound is not None:
            self.pruned[outcome.bound] = self.pruned.get(outcome.bound, 0) + 1
        elif outcome.status == Verdict.INCONCLUSIVE:  # ran to its end, and a checker can't tell
            count_undecided(self.pruned, outcome)
            self.undecided = self.undecided or outcome
        else:
            self.schedules += 1
            count_probes(self.probes, outcome)
        self._report_progress(start.depth, budget)
        return False

    def _went(self, start: WalkStart, source: SleepSetSource, cut: StateSeen | None) -> None:
        """Tell every visited state this run passed how far it went (``Visit.went``)."""
        world = source.world
        if world is None:
            return
        self.bounds = world.bounds
        here = (
            (cut.steps, cut.now_ms, cut.covering)
            if cut is not None
            else (world.steps, world.now_ms)
        )
        for visit, _, _ in source.visit_at.values():
            visit.went(*here)
        node = start.parent
        while node is not None:
            if node.visit is not None:
                node.visit[0].went(*here)
            node = node.parent

    def _branch(
        self, start: WalkStart, source: SleepSetSource, recorded: tuple[int, ...]
    ) -> Node | None:
        """Queue the branches of the draws past the run's prefix; the last draw's node."""
        prefix, draws = start.prefix, source.draws
        if prefix:
            first, draws = draws[0], draws[1:]
            if start.parent is not None and first.keys is not None:
                _explored(start.parent, first.keys[first.value], source, len(prefix) - 1)
        last = start.parent
        options = self.options
        # ``--check-footprints`` walks with every awake option branched: its cut runs test
        # the claims a held-back option rests on (the chosen step commutes with each step it
        # sleeps past), which the walk that holds options back never runs.
        defer = options.defer and options.reduction and not options.check_footprints
        made: list[Node] = []
        for offset, record in enumerate(draws):
            position = len(prefix) + offset
            node = Node(position, record, start.depth, prefix=recorded[:position])
            node.parent, node.chain = last, start.chain
            if last is not None:
                last.children[recorded[last.position]] = node
            node.pending, asleep = branch_options(
                record, start.depth, options.max_branch, options.max_deviations, self.pruned
            )
            self.skipped += asleep
            if record.keys is not None:
                _explored(node, record.keys[record.value], source, position)
                if defer:
                    node.deferred, node.pending = node.pending, []
            elif defer:
                hold_values(node, start.parent)
            node.defers = bool(node.pending or node.deferred)
            node.visit = source.visit_at.get(position)
            node.repeats = source.compare_at.get(position)
            if node.repeats is not None:
                self.repeats.append(node)
            made.append(node)
            last = node
        queued = self._queue_made(start, source, made) if defer else []
        if defer:
            self._release(start, source.raced, source.wakeups)
        self.frontier.extend((n, v) for n in made for v in n.pending)
        self.frontier.extend(queued)
        if self.cache is not None and defer:
            self._cover_races(start, source, last, recorded)
        return last

    def _cover_races(
        self, start: WalkStart, source: SleepSetSource, last: Node | None, recorded: tuple[int, ...]
    ) -> None:
        """The visits' summaries of their instants (``raceproof.sim.cover_races``): this run's
        steps added to the visits it passed, the visit that covered it linked to them, its draws
        before the cut waiting on that visit; the draws whose waiting ends are released."""
        branch = len(start.prefix) - 1
        new = [step for step in source.run_steps if step[1] > branch]  # the others ran before
        times = [step[2] for step in new if step[2] is not None]
        passed = [(visit, index) for index, (visit, _, _) in source.visit_at.items()]
        node = start.parent
        while node is not None and times and node.record.at_ms is not None:
            if node.record.at_ms < min(times):
                break
            if node.visit is not None:
                passed.append((node.visit[0], node.position))
            node = node.parent
        found: list[cover_races.Found] = []
        for visit, index in passed:
            entries: cover_races.Later = {}
            for begun, _, at_ms, key, drawn, footprint, _ in new:
                if begun >= index and at_ms == visit.now_ms:
                    had = entries.get((key, drawn), {})
                    entries[key, drawn] = union(had, footprint)
            if entries:
                paths = cover_races.paths(source.run_steps, index, visit.now_ms, branch)
                found.extend(cover_races.grow(visit, entries, paths))
        cut = source.covered
        if cut is not None and cut.covering is not None and source.cover_ms is not None:
            for visit, index in passed:
                if visit.now_ms == source.cover_ms and index <= source.cover_index:
                    if source.cover_framed:
                        found.extend(cover_races.link(cut.covering, visit))
                    else:
                        found.extend(cover_races.grow(visit, cover_races.TOP))
            nodes: dict[int, Node] = {}
            walk = last
            while walk is not None:
                nodes[walk.position] = walk
                walk = walk.parent
            for position, footprint, process, holds, at in source.watches:
                held = nodes.get(position)
                if held is None:
                    raise KernelError(f"a covered run's draw {position} has no node")
                draw = cover_races.Watch(
                    node=held,
                    chosen=recorded[position],
                    footprint=footprint,
                    process=process,
                    holds=holds,
                    steps=source.cover_steps,
                    index=at,
                    enablers=source.cover_enablers,
                )
                learned = cover_races.watch(cut.covering, draw)
                if learned is not None:
                    found.append(learned)
                if not draw.fired:
                    self.watching.append(draw)
        for draw, races in found:
            self._release_waiting(draw, races, start.chain)

    def _release_waiting(
        self,
        draw: cover_races.Watch,
        races: list[Wakeup] | None,
        chain: tuple[tuple[int, int], ...],
    ) -> None:
        """A covered run's draw whose step races with steps of the covering subtree: the
        branches its races need queued (None: not known, every option and value held back)."""
        for held, value in backtrack(draw.node, races, draw.chosen):
            held.released[value] = (*chain, (held.position, value))
            self.frontier.append((held, value))

    def settle(self) -> None:
        """The walk stops with branches left (a unit of a parallel proof handing on its
        frontier): a covering subtree may go on elsewhere, so every draw still waiting on one
        is released (``raceproof.sim.cover_races``)."""
        waiting, self.watching = self.watching, []
        for draw in waiting:
            if not draw.fired:
                draw.fired = True
                self._release_waiting(draw, None, draw.node.chain)

    def _queue_made(
        self, start: WalkStart, source: SleepSetSource, made: list[Node]
    ) -> list[Entry]:
        """The branches this run's races ask for below its own draws, and those the wakeup
        sequences waiting on its branch ask for (``Node.waiting``), in that order."""
        queued: list[Entry] = []
        for node in made:
            if node.record.keys is not None and node.position in source.raced:
                races = source.wakeups.get(node.position)
                for held, value in backtrack(node, races, node.record.value):
                    if held is node:
                        node.pending.append(value)
                    else:
                        queued.append((held, value))
        parent = start.parent
        waiting = parent.waiting.pop(start.prefix[-1], []) if parent is not None else []
        if parent is not None and made and made[0].record.at_ms == parent.record.at_ms:
            for insertion in waiting:
                queued.extend(insert(made[0], insertion))
        return queued

    def _release(
        self, start: WalkStart, raced: set[int], wakeups: dict[int, list[Wakeup] | None]
    ) -> None:
        """Queue the held-back options of the draws of this run's first instant whose step raced.

        Only a draw of the instant the run's branch is in can learn anything from it: steps
        due at different instants are ordered by time, so they never race, and the earlier
        instants of its prefix ran as in the run that made their draws (which marked them).
        Queued before the run's own branches, each with the run's chain and its own place
        appended: the frontier stays in walk order (``entry_chain``).
        """
        node = start.parent
        at = node.record.at_ms if node is not None else None
        found: list[Node] = []
        while node is not None and node.record.at_ms == at:
            if node.position in raced:
                found.append(node)
            node = node.parent
        for node in reversed(found):
            chosen = start.prefix[node.position]
            for held, value in backtrack(node, wakeups.get(node.position), chosen):
                held.released[value] = (*start.chain, (held.position, value))
                self.frontier.append((held, value))

    def _report_progress(self, depth: int, budget: Budget) -> None:
        if self.progress:
            self.progress(
                {
                    "schedules": self.schedules,
                    "runs": self.runs,
                    "frontier": len(self.frontier),
                    "depth": depth,
                    "skipped_equivalent": self.skipped,
                    "sleep_blocked": self.blocked,
                    "elapsed_s": round(budget.elapsed(), 3),
                }
            )

    def compare_repeats(self) -> None:
        """The state cache's debug mode: every repeated state ended as its first visit did."""
        if self.cache is None or not self.cache.check or self.pruned:
            return
        for node in self.repeats:
            if node.visit is None or node.repeats is None:
                raise KernelError("a repeated state without its first visit")
            compare(node.visit[2], node.repeats, node.visit[0])
            self.cache.checked += 1

    def report(self) -> ProofReport:
        """What the walk covered; a finding's report carries no cache or footprint figures."""
        options = self.options
        if self.found is not None:
            return ProofReport(
                verdict=Verdict(self.found.status),
                complete=False,
                schedules=self.schedules,
                runs=self.runs,
                max_deviations_seen=self.deepest,
                pruned=self.pruned,
                found=self.found,
                shrunk=self.shrunk,
                frontier_left=len(self.frontier),
                reduction=options.reduction,
                skipped_equivalent=self.skipped,
                sleep_blocked=self.blocked,
                probes=dict(sorted(self.probes.items())),
                found_chain=self.found_chain,
            )
        if self.cache is not None and self.bounds is not None:
            for bound, runs in self.cache.overruns(self.bounds).items():
                self.pruned[bound] = self.pruned.get(bound, 0) + runs
            self.cache.stretched.clear()  # counted once
        complete = not self.pruned
        report = ProofReport(
            verdict=Verdict.OK if complete else Verdict.INCONCLUSIVE,
            complete=complete,
            schedules=self.schedules,
            runs=self.runs,
            max_deviations_seen=self.deepest,
            pruned=self.pruned,
            frontier_left=len(self.frontier),
            reduction=options.reduction,
            skipped_equivalent=self.skipped,
            sleep_blocked=self.blocked,
            probes=dict(sorted(self.probes.items())),
            undecided=self.undecided,
        )
        if self.cache is not None:
            report.state_cache_cuts, report.state_cache_checked = (
                self.cache_cuts,
                self.cache.checked,
            )
            if self.cache.check:
                report.state_cache_cuts = self.cache.hits  # what the cache would have cut
            report.states_seen = sum(len(v) for v in self.cache.visits.values())
            report.state_cache_off = self.cache.off
            report.symmetric_merged = self.cache.symmetric_hits
        if self.checker is not None:
            report.footprints_checked = self.checker.checked
            report.footprints_unverified = self.checker.unverified
        return report


def prove(
    run: Runner,
    *,
    budget: Budget,
    max_deviations: int | None = None,
    max_branch: int | None = None,
    progress: Progress | None = None,
    reduction: bool = True,
    shard: Shard | None = None,
    state_cache: bool = False,
    state_cache_check: bool = False,
    check_footprints: bool = False,
    defer: bool = True,
) -> ProofReport:
    """Walk every schedule of ``run`` (within the named caps) and judge each one.

    ``shard``: walk only that subtree (see ``raceproof.sim.proof_plan``).
    ``state_cache``: cut runs at states explored before, for a model that declares
    its state (``raceproof.sim.state_cache``); ``state_cache_check``: the debug mode,
    which cuts nothing and compares every subtree it would have cut with the first.
    ``defer``: with the reduction, a draw's other options wait until a run shows its step
    racing (off: every awake option is branched at once; ``proof_plan.split``'s static
    shards walk so, since a shard learns nothing from another's runs, and so does
    ``check_footprints``, whose cut runs test the claims the held-back options rest on).
    ``check_footprints``: swap-test every pair of adjacent steps the footprints call
    independent in every run, ended or cut (``raceproof.sim.footprint_check``); a pair that
    does not commute raises ``FootprintMismatch`` (bad input: the model's footprints).
    """
    options = WalkOptions(
        max_deviations=max_deviations,
        max_branch=max_branch,
        reduction=reduction,
        state_cache=state_cache,
        state_cache_check=state_cache_check,
        check_footprints=check_footprints,
        defer=defer,
    )
    walk = ProofWalk(run, options, progress=progress)
    if walk.cache is not None:  # this walk runs every subtree to its end: overruns are known
        walk.cache.stretch = True
    root = shard or Shard(())
    # A shard of ``proof_plan.split`` branches once off the FIFO path, at its last draw:
    # that deviation is its place in walk order (a merge keeps the first finding by it).
    chain = ((len(root.prefix) - 1, root.prefix[-1]),) if root.depth == 1 and root.prefix else ()
    walk.walk(budget, WalkStart(root.prefix, root.sleep_set(), root.depth, chain=chain))
    if walk.found is None and walk.frontier:
        walk.pruned["budget"] = len(walk.frontier)  # set once: the walk stops here
    if walk.found is None:
        walk.compare_repeats()
    return walk.report()
