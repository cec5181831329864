"""``raceproof bench``'s figures as rich tables, apart from the code that measures them.

``bench`` measures (``raceproof.measure.bench``, ``spark_integration.campaign_bench``)
and returns one dict per mode, which ``--json`` prints as it is; without
``--json`` the command renders that same dict here, one table per kind of
figure, so what the text shows is what the JSON holds. Every figure is
rendered from the dict: nothing is measured or computed again here, and the
load average the bench recorded is each table's note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

# The least width of a table printed into a file or a pipe (a CI log), where rich
# would otherwise fold the wide tables into 80 columns.
LOG_WIDTH_CHARS = 160


def console() -> Console:
    """Standard output for the tables: the terminal's width, or ``LOG_WIDTH_CHARS`` elsewhere."""
    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = max(out.width, LOG_WIDTH_CHARS)
    return out


def number(value: Any, digits: int = 0) -> str:
    """``value`` with thousands separators and ``digits`` decimals; ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,.{digits}f}"


def span(pair: Sequence[Any] | None, digits: int = 2) -> str:
    """A range ``[low, high]`` as ``low-high``."""
    if not pair:
        return "-"
    return f"{number(pair[0], digits)}-{number(pair[1], digits)}"


class FigureTable(Table):
    """A table of figures and the note printed below it (the load average, the budget).

    Not a rich note: a note is folded to the table's width, a note keeps its line.
    """

    def __init__(
        self, title: str, *, note: str | None, columns: Sequence[str], words: Sequence[str] = ()
    ) -> None:
        """The first column and those named in ``words`` hold text (left), the others figures."""
        super().__init__(title=title, title_justify="left", box=box.SIMPLE_HEAD)
        self.note = note
        for index, column in enumerate(columns):
            text = index == 0 or column in words
            self.add_column(column, justify="left" if text else "right")

    def shown(self) -> list[RenderableType]:
        """The table, then its note as plain text."""
        return [self] if self.note is None else [self, Text(self.note)]


def load_note(result: dict[str, Any], alternations: int | None = None) -> str:
    """The load average at start and end (the machine is shared), and the alternations."""
    text = (
        f"load average (1, 5, 15 min): {result.get('load_average_start')} at start, "
        f"{result.get('load_average_end')} at end"
    )
    return text + (f"; medians over {alternations} alternations" if alternations else "")


def kernel_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench`` (``--quick``): the kernel against SimPy, the strategies, virtual time."""
    kernel = result["kernel"]
    table = FigureTable(
        "bench: medians and ranges over alternating rounds",
        note=load_note(result, result["alternations"]),
        columns=(
            "figure",
            "median",
            "range",
            "workload",
        ),
        words=("workload",),
    )
    table.add_row(
        "World events per CPU s", number(kernel["world_events_per_s"]), "", kernel["workload"]
    )
    table.add_row(
        "plain SimPy events per CPU s",
        number(kernel["simpy_events_per_s"]),
        "",
        f"the same, {number(kernel['simpy_events'])} events",
    )
    for label, key in (("World / SimPy, CPU time", ""), ("World / SimPy, wall clock", "_wall")):
        table.add_row(
            label,
            number(kernel[f"world_over_simpy{key}"], 2),
            span(kernel[f"world_over_simpy{key}_range"]),
            f"{number(kernel['events'])} events",
        )
    for label, key in (
        ("random strategy: schedules/s, one core", "random_schedules_per_s_per_core"),
        ("hypothesis strategy: examples/s", "hypothesis_examples_per_s"),
    ):
        table.add_row(
            label, number(result[key]), span(result[f"{key}_range"], 0), "lost-update/fix-cas"
        )
    table.add_row(
        "virtual s per wall s",
        number(result["virtual_s_per_wall_s"]),
        span(result["virtual_s_per_wall_s_range"], 0),
        result["virtual_workload"],
    )
    return [table]


