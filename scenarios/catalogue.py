"""The scenario catalogue: model + workload + checkers + bounds + the report's own timeline.

A scenario is data. It names the model's variants (which are expected to
violate and which to hold), the workload configuration for search and the
smaller one for proofs, the bounds of a run, and, when the race report tells
its own story, the choice sequence that replays it. The command line, the
campaigns, the pytest plugin and the tests all take scenarios from ``CATALOGUE``.
``register`` is the one way into it, for the built-in scenarios and the user's
alike; ``raceproof.scenarios.discovery`` finds the modules that call it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from raceproof.sim import (
    Bounds,
    Budget,
    Checker,
    ChoiceSource,
    KeyedReplaySource,
    ProofReport,
    Runner,
    RunOutcome,
    World,
    checker_name,
    encode_blob,
    execute,
    prove,
)
from raceproof.sim import configs as validation
from raceproof.sim.errors import did_you_mean
from raceproof.sim.explore import Progress
from raceproof.sim.past import Past
from raceproof.sim.proof_plan import prove_parallel
from raceproof.sim.proof_units import single_balance
from raceproof.sim.shared import WholeObjectFootprints
from raceproof.sim.verdicts import Verdict


class UnknownName(LookupError):
    """An unknown scenario or variant; the message lists the valid names."""


@dataclass(frozen=True)
class NoConfig:
    """The configuration of a scenario registered without one: no fields to set."""


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    variants: Mapping[str, str]  # name -> what it is
    expect_violation: frozenset[str]  # variants a correct harness must find violated
    checkers: Sequence[Checker]
    build: Callable[[World, str, Any], Any]
    config: Any = None  # the model's configuration dataclass, for search (None: no fields)
    prove_config: Any = None  # a smaller configuration, for proofs (None: ``config``)
    bounds: Bounds = field(default_factory=Bounds)
    prove_max_deviations: int | None = None
    prove_max_branch: int | None = None
    # The race report's own story, as the deviations it takes: (label, occurrence) -> option.
    report_script: Mapping[tuple[str, int], int] | None = None
    report_variant: str | None = None
    # Real backends: name -> run(hosts, variant, config, simulated) forced onto a simulated run.
    real_backends: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    # The model keeps the footprint contract of World.declare_footprints, so proofs may
    # skip schedules that only reorder commuting steps (the partial-order reduction).
    declares_footprints: bool = False
    # Interchangeable actors (``raceproof.sim.symmetry``): config -> their names, each a name or
    # a tuple of the names that belong to it; the state cache counts their permutations once.
    symmetric: Callable[[Any], Sequence[str | Sequence[str]]] | None = None
    # What of the past the checkers judge (``raceproof.sim.past``): the state cache's
    # fingerprint holds its summary in place of the history (``World.declare_past``).
    past: Past | None = None
    default_examples: int = 10_000
    default_budget_s: float = 60.0
    notes: Mapping[str, str] = field(default_factory=dict)
    # Race-window probes the model marks with ``world.reach(NAME)``: a run of a variant
    # expected to hold that never reaches one of them is ``not-reached``, never ``ok``.
    probes: Sequence[str] = ()
    # variant -> {probe: why that variant's fix makes it unreachable by design}; the
    # variant is judged without those probes.
    unreachable_probes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Variants expected to violate whose violation needs a coincidence a search seldom draws
    # (say which in a comment): the gate judges them by the proof alone, never by a search.
    found_by_proof: frozenset[str] = frozenset()
    # Exceptions of the model that count as a violation (pseudo-checker ``model-exception``);
    # any other exception out of the model, workload or checkers is the verdict ``error``.
    violation_exceptions: tuple[type[BaseException], ...] = ()

    def __post_init__(self) -> None:
        if self.config is None:
            object.__setattr__(self, "config", NoConfig())
        if self.prove_config is None:
            object.__setattr__(self, "prove_config", self.config)
        # Probes given as any iterable (a generator too) are read once, here: a generator
        # used up by the checks at registration would leave an unreached window judged ok.
        probes = self.probes
        if not isinstance(probes, str | bytes) and isinstance(probes, Iterable):
            object.__setattr__(self, "probes", tuple(probes))

    def check_variant(self, variant: str) -> None:
        if variant not in self.variants:
            raise UnknownName(
                f"unknown variant {variant!r} of {self.name}"
                f"{did_you_mean(variant, self.variants)}; valid: {', '.join(self.variants)}"
            )

    def config_for(
        self, purpose: str, overrides: Mapping[str, Any] | None = None, *, option: str = "--set"
    ) -> Any:
        """The search (or proof) configuration with ``overrides`` checked and applied.

        Every value is checked against the configuration dataclass's own
        declarations (``raceproof.sim.configs``); a bad one raises
        ``BadInput`` naming the field, the value, what is allowed and the ``option``
        the user gave it by (``--set``, ``bench --knob``).
        """
        base = self.prove_config if purpose == "prove" else self.config
        if not overrides:
            return base
        return validation.apply_overrides(base, overrides, source=f"{self.name}: {option}")

    def checkers_named(self, name: str | None) -> Sequence[Checker]:
        """All checkers, or only ``name`` (to aim a search at one property)."""
        if name is None:
            return self.checkers
        chosen = [c for c in self.checkers if checker_name(c) == name]
        if not chosen:
            valid = ", ".join(checker_name(c) for c in self.checkers)
            near = did_you_mean(name, (checker_name(c) for c in self.checkers))
            raise UnknownName(f"unknown checker {name!r} of {self.name}{near}; valid: {valid}")
        return chosen

    def build_for(self, variant: str, config: Any) -> Callable[[World], None]:
        """The World's build of ``variant`` on ``config`` (footprints declared when promised)."""

        def build(world: World) -> None:
            world.declared_probes = tuple(self.probes)
            if self.declares_footprints:
                world.declare_footprints()
            if self.symmetric is not None:
                world.declare_symmetric(*self.symmetric(config))
            if self.past is not None:
                world.declare_past(self.past)
            self.build(world, variant, config)

        return build

    def execute(
        self,
        build: Callable[[World], None],
        source: ChoiceSource,
        checkers: Sequence[Checker] | None = None,
    ) -> RunOutcome:
        """One run of ``build`` judged as this scenario judges every run.

        Its bounds and its declared ``violation_exceptions`` included: every
        command that runs or replays the scenario (search, proof, repro,
        replay, shrinking, the story of a report) goes through here, so a
        declared exception replays as the violation it was found as.
        """
        chosen = self.checkers if checkers is None else checkers
        return execute(build, source, chosen, self.bounds, self.violation_exceptions)

    def runner(self, variant: str, config: Any, checker: str | None = None) -> Runner:
        self.check_variant(variant)
        checkers = self.checkers_named(checker)
        build = self.build_for(variant, config)

        def run(source: ChoiceSource) -> RunOutcome:
            return self.execute(build, source, checkers)

        return run

    def probes_for(self, variant: str) -> list[str]:
        """The probes ``variant`` must reach to be judged ``ok`` (declared, less its exemptions)."""
        exempt = self.unreachable_probes.get(variant, {})
        return [name for name in self.probes if name not in exempt]

    def judge_probes(
        self, variant: str, verdict: str, reached: Mapping[str, int]
    ) -> tuple[str, dict[str, int], list[str]]:
        """The verdict once the probes are counted, every declared probe's count, and notes.

        An ``ok`` of a variant whose declared probe no run reached becomes
        ``not-reached``: the race window was never open, so holding says nothing.
        A violation, an error or an inconclusive result stands (with a note).
        """
        counts = {name: 0 for name in self.probes}
        counts.update(reached)
        counts = dict(sorted(counts.items()))
        notes = [
            f"probe {name!r} exempt on {variant}: {why}"
            for name, why in sorted(self.unreachable_probes.get(variant, {}).items())
        ]
        missing = [name for name in self.probes_for(variant) if not counts.get(name)]
        if missing and verdict in (Verdict.OK, Verdict.INCONCLUSIVE):
            notes.insert(
                0,
                "race window never reached: probe(s) "
                + ", ".join(repr(name) for name in missing)
                + " reached by no run",
            )
            verdict = Verdict.NOT_REACHED if verdict == Verdict.OK else Verdict(verdict)
        return verdict, counts, notes

    def prove(
        self,
        variant: str,
        budget: Budget,
        *,
        config: Any = None,
        checker: str | None = None,
        max_deviations: int | None = None,
        max_branch: int | None = None,
        progress: Progress | None = None,
        reduction: bool = True,
        jobs: int = 1,
        state_cache: bool | None = None,
        state_cache_check: bool = False,
        check_footprints: bool = False,
        cross_check: bool = False,
        worker_setup: Callable[[], None] | None = None,
        whole_object_footprints: bool = False,
    ) -> ProofReport:
        """Bounded exhaustive exploration on the proof configuration and the scenario's caps.

        ``reduction``: the partial-order reduction (sound; off walks every schedule);
        ``jobs`` > 1 splits the walk over that many worker processes (same counts),
        each of which first calls ``worker_setup`` (the command line's: die with it);
        ``state_cache`` cuts at states explored before, named by the kernel (or the model's
        ``declare_state``) where the state has a name; None (the default): on with the
        reduction, off for the plain walk (every schedule);
        ``whole_object_footprints`` records each tracked container as one resource
        (``raceproof.sim.shared.WholeObjectFootprints``: the bench's comparison).
        """
        run = self.runner(variant, self.prove_config if config is None else config, checker)
        if whole_object_footprints:
            run = WholeObjectFootprints(run)
        max_dev = self.prove_max_deviations if max_deviations is None else max_deviations
        branch = self.prove_max_branch if max_branch is None else max_branch
        if cross_check:  # the reduced walk and the full walk, compared (sim/cross_check.py)
            from raceproof.sim.cross_check import cross_check as compared

            return compared(
                run,
                budget=budget,
                progress=progress,
                max_deviations=max_dev,
                max_branch=branch,
            )
        walk: dict[str, Any] = dict(
            budget=budget,
            reduction=reduction,
            progress=progress,
            max_deviations=max_dev,
            max_branch=branch,
            state_cache=reduction if state_cache is None else state_cache,
            state_cache_check=state_cache_check,
            check_footprints=check_footprints,
        )
        if jobs > 1:
            return prove_parallel(run, jobs, worker_setup=worker_setup, **walk)
        report = prove(run, **walk)
        report.balance = single_balance(report)
        return report

    @property
    def report_timeline(self) -> str | None:
        """The report's story as a fixed choice blob (its script run once, recorded)."""
        if self.report_script is None or self.report_variant is None:
            return None
        run = self.runner(self.report_variant, self.config)
        outcome = run(KeyedReplaySource(dict(self.report_script)))
        return encode_blob(outcome.values)

    def describe(self) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "summary": self.summary,
            "variants": dict(self.variants),
            "expect_violation": sorted(self.expect_violation),
            "found_by_proof": sorted(self.found_by_proof),
            "checkers": [checker_name(c) for c in self.checkers],
            "bounds": self.bounds.to_json(),
            "config": config_to_json(self.config),
            "prove_config": config_to_json(self.prove_config),
            "prove_max_deviations": self.prove_max_deviations,
            "prove_max_branch": self.prove_max_branch,
            "declares_footprints": self.declares_footprints,
            "symmetric": self.symmetric is not None,
            "probes": list(self.probes),
            "unreachable_probes": {v: dict(p) for v, p in self.unreachable_probes.items()},
            "violation_exceptions": [k.__qualname__ for k in self.violation_exceptions],
            "report_timeline": self.report_timeline,
            "report_variant": self.report_variant,
            "backends": ["sim", *sorted(self.real_backends)],
        }


