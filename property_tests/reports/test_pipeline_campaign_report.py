"""A pipeline campaign's report says no more and no less than its cells (issue 48, item 3).

Before: "Failed expectations: none" stood beside a violated pipeline cell (the
section read only search and proof cells), and a pipeline campaign's report
held empty sections (detection per strategy, counterexamples, determinism) with
nothing under their titles. Built from rows as ``campaign --pipeline`` writes
them (``campaign_cells.empty_row``), no Spark needed.
"""

from __future__ import annotations

from typing import Any

from raceproof.reports.campaign import _tables, failed_expectations, pipeline_cells
from raceproof.spark_integration.campaign_cells import Cell, empty_row


def _cell(pipeline: str, experiment: str, verdict: str, checker: str | None = None) -> Any:
    cell = Cell(
        kind="pipeline",
        scenario=pipeline,
        variant=experiment,
        strategy="fault-experiment",
        seed=0,
        examples=1,
    )
    row = empty_row(cell, "ok")
    row.update(verdict=verdict, checker=checker, finding=f"stock Spark: {verdict}")
    row["cell"] = f"pipeline/{pipeline}/{experiment}/0"
    return row


def _data(rows: list[Any]) -> dict[str, Any]:
    return {
        "detection": [],
        "failed": failed_expectations(rows),
        "counterexamples": [],
        "proofs": [],
        "determinism": [],
        "pipeline_cells": pipeline_cells(rows),
        "baseline": None,
        "changes": [],
    }


def test_a_violated_or_undecided_pipeline_cell_is_a_failed_expectation() -> None:
    rows = [
        _cell("merge", "baseline", "ok"),
        _cell("merge", "stop-before-commit", "violated", "drain-completeness"),
        _cell("merge", "kill", "inconclusive"),
        _cell("counts", "drain", "ok"),
    ]
    kill, merge = failed_expectations(rows)  # one entry per pipeline and experiment, sorted
    assert (merge["scenario"], merge["variant"]) == ("merge", "stop-before-commit")
    assert "violated in 1 of 1 cells" in merge["why"] and "drain-completeness" in merge["why"]
    assert kill["variant"] == "kill" and "inconclusive in 1 of 1 cells" in kill["why"]
    sections = {title: (table, note) for title, _, table, note in _tables(_data(rows))}
    table, note = sections["Failed expectations"]
    assert len(table) == 2 and note == ""  # "none" only when there are none


def test_a_clean_pipeline_campaign_says_none_and_shows_no_empty_section() -> None:
    rows = [_cell("counts", "baseline", "ok"), _cell("counts", "drain", "ok")]
    sections = _tables(_data(rows))
    titles = [title for title, *_ in sections]
    assert titles == ["Pipeline experiments (pipeline × experiment × seed)", "Failed expectations"]
    (failed,) = [s for s in sections if s[0] == "Failed expectations"]
    assert failed[2] == [] and failed[3] == "none"
    assert all(table or note for _, _, table, note in sections)
