"""Campaigns: cells, proofs in rounds, the report, and whole campaigns on real local-mode Spark.

The pure parts (a cell's row, a proof's rounds and their merge, the report's
tables and the baseline diff) run without Spark. The campaign tests run the
tiny ``lost-update`` scenario through the real local-mode session of the
``spark`` xdist group (started, never mocked; a Spark that cannot start fails
them) and check what the issue asks: one row per cell, identical rows from
two campaigns, a second run into the same folder doing nothing, a crashing
cell as a row, Ctrl-C keeping finished cells, user scenarios reaching the
executors, and proofs in rounds merging to the local proof's result.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.reports import campaign as report
from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget
from raceproof.sim.proof_units import Plan
from raceproof.spark_integration import campaign, campaign_proof
from raceproof.spark_integration.campaign_cells import Cell, comparable, run_cell
from raceproof.spark_integration.campaign_proof import Task, in_process

USER_SCENARIOS = textwrap.dedent(
    '''
    """Two user scenarios on the counter model: one sound, one whose checker crashes."""
    from raceproof import Scenario, register
    from raceproof.models import counter


    def exploding(history):
        raise RuntimeError("this checker always crashes")


    for name, checkers in (("user-counter", (counter.final_equals_acks,)),
                           ("user-exploding", (exploding,))):
        register(Scenario(name=name, summary="a user scenario", variants=counter.VARIANTS,
                          expect_violation=frozenset({"buggy"}), checkers=checkers,
                          build=counter.build, config=counter.CounterConfig(),
                          prove_config=counter.CounterConfig()))
    '''
)


# -- cells and proofs, without Spark --------------------------------------------------
def test_a_cell_row_is_the_same_in_two_runs_except_timings() -> None:
    cell = Cell(
        kind="search",
        scenario="lost-update",
        variant="buggy",
        strategy="hypothesis",
        seed=3,
        examples=40,
    )
    first, second = run_cell(cell), run_cell(cell)
    assert first["verdict"] == "violated" and first["met"] and first["error"] is None
    assert first["examples_to_violation"] >= 1 and first["blob"] and first["trace_hash"]
    assert first["_counterexample"] == second["_counterexample"]
    assert comparable(first) == comparable(second)
    assert first["counterexample"] == (
        f"counterexamples/lost-update--buggy--{first['trace_hash'][:12]}.json"
    )


def test_a_holding_variant_runs_its_whole_examples_budget() -> None:
    row = run_cell(
        Cell(
            kind="search",
            scenario="lost-update",
            variant="fix-cas",
            strategy="random",
            seed=0,
            examples=25,
        )
    )
    assert (row["verdict"], row["examples"], row["met"], row["blob"]) == ("ok", 25, True, None)
    assert row["virtual_ms"] > 0 and len(row["cell_hash"]) == 64


def test_a_cell_that_cannot_run_is_an_error_row() -> None:
    row = run_cell(
        Cell(
            kind="search",
            scenario="no-such-scenario",
            variant="buggy",
            strategy="random",
            seed=0,
            examples=5,
        )
    )
    assert row["verdict"] == "error" and not row["met"]
    assert "no-such-scenario" in row["error"]


def _proof(scenario: str, variant: str) -> Cell:
    return campaign_proof.proof_of(scenario, variant)


@pytest.fixture
def all_in_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver walks nothing itself: every unit, the root's too, goes out in a round."""
    monkeypatch.setattr(campaign_proof, "DRIVER_RUNS", 0)


def test_a_proof_in_rounds_has_the_counts_of_prove_and_prove_j(all_in_rounds: None) -> None:
    scenario, variant = get("lost-update"), "fix-cas"
    # the campaign's proof in rounds is the stateless walk, cut into units
    local = scenario.prove(variant, Budget(1_000_000), state_cache=False)
    parallel = scenario.prove(variant, Budget(1_000_000), jobs=2, state_cache=False)
    state = campaign_proof.prove_in_rounds(_proof("lost-update", variant), in_process, 2)
    row = campaign_proof.proof_row(state, 0.0)
    assert (local.verdict, local.complete) == ("ok", True)
    assert (row["verdict"], row["complete"]) == ("ok", True)
    assert row["schedules"] == local.schedules == parallel.schedules
    assert row["examples"] == local.runs == parallel.runs
    assert state.driver_runs == 0 and len(state.rounds) > 2 and state.tasks > len(state.rounds)
    assert row["shards"] == len(state.plan.results) > 1


