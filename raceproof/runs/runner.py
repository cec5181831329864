"""Turning kernel results into the command line's JSON results and counterexample files.

One place builds the result fields DESIGN.md names (scenario, variant,
strategy, verdict, checker, examples, schedules, seconds, virtual_ms, steps,
trace_hash, counterexample, repro), the copy-pasteable repro line, and the
counterexample file, so ``repro``, ``explore``, ``prove`` and ``replay`` agree.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from raceproof.scenarios import discovery
from raceproof.scenarios.catalogue import Scenario, config_to_json
from raceproof.sim import Counterexample, RunOutcome, deviations, encode_blob
from raceproof.sim import repro as repro_files
from raceproof.sim.configs import BadInput
from raceproof.sim.errors import said
from raceproof.sim.verdicts import ExitCode

# The exit codes and the verdict -> exit code mapping live in raceproof.sim.verdicts; these
# names are kept for the commands that import them from here.
EXIT_OK, EXIT_VIOLATED, EXIT_USAGE = ExitCode.OK, ExitCode.VIOLATED, ExitCode.USAGE
EXIT_INCONCLUSIVE, EXIT_ERROR = ExitCode.INCONCLUSIVE, ExitCode.ERROR
EXIT_INTERNAL = ExitCode.INTERNAL


@cache
def tool_version() -> str:
    try:
        return metadata.version("raceproof")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@cache
def git_commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def overrides_of(scenario: Scenario, config: Any) -> dict[str, Any]:
    """The fields of ``config`` that differ from the scenario's search configuration."""
    default = config_to_json(scenario.config)
    return {k: v for k, v in config_to_json(config).items() if default.get(k) != v}


def repro_line(scenario: Scenario, variant: str, values: Sequence[int], config: Any) -> str:
    """The one command that reruns these choices on this configuration.

    A scenario loaded with ``--scenarios`` gets its ``--scenarios`` back. The
    configuration is written as ``--set`` for every field that differs
    from the scenario's search configuration (which ``repro`` starts from),
    so a counterexample found on the proof configuration reproduces too.
    """
    sets = "".join(
        " --set " + shlex.quote(f"{k}={json.dumps(v, separators=(',', ':'))}")
        for k, v in sorted(overrides_of(scenario, config).items())
    )
    where = "".join(" " + shlex.quote(arg) for arg in discovery.scenarios_args(scenario.name))
    return (
        f"raceproof repro {scenario.name} --variant {variant} --choices {encode_blob(values)}"
        f"{sets}{where}"
    )


def outcome_fields(outcome: RunOutcome) -> dict[str, Any]:
    violation = outcome.violation
    return {
        "verdict": outcome.status,
        "checker": violation.checker if violation else None,
        "message": violation.message if violation else None,
        "op_index": violation.op_index if violation else None,
        "verdicts": [v.to_json() for v in outcome.verdicts],
        "virtual_ms": outcome.virtual_ms,
        "steps": outcome.steps,
        "trace_hash": outcome.trace_hash,
        "end_reason": outcome.end_reason,
        "bound": outcome.bound,
        "draws": len(outcome.choices),
        "deviations": deviations(outcome.values),
        # each schedule deviation's actors: who ran, and whom it overtook
        "overtaken": [
            {"draw": draw, "ran": ran, "overtook": overtook}
            for draw, (ran, overtook) in sorted(outcome.overtaken.items())
        ],
        "blob": encode_blob(outcome.values),
        "timeline_ops": len(outcome.history),
        "error": outcome.error.to_json() if outcome.error else None,
        "run_probes": dict(outcome.probes),
    }


def error_text(outcome: RunOutcome, repro: str | None) -> str:
    """An ``error`` run as a user reads it: the model's own frames, the exception, the repro line."""
    error = outcome.error
    assert error is not None, "only an erring run has an error text"
    lines = [
        "the model raised (verdict error: a crash in the model, workload or checker, "
        "not a found race):",
        error.render(),
        f"at {error.where}, after {outcome.steps} steps, {outcome.virtual_ms} virtual ms, "
        f"{deviations(outcome.values)} deviation(s) from FIFO",
    ]
    if repro:
        lines.append(f"repro: {repro}")
    return "\n".join(lines)


def base_result(scenario: Scenario, variant: str, strategy: str, config: Any) -> dict[str, Any]:
    return {
        "scenario": scenario.name,
        "variant": variant,
        "strategy": strategy,
        "verdict": None,
        "checker": None,
        "examples": 0,
        "schedules": 0,
        "seconds": 0.0,
        "virtual_ms": 0,
        "steps": 0,
        "trace_hash": None,
        "counterexample": None,
        "repro": None,
        "config": config_to_json(config),
    }


