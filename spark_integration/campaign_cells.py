"""One campaign cell: scenario × variant × strategy × seed, run anywhere, the same row everywhere.

A cell is plain data (:class:`Cell`), so Spark can ship it to any executor,
and :func:`run_cell` turns it into one result row (a dict of the columns in
:data:`COLUMNS`) without Spark: the driver runs the same function in-process
for the determinism cross-check and the benchmark's baseline. A cell's search
has an examples-only budget, so nothing in its row but ``seconds`` and
``executor`` depends on which machine ran it or how loaded that machine was;
``cell_hash`` chains the trace hash of every run the cell made (search and
shrinking), which is what the cross-check compares.

A cell never raises: an error that escapes the kernel (a checker that
crashes, a scenario that no longer loads) becomes a row with verdict
``error`` and the error's last line, so one broken model does not lose a
campaign.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# the results' columns: the folder format, read by reports, re-exported for the writers here
from raceproof.reports.campaign_folder import COLUMN_NAMES as COLUMN_NAMES
from raceproof.reports.campaign_folder import COLUMNS as COLUMNS
from raceproof.sim import Budget, Runner, RunOutcome, deviations, encode_blob, explore
from raceproof.sim.verdicts import Verdict

# Columns that differ between two runs of the same cell by design.
VOLATILE = frozenset({"seconds", "executor"})


@dataclass(frozen=True)
class Cell:
    kind: str  # "search" or "proof"
    scenario: str
    variant: str
    strategy: str
    seed: int
    examples: int
    # Where user scenarios come from: (driver's working folder, --scenarios entries).
    scenarios_base: str = ""
    scenarios: tuple[str, ...] = ()
    pct_depth: int = 3

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.scenario}/{self.variant}/{self.strategy}/{self.seed}/{self.examples}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_scenarios(base: str, entries: Sequence[str]) -> None:
    """Make the user's scenarios known in this process, as the command line would.

    The one entry to the ``--scenarios`` mechanism for campaigns: the
    discovery module when this raceproof has it, else a plain import of each
    module or file (files resolved against ``base``, the driver's folder).
    """
    import importlib

    discovery: Any
    try:
        discovery = importlib.import_module("raceproof.scenarios.discovery")
    except ImportError:
        discovery = None
    if discovery is not None:
        previous = Path.cwd()
        try:
            if base:
                os.chdir(base)
            discovery.ensure_loaded(list(entries))
        finally:
            os.chdir(previous)
        return
    _import_entries(base, entries)


_IMPORTED: set[str] = set()


def _import_entries(base: str, entries: Sequence[str]) -> None:
    import importlib
    import importlib.util
    import sys

    from raceproof.scenarios.catalogue import UnknownName, get

    get("lost-update")  # the built-in catalogue first
    for entry in entries:
        path = Path(base or ".") / entry
        key = str(path.resolve()) if entry.endswith(".py") or path.is_file() else entry
        if key in _IMPORTED:
            continue
        if entry.endswith(".py") or path.is_file():
            if not path.is_file():
                raise UnknownName(f"cannot load scenarios from {entry}: no such file")
            name = "raceproof_user_" + hashlib.sha256(key.encode()).hexdigest()[:10]
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise UnknownName(f"cannot load scenarios from {entry}: not a Python file")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            if base and base not in sys.path:
                sys.path.insert(0, base)
            importlib.import_module(entry)
        _IMPORTED.add(key)


class _Recorder:
    """Wraps a runner: counts virtual time and chains the trace hash of every run."""

    def __init__(self, run: Runner) -> None:
        self.run = run
        self.digest = hashlib.sha256()
        self.virtual_ms = 0

    def __call__(self, source: Any) -> RunOutcome:
        outcome = self.run(source)
        self.virtual_ms += outcome.virtual_ms
        self.digest.update(outcome.trace_hash.encode())
        return outcome


def _identity() -> tuple[str, str]:
    from raceproof.runs import runner

    return runner.tool_version(), runner.git_commit()


def empty_row(cell: Cell, expected: str) -> dict[str, Any]:
    version, commit = _identity()
    row: dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    row.update(
        cell=cell.key,
        kind=cell.kind,
        scenario=cell.scenario,
        variant=cell.variant,
        strategy=cell.strategy,
        seed=cell.seed,
        examples_budget=cell.examples,
        expected=expected,
        examples=0,
        schedules=0,
        virtual_ms=0,
        tool_version=version,
        git_commit=commit,
        executor=f"{socket.gethostname()}:{os.getpid()}",
    )
    return row


def counterexample_name(row: dict[str, Any]) -> str:
    return f"counterexamples/{row['scenario']}--{row['variant']}--{row['trace_hash'][:12]}.json"


def counterexample_text(
    scenario: Any, variant: str, config: Any, outcome: RunOutcome, strategy: str
) -> str:
    """The counterexample file's text (the driver writes it: executors may be other machines)."""
    from raceproof.runs import runner

    counterexample = runner.counterexample_of(scenario, variant, config, outcome, strategy)
    return json.dumps(counterexample.to_json(), indent=1, sort_keys=True) + "\n"


def found_fields(row: dict[str, Any], shrunk: RunOutcome) -> None:
    violation = shrunk.violation
    row["checker"] = violation.checker if violation else None
    row["trace_hash"] = shrunk.trace_hash
    row["blob"] = encode_blob(shrunk.values)
    row["deviations"] = deviations(shrunk.values)
    row["counterexample"] = counterexample_name(row)


def finish_row(row: dict[str, Any], expected: str) -> dict[str, Any]:
    row["met"] = row["verdict"] == expected
    return row


def run_cell(cell: Cell) -> dict[str, Any]:
    """Run one search cell and return its row (plus ``_counterexample``, the file's text)."""
    from raceproof.scenarios.catalogue import get

    started = time.perf_counter()
    row = empty_row(cell, Verdict.OK)
    try:
        load_scenarios(cell.scenarios_base, cell.scenarios)
        scenario = get(cell.scenario)
        expected = Verdict.VIOLATED if cell.variant in scenario.expect_violation else Verdict.OK
        row["expected"] = expected
        config = scenario.config
        recorder = _Recorder(scenario.runner(cell.variant, config))
        report = explore(
            recorder,
            cell.strategy,
            cell.seed,
            Budget(examples=cell.examples),
            pct_depth=cell.pct_depth,
        )
        row["verdict"] = report.verdict
        if report.verdict == Verdict.INCONCLUSIVE:  # why: a bound, or a checker undecided
            row["error"] = "; ".join(
                report.notes[1:] if report.stopped_by == "examples" else report.notes
            )[:1000]
        row["examples"] = report.examples
        row["schedules"] = report.examples
        row["virtual_ms"] = recorder.virtual_ms
        row["cell_hash"] = recorder.digest.hexdigest()
        shrunk = report.shrunk
        if shrunk is not None and shrunk.error is not None:
            # The model, workload or a checker raised: verdict ``error``, never a finding,
            # and no counterexample file (that is for violations); the row says where.
            row["error"] = f"{shrunk.error.headline} at {shrunk.error.where}"[:1000]
            row["trace_hash"] = shrunk.trace_hash
            row["blob"] = encode_blob(shrunk.values)
        elif shrunk is not None:
            row["examples_to_violation"] = report.examples
            found_fields(row, shrunk)
            row["_counterexample"] = counterexample_text(
                scenario, cell.variant, config, shrunk, cell.strategy
            )
    except Exception as exc:
        row["verdict"] = Verdict.ERROR
        row["error"] = _error_line(exc)
    row["seconds"] = round(time.perf_counter() - started, 4)
    return finish_row(row, row["expected"])


def _error_line(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"[:1000]


def error_row(cell: Cell, expected: str, message: str) -> dict[str, Any]:
    """The row of a cell whose task failed outside Python (a worker that died)."""
    row = empty_row(cell, expected)
    row["verdict"] = Verdict.ERROR
    row["error"] = message[:1000]
    row["seconds"] = 0.0
    return finish_row(row, expected)


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """The row without the columns that vary between runs (timings, which process ran it)."""
    return {k: v for k, v in row.items() if k not in VOLATILE and not k.startswith("_")}