def test_the_row_does_not_depend_on_the_tasks_nor_the_order_they_come_back(
    all_in_rounds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One task a round or three, back in order or reversed: the same row, the same balance."""
    monkeypatch.setattr(campaign_proof, "TASKS_PER_CORE", 1)

    def backwards(tasks: list[Task]) -> list[dict[str, Any]]:
        return list(reversed(in_process(tasks)))

    for variant in ("fix-cas", "buggy"):
        rows = [
            campaign_proof.prove_cell(_proof("lost-update", variant), ship, slots)
            for ship, slots in ((in_process, 1), (backwards, 3))
        ]
        assert comparable(rows[0]) == comparable(rows[1])
        assert rows[0]["_balance"]["balance"] == rows[1]["_balance"]["balance"]
        if variant == "fix-cas":  # several units a round: really cut differently
            assert rows[0]["_balance"]["tasks"] < rows[1]["_balance"]["tasks"]


def test_a_proof_in_rounds_of_a_buggy_variant_is_the_local_proofs_counterexample(
    all_in_rounds: None,
) -> None:
    row = campaign_proof.prove_cell(
        _proof("streams-checkpoint-resurrection", "buggy"), in_process, 2
    )
    local = get("streams-checkpoint-resurrection").prove(
        "buggy", Budget(1_000_000), state_cache=False
    )
    assert local.shrunk is not None and local.runs > 1
    assert row["verdict"] == "violated" and row["met"] and row["complete"] is False
    assert (row["trace_hash"], row["deviations"]) == (local.shrunk.trace_hash, 3)
    assert row["_counterexample"] and row["counterexample"].startswith(
        "counterexamples/streams-checkpoint-resurrection--buggy--"
    )


def test_a_proof_violated_at_its_first_run_is_walked_on_the_driver_alone() -> None:
    """Samza's ``kill`` loses data on the FIFO path itself: no round is shipped."""

    def no_ship(tasks: list[Task]) -> list[dict[str, Any]]:
        raise AssertionError(f"shipped {len(tasks)} tasks")

    row = campaign_proof.prove_cell(_proof("samza-drain", "kill"), no_ship, 2)
    assert (row["verdict"], row["complete"], row["met"], row["shards"]) == (
        "violated",
        False,
        True,
        1,
    )
    assert isinstance(row["seconds"], float) and row["seconds"] > 0  # Parquet's double column
    assert row["blob"] is not None and row["_counterexample"] and row["schedules"] == 1
    assert row["_balance"]["rounds"] == 0


def test_a_task_that_crashes_makes_the_proof_an_error_row(all_in_rounds: None) -> None:
    def crashing(tasks: list[Task]) -> list[dict[str, Any]]:
        done = in_process(tasks)
        if len(tasks) > 1:  # the second round: its last task said it crashed
            done[-1] = {"task": tasks[-1].index, "walked": [], "error": "boom", "seconds": 0.0}
        return done

    row = campaign_proof.prove_cell(_proof("lost-update", "fix-cas"), crashing, 2)
    assert (row["verdict"], row["complete"], row["met"]) == ("error", False, False)
    assert row["error"].startswith("task ") and row["error"].endswith(": boom")


def test_the_rounds_speedup_counts_each_rounds_barrier() -> None:
    """The driver's runs, then each round's units greedily on N cores, a round waiting for
    its last: a round with one long unit costs that unit, whatever the cores."""
    state = campaign_proof.ProofPlan(
        proof=_proof("lost-update", "fix-cas"),
        expected="ok",
        max_deviations=None,
        max_branch=None,
        plan=Plan(Budget()),
        driver_runs=4,
        rounds=[[8, 8, 8, 8], [64, 1, 1, 1]],
    )
    total = 4 + 32 + 67
    assert campaign_proof.rounds_speedup(state, 1) == 1.0
    assert campaign_proof.rounds_speedup(state, 2) == round(total / (4 + 16 + 64), 2)
    assert campaign_proof.rounds_speedup(state, 4) == round(total / (4 + 8 + 64), 2)
    assert campaign_proof.rounds_speedup(state, 16) == round(total / (4 + 8 + 64), 2)


# -- the report, on rows made by hand -------------------------------------------------
def _row(
    variant: str, strategy: str, seed: int, verdict: str, examples: int | None
) -> dict[str, Any]:
    expected = "violated" if variant == "buggy" else "ok"
    return {
        "cell": f"search/s/{variant}/{strategy}/{seed}/10",
        "kind": "search",
        "scenario": "s",
        "variant": variant,
        "strategy": strategy,
        "seed": seed,
        "expected": expected,
        "verdict": verdict,
        "met": verdict == expected,
        "examples_to_violation": examples,
        "seconds": 0.1,
        "blob": "3:0=1" if verdict == "violated" else None,
        "deviations": 1,
        "checker": "c",
        "counterexample": "counterexamples/x.json",
        "error": None,
    }


def test_failed_expectations_name_a_violated_fix_and_a_bug_never_found() -> None:
    rows = [_row("buggy", "random", s, "ok", None) for s in range(3)]
    rows += [_row("fix", "random", 0, "ok", None), _row("fix", "random", 1, "violated", 4)]
    failed = {f["variant"]: f["why"] for f in report.failed_expectations(rows)}
    assert "none found in 3 search cells" in failed["buggy"]
    assert "violated in 1 of 2" in failed["fix"]


def test_the_html_report_escapes_what_rows_carry_and_marks_a_determinism_failure() -> None:
    rows = [_row("buggy", "random", s, "ok", None) for s in range(2)]
    rows.append(_row("fix<script>", "random", 0, "violated", 3))
    data = {
        "folder": "out/<c1>",
        "cells": len(rows),
        "verdicts": {"ok": 2, "violated": 1},
        "manifest": {
            "options": {"seeds": [0, 1], "examples": 10, "strategies": ["random"]},
            "tool_version": "0.1.0",
            "git_commit": "abc",
        },
        "detection": report.detection(rows),
        "counterexamples": report.distinct_counterexamples(rows),
        "failed": report.failed_expectations(rows),
        "proofs": report.proofs(rows),
        "determinism": [{"cell": "c", "same": False, "executor": "h:1", "driver": "h:2"}],
        "baseline": None,
        "changes": [],
    }
    page = report.render_html(data, b"png-bytes")
    assert "<script>" not in page and "fix&lt;script&gt;" in page
    assert "<title>Campaign out/&lt;c1&gt;</title>" in page
    assert 'src="data:image/png;base64,cG5nLWJ5dGVz"' in page
    assert page.count('class="bad"') == 1 and "**" not in page  # the determinism failure
    assert report.render_html(data, None).count("<img") == 0


def test_the_baseline_diff_names_new_violations_new_holds_and_slower_detection() -> None:
    old = [_row("buggy", "random", s, "violated", 2) for s in range(4)]
    old += [_row("fix", "random", 0, "ok", None), _row("gone", "pct", 0, "violated", 1)]
    new = [_row("buggy", "random", s, "violated", 9) for s in range(4)]
    new += [_row("fix", "random", 0, "violated", 3), _row("gone", "pct", 0, "ok", None)]
    changes = {(c["variant"], c["change"]) for c in report.baseline_diff(new, old)}
    assert changes == {
        ("buggy", "detection slower"),
        ("fix", "newly violated"),
        ("gone", "newly holding"),
    }
    assert report.baseline_diff(old, new) and not report.baseline_diff(old, old)


# -- whole campaigns on local-mode Spark ------------------------------------------------
spark_group = pytest.mark.xdist_group("spark")


def _options(out: Path, **changes: Any) -> campaign.Options:
    base: dict[str, Any] = dict(
        scenarios=("lost-update",),
        strategies=("random", "hypothesis"),
        seeds=(0, 1),
        examples=30,
        out=str(out),
        cross_check=2,
    )
    base.update(changes)
    return campaign.Options(**base)


@spark_group
def test_campaigns_resume_do_no_work_twice_and_give_identical_rows(
    spark: Any, tmp_path: Path
) -> None:
    first = campaign.run(_options(tmp_path / "a", seeds=(0,)), spark=spark)
    assert (first.ran, first.cells) == (4, 4)
    grown = campaign.run(_options(tmp_path / "a"), spark=spark)
    assert (grown.already_done, grown.ran, grown.cells) == (4, 4, 8)
    assert grown.determinism and all(check["same"] for check in grown.determinism)
    rows = campaign.read_rows(tmp_path / "a")
    assert len(rows) == 8 == len({r["cell"] for r in rows})
    for row in rows:
        if row["counterexample"]:
            saved = json.loads((tmp_path / "a" / row["counterexample"]).read_text())
            assert saved["trace_hash"] == row["trace_hash"] and saved["blob"] == row["blob"]
    again = campaign.run(_options(tmp_path / "a"), spark=spark)
    assert (again.ran, again.already_done) == (0, 8)
    assert campaign.read_rows(tmp_path / "a") == rows
    campaign.run(_options(tmp_path / "b"), spark=spark)
    assert [comparable(r) for r in campaign.read_rows(tmp_path / "b")] == [
        comparable(r) for r in rows
    ]


@spark_group
def test_ctrl_c_keeps_the_finished_cells_and_the_rerun_finishes_the_rest(
    spark: Any, tmp_path: Path
) -> None:
    def interrupt(line: str) -> None:
        if "cells " in line and line.strip().startswith(tuple("123456789")):
            raise KeyboardInterrupt

    options = _options(tmp_path, seeds=(0, 1, 2, 3), strategies=("random",), jobs_in_flight=1)
    stopped = campaign.run(options, say=interrupt, spark=spark)
    kept = campaign.read_rows(tmp_path)
    assert stopped.interrupted and 0 < len(kept) == stopped.ran < stopped.cells
    rest = campaign.run(options, spark=spark)
    assert rest.ran == stopped.cells - len(kept)
    assert len(campaign.read_rows(tmp_path)) == stopped.cells


@spark_group
def test_user_scenarios_reach_the_executors_and_a_crashing_cell_is_a_row(
    spark: Any, tmp_path: Path
) -> None:
    spec = tmp_path / "user_scenarios.py"
    spec.write_text(USER_SCENARIOS)
    options = _options(
        tmp_path / "out",
        scenarios=("user-counter", "user-exploding"),
        strategies=("random",),
        seeds=(0,),
        scenario_specs=(str(spec),),
    )
    summary = campaign.run(options, spark=spark)
    rows = {(r["scenario"], r["variant"]): r for r in campaign.read_rows(tmp_path / "out")}
    assert summary.ran == 4 == len(rows)
    assert rows["user-counter", "buggy"]["verdict"] == "violated"
    assert rows["user-counter", "fix-cas"]["verdict"] == "ok"
    for variant in ("buggy", "fix-cas"):
        crashed = rows["user-exploding", variant]
        assert crashed["verdict"] == "error" and "this checker always crashes" in crashed["error"]
    failed = {f["scenario"] for f in report.failed_expectations(list(rows.values()))}
    assert failed == {"user-exploding"}


@spark_group
def test_prove_in_rounds_on_spark_matches_the_local_proof_and_the_report_renders(
    spark: Any, tmp_path: Path
) -> None:
    options = _options(tmp_path / "p", strategies=("pct",), seeds=(0,), prove=True)
    campaign.run(options, spark=spark)
    proofs = {r["variant"]: r for r in campaign.read_rows(tmp_path / "p") if r["kind"] == "proof"}
    local = get("lost-update").prove("fix-cas", Budget(1_000_000), state_cache=False)
    assert (proofs["fix-cas"]["verdict"], proofs["fix-cas"]["schedules"]) == ("ok", local.schedules)
    assert proofs["fix-cas"]["complete"] and proofs["fix-cas"]["shards"] > 1
    assert proofs["buggy"]["verdict"] == "violated"
    assert main(["report", str(tmp_path / "p"), "--json"]) == 0
    markdown = (tmp_path / "p" / "report.md").read_text()
    assert "| lost-update | fix-cas | ok | ok | True | 46 |" in markdown
    html = (tmp_path / "p" / "report.html").read_text()
    assert "data:image/png;base64," in html and "Detection per strategy" in html
    old = tmp_path / "p"
    campaign.run(
        _options(tmp_path / "q", strategies=("pct",), seeds=(0,), variants=("fix-cas",)),
        spark=spark,
    )
    assert main(["report", str(tmp_path / "q"), "--baseline", str(old)]) == 0
    assert "no longer run" in (tmp_path / "q" / "report.md").read_text()


def test_bad_campaign_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x")
    assert main(["campaign", "--scenario", "nope", "--out", out]) == 2
    assert main(["campaign", "--strategy", "bogus", "--out", out]) == 2
    assert main(["campaign", "--seed-range", "5:2", "--out", out]) == 2
    assert main(["report", str(tmp_path), "--baseline", str(tmp_path)]) == 2
    assert "not a campaign folder" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
