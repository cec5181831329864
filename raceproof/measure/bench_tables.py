"""``raceproof bench``'s figures as tables, printed as the steps that measure them end.

``bench`` measures (``raceproof.measure.bench``, ``spark_integration.campaign_bench``)
into one dict per mode, which ``--json`` prints whole at the end; without
``--json`` the command renders that same dict here, one table per kind of
figure, so what the text shows is what the JSON holds. Every figure is
rendered from the dict: nothing is measured or computed again here, and the
load average the bench recorded is each table's note.

A bench takes minutes to hours and a signal may stop it, so the tables are not
kept for the end: after each step ``Stream`` prints the rows the dict gained
(a table's title and header before its first row, its note once the next table
starts or the bench ends). The tables are plain columns laid out by
``reports.terminal.columns_text``, as ``check``'s, ``compare``'s, ``spark-check``'s and
``list``'s are: a table printed a row block at a time needs its column widths
before its last row, which ``min_widths`` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.cells import cell_len

from raceproof.reports.terminal import columns_text
from raceproof.sim.verdicts import Verdict

# The width of a verdict column: its longest word.
_VERDICT_WIDTH_CHARS = max(len(verdict) for verdict in Verdict)
# The least width of a figure column, so the rows of a table printed a step at a time line up.
FIGURE_WIDTH_CHARS = 9


def label_widths() -> tuple[int, int]:
    """The longest "scenario / variant" and the longest variant of the scenarios loaded: a
    column of them is that wide before its first row comes, so its rows line up."""
    from raceproof.scenarios.catalogue import all_scenarios

    pairs = [(s.name, v) for s in all_scenarios() for v in s.variants]
    return max(len(f"{n} / {v}") for n, v in pairs), max(len(v) for _n, v in pairs)


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


class FigureTable:
    """A table of figures: a title, a header, rows of text, and a note printed below it.

    The first column and those named in ``words`` hold text (left-aligned), the
    others figures (right-aligned). ``widths`` are the columns' least widths
    (``FIGURE_WIDTH_CHARS`` for a figure's), so the rows printed a step at a time
    line up. ``at_end``: its rows come with another table's, step by step, so it is
    printed whole when the bench ends.
    """

    def __init__(
        self,
        title: str,
        *,
        note: str | None,
        columns: Sequence[str],
        words: Sequence[str] = (),
        widths: Sequence[int] = (),
        at_end: bool = False,
    ) -> None:
        self.title, self.note, self.at_end = title, note, at_end
        self.columns = tuple(columns)
        self.right = tuple(i for i, c in enumerate(columns) if i and c not in words)
        least = [*widths, *[0] * (len(columns) - len(widths))]
        self.widths = [
            max(least[i], cell_len(c), FIGURE_WIDTH_CHARS if i in self.right else 0)
            for i, c in enumerate(columns)
        ]
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(tuple(cells))

    def lines(self, rows: Sequence[Sequence[str]], widths: Sequence[int]) -> list[str]:
        """``rows`` laid out in columns of at least ``widths``."""
        if not rows:
            return []
        return columns_text(rows, min_widths=widths, right=self.right).splitlines()

    def text(self) -> str:
        """The whole table: its title, header and rows, and its note."""
        lines = [self.title, *self.lines([self.columns, *self.rows], self.widths)]
        return "\n".join(lines + ([self.note] if self.note else []))


class Stream:
    """A bench's tables printed as its figures come: after each step, the rows it added.

    ``tables`` renders the dict of figures (as much of it as the steps done so
    far filled); ``show`` prints the rows not printed yet, ``end`` the rest: the
    last table's note and the tables printed whole at the end (``at_end``).
    Rows are only ever added below (a step adds rows; none changes one printed).
    """

    def __init__(
        self,
        tables: Callable[[dict[str, Any]], list[FigureTable]],
        write: Callable[[str], None],
    ) -> None:
        self.tables, self.write = tables, write
        self.printed: dict[int, int] = {}  # a table's index -> its rows printed
        self.widths: list[int] = []  # those of the table printed now
        self.current: int | None = None  # the table printed now (its note still to come)

    def show(self, figures: dict[str, Any]) -> None:
        """Print the rows of ``figures`` not printed yet (an ``at_end`` table's wait)."""
        tables = self.tables(figures) if figures else []  # no step has begun
        for index, table in enumerate(tables):
            if table.at_end or (self.current is not None and index < self.current):
                continue
            fresh = table.rows[self.printed.get(index, 0) :]
            if not fresh:
                continue
            if index != self.current:  # a table starts: the one before it is done
                self._close(tables)
                self.current = index
                self.widths = list(table.widths)
            self.widths = [
                max(w, *(cell_len(row[i]) for row in fresh)) for i, w in enumerate(self.widths)
            ]
            lines = table.lines(fresh, self.widths)
            if index not in self.printed:
                lines = [table.title, *table.lines([table.columns], self.widths), *lines]
                self._gap()
            # Counted before written: a signal in the middle cuts a row short, never prints it twice.
            self.printed[index] = len(table.rows)
            self._say(lines)

    def end(self, figures: dict[str, Any], *, complete: bool) -> None:
        """The rest once the bench ends: new rows, the last note, the ``at_end`` tables.

        An incomplete bench (a signal stopped it) prints no table it has no row of.
        """
        self.show(figures)
        tables = self.tables(figures) if figures else []
        self._close(tables)
        for index, table in enumerate(tables):
            if index not in self.printed and (table.rows or complete):
                self._gap()
                self._say(table.text().splitlines())
                self.printed[index] = len(table.rows)

    def _close(self, tables: list[FigureTable]) -> None:
        if self.current is not None and tables[self.current].note:
            self._say([str(tables[self.current].note)])
        self.current = None

    def _gap(self) -> None:
        if self.printed:
            self.write("")

    def _say(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)


def load_note(result: dict[str, Any], alternations: int | None = None) -> str:
    """The load average at start and end (the machine is shared), and the alternations."""
    text = f"load average (1, 5, 15 min): {result.get('load_average_start')} at start"
    if "load_average_end" in result:  # not when a signal stopped the bench
        text += f", {result['load_average_end']} at end"
    return text + (f"; medians over {alternations} alternations" if alternations else "")


# The kernel table's first column: its longest label.
_KERNEL_LABEL_WIDTH_CHARS = len("random strategy: schedules/s, one core")


def kernel_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench`` (``--quick``): the kernel against SimPy, the strategies, virtual time."""
    table = FigureTable(
        "bench: medians and ranges over alternating rounds",
        note=load_note(result, result["alternations"]),
        columns=("figure", "median", "range", "workload"),
        words=("workload",),
        widths=(_KERNEL_LABEL_WIDTH_CHARS, 9, 13),
    )
    if "kernel" in result:
        kernel = result["kernel"]
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
        if key in result:
            table.add_row(
                label, number(result[key]), span(result[f"{key}_range"], 0), "lost-update/fix-cas"
            )
    if "virtual_s_per_wall_s" in result:
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
        f"{number(result.get('virtual_s_per_wall_s'))} virtual s per wall s (100 random runs)"
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
        widths=(len("hypothesis"), 5, 9, 9, 9, 9),
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
        widths=(label_widths()[1], _VERDICT_WIDTH_CHARS),
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
        widths=(label_widths()[0], 13, 9, 13, 9, 24, 11, 18),
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
        widths=(label_widths()[0],),
        at_end=True,  # its row of a scenario comes with the table above's: printed after it
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
        widths=(label_widths()[0],),
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
        note=load_note(result)
        + "; x full: the full walk's estimate / the proof's runs"
        + "; full walk: Knuth's estimate, 30 samples",
        columns=(
            knob,
            "verdict",
            "complete",
            "classes",
            "runs",
            "sleep-blocked",
            "runs/class",
            "states",
            "symmetric merged",
            "s",
            "full walk ~schedules",
            "x full",
            "full walk ~s",
        ),
        words=("verdict", "complete"),
        widths=(0, _VERDICT_WIDTH_CHARS, len("NO: budget spent")),
    )
    for row in result["growth"]:
        table.add_row(
            str(row[knob]),
            str(row["verdict"]),
            "yes" if row["complete"] else "NO: budget spent",
            number(row["schedules"]),
            number(row["runs"]),
            number(row.get("sleep_blocked")),
            number(row.get("runs_per_class"), 3),
            number(row.get("states_seen")),
            number(row.get("symmetric_merged")),
            number(row["seconds"], 2),
            number(row["full_walk_schedules_estimate"]),
            number(row.get("full_walk_over_runs"), 1),
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
    for workers, figure in result.get("check_plan", {}).items():
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
    after = f", {result['load_after']} after" if "load_after" in result else ""
    table = FigureTable(
        "campaign bench: cells per second",
        note=f"{result['cells']} cells ({result['grid']}) on {result['cpus']} CPUs; load average "
        f"(1 / 5 min): {result['load_before']} before{after}",
        columns=("how", "cells/s"),
        widths=(len("overhead per cell, local[1] against in-process (ms)"),),
    )
    for how in ("in_process", "local[1]", "local[2]"):
        if f"{how}_cells_per_s" in result:
            table.add_row(how.replace("_", "-"), number(result[f"{how}_cells_per_s"], 2))
    for master in ("local[1]", "local[2]"):  # what a command pays once, before any cell
        if f"{master}_session_start_s" in result:
            start = number(result[f"{master}_session_start_s"], 1)
            table.add_row(f"{master} session start (s, once per command)", start)
    if "scaling_local2_over_local1" in result:
        table.add_row("local[2] / local[1]", f"x{number(result['scaling_local2_over_local1'], 2)}")
        table.add_row(
            "overhead per cell, local[1] against in-process (ms)",
            f"{result['overhead_ms_per_cell_local1_vs_in_process']:+,.1f}",
        )
    return [table]


def cluster_tables(result: dict[str, Any]) -> list[FigureTable]:
    """``bench --cluster``: one proof in rounds on 1 and on 2 standalone workers."""
    if "in_process_s" not in result:  # its first step gives the proof's figures
        return []
    allowed, rounds = result["speedup_allowed"], result["rounds_speedup_allowed"]
    note = (
        f"the proof: {result['verdict']}, {number(result['schedules'])} schedules, "
        f"{result['rounds']} rounds of {result['units']} units on {result['cpus']} CPUs; "
    )
    if "speedup_1_to_2_workers" in result:
        note += f"1 -> 2 workers: x{number(result['speedup_1_to_2_workers'], 2)}; "
    table = FigureTable(
        f"cluster bench: campaign --prove {result['proof']}",
        note=note + f"the units allow x{allowed['2']} on 2 workers, the rounds x{rounds['2']}",
        columns=(
            "where",
            "s (median)",
            "each run s",
            "load before",
            "load after",
            "every row the in-process row",
        ),
        words=("load before", "load after", "every row the in-process row"),
        widths=(len("in this process"), 10, len("10.00, 10.00, 10.00"), 11, 11),
    )
    table.add_row("in this process", number(result["in_process_s"], 2), "", "", "", "")
    for workers in (1, 2):
        if f"workers_{workers}" not in result:
            continue
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


# Each mode of ``bench`` and its tables.
TABLES: dict[str, Callable[[dict[str, Any]], list[FigureTable]]] = {
    "campaign": campaign_tables,
    "cluster": cluster_tables,
    "swarm_table": swarm_tables,
    "check_plan": check_plan_tables,
    "growth": growth_tables,
    "proofs": proofs_tables,
    "scenario": search_tables,
    "kernel": kernel_tables,
}
