"""Walking a generated model every way a proof can, against the full walk (issue 33 item 2).

``property_tests/soundness_models.py`` draws and builds the models; this module
walks one in full (the reference: no reduction, every schedule judged, findings
masked so nothing stops the walk) and with each shortcut a proof takes, and
returns what differs as sentences (an empty list: nothing). Each ``MODES`` entry
is one claim: the reduction, the state cache, its symmetry, ``prove -j 2`` and the
footprint checkers (``--check-footprints``, ``--cross-check``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import itertools
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from property_tests.soundness_models import AnySpec, bounds_of, build, checkers, runner
from raceproof.scenarios.catalogue import Scenario
from raceproof.sim import Budget, ChoiceSource, RunOutcome, prove
from raceproof.sim import cross_check as cross_check_module
from raceproof.sim.configs import BadInput
from raceproof.sim.exhaustive import ProofReport
from raceproof.sim.explore import explore_random
from raceproof.sim.footprint_blame import FootprintBug
from raceproof.sim.footprint_claims import (
    StepRecord,
    delayable_steps,
    instant_pulls,
    movable_steps,
    unnamed_claims,
)
from raceproof.sim.outcome import Runner
from raceproof.sim.past import Past, past_ending
from raceproof.sim.state_cache import StateCacheMismatch, ending
from raceproof.sim.symmetry import SymmetryMismatch, declared
from raceproof.sim.verdicts import Verdict

WALK_RUNS = 4_000  # a spec whose full walk needs more is not judged (``TooBig``)
SEARCH_EXAMPLES = 20  # a random search's examples, for the claims about bounded runs

FINDINGS = ("violated", "error")


class TooBig(Exception):
    """The full walk of this spec did not complete within ``WALK_RUNS`` runs: nothing to compare."""


@dataclass
class Walk:
    """One walk that judged every schedule to its end (findings do not stop it)."""

    report: ProofReport
    endings: set[tuple[Any, ...]]
    finals: set[str]  # the final states (the observer's snapshots)
    statuses: set[str]  # the runs' statuses
    probes: set[str]  # the probes some judged run reached


def walk(spec: AnySpec, *, reduction: bool, state_cache: bool = False, check: bool = False) -> Walk:
    """Walk ``spec`` as ``prove`` does, but on through its findings, recording every ending."""
    return walk_runner(runner(spec), reduction=reduction, state_cache=state_cache, check=check)


def walk_runner(
    run: Runner,
    *,
    reduction: bool,
    state_cache: bool = False,
    check: bool = False,
    past: Past | None = None,
) -> Walk:
    """``walk`` of a model given by its runner (a built-in scenario's, ``soundness_builtins``).

    ``past``: the scenario's declared abstraction of the history (``raceproof.sim.past``);
    each ending is then its status, verdicts and summary (all the declaration lets be read).
    """
    endings: set[tuple[Any, ...]] = set()
    finals: set[str] = set()
    statuses: set[str] = set()

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        if outcome.bound is None:
            endings.add(ending(outcome, 0) if past is None else past_ending(outcome, past))
            finals.update(str(op.get("state")) for op in outcome.history.of_kind("final"))
            statuses.add(outcome.status)
        if outcome.status in FINDINGS:  # judged, and the walk goes on
            return dataclasses.replace(outcome, status="ok")
        return outcome

    report = prove(
        recording,
        budget=Budget(examples=WALK_RUNS),
        reduction=reduction,
        state_cache=state_cache or check,
        state_cache_check=check,
    )
    return Walk(
        report=report,
        endings=endings,
        finals=finals,
        statuses=statuses,
        probes={p for p, n in report.probes.items() if n},
    )


def full_walk(spec: AnySpec) -> Walk:
    """The plain walk, every schedule; ``TooBig`` when it does not complete."""
    full = walk(spec, reduction=False)
    if not full.report.complete:
        raise TooBig(str(spec))
    return full


def _claims(name: str, report: ProofReport, full: Walk) -> list[str]:
    """A real (stopping) proof against the full walk: a finding iff it has one, never a false proof."""
    found = bool(full.statuses & set(FINDINGS))
    problems = []
    if found and report.verdict not in FINDINGS:
        problems.append(
            f"{name} says {report.verdict} (complete={report.complete}) where the full walk "
            f"finds {sorted(full.statuses & set(FINDINGS))}"
        )
    if not found and report.verdict in FINDINGS:
        problems.append(f"{name} finds {report.verdict} where the full walk finds nothing")
    return problems


def reduction_problems(spec: AnySpec, full: Walk | None = None) -> list[str]:
    """Reduced walk vs full walk: the same endings, probes and verdict."""
    full = full or full_walk(spec)
    reduced = walk(spec, reduction=True)
    problems = []
    if not reduced.report.complete:
        problems.append("the reduced walk did not complete where the full walk did")
    if reduced.endings != full.endings:
        missing = len(full.endings - reduced.endings)
        problems.append(f"the reduced walk misses {missing} ending(s) of the full walk")
    if reduced.probes != full.probes:
        problems.append(f"probes reached: reduced {reduced.probes}, full {full.probes}")
    stopping = prove(runner(spec), budget=Budget(examples=WALK_RUNS))
    return problems + _claims("the reduced proof", stopping, full)


def state_cache_problems(spec: AnySpec, full: Walk | None = None) -> list[str]:
    """With the state cache (the spec declares its state): the same final states and verdict."""
    spec = dataclasses.replace(spec, state=True)
    full = full or full_walk(spec)
    try:
        cached = walk(spec, reduction=True, state_cache=True)
        stopping = prove(runner(spec), budget=Budget(examples=WALK_RUNS), state_cache=True)
    except StateCacheMismatch as mismatch:
        return [f"the state cache's own check: {mismatch}"]
    return _against_full("cached", cached, full) + _claims("the cached proof", stopping, full)


def symmetry_problems(spec: AnySpec, full: Walk | None = None) -> list[str]:
    """Identical actors declared interchangeable (a ``symmetric`` spec): the cache that merges a
    state with its images reaches the final states (up to a permutation: the spec logs them so),
    statuses and probes of the full walk, its proof agrees with it, and the check
    (``--check-symmetry``: cut nothing, compare images) stays silent."""
    full = full or full_walk(spec)
    try:
        merged = walk(spec, reduction=True, state_cache=True)
        stopping = prove(runner(spec), budget=Budget(examples=WALK_RUNS), state_cache=True)
        prove(
            masked(runner(spec)),
            budget=Budget(examples=WALK_RUNS),
            state_cache=True,
            state_cache_check=True,
        )
    except (StateCacheMismatch, SymmetryMismatch) as mismatch:
        return [f"the symmetry's check: {mismatch}"]
    return _against_full("symmetric", merged, full) + _claims("the symmetric proof", stopping, full)


def _against_full(label: str, got: Walk, full: Walk) -> list[str]:
    """The ``label`` walk ``got`` against the full walk: complete, the same final states and
    statuses, the same probes."""
    problems = []
    if not got.report.complete:
        problems.append(f"the {label} walk did not complete where the full walk did")
    if got.finals != full.finals or got.statuses != full.statuses:
        problems.append(
            f"the {label} walk reaches {len(got.finals)} final states "
            f"({sorted(got.statuses)}), the full walk {len(full.finals)} ({sorted(full.statuses)})"
        )
    if got.probes != full.probes:
        problems.append(f"probes reached: {label} {got.probes}, full {full.probes}")
    return problems


def fingerprint_problems(spec: AnySpec, full: Walk | None = None) -> list[str]:
    """The kernel's own fingerprint (the spec declares no state): the cached walk reaches the
    same endings, probes and verdicts as the plain walk, and its own debug mode is silent."""
    spec = dataclasses.replace(spec, state=False)
    full = full or full_walk(spec)
    try:
        cached = walk(spec, reduction=True, state_cache=True)
        checked = walk(spec, reduction=True, state_cache=True, check=True)
        stopping = prove(runner(spec), budget=Budget(examples=WALK_RUNS), state_cache=True)
    except StateCacheMismatch as mismatch:
        return [f"the state cache's own check: {mismatch}"]
    problems = []
    if cached.report.state_cache_off is not None:
        problems.append(f"the kernel could not fingerprint it: {cached.report.state_cache_off}")
    if not cached.report.complete:
        problems.append("the cached walk did not complete where the full walk did")
    if cached.endings != full.endings:
        missing = len(full.endings - cached.endings)
        extra = len(cached.endings - full.endings)
        problems.append(
            f"the cached walk misses {missing} ending(s) of the full walk, adds {extra}"
        )
    if cached.probes != full.probes:
        problems.append(f"probes reached: cached {cached.probes}, full {full.probes}")
    if checked.endings != full.endings:
        problems.append("the debug mode's walk differs from the full walk")
    return problems + _claims("the cached proof", stopping, full)


def scenario(spec: AnySpec) -> Scenario:
    """The spec as a scenario (never registered): its ``prove`` is the public API of ``-j``."""
    return Scenario(
        name="soundness-spec",
        summary=str(spec),
        variants={"model": "the generated model"},
        expect_violation=frozenset(),
        checkers=tuple(checkers(spec)),
        build=lambda world, variant, config: build(world, spec),
        bounds=bounds_of(spec),
    )


def _summary(report: ProofReport) -> dict[str, Any]:
    """What ``prove`` reports, beyond its verdict: what ``-j 2`` must report as ``-j 1`` does.

    A walk that runs to its end reports its schedules, probes and pruning, the same
    however it is split; one that stops at a finding reports the first finding in walk
    order (its choices and its ending), while how far the workers had run by then is
    theirs (``-j 2`` walks on in the other worker until it hears of the finding).
    """
    found = report.found
    if found is not None:
        return {"verdict": report.verdict, "found": (found.values, ending(found, 0))}
    return {
        "verdict": report.verdict,
        "complete": report.complete,
        "schedules": report.schedules,
        "probes": dict(sorted(report.probes.items())),
        "pruned": dict(sorted(report.pruned.items())),
    }


def parallel_problems(spec: AnySpec, full: Walk | None = None) -> list[str]:
    """``prove -j 2`` (the scenario's public ``prove``) against the full walk and ``-j 1``.

    Beside the verdict: the same schedule count, completeness, probes and pruning as
    ``-j 1`` over a walk that ends, the same first finding (its choices and its ending)
    over one that stops at a finding (``_summary``).
    """
    full = full or full_walk(spec)
    budget = Budget(examples=WALK_RUNS)
    # The stateless walk, whose counts -j must keep (the state cache has its own claims).
    report = scenario(spec).prove("model", budget, jobs=2, state_cache=False)
    alone = _summary(scenario(spec).prove("model", budget, jobs=1, state_cache=False))
    problems = _claims("prove -j 2", report, full)
    split = _summary(report)
    problems += [
        f"prove -j 2 reports {name} {split.get(name)!r}, -j 1 {alone[name]!r}"
        for name in alone
        if split.get(name) != alone[name]
    ]
    return problems


def masked(run: Runner, found: list[str] | None = None) -> Runner:
    """``run`` whose findings do not stop a walk: every schedule is judged (verdicts kept).

    A finding in a run that hit a bound leaves it what it is without one: undecided. Each
    finding masked is appended to ``found`` (its status): without one, the walk is ``run``'s.
    """

    def judged(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        if outcome.status not in FINDINGS:
            return outcome
        if found is not None:
            found.append(outcome.status)
        status = Verdict.OK if outcome.bound is None else Verdict.INCONCLUSIVE
        return dataclasses.replace(outcome, status=status)

    return judged


def _raised(check: Callable[[], ProofReport]) -> tuple[ProofReport | None, str | None]:
    """The check's report, or what it reported instead: bad input ("track it", exit 2) or
    a kernel primitive's footprint named as raceproof's bug (``FootprintBug``, exit 70)."""
    try:
        return check(), None
    except (BadInput, FootprintBug) as mismatch:
        return None, f"{type(mismatch).__name__}: {mismatch}"


def claims_of(steps: list[StepRecord]) -> set[tuple[str | None, ...]]:
    """The claims one run of a reduced walk rests on, each named by its steps' keys.

    Each "could have run first" pair (``movable_steps``) and each "could have run
    later" pair (``delayable_steps``) of the run's steps (those a draw chose or that
    are named), as the documented contract of ``--check-footprints`` names them:
    every step from the pair's first to its last; and each order the instant shortcut
    vouches for (``instant_pulls``), by its steps in that order.
    """
    steps = [s for s in steps if s.key is not None or s.options is not None]
    found: set[tuple[str | None, ...]] = {
        tuple(s.key for s in steps[i : j + 1]) for i, j in movable_steps(steps)
    }
    found |= {("later", *(s.key for s in steps[i : j + 1])) for i, j in delayable_steps(steps)}
    found |= {("instant", *(steps[s].key for s in order)) for _, _, order in instant_pulls(steps)}
    return found | unnamed_claims(steps)  # across a step with no key: counted unverified


def watched(run: Runner, claims: set[tuple[str | None, ...]]) -> Runner:
    """``run`` adding the claims each of a walk's runs rests on to ``claims``."""

    def watching(source: ChoiceSource) -> RunOutcome:
        try:
            return run(source)  # a run the reduction cuts raises: its claims count as well
        finally:
            steps = getattr(source, "steps", None)  # a walk's run logs its steps; a swap's not
            if steps is not None:
                claims.update(claims_of(steps))

    return watching


def coverage_problems(report: ProofReport | None, claims: set[tuple[str | None, ...]]) -> list[str]:
    """``--check-footprints`` tests every claim of the walk's runs once, or counts it unverified.

    The walk's runs are watched from outside the check (``watched``: each run's own step
    log); when the check passes, what it checked and left unverified must add up to the
    distinct claims those runs rest on, the runs the walk cut included (a sleeping
    step's claim is made in those only).
    """
    if report is None or report.footprints_checked is None:
        return []
    tested = report.footprints_checked + report.footprints_unverified
    if tested != len(claims):
        return [
            f"--check-footprints tested {tested} claims of the walk's runs, "
            f"which rest on {len(claims)}"
        ]
    return []


def checker_problems(spec: AnySpec, full: Walk | None = None, *, strict: bool = False) -> list[str]:
    """The checkers of soundness: silent on a sound reduction, loud on an unsound one.

    Over the whole walk (findings masked so nothing stops it), ``prove
    --check-footprints`` and ``--cross-check`` must raise ``FootprintMismatch`` (bad
    input) whenever the reduced walk misses an ending of the full walk. As the user
    runs them (stopping at the first finding), neither may end in a claim the full
    walk contradicts: no ``ok`` where it finds something, no ``cross_checked`` count
    over different endings. A check that left pairs unverified is no pass (``prove``
    says INCONCLUSIVE, exit 3), so it may meet an unsound reduction that way;
    ``strict`` (the slip hunts' claim) asks it to report the reduction all the same. On a model whose footprints are all recorded neither
    raises at all.
    """
    full = full or full_walk(spec)
    unsound = walk(spec, reduction=True).endings != full.endings
    run, budget = runner(spec), Budget(examples=WALK_RUNS)
    checks: dict[str, Callable[[Runner], ProofReport]] = {
        "--check-footprints": lambda r: prove(r, budget=budget, check_footprints=True),
        # Looked up at each call, so a slip planted in the module is the one run.
        "--cross-check": lambda r: cross_check_module.cross_check(r, budget=budget),
    }
    problems: list[str] = []
    claims: set[tuple[str | None, ...]] = set()  # of the --check-footprints walk's runs
    for name, check in checks.items():
        found: list[str] = []
        watching = watched(run, claims) if name == "--check-footprints" else run
        report, raised = _raised(partial(check, masked(watching, found)))
        if name == "--check-footprints":
            problems += coverage_problems(report, claims)
        # Pairs it could not follow make the command's verdict INCONCLUSIVE (exit 3): no pass.
        unverified = report is not None and bool(report.footprints_unverified)
        if unsound and raised is None and (strict or not unverified):
            problems.append(f"{name} passes a reduction that misses endings of the full walk")
        # As the user runs it: masking changes a walk from its first finding on only, so
        # without one the stopping walk is the masked one (deterministic), not walked again.
        stopping, stopped_raised = _raised(partial(check, run)) if found else (report, raised)
        if stopping is not None:
            problems += _claims(f"{name} (stopping)", stopping, full)
            if stopping.cross_checked is not None and unsound:
                problems.append(f"{name} counts a cross-check over different endings")
        for message in (raised, stopped_raised):
            if message is not None and not spec.untracked and not unsound:
                problems.append(f"{name} blames a model of tracked state: {message}")
    return problems


@dataclass
class _Tally:
    """What a walk's or a search's runs were, counted from the runs themselves."""

    runs: int = 0
    bounded: int = 0
    first_bounded: int | None = None  # how many runs came before the first bounded one
    probes: Counter[str] = dataclasses.field(default_factory=Counter)


def _tallied(run: Runner, tally: _Tally) -> Runner:
    def counted(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)  # a run cut by the reduction raises: neither judged nor bounded
        tally.runs += 1
        if outcome.bound is not None:
            if tally.first_bounded is None:
                tally.first_bounded = tally.runs
            tally.bounded += 1
        else:
            tally.probes.update(outcome.probes.keys())  # each judged run once per probe
        return outcome

    return masked(counted)


def bound_problems(spec: AnySpec, full: Walk | None = None) -> list[str]:
    """Runs cut by a bound are never a pass and never witness a probe (no full walk needed).

    The plain walk (findings masked, so every schedule is judged) counts each probe
    in exactly the judged runs that reached it, as counted from the runs themselves,
    and is neither ``ok`` nor ``complete`` once a run hit a bound; a random search
    (findings masked) that met a bound in any run is ``inconclusive``, not ``ok``.
    """
    proof_tally, search_tally = _Tally(), _Tally()
    run = runner(spec)
    report = prove(_tallied(run, proof_tally), budget=Budget(examples=WALK_RUNS), reduction=False)
    problems = []
    if report.probes != dict(proof_tally.probes):
        problems.append(
            f"the proof counts probes {report.probes}; its judged runs reached "
            f"{dict(proof_tally.probes)}"
        )
    if proof_tally.bounded and (report.verdict == Verdict.OK or report.complete):
        problems.append(
            f"the proof says {report.verdict} (complete={report.complete}) where "
            f"{proof_tally.bounded} runs hit a bound"
        )
    # The search up to its first bounded run (its examples are seeded one by one, so the
    # shorter search repeats the longer one's first examples): one bound hit is enough.
    explore_random(_tallied(run, search_tally), seed=0, budget=Budget(examples=SEARCH_EXAMPLES))
    if search_tally.first_bounded is not None:
        examples = search_tally.first_bounded + 1
        search = explore_random(masked(run), seed=0, budget=Budget(examples=examples))
        if search.verdict == Verdict.OK:
            problems.append(f"a search of {examples} examples says ok; its last hit a bound")
    return problems


MODES: dict[str, Callable[[AnySpec, Walk | None], list[str]]] = {
    "reduction": reduction_problems,
    "state-cache": state_cache_problems,
    "symmetry": symmetry_problems,
    "fingerprint": fingerprint_problems,
    "parallel": parallel_problems,
    "checkers": checker_problems,
    # The slip hunts' claim: both checkers report every unsound reduction they meet, and an
    # INCONCLUSIVE check (pairs left unverified) does not excuse it.
    "checkers-strict": partial(checker_problems, strict=True),
    "bounds": bound_problems,
}


@contextlib.contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    """``target.name = value`` for the block (a planted slip)."""
    original = inspect.getattr_static(target, name)  # a staticmethod stays one
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, original)


