"""The gate's checks cut below the check: a search in fixed parts, the same on any ``-j``.

Why: ``check -j 16`` stopped at its longest check (a 2,000-example Hypothesis
search was 13.7 s of a 20.8 s gate) because a check was never split. Here a
search of N examples is cut into ``ceil(N / PART_EXAMPLES)`` parts, a number
that depends on N alone, never on ``-j``, and the parts are merged in order
into one check, so the verdict and the counts of every check are the same
for any ``-j``.

What an example count means when split: ``ok@2000`` is still 2,000 examples.

- random, PCT, swarm: example i draws from its own seed, ``derive_seed(seed,
  i)``, wherever it runs, so the parts are exactly the unsplit search's
  examples. The merge takes the parts in order up to the first that found
  something: its finding is the unsplit search's first (same example, same
  count ``i + 1``, shrunk the same), and the examples, undecided runs and
  probe counts are those of the examples before it. So once a part finds,
  the search's later parts not yet started are dropped (``GatePlan.ended``):
  a gate whose expected violation is found in its first part no longer runs
  and shrinks the nine others (``check brooklin-double-stop``'s Hypothesis
  search of the buggy code: 41.6 s of CPU before, one part's shrink after).
- Hypothesis: a search already runs as independent seeded runs of
  ``HYPOTHESIS_CHUNK`` examples (seed ``derive_seed(seed, chunk)``); a part is
  ``PART_EXAMPLES // HYPOTHESIS_CHUNK`` of those runs, merged the same way.
  It is the unsplit search as long as each run generates all its examples
  (Hypothesis stops a run early only when it runs out of distinct inputs).
- A profile with a wall budget (``dev``) is not split: its parts would each get
  the whole budget.

A proof expected to hold is cut into the units of ``prove -j``
(``raceproof.sim.proof_units``): which units exist depends on the proof's tree
alone, so the merged check (verdict, runs, schedules, probes) is the same for
any ``-j``, ``-j 1`` included, which walks the same units one after the other.
When the units find a violation (a fix that does not hold, or a model that
raised), what they walked depends on the order they ended in, so the check is
the whole proof's, walked again (it stops at the first finding). A proof
expected to violate (one only a proof finds) is walked whole, as one part. Units appear as their parents end, so the check's
scheduler (``GatePlan``) hands out a proof's ready units before any search
part: a proof is a chain of units, a search part waits for nothing. A profile
with a proof budget in seconds (``dev``) walks each proof whole, as one part.
A search's finding is shrunk in its part's worker and its counterexample saved
by the merge, a proof's finding is shrunk by the merge, so only the check's
own finding is written.
"""

from __future__ import annotations

import copy
import heapq
import multiprocessing
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from raceproof.gate import expectations as gate
from raceproof.scenarios.catalogue import Scenario, get, judged_together, same_proof, same_runs
from raceproof.sim import Budget, explore
from raceproof.sim.choices import ChoiceSource
from raceproof.sim.exhaustive import UNDECIDED, ProofReport, WalkOptions
from raceproof.sim.explore import HYPOTHESIS_CHUNK, SearchReport, Undecided, _no_violation
from raceproof.sim.outcome import Runner, RunOutcome
from raceproof.sim.proof_units import Dispatch, Plan, UnitId, UnitResult, plan_report, walk_unit
from raceproof.sim.verdicts import FINDINGS, Verdict

# Examples of one part of a search: a multiple of HYPOTHESIS_CHUNK, so that a part is
# whole seeded Hypothesis runs.
PART_EXAMPLES = 2 * HYPOTHESIS_CHUNK


@dataclass(frozen=True)
class Part:
    """One part of one check: which examples of which search, or a whole proof."""

    scenario: str
    variant: str
    kind: str  # a strategy, or "prove"
    seed: int = 0  # one seed for every part of a search
    start: int = 0  # its first example's index in the search
    examples: int = 0  # how many
    index: int = 0
    parts: int = 1
    check: int = 0  # the check's place in the plan: the order of the merged checks
    # The same part of other scenarios' searches that make exactly its runs, or their proofs
    # of its schedules (``_paired``): run once, with it, and judged by each one's checkers.
    twins: tuple[Part, ...] = ()


@dataclass
class PartResult:
    part: Part
    seconds: float
    cpu_seconds: float = 0.0  # the worker's CPU time for it (the plan figure's unit of work)
    search: SearchReport | None = None  # a search's part
    check: gate.CheckResult | None = None  # a proof: the whole check
    # A proof walked in units: each unit's place and CPU seconds (the plan figure's).
    units: list[tuple[UnitId, float]] = field(default_factory=list)
    twins: list[PartResult] = field(default_factory=list)  # its twins' results (``Part.twins``)