def search_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --scenario``: each strategy over the seeds, then each variant's proof."""
    title = (
        f"search: {result['scenario']} / {result['variant']}"
        + (f", checker {result['checker']}" if result.get("checker") else "")
        + f", {result['seeds']} seeds per strategy"
    )
    note = (
        f"budget {result['budget_s']} s or {number(result['max_examples'])} examples per run; "
        f"{number(result['virtual_s_per_wall_s'])} virtual s per wall s (100 random runs)"
    )
    strategies = FigureTable(
        title,
        note=note,
        columns=(
            "strategy",
            "found",
            "s median",
            "s max",
            "examples median",
            "examples max",
            "shrunk deviations <=",
            "shrunk ops median",
            "shrunk ops max",
        ),
    )
    for strategy, row in result["strategies"].items():
        strategies.add_row(
            strategy,
            row["found"],
            number(row["seconds_median"], 3),
            number(row["seconds_max"], 3),
            number(row["examples_median"], 1),
            number(row["examples_max"]),
            number(row["shrunk_deviations_max"]),
            number(row["shrunk_ops_median"], 1),
            number(row["shrunk_ops_max"]),
        )
    tables = [strategies]
    if "prove" in result:
        tables.append(prove_table(result["scenario"], result["prove"]))
    return tables


def prove_table(scenario: str, rows: dict[str, Any]) -> FigureTable:
    """Each variant's proof on the scenario's prove configuration."""
    table = FigureTable(
        f"prove: {scenario}",
        note=None,
        columns=(
            "variant",
            "verdict",
            "complete",
            "schedules",
            "runs",
            "s",
        ),
        words=("verdict", "complete"),
    )
    for variant, row in rows.items():
        table.add_row(
            variant,
            str(row["verdict"]),
            "yes" if row["complete"] else "NO",
            number(row["schedules"]),
            number(row["runs"]),
            number(row["seconds"], 2),
        )
    return table


def _counts(same: bool) -> str:
    return "same" if same else "DIFFERENT"


def _cut(figures: dict[str, Any]) -> str:
    """A proof's schedules, marked when its budget cut the walk."""
    return number(figures["schedules"]) + ("" if figures["complete"] else " (cut)")


def _ratio(at_least: str, median: Any, pair: Sequence[Any]) -> str:
    return f"{at_least}{number(median, 2)} ({span(pair)})"


def proofs_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --proofs``: the reduction's gain, then what -j 2 gives and the plans allow."""
    note = (
        f"{result['budget_s_per_proof']} s per proof; "
        + load_note(result, result["alternations"])
        + "; (cut): the budget ended the walk; x>=: a full walk was cut, the ratio is a floor"
    )
    reduction = FigureTable(
        "proofs: reduced against full, -j 1",
        note=note,
        columns=(
            "scenario / variant",
            "reduced sched",
            "reduced s",
            "full sched",
            "full s",
            "full / reduced s (range)",
            "fewer sched",
            "whole-object sched",
            "tracked",
        ),
        words=("tracked",),
    )
    workers = FigureTable(
        "proofs: -j 2 against -j 1, and what the -j 2 plan allows on 16 workers",
        note=None,
        columns=(
            "scenario / variant",
            "reduced x (range)",
            "counts",
            "allows on 16",
            "full x (range)",
            "counts",
            "allows on 16",
        ),
        words=("counts",),
    )
    for scenario, row in result["proofs"].items():
        name = f"{scenario} / {row['variant']}"
        at_least = "x>=" if row["ratios_are_lower_bounds"] else "x"
        reduced, full = row["reduced"], row["full"]
        reduction.add_row(
            name,
            _cut(reduced),
            number(reduced["seconds"]["median"], 3),
            _cut(full),
            number(full["seconds"]["median"], 3),
            _ratio(
                at_least, row["seconds_full_over_reduced"], row["seconds_full_over_reduced_range"]
            ),
            f"{at_least}{number(row['schedules_full_over_reduced'], 2)}",
            number(row["whole_object"]["schedules"]),
            "no larger" if row["tracked_no_larger"] else "LARGER or incomplete",
        )
        workers.add_row(
            name,
            _ratio("x", row["j2_speedup"], row["j2_speedup_range"]),
            _counts(row["j2_same_counts"]),
            f"x{number(row['speedup_allowed_16'], 2)}",
            _ratio("x", row["full_j2_speedup"], row["full_j2_speedup_range"]),
            _counts(row["full_j2_same_counts"]),
            f"x{number(row['full_speedup_allowed_16'], 2)}",
        )
    return [reduction, workers]