# -- the kernel's fingerprint on every built-in scenario (``make soundness``) -----------------
# The claim of ``fingerprint_problems`` on the catalogue: for each built-in scenario and variant,
# on ``test_reduction_catalogue``'s small configuration, the reduced walk with the state cache
# reaches the endings, probes and statuses of the reduced walk without it (which that test holds
# to the full walk; with declared symmetric actors, the endings up to their permutations), the
# kernel names every state, and the cache's debug mode is silent.
# ``python -m property_tests.soundness_walks`` checks every built-in; the suite a slice
# (``test_fingerprint.py``).


# Built-ins whose state the kernel refuses to name, and why: held to that refusal (their cache
# stays off, so their walk is the plain one) until the reason is mended. None today: the
# coordinator's partition queues and samza-drain's pending messages (deques) were refused until
# the fingerprint named a deque's items (``sim/fingerprint.py``).
CACHE_OFF: dict[str, str] = {}


def builtin_problems(scenario: Scenario, variant: str) -> tuple[list[str], dict[str, int]]:
    """What differs between the cached and the plain walk of one built-in; and their runs.

    A scenario that declares symmetric actors is walked with the cache twice: without its
    symmetry, the cached walk must reach the plain walk's very endings; with it, the cache
    merges a state with its images and keeps one of each, so the endings are compared up to
    a permutation of the declared actors (``_orbits``). A scenario that declares what its
    checkers read of the past (``raceproof.sim.past``) has its endings compared through it.
    """
    from property_tests.search_and_proof.test_reduction_catalogue import small_config

    config = small_config(scenario, variant)
    run = scenario.runner(variant, config)
    past = scenario.past  # a declared summary of the past: endings compared through it
    plain = walk_runner(run, reduction=True, past=past)
    actors = declared(scenario.symmetric(config)) if scenario.symmetric is not None else ()
    try:
        cached = walk_runner(run, reduction=True, state_cache=True, past=past)
        walk_runner(run, reduction=True, state_cache=True, check=True, past=past)
        exact = cached
        if actors:
            unmerged = dataclasses.replace(scenario, symmetric=None).runner(variant, config)
            exact = walk_runner(unmerged, reduction=True, state_cache=True, past=past)
    except StateCacheMismatch as mismatch:
        return [f"the state cache's own check: {mismatch}"], {}
    problems = _refusal_problems(scenario, cached.report)
    if cached.report.complete != plain.report.complete:
        problems.append(f"complete: cached {cached.report.complete}, plain {plain.report.complete}")
    problems += _ending_problems("the cached walk", exact.endings, plain.endings)
    if actors:
        merged, endings = _orbits(cached.endings, actors), _orbits(plain.endings, actors)
        problems += _ending_problems("the symmetric cached walk", merged, endings)
    if cached.probes != plain.probes or cached.statuses != plain.statuses:
        problems.append(
            f"probes {sorted(cached.probes)} / {sorted(plain.probes)}, "
            f"statuses {sorted(cached.statuses)} / {sorted(plain.statuses)}"
        )
    counts = {
        "plain_runs": plain.report.runs,
        "cached_runs": cached.report.runs,
        "cut": cached.report.state_cache_cuts,
        "states": cached.report.states_seen,
        "symmetric_merged": cached.report.symmetric_merged,
    }
    return problems, counts