@dataclass(frozen=True)
class UnitTask:
    """One unit of a proof check, to walk in a worker."""

    part: Part
    dispatch: Dispatch


@dataclass
class UnitDone:
    task: UnitTask
    result: UnitResult
    seconds: float
    cpu_seconds: float


Task = Part | UnitTask


def splits(part: Part, profile: gate.Profile) -> bool:
    """Whether a part is a proof walked in units: one expected to hold, without a proof
    budget in seconds. A violated proof's units count what they walked before the finding
    was known everywhere, which depends on the order they end in; a proof expected to
    violate (one only a proof finds) is walked whole, as ``prove -j 1`` walks it."""
    if part.kind != "prove" or profile.prove_budget_s is not None:
        return False
    return part.variant not in get(part.scenario).expect_violation


_RUNNERS: dict[tuple[str, ...], Runner] = {}


def _proof_runner(part: Part) -> tuple[Runner, WalkOptions]:
    """The runner and walk options of ``Scenario.prove`` (built once per process); a proof
    with twins runs judged by every twin's checkers too (``judged_together``)."""
    scenario = get(part.scenario)
    key = (part.scenario, part.variant, *(t.scenario for t in part.twins))
    if key not in _RUNNERS:
        scenario.check_variant(part.variant)
        judged = judged_together(scenario, [get(t.scenario) for t in part.twins])
        _RUNNERS[key] = judged.runner(part.variant, scenario.prove_config)
    options = WalkOptions(
        max_deviations=scenario.prove_max_deviations, max_branch=scenario.prove_max_branch
    )
    return _RUNNERS[key], options


def run_unit(task: UnitTask) -> UnitDone:
    """Walk one unit of a proof check (in a worker of ``check -j``, or here)."""
    started, cpu = time.monotonic(), time.process_time()
    run, options = _proof_runner(task.part)
    dispatch = task.dispatch
    result = walk_unit(
        run,
        options,
        dispatch.unit,
        Budget(dispatch.examples),
        stop_depth=dispatch.stop_depth,
        worker=multiprocessing.current_process().name,
    )
    return UnitDone(
        task=task,
        result=result,
        seconds=time.monotonic() - started,
        cpu_seconds=time.process_time() - cpu,
    )


def run_task(task: Task, profile: gate.Profile, out_dir: Path | None) -> PartResult | UnitDone:
    """A search part, a whole proof, or a proof's unit."""
    if isinstance(task, UnitTask):
        return run_unit(task)
    return run_part(task, profile, out_dir)


@dataclass
class _Proof:
    part: Part
    plan: Plan
    units: list[UnitDone] = field(default_factory=list)
    stash: deque[Dispatch] = field(default_factory=deque)

    def pull(self) -> Dispatch | None:
        return self.stash.popleft() if self.stash else self.plan.next()


