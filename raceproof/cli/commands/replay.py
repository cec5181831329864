"""``raceproof replay``: re-run a counterexample file, exactly, or keyed against another variant.

Without ``--variant`` (or with its own) the file replays strictly and must give
the recorded trace hash. With another variant it replays keyed by (label,
occurrence) (``raceproof.runs.counterexamples`` defines it): ``ok`` means
the fix holds against this counterexample, ``not-reached`` (exit 3, never a
pass) that the run did not follow it into the race window.
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


def cmd_replay(args: argparse.Namespace) -> int:
    try:
        loaded = counterexamples.load_for_cli(Path(args.file))
        replayed = counterexamples.replay_on(loaded, args.variant)
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
    )
    if replayed.mode == "keyed":
        result["reached"] = not replayed.not_reached
        result["not_reached"] = replayed.not_reached
        if replayed.verdict == "not-reached":
            result["verdict"] = "inconclusive"
            result["not_reached_reason"] = replayed.reason
            result["not_reached_verdict"] = outcome.status
    result["repro"] = runner.repro_line(scenario, replayed.variant, outcome.values, loaded.config)
    result["probes"] = {name: 0 for name in scenario.probes} | dict(outcome.probes)

    def human() -> None:
        title = f"== replay of {args.file}: {cx.scenario} / {replayed.variant}"
        if replayed.mode == "keyed":
            title += f" (its deviations on {cx.variant}, keyed by label and occurrence)"
        story = outcome_story(scenario, replayed.variant, loaded.config, outcome, title)
        print_outcome(outcome, title, story)
        if outcome.error is not None:
            print(runner.error_text(outcome, None))
        if replayed.mode == "exact":
            print(f"same trace hash as recorded: {outcome.trace_hash}")
        elif replayed.verdict == "not-reached":
            print(f"NOT REACHED on {replayed.variant}: {replayed.reason}; this is not a pass")
        elif replayed.verdict == "ok":
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
        "--variant fix-cas",
    )
    sub.add_argument("file", help="a counterexample .json file")
    sub.add_argument(
        "--variant",
        help="replay against this variant, keyed by (label, occurrence) (default: its own, exactly)",
    )