def swarm_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --swarm-table``: examples to the first violation, random against swarm."""
    table = FigureTable(
        f"examples to the first violation over {result['seeds']} seeds "
        f"(a miss counts {number(result['max_examples'])})",
        note=None,
        columns=(
            "scenario / variant",
            "random found",
            "median",
            "max",
            "swarm found",
            "median",
            "max",
        ),
    )
    for row in result["swarm_table"]:
        cells = []
        for strategy in ("random", "swarm"):
            figures = row[strategy]
            cells += [
                figures["found"],
                number(figures["examples_median"], 1),
                number(figures["examples_max"]),
            ]
        table.add_row(f"{row['scenario']} / {row['variant']}", *cells)
    return [table]


def growth_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --growth``: the reduced proof as a knob grows, beside the full walk's estimate."""
    knob = result["knob"]
    table = FigureTable(
        f"growth: {result['scenario']} / {result['variant']}, "
        f"{result['budget_s_per_proof']} s per proof",
        note=load_note(result) + "; full walk: Knuth's estimate, 30 samples",
        columns=(
            knob,
            "verdict",
            "complete",
            "schedules",
            "runs",
            "s",
            "full walk ~schedules",
            "full walk ~s",
        ),
        words=("verdict", "complete"),
    )
    for row in result["growth"]:
        table.add_row(
            str(row[knob]),
            str(row["verdict"]),
            "yes" if row["complete"] else "NO: budget spent",
            number(row["schedules"]),
            number(row["runs"]),
            number(row["seconds"], 2),
            number(row["full_walk_schedules_estimate"]),
            number(row["full_walk_seconds_estimate"], 1),
        )
    return [table]


def check_plan_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --check-plan``: the speedup check's plan allows on 2 to 16 workers."""
    table = FigureTable(
        "check plan (ci profile): its parts run here one by one",
        note=load_note(result),
        columns=(
            "workers",
            "parts",
            "CPU s",
            "makespan s",
            "speedup allowed",
            "longest part",
        ),
        words=("longest part",),
    )
    for workers, figure in result["check_plan"].items():
        longest = figure["longest_part"]
        table.add_row(
            workers,
            number(figure["parts"]),
            number(figure["cpu_s"], 2),
            number(figure["makespan_s"], 2),
            f"x{number(figure['speedup_allowed'], 2)}",
            "-"
            if longest is None
            else f"{longest['check']} {longest['part']}: {number(longest['cpu_s'], 2)} CPU s",
        )
    return [table]


def campaign_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --campaign``: cells per second in this process and on local[1] and local[2]."""
    table = FigureTable(
        "campaign bench: cells per second",
        note=f"{result['cells']} cells ({result['grid']}) on {result['cpus']} CPUs; load average "
        f"(1 / 5 min): {result['load_before']} before, {result['load_after']} after",
        columns=(
            "how",
            "cells/s",
        ),
    )
    for how in ("in_process", "local[1]", "local[2]"):
        table.add_row(how.replace("_", "-"), number(result[f"{how}_cells_per_s"], 2))
    table.add_row("local[2] / local[1]", f"x{number(result['scaling_local2_over_local1'], 2)}")
    table.add_row(
        "overhead per cell, local[1] against in-process (ms)",
        f"{result['overhead_ms_per_cell_local1_vs_in_process']:+,.1f}",
    )
    return [table]


def cluster_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --cluster``: one proof in rounds on 1 and on 2 standalone workers."""
    allowed, rounds = result["speedup_allowed"], result["rounds_speedup_allowed"]
    table = FigureTable(
        f"cluster bench: campaign --prove {result['proof']}",
        note=f"the proof: {result['verdict']}, {number(result['schedules'])} schedules, "
        f"{result['rounds']} rounds of {result['units']} units on {result['cpus']} CPUs; "
        f"1 -> 2 workers: x{number(result['speedup_1_to_2_workers'], 2)}; the units allow "
        f"x{allowed['2']} on 2 workers, the rounds x{rounds['2']}",
        columns=(
            "where",
            "s (median)",
            "each run s",
            "load before",
            "load after",
            "every row the in-process row",
        ),
        words=("load before", "load after", "every row the in-process row"),
    )
    table.add_row("in this process", number(result["in_process_s"], 2), "", "", "", "")
    for workers in (1, 2):
        figures = result[f"workers_{workers}"]
        table.add_row(
            f"{workers} worker(s)",
            number(figures["median_s"], 2),
            ", ".join(number(s, 2) for s in figures["seconds"]),
            figures["load_before"],
            figures["load_after"],
            "yes" if figures["same_row_as_in_process"] else "NO",
        )
    return [table]