class GatePlan:
    """The check's tasks as they become ready: a proof's units first, then the search parts
    and whole proofs in check order; each finished proof merged into its check here."""

    def __init__(self, plan: list[Part], profile: gate.Profile, out_dir: Path | None) -> None:
        self.profile, self.out_dir = profile, out_dir
        whole = [p for p in plan if not splits(p, profile)]
        # Not under a wall budget, where a search part's examples depend on its speed.
        self.parts = deque(whole if profile.wall_budget else _paired(whole, _search_key, same_runs))
        proofs = _paired([p for p in plan if splits(p, profile)], _proof_key, same_proof)
        self.proofs = [_Proof(p, Plan(Budget(profile.prove_max_schedules))) for p in proofs]

    def ended(self, result: PartResult) -> list[Part]:
        """A part's result: when it ends its search (a finding, or its seconds ran out), the
        search's later parts not yet started are dropped, since the merge reads no part after
        it (``merge_search``); returned. The verdict and counts stay those of every ``-j``:
        a later part already running is run and left out of the merge, as before."""
        if result.search is None or not ends_search(result.search):
            return []
        key, index = check_key(result.part), result.part.index
        dropped = [p for p in self.parts if check_key(p) == key and p.index > index]
        # Its later parts that ride on another search's parts (``Part.twins``) are dropped
        # from them; the twins riding on its dropped parts run alone, where those were.
        riding = [t for p in self.parts for t in p.twins if check_key(t) == key and t.index > index]
        if dropped or riding:
            kept: list[Part] = []
            for p in self.parts:
                if p in dropped:
                    kept += p.twins
                else:
                    kept.append(replace(p, twins=tuple(t for t in p.twins if t not in riding)))
            self.parts = deque(kept)
        return dropped + riding

    def next(self) -> Task | None:
        """The next task to start, or None when none may start until one ends."""
        for proof in self.proofs:
            dispatch = proof.pull()
            if dispatch is not None:
                return UnitTask(proof.part, dispatch)
        return self.parts.popleft() if self.parts else None

    def take(self, done: UnitDone) -> PartResult | None:
        """A unit's result; its proof's whole check once its last unit is in."""
        proof = next(p for p in self.proofs if p.part == done.task.part)
        # The plan's own dispatch (a worker's result carries a copy of it).
        ident = done.task.dispatch.unit.ident
        dispatch = next(d for d in proof.plan.flying if d.unit.ident == ident)
        proof.plan.take(dispatch, done.result)
        proof.units.append(done)
        following = proof.plan.next()
        if following is not None:
            proof.stash.append(following)
        if proof.stash or proof.plan.flying:
            return None
        self.proofs.remove(proof)
        return self._finish(proof)

    def _finish(self, proof: _Proof) -> PartResult:
        """The proof's check (and its twins'), from its units' walk.

        A fix found violated (or a model that raised) takes its counts from the whole walk,
        which stops at the first finding on any -j; so does each twin of a shared walk
        that found something or had an undecided run, since which scenario's checker
        failed or could not judge is that scenario's own proof to say, walked alone.
        """
        part = proof.part
        run, options = _proof_runner(part)
        started, cpu = time.monotonic(), time.process_time()
        report = plan_report(proof.plan, run, options)
        every = [replace(part, twins=()), *part.twins]
        seconds = sum(u.seconds for u in proof.units) / len(every)
        alone = report.found is not None or (len(every) > 1 and _undecided(report))
        checks = [
            gate.run_prove(p.scenario, p.variant, self.profile, out_dir=self.out_dir)
            if alone
            else gate.prove_check(
                get(p.scenario), p.variant, report, seconds=seconds, out_dir=self.out_dir
            )
            for p in every
        ]
        walked = sum(u.cpu_seconds for u in proof.units) + time.process_time() - cpu
        results = [
            PartResult(
                p,
                seconds + (time.monotonic() - started) / len(every),
                walked / len(every),
                check=check,
            )
            for p, check in zip(every, checks, strict=True)
        ]
        units = [(u.result.ident, u.cpu_seconds) for u in proof.units]
        return replace(results[0], part=part, units=units, twins=results[1:])


def parts_for(
    scenarios: list[Scenario], profile: gate.Profile, examples: int | None = None
) -> list[Part]:
    """Every check of ``gate.jobs_for``, each search cut into its fixed parts, in check order."""
    parts: list[Part] = []
    for number, job in enumerate(gate.jobs_for(scenarios, profile)):
        if job.kind == "prove":
            parts.append(Part(job.scenario, job.variant, "prove", check=number))
            continue
        scenario = get(job.scenario)
        count = examples or max(1, round(scenario.default_examples * profile.examples_scale))
        seed = 0 if profile.derandomize else gate._seed(profile)
        size = count if profile.wall_budget else PART_EXAMPLES
        starts = list(range(0, count, size))
        parts += [
            Part(
                scenario=job.scenario,
                variant=job.variant,
                kind=job.kind,
                seed=seed,
                start=start,
                examples=min(size, count - start),
                index=index,
                parts=len(starts),
                check=number,
            )
            for index, start in enumerate(starts)
        ]
    return parts


def run_part(part: Part, profile: gate.Profile, out_dir: Path | None) -> PartResult:
    """Run one part (in a worker of ``check -j``, or here), and its twins with it."""
    started, cpu = time.monotonic(), time.process_time()
    if part.kind == "prove":
        check = gate.run_prove(part.scenario, part.variant, profile, out_dir=out_dir)
        return PartResult(part, time.monotonic() - started, time.process_time() - cpu, check=check)
    if part.twins:
        return _run_shared(part, profile)
    report = _search(get(part.scenario), part, profile)
    return PartResult(part, time.monotonic() - started, time.process_time() - cpu, search=report)


def _search(
    scenario: Scenario,
    part: Part,
    profile: gate.Profile,
    judged: Callable[[Runner], Runner] = lambda run: run,
) -> SearchReport:
    budget = Budget(part.examples)
    if profile.wall_budget:
        budget = Budget(part.examples, scenario.default_budget_s, time.monotonic)
    run = judged(scenario.runner(part.variant, scenario.config))
    return explore(run, part.kind, part.seed, budget, start=part.start)


