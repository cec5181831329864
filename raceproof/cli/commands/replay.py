"""``raceproof replay``: re-run a counterexample file, exactly, or keyed against another variant.

Without ``--variant`` (or with its own) the file replays strictly and must give
the recorded trace hash. With another variant it replays keyed by (label,
occurrence) (``raceproof.runs.counterexamples`` defines it): ``ok`` means
the fix holds against this counterexample, ``not-reached`` (exit 3, never a
pass) that the run did not follow it into the race window.

A file the model has moved away from (out of date: the exact replay no longer
gives the recorded timeline) is refused with one line saying whether the same
choices still violate, and the command that re-records it: ``--rerecord``
writes the same choices' run on the model as it is now over the file, only if
it still violates (see ``raceproof.runs.counterexamples``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from raceproof.cli.commands.common import (
    UsageError,
    add_command,
    emit,
    outcome_story,
    print_outcome,
)
from raceproof.runs import counterexamples, runner
from raceproof.sim.verdicts import Verdict


def _rerecord(loaded: counterexamples.Loaded, variant: str | None) -> str:
    """``--rerecord``: the file made current (or left as it is); what to print about it."""
    own = loaded.counterexample.variant
    if variant is not None and variant != own:
        raise UsageError(f"--rerecord re-records on the file's own variant {own}, not {variant}")
    stale = counterexamples.rerecord(loaded)
    if stale is None:
        return f"{loaded.path} is up to date: nothing re-recorded"
    if not stale.still_violates or stale.outcome.error is not None:
        raise UsageError(f"{loaded.path}: not re-recorded: {stale.sentence(loaded.path)}")
    return f"re-recorded {loaded.path}: the same choices on the model as it is now"


def cmd_replay(args: argparse.Namespace) -> int:
    loaded = None
    try:
        loaded = counterexamples.load_for_cli(Path(args.file))
        note = _rerecord(loaded, args.variant) if args.rerecord else None
        replayed = counterexamples.replay_on(loaded, args.variant)
    except counterexamples.Diverged as exc:
        said = str(exc)
        if loaded is not None:  # always: only a loaded file's replay diverges
            said += f"; {counterexamples.staleness(loaded).sentence(loaded.path)}"
        raise UsageError(said) from None
    except counterexamples.OutOfDate as exc:
        raise UsageError(str(exc)) from None
    cx, scenario, outcome = loaded.counterexample, loaded.scenario, replayed.outcome
    result = runner.base_result(scenario, replayed.variant, "replay", loaded.config)
    result.update(runner.outcome_fields(outcome))
    result.update(
        examples=1,
        schedules=1,
        counterexample=str(args.file),
        recorded_variant=cx.variant,
        recorded_trace_hash=cx.trace_hash,
        replay_mode=replayed.mode,
        same_trace_hash=outcome.trace_hash == cx.trace_hash,
        tool_version=cx.tool_version,
        git_commit=cx.git_commit,
        rerecorded=note is not None and note.startswith("re-recorded"),
    )
    if replayed.mode == "keyed":
        result["reached"] = not replayed.not_reached
        result["not_reached"] = replayed.not_reached
        if replayed.verdict == Verdict.NOT_REACHED:
            result["verdict"] = Verdict.INCONCLUSIVE
            result["not_reached_reason"] = replayed.reason
            result["not_reached_verdict"] = outcome.status
    result["repro"] = runner.repro_line(scenario, replayed.variant, outcome.values, loaded.config)
    result["probes"] = {name: 0 for name in scenario.probes} | dict(outcome.probes)

    def human() -> None:
        if note is not None:
            print(note)
        title = f"== replay of {args.file}: {cx.scenario} / {replayed.variant}"
        if replayed.mode == "keyed":
            title += f" (its deviations on {cx.variant}, keyed by label and occurrence)"
        story = outcome_story(scenario, replayed.variant, loaded.config, outcome, title)
        print_outcome(outcome, title, story)
        if outcome.error is not None:
            print(runner.error_text(outcome, None))
        if replayed.mode == "exact":
            print(f"same trace hash as recorded: {outcome.trace_hash}")
        elif replayed.verdict == Verdict.NOT_REACHED:
            print(f"NOT REACHED on {replayed.variant}: {replayed.reason}; this is not a pass")
        elif replayed.verdict == Verdict.OK:
            print(f"{replayed.variant} holds against this counterexample (every deviation reached)")
        print(f"repro: {result['repro']}")

    return emit(args, result, human)


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "replay",
        "replay a counterexample file; on another variant, keyed (or 'not reached')",
        cmd_replay,
        epilog="examples:\n"
        "  raceproof replay counterexamples/lost-update--buggy--0df6354d1468.json\n"
        "  raceproof replay counterexamples/lost-update--buggy--0df6354d1468.json "
        "--variant fix-cas\n"
        "  raceproof replay counterexamples/lost-update--buggy--0df6354d1468.json --rerecord",
    )
    sub.add_argument("file", help="a counterexample .json file")
    sub.add_argument(
        "--variant",
        help="replay against this variant, keyed by (label, occurrence) (default: its own, exactly)",
    )
    sub.add_argument(
        "--rerecord",
        action="store_true",
        help="if the file is out of date (the model changed) and its choices still violate, "
        "write their run on the model as it is now over the file",
    )