# What makes a run: two scenarios equal on all of these run the same model the same way.
_RUN_FIELDS = (
    "build",
    "config",
    "bounds",
    "declares_footprints",
    "symmetric",
    "past",
    "violation_exceptions",
)


def same_runs(a: Scenario, b: Scenario, variant: str) -> bool:
    """Whether a search of ``variant`` makes exactly the same runs in ``a`` and in ``b``.

    True when both run one model the same way (the same build, search configuration,
    bounds and declarations: ``_RUN_FIELDS``) and only their checkers and probes differ,
    as ``brooklin-redundant-stop`` is ``brooklin-double-stop``'s model under another
    checker. A run also reads the scenario's declared probes (``World.reach`` refuses a
    name a typo away from one), so each's probes must be no near miss of the other's.
    """
    if type(a) is not type(b) or a.name == b.name:
        return False
    if variant not in a.variants or variant not in b.variants:
        return False
    if any(getattr(a, name) != getattr(b, name) for name in _RUN_FIELDS):
        return False
    near = [p for p in a.probes if p not in b.probes and did_you_mean(p, b.probes, cutoff=0.85)]
    near += [p for p in b.probes if p not in a.probes and did_you_mean(p, a.probes, cutoff=0.85)]
    return not near


# What a proof reads besides a search's fields: its configuration and caps.
_PROOF_FIELDS = ("prove_config", "prove_max_deviations", "prove_max_branch")


