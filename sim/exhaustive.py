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
(delays, faults) are always enumerated in full.

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
model) or a repeat without its first visit breaks the proof's accounting and
raises ``KernelError`` (exit 70), also under ``python -O``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from raceproof.sim.errors import KernelError, contract
from raceproof.sim.explore import Budget, Progress, count_probes
from raceproof.sim.footprint_check import FootprintChecker
from raceproof.sim.reduction import (
    Footprint,
    Node,
    Shard,
    SleepSetSource,
    branch_options,
)
from raceproof.sim.shrink import shrink
from raceproof.sim.state_cache import StateCache, StateSeen, compare, ending
from raceproof.sim.verdicts import FINDINGS, Verdict
from raceproof.sim.world import Runner, RunOutcome, SleepBlocked

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
    state_cache_checked: int = 0  # debug mode: cuts run anyway and compared
    footprints_checked: int | None = None  # --check-footprints: step pairs swapped and compared
    footprints_unverified: int = 0  # pairs whose swap could not be followed (unnamed steps)
    probes: dict[str, int] = field(default_factory=dict)  # probe -> judged schedules reaching it
    cross_checked: int | None = None  # --cross-check: the full walk's schedules, same endings

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
            "state_cache_checked": self.state_cache_checked,
            "probes": dict(sorted(self.probes.items())),
            **({} if self.cross_checked is None else {"cross_checked": self.cross_checked}),
        } | (
            {}
            if self.footprints_checked is None
            else {
                "footprints_checked": self.footprints_checked,
                "footprints_unverified": self.footprints_unverified,
            }
        )


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
) -> ProofReport:
    """Walk every schedule of ``run`` (within the named caps) and judge each one.

    ``shard``: walk only that subtree (see ``raceproof.sim.proof_plan``).
    ``state_cache``: cut runs at states explored before, for a model that declares
    its state (``raceproof.sim.state_cache``); ``state_cache_check``: the debug mode,
    which cuts nothing and compares every subtree it would have cut with the first.
    ``check_footprints``: swap-test every pair of adjacent steps the footprints call
    independent in every run that ends (``raceproof.sim.footprint_check``); a pair that
    does not commute raises ``FootprintMismatch`` (bad input: the model's footprints).
    """
    cache = StateCache(state_cache_check) if state_cache else None
    checker = FootprintChecker(run) if check_footprints else None
    cache_cuts = 0
    budget.start()
    pruned: dict[str, int] = {}
    schedules = runs = deepest = skipped = blocked = 0
    probes: dict[str, int] = {}
    frontier: deque[tuple[Node, int]] = deque()
    repeats: list[Node] = []  # debug mode: nodes at states seen before
    root = shard or Shard(())
    prefix, sleep, depth = root.prefix, root.sleep_set(), root.depth
    parent: Node | None = None
    while True:
        source = SleepSetSource(
            prefix, sleep, reduce=reduction, cache=cache, depth=depth, log_steps=check_footprints
        )
        outcome: RunOutcome | None
        try:
            outcome = run(source)
        except StateSeen:
            outcome, cache_cuts = None, cache_cuts + 1
        except SleepBlocked:
            outcome, blocked = None, blocked + 1
        runs += 1
        recorded = tuple(source.values)
        contract(
            recorded[: len(prefix)] == prefix,
            f"the model is nondeterministic: prefix {prefix} replayed as {recorded[: len(prefix)]}",
        )
        draws = source.draws
        if prefix:
            first, draws = draws[0], draws[1:]
            if parent is not None and first.keys is not None:
                _explored(parent, first.keys[first.value], source, len(prefix) - 1)
        last = parent
        for offset, record in enumerate(draws):
            node = Node(
                len(prefix) + offset, record, depth, prefix=recorded[: len(prefix) + offset]
            )
            node.parent = last
            node.pending, asleep = branch_options(record, depth, max_branch, max_deviations, pruned)
            skipped += asleep
            if record.keys is not None:
                _explored(node, record.keys[record.value], source, node.position)
            node.visit = source.visit_at.get(node.position)
            node.repeats = source.compare_at.get(node.position)
            if node.repeats is not None:
                repeats.append(node)
            frontier.extend((node, value) for value in node.pending)
            last = node
        if cache is not None and cache.check and outcome is not None:
            walk = last
            while walk is not None:
                if walk.visit is not None:
                    walk.visit[0].endings.add(ending(outcome, walk.visit[1]))
                walk = walk.parent
        deepest = max(deepest, depth)
        if checker is not None and outcome is not None and source.steps is not None:
            checker.check(source.steps, source.record)
        if outcome is None:
            pass
        elif outcome.status in FINDINGS:  # a violation, or the model's own exception
            count_probes(probes, outcome)
            result = shrink(run, outcome)
            return ProofReport(
                outcome.status,
                False,
                schedules + 1,
                runs,
                deepest,
                pruned,
                outcome,
                result.outcome,
                len(frontier),
                reduction,
                skipped,
                blocked,
                probes=dict(sorted(probes.items())),
            )
        elif outcome.bound is not None:
            pruned[outcome.bound] = pruned.get(outcome.bound, 0) + 1
        else:
            schedules += 1
            count_probes(probes, outcome)
        if progress:
            progress(
                {
                    "schedules": schedules,
                    "runs": runs,
                    "frontier": len(frontier),
                    "depth": depth,
                    "skipped_equivalent": skipped,
                    "sleep_blocked": blocked,
                    "elapsed_s": round(budget.elapsed(), 3),
                }
            )
        if not frontier:
            break
        if runs >= budget.examples or budget.out_of_time():
            pruned["budget"] = len(frontier)  # set once: the walk stops here
            break
        parent, value = frontier.popleft()
        prefix = (*parent.prefix, value)
        sleep = _child_sleep(parent, reduction)
        depth = parent.depth + 1
    if cache is not None and cache.check and not pruned:
        for node in repeats:
            if node.visit is None or node.repeats is None:
                raise KernelError("a repeated state without its first visit")
            compare(node.visit[2], node.repeats, node.visit[0])
            cache.checked += 1
    complete = not pruned
    verdict = Verdict.OK if complete else Verdict.INCONCLUSIVE
    report = ProofReport(
        verdict,
        complete,
        schedules,
        runs,
        deepest,
        pruned,
        frontier_left=len(frontier),
        reduction=reduction,
        skipped_equivalent=skipped,
        sleep_blocked=blocked,
        probes=dict(sorted(probes.items())),
    )
    if cache is not None:
        report.state_cache_cuts, report.state_cache_checked = cache_cuts, cache.checked
        if cache.check:
            report.state_cache_cuts = cache.hits  # what the cache would have cut
        report.states_seen = sum(len(v) for v in cache.visits.values())
    if checker is not None:
        report.footprints_checked, report.footprints_unverified = (
            checker.checked,
            checker.unverified,
        )
    return report
