"""A proof split where its tree is big: bounded units of work, handed out as they appear.

Why: the static plan (one shard per branch of the FIFO path) gave the shard
that branches at the first draw nearly the whole tree, so ``prove -j 16``
ran no faster than ``-j 2``. Distributed stateless model checkers balance by
handing out work dynamically (Yang, Chen, Gopalakrishnan, Kirby, STTT 2010;
Simsa, Bryant, Gibson, RV 2012); this is that, in rounds a Spark campaign
can ship too.

A *unit* is a list of branches still to walk (``exhaustive.Entry``: a draw of
some run and the value to take there), or the walk's root. A worker walks it
breadth-first (``exhaustive.ProofWalk``) for at most ``UNIT_RUNS`` runs and
hands back the frontier it left; the driver cuts that, at draw boundaries,
into at most ``SPLIT_WAYS`` new units, named by their place below it. Which
units exist and what each walks depends on the tree and those two constants
alone: never on ``-j``, on the machine, or on which worker finished first.

Why the merged report is the sequential walk's:

- Every run of the sequential walk is made exactly once, by one unit, with
  the same prefix and the same sleep set. The branches of one draw are never
  cut apart, so each learns the footprints of its earlier siblings from their
  first runs, as the sequential walk does, and no probe run is needed; nor are
  the branches below a draw that holds options back, in its instant
  (``race_group``): only their runs can release them, in the same order as in
  the sequential walk. The counts are sums, so a complete proof's counts are
  the sequential walk's. With the state cache (one per unit) a unit that hands on a
  frontier first releases every draw still waiting on a covering visit
  (``ProofWalk.settle``, ``raceproof.sim.cover_races``): that visit's subtree may go on
  in another unit, which cannot tell it.
- The walk's order is by deviations, then by the chain of deviations
  ``(position, value)`` (``Node.chain``, ``exhaustive.entry_chain``):
  breadth-first order, as a key. A
  unit walks its branches in that order and stops at its first finding, so
  the smallest key over all units is the sequential walk's first finding, and
  it is shrunk once, on the driver, as ``prove`` shrinks it. Once a finding
  is known, units whose branches all lie deeper are not walked, and a unit
  stops before a branch deeper than it.

The balance figure (``balance``): each unit's runs, and the unit it came
from, form a tree of work; scheduling it greedily on N workers gives a
makespan, and total runs ÷ makespan is the speedup the plan allows on N
workers. It counts runs, not seconds, so it holds on any machine; it is a
lower bound (a greedy schedule, never better than the best).
"""

from __future__ import annotations

import heapq
import multiprocessing
import pickle
import signal
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from typing import Any

from raceproof.sim.errors import KernelError
from raceproof.sim.exhaustive import (
    Entry,
    ProofReport,
    ProofVerdict,
    ProofWalk,
    WalkOptions,
    entry_chain,
)
from raceproof.sim.exhaustive import WalkStart as _Start
from raceproof.sim.explore import Budget, Progress
from raceproof.sim.outcome import Runner
from raceproof.sim.reduction import Node
from raceproof.sim.shrink import shrink_found
from raceproof.sim.verdicts import Verdict

UNIT_RUNS = 32  # runs a unit walks before it hands back what it left
# ... except near the root, where units are smaller so that the tree fans out fast: a
# unit k levels below the root walks at most min(UNIT_RUNS, FIRST_UNIT_RUNS * 2**k) runs.
FIRST_UNIT_RUNS = 2
SPLIT_WAYS = 16  # the units the rest of an unfinished unit is cut into, at most
# ... each of at least this many branches: a unit of a few runs costs more than it gives ...
PIECE_ENTRIES = 8
# ... but near the root, where a branch's subtree is big, a piece has one branch per
# PIECE_RUNS_PER_ENTRY runs its unit may walk (a unit one level down: one branch). Cut
# into pieces of 8 there, the root's rest made 3 units where 16 workers wait, and a
# chain of units each leaving a rest bounded every proof of ~1,000 runs at x10-11 on 16
# (streams-checkpoint-resurrection / fix-load-after-lock: 4+8+16+32+32 = 92 runs of 1,024).
PIECE_RUNS_PER_ENTRY = 8
# Runs walked in the calling process before a pool starts: a pool costs a short proof's
# runs several times over (measured: lost-update/fix-cas, 46 runs, -j 2 took 2-3 times
# as long as -j 1 when every shard went to the pool).
IN_PROCESS_RUNS = 64
SPEEDUP_WORKERS = (2, 4, 8, 16)  # the worker counts the balance figure is given for