def same_proof(a: Scenario, b: Scenario, variant: str) -> bool:
    """Whether the proof of ``variant`` walks exactly the same schedules in ``a`` and in ``b``:
    they make the same runs (``same_runs``) on the same proof configuration and caps."""
    if not same_runs(a, b, variant):
        return False
    return all(getattr(a, name) == getattr(b, name) for name in _PROOF_FIELDS)


def judged_together(host: Scenario, others: Sequence[Scenario]) -> Scenario:
    """``host`` with the checkers and probes of ``others`` too: one run judged by all of them.

    Only for scenarios that make the same runs (``same_runs``). A run of it violates when
    any scenario's checker fails; with no checker failing and none undecided, each
    scenario's judgement of the runs is this one's.
    """
    every = [host, *others]
    probes = list(host.probes)
    probes += [p for other in others for p in other.probes if p not in probes]
    exempt = {
        v: {p: why for s in every for p, why in s.unreachable_probes.get(v, {}).items()}
        for v in host.variants
    }
    return dataclasses.replace(
        host,
        name="+".join(s.name for s in every),
        checkers=tuple(c for s in every for c in s.checkers),
        probes=tuple(probes),
        unreachable_probes={v: e for v, e in exempt.items() if e},
    )


def config_to_json(config: Any) -> dict[str, Any]:
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }


def config_from_json(template: Any, raw: Mapping[str, Any], source: str = "configuration") -> Any:
    """Rebuild a configuration dataclass from its JSON form, every field checked like ``--set``."""
    return validation.config_from_json(template, raw, source=source)


CATALOGUE: dict[str, Scenario] = {}
# Where each scenario came from: "builtin", "entry-point:NAME", "pyproject:PATH" or
# "command-line:SPEC". The repro line of a scenario from the command line carries its
# ``--scenarios SPEC``, so the line runs as printed.
ORIGINS: dict[str, str] = {}
_loading_origin: list[str] = []
_REGISTERED = [0]  # successful ``register`` calls (``registrations``)


class RegistrationError(ValueError):
    """A scenario that cannot be registered (a duplicate name, inconsistent variants)."""


def _source_file(scenario: Scenario) -> str | None:
    code = getattr(scenario.build, "__code__", None)
    return code.co_filename if code is not None else None


def register(scenario: Scenario | Callable[[], Scenario]) -> Scenario:
    """Make ``scenario`` known to the command line, the pytest plugin and the gate.

    The one registration mechanism, for the built-in catalogue and the user's
    scenarios alike. Call it with a Scenario, or use it as a decorator on a
    function without arguments that returns one. A second scenario of the same
    name is an error (the same module loaded twice replaces its own).
    """
    if not isinstance(scenario, Scenario):
        if not callable(scenario):
            raise RegistrationError(f"register() takes a Scenario, got {type(scenario).__name__}")
        made = scenario()
        if not isinstance(made, Scenario):
            raise RegistrationError(
                f"{getattr(scenario, '__name__', scenario)!r} returned "
                f"{type(made).__name__}, not a Scenario"
            )
        scenario = made
    if not scenario.name or not isinstance(scenario.name, str):
        raise RegistrationError("a scenario needs a non-empty name")
    if not isinstance(scenario.variants, Mapping):
        raise RegistrationError(
            f"scenario {scenario.name}: variants must map each variant's name to what it is "
            f"(a dict), got {type(scenario.variants).__name__}"
        )
    if not scenario.variants:
        raise RegistrationError(f"scenario {scenario.name} has no variants")
    for purpose in ("config", "prove_config"):
        value = getattr(scenario, purpose)
        if value is not None and (not dataclasses.is_dataclass(value) or isinstance(value, type)):
            raise RegistrationError(
                f"scenario {scenario.name}: {purpose} must be an instance of a configuration "
                f"dataclass (or None), got {type(value).__name__}"
            )
    unknown_variants = sorted(set(scenario.expect_violation) - set(scenario.variants))
    if unknown_variants:
        raise RegistrationError(
            f"scenario {scenario.name}: expect_violation names unknown variants {unknown_variants}"
        )
    if not set(scenario.found_by_proof) <= set(scenario.expect_violation):
        raise RegistrationError(
            f"scenario {scenario.name}: found_by_proof names variants not expected to violate "
            f"{sorted(set(scenario.found_by_proof) - set(scenario.expect_violation))}"
        )
    _check_probes(scenario)
    if scenario.report_variant is not None and scenario.report_variant not in scenario.variants:
        raise RegistrationError(
            f"scenario {scenario.name}: report_variant {scenario.report_variant!r} is not a variant"
        )
    _check_defaults(scenario)
    origin = _loading_origin[-1] if _loading_origin else "builtin"
    previous = CATALOGUE.get(scenario.name)
    if previous is not None and _source_file(previous) != _source_file(scenario):
        raise RegistrationError(
            f"scenario {scenario.name!r} is registered twice: first from "
            f"{_source_file(previous)} ({ORIGINS.get(scenario.name)}), again from "
            f"{_source_file(scenario)} ({origin})"
        )
    CATALOGUE[scenario.name] = scenario
    ORIGINS.setdefault(scenario.name, origin)
    _REGISTERED[0] += 1
    return scenario


