"""Expectations of a catalogue, judged the same way by ``raceproof check`` and the pytest plugin.

A scenario states which variants must violate and which must hold. The gate
turns that into runs: a search per strategy for every variant, a bounded
proof for every variant expected to hold (and, alone, for a variant expected
to violate that the scenario says only a proof finds: ``found_by_proof``). A *profile* says how hard to look:

- ``ci``: every strategy, the scenario's example count, seed 0, and no wall
  budget at all, so no clock can change a verdict or an example count;
- ``dev``: the random strategy, a quarter of the examples, a fresh seed each
  time (printed), and the scenario's wall budget;
- ``thorough``: every strategy, ten times the examples, a fresh seed, no wall budget.

A verdict ``error`` (the model, workload or checker raised) never meets an
expectation, ``violated`` included: it fails the gate. A verdict ``not-reached``
(a declared race-window probe no run reached) never passes either. Every
result carries the probes' reached counts.

A result that is not the expected one carries what a failing test prints: the
shrunk timeline, the deviations from FIFO, the one-line repro and the
counterexample file's path. The clock is a parameter: it times the runs and,
only in a profile with a wall budget, bounds them.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from raceproof.runs import runner
from raceproof.scenarios.catalogue import Scenario, UnknownName, get
from raceproof.sim import STRATEGIES, Budget, RunOutcome, explore
from raceproof.sim.configs import BadInput
from raceproof.sim.errors import did_you_mean
from raceproof.sim.exhaustive import UNDECIDED, ProofReport
from raceproof.sim.explore import MAX_EXAMPLES, SearchReport
from raceproof.sim.verdicts import ExitCode, GateStatus, Verdict, gate_exit_code

Clock = Callable[[], float]


@dataclass(frozen=True)
class Profile:
    name: str
    strategies: tuple[str, ...]
    examples_scale: float  # times the scenario's default_examples
    wall_budget: bool  # whether the scenario's default_budget_s applies
    derandomize: bool  # seed 0; else a fresh seed per search
    prove_max_schedules: int
    prove_budget_s: float | None


PROFILES = {
    "ci": Profile(
        name="ci",
        strategies=STRATEGIES,
        examples_scale=1.0,
        wall_budget=False,
        derandomize=True,
        prove_max_schedules=1_000_000,
        prove_budget_s=None,
    ),
    "dev": Profile(
        name="dev",
        strategies=("random",),
        examples_scale=0.25,
        wall_budget=True,
        derandomize=False,
        prove_max_schedules=200_000,
        prove_budget_s=120.0,
    ),
    "thorough": Profile(
        name="thorough",
        strategies=STRATEGIES,
        examples_scale=10.0,
        wall_budget=False,
        derandomize=False,
        prove_max_schedules=10_000_000,
        prove_budget_s=None,
    ),
}
PROFILE_ENV = "RACEPROOF_PROFILE"


def profile_named(name: str | None) -> Profile:
    """``name``, else ``$RACEPROOF_PROFILE``, else ``ci``."""
    chosen = name or os.environ.get(PROFILE_ENV) or "ci"
    if chosen not in PROFILES:
        near = did_you_mean(chosen, PROFILES)
        raise UnknownName(
            f"unknown raceproof profile {chosen!r}{near}; valid: {', '.join(PROFILES)}"
        )
    return PROFILES[chosen]


def outcome_text(outcome: RunOutcome, title: str) -> str:
    """A run as people read it: title, timeline, verdicts, deviations from FIFO, verdict line."""
    from raceproof.reports.terminal import verdict_line

    lines = [title, outcome.history.render(), ""]
    for verdict in outcome.verdicts:
        lines.append(
            verdict_line(verdict.status, verdict.checker, verdict.op_index, verdict.message)
        )
    devs = [
        f"draw #{i} {c.label} = option {c.value} of {c.n}"
        for i, c in enumerate(outcome.choices)
        if c.value
    ]
    lines.append(f"deviations from FIFO ({len(devs)}): " + ("; ".join(devs) if devs else "none"))
    lines.append(
        f"verdict: {outcome.status}   trace {outcome.trace_hash[:16]}   "
        f"{outcome.virtual_ms} virtual ms, {outcome.steps} steps"
    )
    return "\n".join(lines)


@dataclass
class CheckResult:
    """One expectation judged: a search by one strategy, or a proof."""

    scenario: str
    variant: str
    kind: str  # "random", "hypothesis", "pct" or "prove"
    expected: Verdict  # violated or ok
    verdict: Verdict  # violated, ok, inconclusive, not-reached or error
    examples: int = 0
    seconds: float = 0.0
    seed: int | None = None
    complete: bool | None = None
    deviations: int | None = None
    notes: list[str] = field(default_factory=list)
    counterexample: str | None = None
    repro: str | None = None
    run_text: str | None = None  # the shrunk run, as outcome_text renders it
    probes: dict[str, int] = field(default_factory=dict)  # probe -> examples/schedules reaching it
    error: dict[str, Any] | None = None  # the model's exception (verdict ``error``)
    # Distinct schedules: a proof's complete schedules (its ``examples`` are its runs, as
    # ``prove --json`` has them); a search's examples (the schema's ``schedules``).
    schedules: int = 0
    unsaved: str | None = None  # why its counterexample could not be written (a full disk)

    @property
    def status(self) -> GateStatus:
        """pass; fail (the opposite verdict); error (the model raised: never a pass);
        inconclusive (a bound or budget was hit, or the race window was never reached)."""
        return GateStatus.of(self.expected, self.verdict)

    @property
    def cell(self) -> str:
        if self.kind == "prove":
            text = f"{self.verdict} {self.schedules} sched"
        else:
            devs = f"/{self.deviations}dev" if self.deviations is not None else ""
            text = f"{self.verdict}@{self.examples}{devs}"
        if self.probes:
            text += f" r{min(self.probes.values())}"  # runs that reached the least-reached probe
        mark = {
            GateStatus.PASS: "",
            GateStatus.FAIL: " FAIL",
            GateStatus.ERROR: " ERROR",
            GateStatus.INCONCLUSIVE: " ?",
        }[self.status]
        return f"{text} {self.seconds:.1f}s{mark}"

    @property
    def how(self) -> str:
        """``random search, seed 0, 12 examples`` or ``proof, 46 schedules``."""
        if self.kind == "prove":
            return f"proof, {self.schedules} schedules"
        return f"{self.kind} search, seed {self.seed}, {self.examples} examples"

    def explain(self, told_by: CheckResult | None = None) -> str:
        """Why this result is not the expected one, with everything needed to look into it.

        ``told_by``: another result of the same scenario and variant whose explanation
        already holds the shrunk timeline; this one then names it instead of a second copy.
        """
        lines = [
            f"{self.scenario} / {self.variant}: expected {self.expected}, got {self.verdict} "
            f"({self.how})"
        ]
        lines += [f"  {note}" for note in self.notes]
        if self.probes:
            lines.append(
                "  probes reached: "
                + ", ".join(f"{name!r} {count}" for name, count in self.probes.items())
            )
        if self.run_text and told_by is not None:
            lines.append(f"shrunk timeline: as {told_by.how} found it (printed once)")
        elif self.run_text:
            lines += ["shrunk timeline:", self.run_text]
        if self.repro:
            lines.append(f"repro: {self.repro}")
        if self.counterexample:
            lines.append(f"counterexample: {self.counterexample}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


def _expected(scenario: Scenario, variant: str, expect: str | None = None) -> Verdict:
    """``expect`` if given (it must be ``ok`` or ``violated``), else what the catalogue says."""
    if expect is not None and expect not in (Verdict.OK, Verdict.VIOLATED):
        near = did_you_mean(expect, (Verdict.OK, Verdict.VIOLATED))
        raise UnknownName(f"expect must be 'ok' or 'violated', got {expect!r}{near}")
    if expect is not None:
        return Verdict(expect)
    return Verdict.VIOLATED if variant in scenario.expect_violation else Verdict.OK


def _seed(profile: Profile) -> int:
    return 0 if profile.derandomize else int.from_bytes(os.urandom(4), "big")


def _found(
    result: CheckResult, scenario: Scenario, config: Any, shrunk: RunOutcome, out_dir: Path | None
) -> None:
    """Fill a result with its shrunk run; save the counterexample when it was not expected."""
    result.deviations = sum(1 for v in shrunk.values if v)
    result.repro = runner.repro_line(scenario, result.variant, shrunk.values, config)
    if shrunk.error is not None:
        result.error = shrunk.error.to_json()
        result.run_text = runner.error_text(shrunk, None)
        return  # no counterexample file: an error is not a violation to replay
    result.run_text = outcome_text(shrunk, f"== {scenario.name} / {result.variant}")
    if out_dir is not None and result.status != GateStatus.PASS:
        try:
            path = runner.save_counterexample(
                out_dir, scenario, result.variant, config, shrunk, result.kind
            )
        except runner.WRITE_FAILURES as exc:  # the check's verdict stands; ``check`` warns
            result.unsaved = runner.unsaved(f"the counterexample in {out_dir}", exc)
            return
        result.counterexample = str(path)


def run_explore(
    name: str,
    variant: str,
    strategy: str,
    profile: Profile,
    *,
    expect: str | None = None,
    examples: int | None = None,
    seed: int | None = None,
    clock: Clock = time.monotonic,
    out_dir: Path | None = None,
) -> CheckResult:
    """One search of ``variant`` by ``strategy`` under ``profile``.

    ``examples`` and ``seed`` are range-checked as the command line checks
    ``--examples`` and ``--seed`` (``BadInput``): the pytest fixture's
    ``examples=-5`` must not run nothing and pass.
    """
    scenario = get(name)
    scenario.check_variant(variant)
    if strategy not in STRATEGIES:
        near = did_you_mean(strategy, STRATEGIES)
        raise UnknownName(f"unknown strategy {strategy!r}{near}; valid: {', '.join(STRATEGIES)}")
    _check_count("examples", examples, low=1, high=MAX_EXAMPLES)
    _check_count("seed", seed, low=0, high=None)
    count = (
        examples
        if examples is not None
        else max(1, round(scenario.default_examples * profile.examples_scale))
    )
    budget = Budget(count)
    if profile.wall_budget:
        budget = Budget(count, scenario.default_budget_s, clock)
    _expected(scenario, variant, expect)  # a bad ``expect`` is refused before anything runs
    seed = _seed(profile) if seed is None else seed
    started = clock()
    report = explore(scenario.runner(variant, scenario.config), strategy, seed, budget)
    return search_check(
        scenario,
        variant,
        report,
        seed=seed,
        seconds=clock() - started,
        out_dir=out_dir,
        expect=expect,
    )


def search_check(
    scenario: Scenario,
    variant: str,
    report: SearchReport,
    *,
    seed: int,
    seconds: float,
    out_dir: Path | None,
    expect: str | None = None,
) -> CheckResult:
    """A search's report judged against the expectation (its counterexample saved if unexpected)."""
    result = CheckResult(
        scenario=scenario.name,
        variant=variant,
        kind=report.strategy,
        expected=_expected(scenario, variant, expect),
        verdict=report.verdict,
        examples=report.examples,
        seconds=round(seconds, 3),
        seed=seed,
        notes=list(report.notes),
        schedules=report.examples,
    )
    if report.shrunk is not None:
        result.notes = []
        _found(result, scenario, scenario.config, report.shrunk, out_dir)
    _judge_probes(result, scenario, report.probes)
    return result