class _NotShared(BaseException):
    """A shared run that a checker failed or could not judge (``_all_ok``). A BaseException,
    so that no search takes it for the model's failure (Hypothesis would shrink it)."""


def _all_ok(run: Runner) -> Runner:
    """``run``, stopping the search at a run that is not ``ok``: from there each scenario is
    searched alone, its finding shrunk once, by its own search (``_run_shared``)."""

    def all_ok(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        if outcome.status != Verdict.OK:
            raise _NotShared
        return outcome

    return all_ok


def _run_shared(part: Part, profile: gate.Profile) -> PartResult:
    """A part and its twins: their runs made once and judged by every scenario's checkers.

    While no checker fails and none is undecided, each scenario's search of those runs
    is that one search (its examples, probes and counts); at the first run that is not
    ``ok`` each is searched alone, so a finding or an undecided run is its own scenario's,
    as without twins. The time is shared out evenly.
    """
    started, cpu = time.monotonic(), time.process_time()
    every = [replace(part, twins=()), *part.twins]
    scenarios = [get(p.scenario) for p in every]
    try:
        report = _search(judged_together(scenarios[0], scenarios[1:]), part, profile, _all_ok)
        reports = [copy.deepcopy(report) for _ in every]
    except _NotShared:
        reports = [_search(s, p, profile) for s, p in zip(scenarios, every, strict=True)]
    seconds = (time.monotonic() - started) / len(every)
    cpu_seconds = (time.process_time() - cpu) / len(every)
    results = [
        PartResult(p, seconds, cpu_seconds, search=r) for p, r in zip(every, reports, strict=True)
    ]
    return replace(results[0], part=part, twins=results[1:])


def _undecided(report: ProofReport) -> bool:
    """Whether a checker could not judge a run of the walk (not a proof, and whose it was
    a shared walk cannot say)."""
    return report.undecided is not None or any(k.startswith(UNDECIDED) for k in report.pruned)


def _search_key(part: Part) -> tuple[Any, ...] | None:
    """What two search parts share when they make the same runs; None for a whole proof."""
    if part.kind == "prove":
        return None
    return (part.variant, part.kind, part.seed, part.start, part.examples, part.index, part.parts)


def _proof_key(part: Part) -> tuple[Any, ...]:
    return (part.variant,)


def _paired(
    plan: list[Part],
    key: Callable[[Part], tuple[Any, ...] | None],
    alike: Callable[[Scenario, Scenario, str], bool],
) -> list[Part]:
    """``plan`` with each part of a scenario that makes another's runs (``alike``: searches
    by ``same_runs``, proofs by ``same_proof``) carried by that one's same part (``key``;
    ``Part.twins``) rather than run again."""
    hosts: dict[tuple[Any, ...], list[Part]] = {}
    riders: dict[Part, list[Part]] = {}
    for p in plan:
        same = key(p)
        if same is None:
            continue
        candidates = hosts.setdefault(same, [])
        host = next(
            (h for h in candidates if alike(get(h.scenario), get(p.scenario), p.variant)),
            None,
        )
        if host is None:
            candidates.append(p)
        else:
            riders.setdefault(host, []).append(p)
    carried = {t for twins in riders.values() for t in twins}
    return [replace(p, twins=tuple(riders.get(p, ()))) for p in plan if p not in carried]


def check_key(part: Part) -> tuple[str, str, str]:
    """The check a part belongs to."""
    return (part.scenario, part.variant, part.kind)


def ends_search(report: SearchReport) -> bool:
    """A part's report after which the merge reads no later part: a finding, or out of seconds."""
    return report.verdict in FINDINGS or report.stopped_by == "seconds"


def merge_search(reports: list[SearchReport]) -> SearchReport:
    """A search's parts, in order, as the one search they cut: up to its first finding."""
    taken: list[SearchReport] = []
    for report in reports:
        taken.append(report)
        if ends_search(report):
            break
    undecided = Undecided()
    probes: dict[str, int] = {}
    for report in taken:
        undecided.runs += report.undecided.runs
        for bound, count in report.undecided.bounds.items():
            undecided.bounds[bound] = undecided.bounds.get(bound, 0) + count
        for name, count in report.undecided.checkers.items():
            undecided.checkers[name] = undecided.checkers.get(name, 0) + count
        for name, count in report.probes.items():
            probes[name] = probes.get(name, 0) + count
    examples = sum(report.examples for report in taken)
    last = taken[-1]
    if ends_search(last):
        merged = replace(last, examples=examples)
    else:
        merged = _no_violation(last.strategy, examples, undecided)
    merged.inconclusive_runs = undecided.runs
    merged.undecided_by = dict(undecided.checkers)
    merged.undecided = undecided
    merged.probes = dict(sorted(probes.items()))
    return merged


def results_of(
    done: list[PartResult], profile: gate.Profile, out_dir: Path | None
) -> list[gate.CheckResult]:
    """The checks whose every part is done, merged, in check order."""
    groups: dict[tuple[str, str, str], list[PartResult]] = {}
    for result in sorted(done, key=lambda r: r.part.check):  # parts end in any order
        groups.setdefault(check_key(result.part), []).append(result)
    checks: list[gate.CheckResult] = []
    for (scenario, variant, _kind), every in groups.items():
        results = _leading(sorted(every, key=lambda r: r.part.index))
        if results is None:
            continue  # interrupted before the parts the merge reads ran: not a check
        seconds = sum(r.seconds for r in results)
        if results[0].check is not None:  # a proof: one part, its whole check
            checks.append(results[0].check)
            continue
        search = merge_search([r.search for r in results if r.search is not None])
        checks.append(
            gate.search_check(
                get(scenario),
                variant,
                search,
                seed=results[0].part.seed,
                seconds=seconds,
                out_dir=out_dir,
            )
        )
    return checks


def _leading(results: list[PartResult]) -> list[PartResult] | None:
    """A check's parts (sorted by index) from the first up to the one that ends the search
    (``ends_search``), or all of them; None when one of those has not run."""
    taken: list[PartResult] = []
    for expected, result in enumerate(results):
        if result.part.index != expected:
            return None
        taken.append(result)
        if result.search is not None and ends_search(result.search):
            return taken
    return taken if len(taken) == results[0].part.parts else None


@dataclass
class _Piece:
    check: str
    part: str
    cpu_seconds: float
    children: list[int] = field(default_factory=list)


def _pieces(done: list[PartResult]) -> tuple[list[_Piece], list[tuple[int, int]]]:
    """Every part and proof unit of the check, and those ready at the start (units first)."""
    pieces: list[_Piece] = []
    ready: list[tuple[int, int]] = []  # (0 for a unit, 1 for another part; its piece)
    for result in done:  # in check order
        check = f"{result.part.scenario} / {result.part.variant} / {result.part.kind}"
        if not result.units:
            ready.append((1, len(pieces)))
            part = f"{result.part.index + 1}/{result.part.parts}"
            pieces.append(_Piece(check, part, result.cpu_seconds))
            continue
        where: dict[UnitId, int] = {}
        for ident, cpu in sorted(result.units):  # a unit sorts after the one it was cut from
            where[ident] = len(pieces)
            pieces.append(_Piece(check, "unit " + (".".join(map(str, ident)) or "root"), cpu))
            if ident:
                pieces[where[ident[:-1]]].children.append(where[ident])
            else:
                ready.append((0, where[ident]))
    return pieces, ready


def plan_figure(done: list[PartResult], workers: int = 16) -> dict[str, Any]:
    """The speedup the check's plan allows on ``workers``: its parts' CPU seconds scheduled
    greedily as ``GatePlan`` hands them out (a proof's units first, each once the unit it
    was cut from ended; the other parts in check order) against their sum; the longest part."""
    pieces, starts = _pieces(done)
    ready = [(0.0, kind, index) for kind, index in starts]
    heapq.heapify(ready)
    free = [0.0] * workers
    makespan = 0.0
    while ready:
        at, _kind, index = heapq.heappop(ready)
        end = max(heapq.heappop(free), at) + pieces[index].cpu_seconds
        heapq.heappush(free, end)
        makespan = max(makespan, end)
        for child in pieces[index].children:
            heapq.heappush(ready, (end, 0, child))
    total = sum(piece.cpu_seconds for piece in pieces)
    longest = max(pieces, key=lambda piece: piece.cpu_seconds) if pieces else None
    return {
        "parts": len(pieces),
        "cpu_s": round(total, 2),
        "makespan_s": round(makespan, 2),
        "workers": workers,
        "speedup_allowed": round(total / max(makespan, 1e-9), 2),
        "longest_part": None
        if longest is None
        else {"check": longest.check, "part": longest.part, "cpu_s": round(longest.cpu_seconds, 2)},
    }