def _refusal_problems(scenario: Scenario, report: ProofReport) -> list[str]:
    """The kernel names every state of a built-in but those ``CACHE_OFF`` holds it to refuse."""
    refused = CACHE_OFF.get(scenario.name)
    if report.state_cache_off is not None and (
        refused is None or refused not in report.state_cache_off
    ):
        return [f"the kernel could not fingerprint it: {report.state_cache_off}"]
    if report.state_cache_off is None and refused is not None:
        return [f"the kernel named a state it is held to refuse ({refused})"]
    return []


def _ending_problems(name: str, got: set[Any], wanted: set[Any]) -> list[str]:
    if got == wanted:
        return []
    return [f"{name} misses {len(wanted - got)} ending(s), adds {len(got - wanted)}"]


def _orbits(endings: set[tuple[Any, ...]], actors: tuple[tuple[str, ...], ...]) -> set[str]:
    """Each ending (``state_cache.ending``) as the least text of its images under every
    permutation of the declared actors: an ending and its images are one."""
    names = sorted({name for actor in actors for name in actor}, key=lambda n: (-len(n), n))
    token = re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, names))})(?![\w-])")
    tables = [
        {own: actors[j][p] for i, j in enumerate(order) for p, own in enumerate(actors[i])}
        for order in itertools.permutations(range(len(actors)))
    ]
    return {min(_image(ending, table, token) for table in tables) for ending in endings}


def _image(ending: tuple[Any, ...], table: dict[str, str], token: re.Pattern[str]) -> str:
    status, verdicts, tail = ending
    swap = partial(token.sub, lambda match: table[match.group(0)])
    if isinstance(tail, str):  # a declared past's summary (``past_ending``), renamed whole
        return repr((status, verdicts, swap(tail)))
    ops = sorted(
        (time_ms, swap(actor), kind, swap(fields)) for time_ms, actor, kind, fields in tail
    )
    return repr((status, verdicts, ops))


def main() -> int:
    """Every built-in scenario and variant; exit 1 if any differs."""
    from property_tests.search_and_proof.test_reduction_catalogue import CASES

    failed = 0
    for scenario, variant in CASES:
        started = time.monotonic()
        problems, counts = builtin_problems(scenario, variant)
        seconds = time.monotonic() - started
        failed += bool(problems)
        said = "; ".join(problems) if problems else "same endings, probes and verdicts"
        print(f"{scenario.name}/{variant}: {said} {counts} ({seconds:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
