"""``raceproof bench``'s text: its figures as column tables, its steps on stderr, ``--json`` whole.

The tables are rendered from the very dict ``--json`` prints
(``raceproof.measure.bench_tables``), so each test measures once, in this
process, on the cheapest workloads (lost-update, a growth of 1 and 2 writes)
and reads the rendered text for the figures of that dict. The Spark benches
(``--campaign``, ``--cluster``) need a cluster to measure: their tables are
rendered from a dict of the shape ``campaign_bench`` returns.

A bench prints each step's rows as the step ends, so a signal keeps them: the
last tests stop one after its first step, by a signal from inside (in this
process) and by one from outside (a command in a process of its own).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raceproof.cli.commands import bench_cmd
from raceproof.cli.main import main
from raceproof.measure import bench, bench_tables


def _text(tables: list[bench_tables.FigureTable]) -> str:
    """The tables as plain text, one row a line."""
    return "\n".join(table.text() for table in tables)


def _row(text: str, first: str) -> list[str]:
    """The cells of the one table row of ``text`` whose first cell is ``first``."""
    rows = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]
    found = [cells for cells in rows if cells[0] == first]
    assert len(found) == 1, (first, text)
    return found[0]


def test_the_growth_table_shows_each_row_of_the_figures() -> None:
    figures = bench.growth(values=(1, 2), budget_s=600.0)
    text = _text(bench_tables.growth_tables(figures))
    for row in figures["growth"]:
        cells = _row(text, str(row["writes"]))
        assert cells[1:5] == [
            str(row["verdict"]),
            "yes",
            f"{row['schedules']:,}",
            f"{row['runs']:,}",
        ]
        # No run cut as sleep-blocked: one run per class (and the ratio to the full walk).
        assert cells[5:7] == ["0", "1.000"], cells
        assert row["runs_per_class"] == 1.0 and row["sleep_blocked"] == 0
        assert cells[10] == f"{row['full_walk_schedules_estimate']:,}", cells
        assert cells[11] == f"{row['full_walk_over_runs']:,.1f}", cells
        assert row["full_walk_over_runs"] == round(
            row["full_walk_schedules_estimate"] / row["runs"], 1
        )
    assert str(figures["load_average_start"]) in text


def test_a_walk_the_budget_cut_is_marked_and_its_ratios_read_as_floors() -> None:
    figures = bench.proof_bench(["lost-update"], budget_s=600.0, alternations=1)
    row = figures["proofs"]["lost-update"]
    assert row["full"]["complete"] and not row["ratios_are_lower_bounds"]
    whole = _row(_text(bench_tables.proofs_tables(figures)[:1]), "lost-update / fix-cas")
    assert whole[3] == f"{row['full']['schedules']:,}", whole
    assert whole[6] == f"x{row['schedules_full_over_reduced']:.2f}", whole
    assert not any("(cut)" in cell or "x>=" in cell for cell in whole), whole

    cut = copy.deepcopy(figures)
    cut["proofs"]["lost-update"]["full"]["complete"] = False
    cut["proofs"]["lost-update"]["ratios_are_lower_bounds"] = True
    cells = _row(_text(bench_tables.proofs_tables(cut)[:1]), "lost-update / fix-cas")
    assert cells[3] == f"{row['full']['schedules']:,} (cut)", cells
    assert cells[5].startswith("x>=") and cells[6].startswith("x>="), cells


def test_the_search_tables_show_every_strategy_and_every_proof() -> None:
    args = argparse.Namespace(scenario="lost-update", variant=None, checker=None, seeds=1)
    figures = bench_cmd.run(args, "scenario", lambda _step: None, {})
    text = _text(bench_tables.search_tables(figures))
    for strategy, row in figures["strategies"].items():
        assert _row(text, strategy)[1] == row["found"] == "1/1"
    for variant, proof in figures["prove"].items():
        cells = _row(text, variant)
        complete = "yes" if proof["complete"] else "NO"
        assert cells[1:4] == [str(proof["verdict"]), complete, f"{proof['schedules']:,}"], cells


def test_the_kernel_table_shows_each_median_and_its_range() -> None:
    figures = bench.run(quick=True, alternations=1)
    text = _text(bench_tables.kernel_tables(figures))
    kernel = figures["kernel"]
    assert _row(text, "World events per CPU s")[1] == f"{kernel['world_events_per_s']:,}"
    cpu = _row(text, "World / SimPy, CPU time")
    assert cpu[1:3] == [
        f"{kernel['world_over_simpy']:.2f}",
        "-".join(f"{v:.2f}" for v in kernel["world_over_simpy_range"]),
    ], cpu
    virtual = _row(text, "virtual s per wall s")
    assert virtual[1] == f"{figures['virtual_s_per_wall_s']:,}"
    assert virtual[3] == figures["virtual_workload"]
    assert "medians over 1 alternations" in text


def test_the_swarm_table_shows_random_beside_swarm() -> None:
    figures = bench.swarm_table(seeds=1, names=["lost-update"])
    cells = _row(_text(bench_tables.swarm_tables(figures)), "lost-update / buggy")
    random, swarm = figures["swarm_table"][0]["random"], figures["swarm_table"][0]["swarm"]
    assert cells[1] == random["found"] and cells[4] == swarm["found"], cells
    assert cells[3] == f"{random['examples_max']:,}" and cells[6] == f"{swarm['examples_max']:,}"


def test_the_check_plan_table_has_a_row_per_worker_count() -> None:
    from raceproof.gate import parts

    figures = {
        "check_plan": {str(n): parts.plan_figure([], n) for n in (2, 4, 8, 16)},
        "load_average_start": [1.0, 1.0, 1.0],
        "load_average_end": [1.5, 1.0, 1.0],
    }
    text = _text(bench_tables.check_plan_tables(figures))
    for workers in ("2", "4", "8", "16"):
        assert _row(text, workers) == [workers, "0", "0.00", "0.00", "x0.00", "-"]


def _campaign_figures() -> dict[str, Any]:
    """The shape ``campaign_bench.figures`` returns (measuring it takes Spark)."""
    return {
        "grid": "lost-update x 2 variants x 3 strategies x 6 seeds, 100 examples per cell",
        "cells": 36,
        "cpus": 2,
        "load_before": "1.0 / 1.0",
        "in_process_cells_per_s": 12.5,
        "local[1]_cells_per_s": 3.25,
        "local[2]_cells_per_s": 5.75,
        "local[1]_session_start_s": 14.2,
        "local[2]_session_start_s": 13.5,
        "scaling_local2_over_local1": 1.77,
        "overhead_ms_per_cell_local1_vs_in_process": 227.7,
        "load_after": "1.5 / 1.1",
    }


def test_the_campaign_table_shows_each_way_of_running_the_cells() -> None:
    text = _text(bench_tables.campaign_tables(_campaign_figures()))
    assert _row(text, "in-process") == ["in-process", "12.50"]
    assert _row(text, "local[1]") == ["local[1]", "3.25"]
    assert _row(text, "local[2]") == ["local[2]", "5.75"]
    assert _row(text, "local[2] / local[1]") == ["local[2] / local[1]", "x1.77"]
    assert _row(text, "overhead per cell, local[1] against in-process (ms)")[1] == "+227.7"
    assert _row(text, "local[1] session start (s, once per command)")[-1] == "14.2"
    assert _row(text, "local[2] session start (s, once per command)")[-1] == "13.5"


def test_the_cluster_table_shows_each_cluster_beside_the_in_process_walk() -> None:
    """The shape ``campaign_bench.cluster_figures`` returns (measuring it takes a cluster)."""
    workers = {
        count: {
            "seconds": [9.5 / count, 9.25 / count, 9.75 / count],
            "median_s": 9.5 / count,
            "load_before": "1.0 / 1.0",
            "load_after": "1.2 / 1.0",
            "same_row_as_in_process": count == 1,
        }
        for count in (1, 2)
    }
    figures = {
        "proof": "samza-drain/drain",
        "cpus": 2,
        "verdict": "ok",
        "schedules": 1782,
        "runs": 1782,
        "rounds": 3,
        "units": 40,
        "driver_runs": 16,
        "in_process_s": 8.5,
        "speedup_allowed": {"2": 1.9},
        "rounds_speedup_allowed": {"2": 1.6},
        "workers_1": workers[1],
        "workers_2": workers[2],
        "speedup_1_to_2_workers": 2.0,
    }
    text = _text(bench_tables.cluster_tables(figures))
    assert _row(text, "in this process") == ["in this process", "8.50"]
    assert _row(text, "1 worker(s)")[1:3] == ["9.50", "9.50, 9.25, 9.75"]
    assert _row(text, "1 worker(s)")[-1] == "yes" and _row(text, "2 worker(s)")[-1] == "NO"
    assert _row(text, "2 worker(s)")[1] == "4.75"
    assert "1 -> 2 workers: x2.00; the units allow x1.9 on 2 workers, the rounds x1.6" in text


def test_bench_json_is_one_document_and_the_text_keeps_its_steps_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = ["bench", "--growth", "--knob", "writes=1", "--proof-budget", "60"]
    assert main([*command, "--json"]) == 0
    out, err = capsys.readouterr()
    figures = json.loads(out)
    assert err == "" and out.count("\n") == 1
    assert set(figures) == {
        "scenario",
        "variant",
        "knob",
        "budget_s_per_proof",
        "growth",
        "load_average_start",
        "load_average_end",
    }
    assert main(command) == 0
    out, err = capsys.readouterr()
    assert err == "writes=1: the full walk's estimate, then the reduced proof\n"
    assert out.startswith("growth: coordinator-async-append / block-event-loop"), out
    assert "writes=1" not in out and "{" not in out


def _growth_figures(rows: list[tuple[int, int]]) -> dict[str, Any]:
    """A growth bench's dict with a row per (writes, schedules) pair."""
    return {
        "scenario": "coordinator-async-append",
        "variant": "block-event-loop",
        "knob": "writes",
        "budget_s_per_proof": 60.0,
        "load_average_start": [1.0, 1.0, 1.0],
        "growth": [
            {
                "writes": writes,
                "verdict": "ok",
                "complete": True,
                "schedules": schedules,
                "runs": schedules,
                "sleep_blocked": 0,
                "runs_per_class": 1.0,
                "states_seen": 0,
                "symmetric_merged": 0,
                "full_walk_over_runs": 3.0,
                "seconds": 0.5,
                "full_walk_schedules_estimate": schedules * 3,
                "full_walk_seconds_estimate": 1.5,
            }
            for writes, schedules in rows
        ],
    }


