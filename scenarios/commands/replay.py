"""``raceproof replay``: re-run a counterexample file exactly."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from raceproof.scenarios import runner
from raceproof.scenarios.catalogue import (
    UnknownName,
    config_from_json,
    get,
)
from raceproof.scenarios.commands.common import (
    UsageError,
    add_command,
    emit,
    outcome_story,
    print_outcome,
)
from raceproof.sim import (
    CounterexampleError,
    ReplayMisaligned,
    ReplaySource,
    first_divergence,
)
from raceproof.sim import repro as repro_files


# -- replay -------------------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    try:
        cx = repro_files.load(Path(args.file))
    except CounterexampleError as exc:
        raise UsageError(str(exc)) from None
    try:
        scenario = get(cx.scenario)
        scenario.check_variant(cx.variant)
    except UnknownName as exc:
        raise UsageError(f"{args.file}: out of date: {exc}") from None
    # Every configuration field is checked like `--set` (BadInput names the field).
    config = config_from_json(scenario.config, cx.config, source=f"{args.file}: config")
    run = scenario.runner(cx.variant, config)
    try:
        outcome = run(ReplaySource(cx.choices, strict=True))
    except ReplayMisaligned as exc:
        raise UsageError(
            f"{args.file}: out of date, the model changed underneath it: {exc}"
        ) from None
    if outcome.trace_hash != cx.trace_hash:
        index = first_divergence(cx.history, outcome.history)
        where = ""
        if index is not None and index < min(len(cx.history), len(outcome.history)):
            where = f": recorded {cx.history[index].describe()} / now {outcome.history[index].describe()}"
        raise UsageError(
            f"{args.file}: out of date: the replay diverges from the recorded timeline "
            f"at op #{index}{where}"
        )
    result = runner.base_result(scenario, cx.variant, "replay", config)
    result.update(runner.outcome_fields(outcome))
    result.update(
        examples=1,
        schedules=1,
        counterexample=str(args.file),
        recorded_trace_hash=cx.trace_hash,
        same_trace_hash=True,
        tool_version=cx.tool_version,
        git_commit=cx.git_commit,
    )
    result["repro"] = runner.repro_line(scenario, cx.variant, outcome.values, config)

    def human() -> None:
        title = f"== replay of {args.file}: {cx.scenario} / {cx.variant}"
        print_outcome(outcome, title, outcome_story(scenario, cx.variant, config, outcome, title))
        print(f"same trace hash as recorded: {outcome.trace_hash}")

    return emit(args, result, human)


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "replay",
        "replay a counterexample file; fails loudly if the model changed",
        cmd_replay,
        epilog="example:\n  raceproof replay counterexamples/lost-update--buggy--0df6354d1468.json",
    )
    sub.add_argument("file", help="a counterexample .json file")