def registrations() -> int:
    """How many ``register`` calls succeeded so far (a loaded file that made none is said)."""
    return _REGISTERED[0]


def _check_defaults(scenario: Scenario) -> None:
    """Both configurations are dataclass instances whose values pass the checks of ``--set``."""
    for label, config in (("config", scenario.config), ("prove_config", scenario.prove_config)):
        if not dataclasses.is_dataclass(config) or isinstance(config, type):
            raise RegistrationError(
                f"scenario {scenario.name}: {label} must be an instance of a configuration "
                f"dataclass (or None), got {type(config).__name__}"
            )
        try:
            validation.apply_overrides(
                config, config_to_json(config), source=f"scenario {scenario.name}: {label}"
            )
        except validation.BadInput as exc:
            raise RegistrationError(str(exc)) from None


def _check_probes(scenario: Scenario) -> None:
    if isinstance(scenario.probes, str) or not all(
        isinstance(p, str) and p for p in scenario.probes
    ):
        raise RegistrationError(f"scenario {scenario.name}: probes must be a sequence of names")
    for variant, exempt in scenario.unreachable_probes.items():
        if variant not in scenario.variants:
            raise RegistrationError(
                f"scenario {scenario.name}: unreachable_probes names unknown variant {variant!r}"
            )
        for probe, why in exempt.items():
            if probe not in scenario.probes or not isinstance(why, str) or not why.strip():
                raise RegistrationError(
                    f"scenario {scenario.name}: unreachable_probes[{variant!r}] needs declared "
                    f"probes with a reason each, got {probe!r}: {why!r}"
                )
    declared = scenario.violation_exceptions
    if not isinstance(declared, tuple):
        # ``isinstance(exc, declared)`` needs a tuple: a list or a generator would be
        # accepted here and crash at the model's first raise.
        raise RegistrationError(
            f"scenario {scenario.name}: violation_exceptions must be a tuple of Exception "
            f"classes, got a {type(declared).__name__}"
        )
    for kind in declared:
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise RegistrationError(
                f"scenario {scenario.name}: violation_exceptions takes Exception classes, "
                f"got {kind!r}"
            )


def get(name: str) -> Scenario:
    from raceproof.scenarios import discovery

    discovery.ensure_loaded()
    scenario = CATALOGUE.get(name)
    if scenario is None:
        raise UnknownName(
            f"unknown scenario {name!r}{did_you_mean(name, CATALOGUE)}; "
            f"valid: {', '.join(sorted(CATALOGUE))}{discovery.empty_entries_said()} (a scenario of "
            f'your own loads from pyproject.toml\'s [tool.raceproof] scenarios = ["FILE.py"], '
            f"or --scenarios FILE.py; in pytest --raceproof-scenarios FILE.py)"
        )
    return scenario


def all_scenarios() -> list[Scenario]:
    from raceproof.scenarios import discovery

    discovery.ensure_loaded()
    return [CATALOGUE[name] for name in sorted(CATALOGUE)]