@given(st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 10**12)), max_size=6))
def test_a_table_printed_a_step_at_a_time_is_the_whole_table(rows: list[tuple[int, int]]) -> None:
    """Each row printed once, in order, as its step ends; the title and header before the
    first, the note after the last: the same cells as the table rendered whole."""
    printed: list[str] = []
    stream = bench_tables.Stream(bench_tables.growth_tables, printed.append)
    for done in range(len(rows) + 1):
        stream.show(_growth_figures(rows[:done]))
        assert len(printed) == (done + 2 if done else 0), printed  # nothing before a row
    whole = _growth_figures(rows) | {"load_average_end": [2.0, 1.0, 1.0]}
    stream.end(whole, complete=True)
    cells = [re.split(r"\s{2,}", line.strip()) for line in printed]
    expected = [
        re.split(r"\s{2,}", line.strip())
        for line in _text(bench_tables.growth_tables(whole)).splitlines()
    ]
    assert cells == expected
    assert printed[-1].endswith(
        "[2.0, 1.0, 1.0] at end; x full: the full walk's estimate / the proof's runs"
        "; full walk: Knuth's estimate, 30 samples"
    )
    # Rows whose figures fit the widths the table starts with line up: each ends in one column.
    if all(schedules < 10**7 for _writes, schedules in rows):  # 9,999,999: 9 characters
        assert len({len(line) for line in printed[1 : len(rows) + 2]}) <= 1, printed