UnitId = tuple[int, ...]  # the root is (); a unit cut from unit u's rest is (*u, k)


@dataclass
class Unit:
    ident: UnitId
    entries: list[Entry]  # empty: the walk's root

    @property
    def min_depth(self) -> int:
        """The length of its first branch's chain (``entry_chain``: its place in walk order)."""
        if not self.entries:
            return 0
        return min(len(entry_chain(entry)) for entry in self.entries)


@dataclass
class UnitResult:
    ident: UnitId
    report: ProofReport
    left: list[Entry]
    worker: str  # the process that walked it ("driver" or a pool worker's name)


def race_group(node: Node) -> Node:
    """What a branch at ``node`` must share a unit with: the topmost draw above it, in its
    instant, that branches (``Node.holds``), or else ``node`` itself (its siblings' footprints).

    A run from a branch of ``node`` tells only the draws of that instant on its path what
    raced (``ProofWalk._release``), and a race's wakeup sequence goes down from its draw to
    any draw below it in the instant that holds options or values back
    (``backtrack.insert``); a draw branches from its making on, or never. So the branches
    below the topmost that branches stay in one unit, with the draws of the instant above
    and below them (``_detach``), and units are cut between such groups only (``cut``).
    """
    group, walk = node, node
    while walk.parent is not None and walk.parent.record.at_ms == walk.record.at_ms:
        walk = walk.parent
        if walk.holds():
            group = walk
    return group


def _detach(frontier: Sequence[Entry]) -> list[Entry]:
    """The frontier as plain data: each draw once, linked to the draws of its instant above
    it and below it (with what they hold back: a run's races go down to them,
    ``backtrack.insert``) and to nothing else of the walk it came from."""
    copies: dict[int, Node] = {}
    made: list[Node] = []
    for node, _ in frontier:
        _copy_instant(node, copies, made)
    for node in made:  # linked once every draw has its one copy
        copy = copies[id(node)]
        if _inside(node) and node.parent is not None:
            copy.parent = copies[id(node.parent)]
        copy.children = {
            value: copies[id(child)]
            for value, child in node.children.items()
            if id(child) in copies
        }
    return [(copies[id(node)], value) for node, value in frontier]


def _inside(node: Node) -> bool:
    return node.parent is not None and node.parent.record.at_ms == node.record.at_ms


def _copy_instant(node: Node, copies: dict[int, Node], made: list[Node]) -> None:
    """Copy ``node``, the draws of its instant above it and all those below them, unlinked."""
    stack = [node]
    while stack:
        draw = stack.pop()
        if id(draw) in copies:
            continue
        copies[id(draw)] = replace(
            draw,
            parent=None,
            visit=None,
            repeats=None,
            pending=[],
            deferred=list(draw.deferred),
            released=dict(draw.released),
            guides=dict(draw.guides),
            forced=dict(draw.forced),
            branched=set(draw.branched),
            sleeps=dict(draw.sleeps),
            waiting={value: list(ins) for value, ins in draw.waiting.items()},
            asked={value: list(ins) for value, ins in draw.asked.items()},
            must=set(draw.must),
            children={},
        )
        made.append(draw)
        if _inside(draw) and draw.parent is not None:
            stack.append(draw.parent)
        stack.extend(c for c in draw.children.values() if c.record.at_ms == draw.record.at_ms)


def unit_runs(level: int) -> int:
    """The runs a unit ``level`` cuts below the root walks at most."""
    return min(UNIT_RUNS, FIRST_UNIT_RUNS << min(level, 16))