def _check_count(name: str, value: object, *, low: int, high: int | None) -> None:
    """``value`` is None or an integer in ``[low, high]``, else ``BadInput`` naming it."""
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadInput(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        span = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadInput(f"{name} must be {span}, got {value}")


def _judge_probes(result: CheckResult, scenario: Scenario, reached: dict[str, int]) -> None:
    """The probes' counts into ``result``; an ``ok`` whose race window was never reached is not."""
    verdict, result.probes, notes = scenario.judge_probes(result.variant, result.verdict, reached)
    result.verdict = Verdict(verdict)
    # the reason a verdict became not-reached goes first; otherwise the search's own notes do
    first = verdict == Verdict.NOT_REACHED
    result.notes = [*notes, *result.notes] if first else [*result.notes, *notes]


def run_prove(
    name: str,
    variant: str,
    profile: Profile,
    *,
    expect: str | None = None,
    clock: Clock = time.monotonic,
    out_dir: Path | None = None,
) -> CheckResult:
    """The bounded proof of ``variant`` on the scenario's proof configuration.

    Stateless (no state cache): the gate cuts a proof into units over its workers
    (``raceproof.gate.parts``), and only the stateless walk counts the same runs, classes
    and probes however it is cut; a cache's counts depend on the split.
    """
    scenario = get(name)
    scenario.check_variant(variant)
    budget = Budget(profile.prove_max_schedules)
    if profile.prove_budget_s is not None:
        budget = Budget(profile.prove_max_schedules, profile.prove_budget_s, clock)
    started = clock()
    report = scenario.prove(variant, budget, state_cache=False)
    return prove_check(
        scenario, variant, report, seconds=clock() - started, expect=expect, out_dir=out_dir
    )


def prove_check(
    scenario: Scenario,
    variant: str,
    report: ProofReport,
    *,
    seconds: float,
    expect: str | None = None,
    out_dir: Path | None = None,
) -> CheckResult:
    """The check a proof's report makes (walked whole, or in units by ``gate.parts``)."""
    result = CheckResult(
        scenario=scenario.name,
        variant=variant,
        kind="prove",
        expected=_expected(scenario, variant, expect),
        verdict=report.verdict,
        examples=report.runs,
        seconds=round(seconds, 3),
        complete=report.complete,
        schedules=report.schedules,
    )
    bounds = {k: v for k, v in report.pruned.items() if not k.startswith(UNDECIDED)}
    if bounds:
        result.notes.append(
            "pruned by: " + ", ".join(f"{k} ({v} branches)" for k, v in sorted(bounds.items()))
        )
    result.notes += [
        f"{v} runs {k} (the checker said unknown): not a proof"
        for k, v in sorted(report.pruned.items())
        if k.startswith(UNDECIDED)
    ]
    if report.undecided is not None and report.shrunk is None:
        result.repro = runner.repro_line(
            scenario, variant, report.undecided.values, scenario.prove_config
        )
    if report.shrunk is not None:
        result.verdict = report.verdict
        _found(result, scenario, scenario.prove_config, report.shrunk, out_dir)
    _judge_probes(result, scenario, report.probes)
    return result


@dataclass(frozen=True)
class Job:
    scenario: str
    variant: str
    kind: str


def jobs_for(scenarios: Sequence[Scenario], profile: Profile) -> list[Job]:
    """Every expectation: a search per strategy for each variant, a proof for each that must hold.

    A variant the scenario says is ``found_by_proof`` (its violation needs a
    coincidence a search seldom draws) is judged by its proof alone.
    """
    jobs = []
    for scenario in scenarios:
        for variant in scenario.variants:
            if variant in scenario.found_by_proof:
                jobs.append(Job(scenario.name, variant, "prove"))
                continue
            jobs += [Job(scenario.name, variant, strategy) for strategy in profile.strategies]
            if variant not in scenario.expect_violation:
                jobs.append(Job(scenario.name, variant, "prove"))
    return jobs


def run_job(
    job: Job,
    profile: Profile,
    out_dir: Path | None = None,
    examples: int | None = None,
    clock: Clock = time.monotonic,
) -> CheckResult:
    if job.kind == "prove":
        return run_prove(job.scenario, job.variant, profile, clock=clock, out_dir=out_dir)
    return run_explore(
        job.scenario,
        job.variant,
        job.kind,
        profile,
        examples=examples,
        clock=clock,
        out_dir=out_dir,
    )


def exit_code(results: Sequence[CheckResult]) -> ExitCode:
    """1 if any expectation failed, else 4 if a model raised, else 3 if any was
    inconclusive or not reached, else 0."""
    return gate_exit_code({r.status for r in results})


def table(results: Sequence[CheckResult], profile: Profile) -> str:
    """One row per scenario and variant, one column per strategy and the proof."""
    from raceproof.reports.terminal import columns_text

    kinds = [*profile.strategies, "prove"]
    rows: dict[tuple[str, str], dict[str, CheckResult]] = {}
    for r in results:
        rows.setdefault((r.scenario, r.variant), {})[r.kind] = r
    header = ("scenario", "variant", "expected", *kinds, "result")
    lines = [header]
    for (name, variant), cells in rows.items():
        statuses = {c.status for c in cells.values()}
        outcome = {
            ExitCode.VIOLATED: "FAIL",
            ExitCode.ERROR: "ERROR",
            ExitCode.INCONCLUSIVE: "?",
            ExitCode.OK: Verdict.OK,
        }[gate_exit_code(statuses)]
        expected = next(iter(cells.values())).expected
        lines.append(
            (
                name,
                variant,
                expected,
                *(cells[k].cell if k in cells else "-" for k in kinds),
                outcome,
            )
        )
    return columns_text(lines)


def told_once(results: Sequence[CheckResult]) -> list[tuple[CheckResult, CheckResult | None]]:
    """Each failing result and the one whose explanation tells its timeline (None: itself).

    A broken fix is found by every strategy and the proof: its story is told once, by
    the first result of its scenario, variant and verdict, and the others name that one.
    """
    first: dict[tuple[str, str, str], CheckResult] = {}
    told: list[tuple[CheckResult, CheckResult | None]] = []
    for result in results:
        if result.status == GateStatus.PASS:
            continue
        key = (result.scenario, result.variant, str(result.verdict))
        teller = first.setdefault(key, result) if result.run_text else None
        told.append((result, None if teller is result else teller))
    return told


def stories(results: Sequence[CheckResult]) -> list[str]:
    """The failing results' explanations for the terminal, each timeline once, with the
    strategies that found it listed under it."""
    blocks: list[str] = []
    told = told_once(results)
    for result, teller in told:
        if teller is not None:
            continue
        others = [r.how for r, t in told if t is result]
        also = f"\nalso found by: {'; '.join(others)}" if others else ""
        blocks.append(result.explain() + also)
    return blocks


def junit(results: Sequence[CheckResult], seconds: float) -> str:
    """A JUnit XML report: one test case per expectation, named scenario / variant / kind."""
    suite = ET.Element(
        "testsuite",
        name="raceproof check",
        tests=str(len(results)),
        failures=str(sum(r.status in (GateStatus.FAIL, GateStatus.ERROR) for r in results)),
        errors=str(sum(r.status == GateStatus.INCONCLUSIVE for r in results)),
        time=f"{seconds:.3f}",
    )
    tellers = {id(r): teller for r, teller in told_once(results)}
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"{r.scenario}.{r.variant}",
            name=r.kind,
            time=f"{r.seconds:.3f}",
        )
        if r.probes:
            properties = ET.SubElement(case, "properties")
            for name, count in r.probes.items():
                ET.SubElement(properties, "property", name=f"probe:{name}", value=str(count))
        if r.status in (GateStatus.FAIL, GateStatus.ERROR):
            ET.SubElement(
                case, "failure", message=f"expected {r.expected}, got {r.verdict}"
            ).text = r.explain(tellers.get(id(r)))
        elif r.status == GateStatus.INCONCLUSIVE:
            # JUnit's <error> element (not a verdict): an undecided result is neither pass nor fail
            ET.SubElement(case, "error", message=r.verdict).text = r.explain()  # not a verdict
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