def test_a_stopped_bench_prints_no_table_it_has_no_row_of() -> None:
    printed: list[str] = []
    stream = bench_tables.Stream(bench_tables.growth_tables, printed.append)
    stream.end(_growth_figures([]), complete=False)
    assert printed == []
    stream.end(_growth_figures([]), complete=True)  # a bench that ended: its table, empty
    assert printed[0].startswith("growth: ") and len(printed) == 3


def _interrupt_after_the_kernel(monkeypatch: pytest.MonkeyPatch, signum: int) -> dict[str, Any]:
    """The kernel step measures; a real signal comes as the strategies step begins."""
    kept: dict[str, Any] = {}
    kernel = bench._kernel_figures

    def measured(result: dict[str, Any], *args: Any) -> None:
        kernel(result, *args)
        kept.update(result["kernel"])

    def strategies(*_args: Any) -> None:
        os.kill(os.getpid(), signum)

    monkeypatch.setattr(bench, "_kernel_figures", measured)
    monkeypatch.setattr(bench, "_strategy_figures", strategies)
    return kept


def test_an_interrupted_bench_keeps_the_rows_of_the_steps_that_ended(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = _interrupt_after_the_kernel(monkeypatch, signal.SIGINT)
    assert main(["bench", "--quick", "--alternations", "1"]) == 130
    out, err = capsys.readouterr()
    assert _row(out, "World events per CPU s")[1] == f"{kernel['world_events_per_s']:,}"
    cpu = _row(out, "World / SimPy, CPU time")
    assert cpu[1] == f"{kernel['world_over_simpy']:.2f}", cpu
    assert "random strategy" not in out and "virtual s per wall s" not in out
    assert " at start; " in out and " at end" not in out  # the load note says what it has
    assert out.rstrip().endswith(
        'bench interrupted by SIGINT during "strategies: random and hypothesis on '
        'lost-update/fix-cas": the figures are those of the steps ended before it'
    ), out
    assert "Traceback" not in err and "error" not in err


def test_an_interrupted_bench_json_is_the_figures_it_has(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = _interrupt_after_the_kernel(monkeypatch, signal.SIGTERM)
    assert main(["bench", "--quick", "--alternations", "1", "--json"]) == 143
    out, err = capsys.readouterr()
    figures = json.loads(out)  # one document
    assert figures["kernel"] == kernel and figures["interrupted"] == "SIGTERM"
    assert "random_schedules_per_s_per_core" not in figures and "load_average_end" not in figures
    assert figures["notes"][0].startswith('interrupted by SIGTERM during "strategies: ')
    assert err == ""


def test_ctrl_c_keeps_the_rows_a_bench_printed_as_it_went(tmp_path: Path) -> None:
    """A command of its own: the growth's first two rows come out while writes=6 is proved
    (a walk the 60 s budget cuts), then SIGINT: exit 130 and those rows kept."""
    command = [sys.executable, "-m", "raceproof", "bench", "--growth"]
    process = subprocess.Popen(
        [*command, "--knob", "writes=1,2,6", "--proof-budget", "60"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(4)]  # a title, a header, 2 rows
        assert process.poll() is None, lines
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    text = "".join(lines) + out
    assert _row(text, "1")[1:3] == ["ok", "yes"] and _row(text, "2")[1:3] == ["ok", "yes"]
    assert not any(line.startswith("6 ") for line in text.splitlines()), text
    assert 'bench interrupted by SIGINT during "writes=6: ' in text
    assert "Traceback" not in err