def piece_entries(level: int) -> int:
    """The fewest branches of a unit ``level`` cuts below the root (but for the last piece)."""
    return max(1, min(PIECE_ENTRIES, unit_runs(level) // PIECE_RUNS_PER_ENTRY))


def cut(left: Sequence[Entry], piece: int | None = None) -> list[list[Entry]]:
    """``left`` in at most ``SPLIT_WAYS`` pieces of about equal size (and at least ``piece``
    branches, ``PIECE_ENTRIES`` unless given, but for the last), never inside a race group
    (``race_group``), each in walk order."""
    ways = SPLIT_WAYS
    piece = PIECE_ENTRIES if piece is None else piece
    by_opener: dict[int, list[int]] = {}
    groups: list[list[int]] = []  # indices into ``left``, by group in order of appearance
    for index, entry in enumerate(left):
        key = id(race_group(entry[0]))
        group = by_opener.get(key)
        if group is None:
            group = by_opener[key] = []
            groups.append(group)
        group.append(index)
    target = max(piece, -(-len(left) // ways)) if left else 0
    pieces: list[list[int]] = []
    for group in groups:
        if pieces and len(pieces[-1]) < target:
            pieces[-1].extend(group)
        else:
            pieces.append(list(group))
    return [[left[index] for index in sorted(indices)] for indices in pieces]


def walk_unit(
    run: Runner,
    options: WalkOptions,
    unit: Unit,
    budget: Budget,
    *,
    stop_depth: int | None = None,
    worker: str = "driver",
) -> UnitResult:
    """Walk ``unit`` within ``budget`` (at most its share of runs); what it left, detached."""
    walk = ProofWalk(run, options, shrink_found=False)
    start = None if unit.entries else _Start((), {}, 0)
    walk.walk(budget, start, entries=unit.entries, stop_depth=stop_depth)
    if walk.frontier and walk.found is None:
        walk.settle()  # a covering subtree's rest may be walked by another unit
    if not walk.frontier:
        walk.compare_repeats()  # its nodes' subtrees all ran here: the debug mode can compare
    left = [] if walk.found is not None else _detach(walk.frontier)
    _forget_visits(unit.entries)
    return UnitResult(ident=unit.ident, report=walk.report(), left=left, worker=worker)


def _forget_visits(entries: Sequence[Entry]) -> None:
    """Unlink this unit's state cache from the draws its runs hung below its entries.

    An entry's draw is shared with the other pieces cut from the same frontier (``cut``), so
    the draws a unit made below it are reachable from a piece still to be sent to a worker;
    their visits (the unit's cache, which ends with it) hold what cannot be pickled (a
    kernel fingerprint's renaming of step keys) and are of no use past the unit.
    """
    stack = [node for node, _ in entries]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        node.visit = node.repeats = None
        stack.extend(node.children.values())


def _key(report: ProofReport) -> tuple[int, tuple[tuple[int, int], ...]]:
    chain = report.found_chain or ()
    return (len(chain), chain)


def merge_units(
    results: Sequence[UnitResult], *, reduction: bool, left: int
) -> tuple[ProofReport, UnitResult | None]:
    """The units' reports added up; the one with the first finding in walk order, if any.

    ``left``: branches no unit walked because the budget was spent (``budget`` pruned).
    """
    results = sorted(results, key=lambda r: r.ident)
    reports = [r.report for r in results]
    pruned: dict[str, int] = {}
    probes: dict[str, int] = {}
    for report in reports:
        for bound, count in report.pruned.items():
            pruned[bound] = pruned.get(bound, 0) + count
        for name, count in report.probes.items():
            probes[name] = probes.get(name, 0) + count
    finders = [r for r in results if r.report.found is not None]
    winner = min(finders, key=lambda r: _key(r.report)) if finders else None
    if winner is None and left:
        pruned["budget"] = left
    verdict: ProofVerdict = Verdict.INCONCLUSIVE if pruned else Verdict.OK
    if winner is not None:
        verdict = winner.report.verdict
    checked = [r.footprints_checked for r in reports if r.footprints_checked is not None]
    merged = ProofReport(
        verdict,
        verdict == Verdict.OK,
        schedules=sum(r.schedules for r in reports),
        runs=sum(r.runs for r in reports),
        max_deviations_seen=max((r.max_deviations_seen for r in reports), default=0),
        pruned=pruned,
        found=None if winner is None else winner.report.found,
        frontier_left=left,
        reduction=reduction,
        skipped_equivalent=sum(r.skipped_equivalent for r in reports),
        sleep_blocked=sum(r.sleep_blocked for r in reports),
        shards=len(reports),
        state_cache_cuts=sum(r.state_cache_cuts for r in reports),
        states_seen=sum(r.states_seen for r in reports),
        symmetric_merged=sum(r.symmetric_merged for r in reports),
        state_cache_checked=sum(r.state_cache_checked for r in reports),
        state_cache_off=next((r.state_cache_off for r in reports if r.state_cache_off), None),
        footprints_checked=sum(checked) if checked else None,
        footprints_unverified=sum(r.footprints_unverified for r in reports),
        probes=dict(sorted(probes.items())),
        found_chain=None if winner is None else winner.report.found_chain,
        undecided=next((r.undecided for r in reports if r.undecided is not None), None),
    )
    return merged, winner


# -- the balance figure -------------------------------------------------------------
def makespan(runs: dict[UnitId, int], workers: int) -> int:
    """Runs until the last unit ends, scheduling units greedily on ``workers`` as they appear."""
    children: dict[UnitId, list[UnitId]] = {}
    for ident in sorted(runs):
        if ident:
            children.setdefault(ident[:-1], []).append(ident)
    roots = [ident for ident in runs if not ident or ident[:-1] not in runs]
    ready: list[tuple[int, UnitId]] = [(0, ident) for ident in sorted(roots)]
    heapq.heapify(ready)
    free = [0] * workers
    end = 0
    while ready:
        at, ident = heapq.heappop(ready)
        start = max(heapq.heappop(free), at)
        done = start + runs[ident]
        heapq.heappush(free, done)
        end = max(end, done)
        for child in children.get(ident, []):
            heapq.heappush(ready, (done, child))
    return end


def balance(results: Sequence[UnitResult]) -> dict[str, Any]:
    """Each worker's work, the largest unit and the longest chain of units, the speedups allowed."""
    runs = {r.ident: r.report.runs for r in results}
    total = sum(runs.values())
    path: dict[UnitId, int] = {}
    for ident in sorted(runs, key=len):
        path[ident] = path.get(ident[:-1], 0) + runs[ident]
    workers: dict[str, dict[str, int]] = {}
    for result in sorted(results, key=lambda r: r.ident):
        mine = workers.setdefault(result.worker, {"units": 0, "runs": 0, "schedules": 0})
        mine["units"] += 1
        mine["runs"] += result.report.runs
        mine["schedules"] += result.report.schedules
    return {
        "units": len(runs),
        "unit_runs": UNIT_RUNS,
        "total_runs": total,
        "largest_unit_runs": max(runs.values(), default=0),
        "critical_path_runs": max(path.values(), default=0),
        "workers": [dict(name=name, **figures) for name, figures in sorted(workers.items())],
        "speedup_allowed": {
            str(n): round(total / max(1, makespan(runs, n)), 2) for n in SPEEDUP_WORKERS
        },
    }


def single_balance(report: ProofReport) -> dict[str, Any]:
    """The balance of a walk made in one piece (``-j 1``): one unit, no speedup."""
    return {
        "units": 1,
        "unit_runs": None,
        "total_runs": report.runs,
        "largest_unit_runs": report.runs,
        "critical_path_runs": report.runs,
        "workers": [
            {"name": "driver", "units": 1, "runs": report.runs, "schedules": report.schedules}
        ],
        "speedup_allowed": {str(n): 1.0 for n in SPEEDUP_WORKERS},
    }


# -- the driver ---------------------------------------------------------------------
@dataclass
class Dispatch:
    unit: Unit
    examples: int
    seconds: float | None
    stop_depth: int | None


@dataclass
class Plan:
    """The driver's side: units ready to walk, what came back, the runs promised."""

    budget: Budget
    ready: deque[Unit] = field(default_factory=lambda: deque([Unit((), [])]))
    results: list[UnitResult] = field(default_factory=list)
    runs: int = 0
    promised: int = 0
    best: tuple[int, tuple[tuple[int, int], ...]] | None = None
    flying: list[Dispatch] = field(default_factory=list)  # dispatched, not yet taken back
    # Running totals, so that a progress line costs the same at the last unit as at the
    # first (summed over every result, it cost 0.14 driver CPU s over 609 units).
    schedules: int = 0
    skipped_equivalent: int = 0
    open_branches: int = 1  # ``unexplored()``: the root, until it is taken back

    def next(self) -> Dispatch | None:
        """The next unit to walk and its share of the budget; None when none may start now."""
        while self.ready and self.best is not None and self.ready[0].min_depth > self.best[0]:
            pruned = self.ready.popleft()  # wholly deeper than a finding: cannot come first
            self.open_branches -= len(pruned.entries) or 1
        if not self.ready or self.budget.out_of_time():
            return None
        share = min(
            unit_runs(len(self.ready[0].ident)), self.budget.examples - self.runs - self.promised
        )
        if share <= 0:
            return None
        self.promised += share
        seconds = None
        if self.budget.seconds is not None:
            seconds = max(0.0, self.budget.seconds - self.budget.elapsed())
        dispatch = Dispatch(
            unit=self.ready.popleft(),
            examples=share,
            seconds=seconds,
            stop_depth=None if self.best is None else self.best[0],
        )
        self.flying.append(dispatch)
        return dispatch

    def take(self, dispatch: Dispatch, result: UnitResult) -> None:
        self.flying = [d for d in self.flying if d is not dispatch]
        self.promised -= dispatch.examples
        self.runs += result.report.runs
        self.schedules += result.report.schedules
        self.skipped_equivalent += result.report.skipped_equivalent
        self.open_branches -= len(dispatch.unit.entries) or 1
        self.results.append(result)
        if result.report.found is not None:
            key = _key(result.report)
            self.best = key if self.best is None else min(self.best, key)
        pieces = cut(result.left, piece_entries(len(result.ident) + 1))
        self.ready.extend(Unit((*result.ident, k), piece) for k, piece in enumerate(pieces))
        self.open_branches += sum(len(piece) for piece in pieces)

    def unexplored(self) -> int:
        """Branches not walked yet: those of ready units and of units still being walked.

        What an interrupted ``prove -j`` left unexplored (its ``frontier``), never
        0 while a unit is out: its branches are explored only once it comes back.
        """
        return self.open_branches

    def left(self) -> int:
        """Branches no unit walked (the budget stopped the plan)."""
        if self.best is not None:
            return 0
        return sum(len(unit.entries) or 1 for unit in self.ready)


_WORKER: dict[str, Any] = {}


def _worker_signals(setup: Callable[[], None] | None = None) -> None:
    """A worker leaves Ctrl-C to its parent and dies quietly when the pool terminates it.

    Forked, it inherits the parent's handlers (the CLI's raise ``Interrupted``), which
    would print a traceback from every worker that ``Pool.terminate`` stops. Then the
    caller's ``setup``, if any.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STARTING_BLOCKED)  # blocked by ``_start``
    if setup is not None:
        setup()


def _walk(dispatch: Dispatch, worker: str) -> UnitResult:
    clock = _WORKER["clock"] if dispatch.seconds is not None else None
    budget = Budget(examples=dispatch.examples, seconds=dispatch.seconds, clock=clock)
    return walk_unit(
        _WORKER["run"],
        _WORKER["options"],
        dispatch.unit,
        budget,
        stop_depth=dispatch.stop_depth,
        worker=worker,
    )


# -- the pool: forked workers, one pipe each, no threads ------------------------------
# Why not ``multiprocessing.Pool``: its worker-handler thread waits on the result queue's
# pipe as well, and wakes (and loops) whenever a result is in it until the result thread
# has read it; measured on coordinator-async-append / block-event-loop --no-reduction
# (609 units), that thread alone took 0.26 CPU s of the driver's 0.46 s, CPU the two
# workers of ``-j 2`` on two cores then lacked. Here the driver's one thread waits on the
# workers' pipes (``connection.wait``) and sleeps until a result arrives.
IN_FLIGHT = 2  # units sent to a worker ahead: it never waits for the driver between two
# A dispatch this large (pickled) is sent only to a worker with nothing in flight, which is
# reading its pipe: two smaller ones always fit the pipe's buffer, so the driver never blocks
# writing to a worker that is itself blocked writing a result to the driver.
BIG_DISPATCH_BYTES = 16_384


def _serve(conn: Connection, setup: Callable[[], None] | None, drivers: list[Connection]) -> None:
    """A worker: walk each unit the driver sends, and send back its result or what it raised.

    ``drivers``: the driver's ends of the pipes, inherited by the fork and closed here, so
    that a driver that dies leaves this end at EOF.
    """
    for other in drivers:
        other.close()
    _worker_signals(setup)
    name = multiprocessing.current_process().name
    while True:
        try:
            data = conn.recv_bytes()
        except EOFError:  # the driver is gone
            return
        dispatch = pickle.loads(data)
        if dispatch is None:
            return
        outcome: UnitResult | BaseException
        try:
            outcome = _walk(dispatch, name)
        except BaseException as exc:  # the driver raises it, as a pool would
            outcome = exc
        try:
            reply = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # what it raised cannot travel: say what it was
            reply = pickle.dumps(KernelError(f"a proof worker raised {outcome!r} ({exc})"))
        conn.send_bytes(reply)


@dataclass
class _Worker:
    process: Any  # a forked ``multiprocessing`` process
    conn: Connection
    flying: deque[Dispatch] = field(default_factory=deque)


# A worker forks with the parent's handlers (the CLI's raise ``Interrupted``): a SIGTERM
# from ``terminate`` (a budget spent before it started) or a Ctrl-C then raised inside its
# start-up, with a traceback. So these wait, blocked, until its own handlers are set.
STARTING_BLOCKED = {signal.SIGINT, signal.SIGTERM}


def _start(process: Any) -> None:
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STARTING_BLOCKED)
    try:
        process.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _on_pool(
    plan: Plan, jobs: int, setup: Callable[[], None] | None, took: Callable[[], None]
) -> None:
    """Walk the plan's units on ``jobs`` forked workers, keeping each of them fed."""
    context = multiprocessing.get_context("fork")
    workers: list[_Worker] = []
    try:
        for index in range(jobs):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=_serve,
                args=(theirs, setup, [*(w.conn for w in workers), ours]),
                name=f"worker-{index + 1}",
                daemon=True,
            )
            _start(process)
            theirs.close()
            workers.append(_Worker(process, ours))
        _feed(plan, workers, took)
    finally:
        for worker in workers:
            if worker.process.is_alive():
                worker.process.terminate()
        # Then EOF on every pipe before the join: a worker that SIGTERM reached mid-fork,
        # under the parent's handler, may have lived on to wait for a unit (a join then
        # waited for ever: `prove --max-schedules 1 -j 2`, about one run in three).
        for worker in workers:
            worker.conn.close()
        for worker in workers:
            worker.process.join()


def _feed(plan: Plan, workers: list[_Worker], took: Callable[[], None]) -> None:
    """Send units while a worker has room, take results as they come, until none is left."""
    held: tuple[Dispatch, bytes] | None = None
    by_conn = {worker.conn: worker for worker in workers}
    while True:
        for worker in workers:
            while len(worker.flying) < IN_FLIGHT:
                if held is None:
                    dispatch = plan.next()
                    if dispatch is None:
                        break
                    held = (dispatch, pickle.dumps(dispatch, pickle.HIGHEST_PROTOCOL))
                if worker.flying and len(held[1]) > BIG_DISPATCH_BYTES:
                    break
                worker.conn.send_bytes(held[1])
                worker.flying.append(held[0])
                held = None
        busy = [worker.conn for worker in workers if worker.flying]
        if not busy:
            return
        for conn in wait(busy):
            worker = by_conn[conn]  # type: ignore[index]
            try:
                outcome = pickle.loads(worker.conn.recv_bytes())
            except EOFError:
                raise KernelError(f"proof worker {worker.process.name} died") from None
            dispatch = worker.flying.popleft()
            if isinstance(outcome, BaseException):
                raise outcome
            plan.take(dispatch, outcome)
            took()


def prove_balanced(
    run: Runner,
    jobs: int,
    *,
    budget: Budget,
    options: WalkOptions,
    progress: Progress | None = None,
    worker_setup: Callable[[], None] | None = None,
) -> ProofReport:
    """``prove`` in balanced units on ``jobs`` worker processes (forked: ``run`` is not pickled).

    The first ``IN_PROCESS_RUNS`` runs are walked here; a proof that ends there
    never starts a pool. Each worker calls ``worker_setup`` first.
    """
    budget.start()
    plan = Plan(budget)
    _WORKER.update(run=run, options=options, clock=budget.clock)

    def took() -> None:
        if progress:
            walked = len(plan.results)
            progress(
                {
                    "shards": f"{walked}/{walked + len(plan.ready)}",
                    "schedules": plan.schedules,
                    "runs": plan.runs,
                    "frontier": plan.unexplored(),
                    "skipped_equivalent": plan.skipped_equivalent,
                }
            )

    took()  # what is left is known from the start: an early interrupt says so too
    while plan.runs < IN_PROCESS_RUNS and (dispatch := plan.next()) is not None:
        plan.take(dispatch, _walk(dispatch, "driver"))
        took()
    if plan.ready and jobs > 1:
        _on_pool(plan, jobs, worker_setup, took)
    while (dispatch := plan.next()) is not None:  # -j 1, or what a finding left to settle
        plan.take(dispatch, _walk(dispatch, "driver"))
        took()
    return plan_report(plan, run, options)


def plan_report(plan: Plan, run: Runner, options: WalkOptions) -> ProofReport:
    """A plan's units merged: the sequential walk's report, its finding shrunk here, the balance."""
    report, winner = merge_units(plan.results, reduction=options.reduction, left=plan.left())
    if winner is not None and winner.report.found is not None:
        report.shrunk = shrink_found(run, winner.report.found).outcome
    report.balance = balance(plan.results)
    return report
