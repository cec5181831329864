"""Checking a reduced proof against the full walk, on a configuration small enough for both.

``prove --check-footprints`` (``raceproof.sim.footprint_check``) tests the
footprints' claims one pair of steps at a time, on the runs the reduced walk
takes. This is the complementary, blunter check (``prove --cross-check``):
walk the schedules twice, once with the partial-order reduction and once
without, and require the same verdict and the same set of final states (each
run's verdicts and the ops it logged, up to their order). A footprint that
misses a shared object makes the reduced walk skip a schedule that ends
differently; here that shows as an ending only the full walk reaches, or as a
violation only the full walk finds, whatever the configuration of steps that
hid it. It costs a full walk, so it is for small configurations; when the
full walk does not complete within the budget the check says so (``cross_checked``
stays ``None``) and claims nothing.
"""

from __future__ import annotations

from typing import Any

from raceproof.sim.choices import ChoiceSource
from raceproof.sim.exhaustive import ProofReport, prove
from raceproof.sim.footprint_check import FootprintMismatch
from raceproof.sim.outcome import Runner, RunOutcome
from raceproof.sim.state_cache import ending
from raceproof.sim.verdicts import FINDINGS, CheckStatus


def _walk(run: Runner, reduction: bool, **options: Any) -> tuple[ProofReport, set[Any]]:
    seen: set[Any] = set()

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        seen.add(ending(outcome, 0))
        return outcome

    return prove(recording, reduction=reduction, **options), seen


def _show(end: Any) -> str:
    status, verdicts, ops = end
    failing = [name for name, verdict in verdicts if verdict != CheckStatus.OK]
    shown = "; ".join(f"{time_ms} ms {actor} {kind}" for time_ms, actor, kind, _ in ops[:6])
    return f"{status}{' (' + ', '.join(failing) + ')' if failing else ''}: {shown}"


def cross_check(run: Runner, **options: Any) -> ProofReport:
    """The reduced proof of ``run``, compared with the full walk (``prove``'s ``options``).

    Raises ``FootprintMismatch`` (bad input: the model's footprints) when the
    full walk reaches a verdict or a final state the reduced walk never did.
    """
    options.pop("reduction", None)
    options.pop("check_footprints", None)
    reduced, reduced_endings = _walk(run, True, **options)
    full, full_endings = _walk(run, False, **options)
    if full.verdict in FINDINGS and reduced.verdict not in FINDINGS:
        raise FootprintMismatch(
            f"footprints are wrong: the reduced walk says {reduced.verdict} "
            f"({reduced.schedules} schedules) but the full walk finds {full.verdict} "
            f"after {full.schedules}; the reduction skipped it as equivalent to an explored "
            f"schedule (run prove --check-footprints to name the two steps)"
        )
    if full.complete and reduced.complete and reduced_endings != full_endings:
        missing = sorted(full_endings - reduced_endings, key=repr)
        raise FootprintMismatch(
            f"footprints are wrong: the full walk reaches {len(missing)} final state(s) the "
            f"reduced walk never does, e.g. {_show(missing[0]) if missing else 'none'}; "
            f"the reduction skipped it as equivalent to an explored schedule "
            f"(run prove --check-footprints to name the two steps)"
        )
    if full.complete and reduced.complete:
        reduced.cross_checked = full.schedules
    return reduced