def counterexample_of(
    scenario: Scenario, variant: str, config: Any, outcome: RunOutcome, strategy: str
) -> Counterexample:
    """The counterexample of a violating run, stamped with this tool's version and commit."""
    violation = outcome.violation
    assert violation is not None
    return Counterexample(
        scenario=scenario.name,
        variant=variant,
        config=config_to_json(config),
        choices=list(outcome.choices),
        trace_hash=outcome.trace_hash,
        verdict=violation.to_json(),
        history=outcome.history,
        tool_version=tool_version(),
        git_commit=git_commit(),
        strategy=strategy,
    )


def save_counterexample(
    out_dir: Path, scenario: Scenario, variant: str, config: Any, outcome: RunOutcome, strategy: str
) -> Path:
    counterexample = counterexample_of(scenario, variant, config, outcome, strategy)
    path = out_dir / f"{scenario.name}--{variant}--{outcome.trace_hash[:12]}.json"
    repro_files.save(path, counterexample)
    return path


# What a write that fails after the search raises: the system's error, or the one line
# ``raceproof.sim.user_files`` made of it (a full disk, a file-size limit, a folder gone).
WRITE_FAILURES = (OSError, BadInput)


def unsaved(what: str, exc: BaseException) -> str:
    """The one-line warning of a result printed but not saved: the verdict's exit stays."""
    return f"the result above is not saved: could not write {what}: {said(exc)}"


def warn_unsaved(*warnings: str | None) -> None:
    """Each warning of a failed write, one line on stderr, after the result."""
    for warning in warnings:
        if warning:
            print(f"raceproof: warning: {warning}", file=sys.stderr)


NOT_SAVED = (
    "not saved (--out DIR saves it; --out counterexamples puts it in the pytest regression folder)"
)


def attach_counterexample(
    result: dict[str, Any],
    out_dir: Path | None,
    scenario: Scenario,
    variant: str,
    config: Any,
    outcome: RunOutcome,
    strategy: str,
) -> None:
    """Put a violating run's fields, its saved counterexample and its repro line into ``result``.

    Beside the counterexample file go its reports: the Markdown (with the Mermaid
    diagram, for a ticket) and the HTML timeline, named like it; their paths go
    into ``result`` as ``report_md`` and ``report_html``. An erring run (the
    model raised) gets its error, its choices and its repro line, but no
    counterexample file: it is not a violation to replay against a fix. With no
    ``out_dir`` (``prove`` and ``repro`` without ``--out``) nothing is written:
    ``counterexample`` is None, so the pytest regression folder grows only when asked.
    """
    result.update(outcome_fields(outcome))
    result["repro"] = repro_line(scenario, variant, outcome.values, config)
    if outcome.error is not None:
        return
    if out_dir is None:
        result["counterexample"] = None
        return
    path = out_dir / "?"
    try:
        path = save_counterexample(out_dir, scenario, variant, config, outcome, strategy)
        reports = write_reports(path, scenario, variant, config, outcome, result["repro"])
    except WRITE_FAILURES as exc:
        # The folder was checked before the search; if it failed since (a full disk), the
        # result still prints, then this warning (``emit``); no file of the three is left.
        for written in (path, path.with_suffix(".md"), path.with_suffix(".html")):
            written.unlink(missing_ok=True)
        result["counterexample"] = None
        result["write_error"] = unsaved(f"the counterexample in {out_dir}", exc)
        return
    result["counterexample"] = str(path)
    result.update(reports)


def write_reports(
    counterexample: Path,
    scenario: Scenario,
    variant: str,
    config: Any,
    outcome: RunOutcome,
    repro: str,
) -> dict[str, str]:
    """Write ``NAME.md`` and ``NAME.html`` beside the counterexample file ``NAME.json``."""
    from raceproof.reports import render_html, render_markdown
    from raceproof.runs.stories import story_of_outcome

    story = story_of_outcome(
        scenario, variant, config, outcome, repro=repro, source=str(counterexample)
    )
    md_path = counterexample.with_suffix(".md")
    html_path = counterexample.with_suffix(".html")
    repro_files.write_atomically(md_path, render_markdown(story))
    repro_files.write_atomically(html_path, render_html(story))
    return {"report_md": str(md_path), "report_html": str(html_path)}
