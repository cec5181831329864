"""Stories for the reports: a run replayed so its deviations sit where they happened, and its counterpart.

A counterexample file lists its choices but not where in the history each was
drawn. Replaying it (the scenario is needed, so this lives in ``scenarios``,
above ``reports``) with a choice source that notes the history's length at
every draw places each deviation before the op that followed it.

The counterpart answers "what had to go differently": the same choices with
the deciding deviation reverted to 0. Each deviation is reverted alone, keyed
by (label, occurrence) so the others stay on the draws they meant, latest
first; the first whose revert makes the violated checker hold is the deciding
one. When none does alone, the latest is reverted and the note says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from raceproof.reports.story import (
    Clock,
    Deviation,
    Story,
    VerdictView,
    deviations_of,
    load_story,
)
from raceproof.scenarios.catalogue import Scenario, UnknownName, config_from_json, get
from raceproof.sim import (
    ChoiceSource,
    KeyedReplaySource,
    ReplayMisaligned,
    ReplaySource,
    RunOutcome,
    World,
    first_divergence,
    keyed_deviations,
    run_checkers,
)
from raceproof.sim import repro as repro_files
from raceproof.sim.errors import contract
from raceproof.sim.verdicts import CheckStatus


class _Placing(ChoiceSource):
    """Delegates every draw to ``inner`` and notes how many ops the history held at that draw."""

    def __init__(self, inner: ChoiceSource) -> None:
        super().__init__()
        self.inner = inner
        self.uses_keys = inner.uses_keys
        self.world: World | None = None
        self.positions: list[int] = []

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        self.positions.append(len(self.world.history) if self.world is not None else 0)
        return self.inner._draw(label, n, p_nonzero, keys)


def placed_run(
    scenario: Scenario, variant: str, config: Any, source: ChoiceSource
) -> tuple[RunOutcome, list[int]]:
    """One run of the scenario, and for each draw the index of the op logged after it."""
    placing = _Placing(source)
    build_world = scenario.build_for(variant, config)

    def build(world: World) -> None:
        placing.world = world
        build_world(world)

    # The scenario's own execution: its bounds and its declared violation exceptions.
    outcome = scenario.execute(build, placing)
    if isinstance(source, ReplaySource):
        source.finish()
    return outcome, placing.positions


def _verdicts(outcome: RunOutcome) -> list[VerdictView]:
    return [
        VerdictView(checker=v.checker, status=v.status, op_index=v.op_index, message=v.message)
        for v in outcome.verdicts
    ]


def story_of_outcome(
    scenario: Scenario,
    variant: str,
    config: Any,
    outcome: RunOutcome,
    *,
    repro: str | None,
    source: str = "",
    counterpart: bool = True,
) -> Story:
    """The story of a simulated run: deviations placed, and (if it violated) its counterpart."""
    placed, positions = placed_run(scenario, variant, config, ReplaySource(outcome.choices))
    contract(placed.trace_hash == outcome.trace_hash, "a replay must give the same history")
    story = Story(
        title=f"{scenario.name} / {variant}",
        history=outcome.history,
        clock="virtual",
        verdicts=_verdicts(outcome),
        deviations=deviations_of(outcome.choices, positions, placed.overtaken),
        repro=repro,
        source=source,
        scenario=scenario.name,
        variant=variant,
        probes={name: 0 for name in scenario.probes} | dict(outcome.probes),
    )
    if counterpart and outcome.violation is not None and story.deviations:
        attach_counterpart(story, scenario, variant, config, outcome)
    return story


def attach_counterpart(
    story: Story, scenario: Scenario, variant: str, config: Any, outcome: RunOutcome
) -> None:
    """Set ``story.counterpart``: the run with the deciding deviation reverted."""
    violation = outcome.violation
    assert violation is not None
    keyed = keyed_deviations(outcome.choices)
    keys = _keys_in_draw_order(outcome)
    tried: list[tuple[int, Deviation, RunOutcome, list[int]]] = []
    for deviation, key in reversed(list(zip(story.deviations, keys, strict=True))):
        others = {k: v for k, v in keyed.items() if k != key}
        run, positions = placed_run(scenario, variant, config, KeyedReplaySource(others))
        still = {v.checker for v in run.verdicts if v.status == CheckStatus.VIOLATED}
        rank = 0 if not still else 1 if violation.checker not in still else 2
        tried.append((rank, deviation, run, positions))
        if rank == 0:
            break
    # the best revert, the latest deviation among equals (min keeps the first tried)
    rank, deviation, run, positions = min(tried, key=lambda t: t[0])
    parted = first_divergence(outcome.history, run.history)
    where = f"the runs part at op #{parted}" if parted is not None else "the histories are equal"
    if rank < 2:
        note = (
            f"Reverting the one deviation `{deviation.sentence()}` (draw #{deviation.draw}) "
            f"to FIFO, everything else the same, `{violation.checker}` holds; {where}."
        )
    else:
        note = (
            f"No single deviation decides it alone; reverting the latest, "
            f"`{deviation.sentence()}`, `{violation.checker}` still fails; {where}."
        )
    others_failing = [
        v
        for v in run.verdicts
        if v.status == CheckStatus.VIOLATED and v.checker != violation.checker
    ]
    for v in others_failing:
        note += f" (That run still fails `{v.checker}` at op #{v.op_index}: {v.message}.)"
    story.counterpart = Story(
        title=f"{scenario.name} / {variant} without {deviation.label}",
        history=run.history,
        clock="virtual",
        verdicts=_verdicts(run),
        deviations=deviations_of(run.choices, positions, run.overtaken),
        scenario=scenario.name,
        variant=variant,
    )
    story.counterpart_note = note
    story.reverted = deviation


def _keys_in_draw_order(outcome: RunOutcome) -> list[tuple[str, int]]:
    seen: dict[str, int] = {}
    keys = []
    for choice in outcome.choices:
        occurrence = seen.get(choice.label, 0)
        seen[choice.label] = occurrence + 1
        if choice.value:
            keys.append((choice.label, occurrence))
    return keys


def load_for_report(
    path: Path, *, clock: Clock | None = None, scenario_name: str | None = None
) -> Story:
    """The story of one input file, enriched by a replay when its scenario is known.

    A counterexample whose scenario and variant still replay to the recorded
    trace hash gets its deviations placed and its counterpart; one that no
    longer replays is drawn as recorded, and the note says why. A history given
    with ``scenario_name`` is judged by that scenario's checkers (a real run's
    history is judged the same way as a simulated one).
    """
    story = load_story(path, clock)
    if story.scenario is not None:
        return _enrich_counterexample(path, story)
    if scenario_name is not None:
        scenario = get(scenario_name)
        verdicts = run_checkers(story.history, scenario.checkers)
        story = replace(
            story,
            verdicts=[
                VerdictView(
                    checker=v.checker, status=v.status, op_index=v.op_index, message=v.message
                )
                for v in verdicts
            ],
            scenario=scenario.name,
        )
    return story


def _enrich_counterexample(path: Path, story: Story) -> Story:
    cx = repro_files.load(path)
    scenario = get(cx.scenario)  # a scenario that does not exist is bad input (exit 2)
    scenario.check_variant(cx.variant)
    try:
        config = config_from_json(scenario.config, cx.config)
        outcome, _ = placed_run(scenario, cx.variant, config, ReplaySource(cx.choices))
    except (UnknownName, TypeError, ReplayMisaligned) as exc:
        story.counterpart_note = f"(not replayed: {exc})"
        return story
    if outcome.trace_hash != cx.trace_hash:
        story.counterpart_note = "(not replayed: the model changed since this file was written)"
        return story
    recorded = cx.verdict.get("status")
    if outcome.status != recorded:
        # The same history judged otherwise: a checker or hook that now raises (the replay's
        # verdict is error) would draw the run with no verdict at all, "not judged".
        said = outcome.error.headline if outcome.error is not None else outcome.status
        story.counterpart_note = (
            f"(not replayed: the replay ended {outcome.status}, not {recorded}: {said})"
        )
        return story
    from raceproof.runs.runner import repro_line

    return story_of_outcome(
        scenario,
        cx.variant,
        config,
        outcome,
        repro=repro_line(scenario, cx.variant, outcome.values, config),
        source=str(path),
    )
