"""The campaign report: detection per strategy, distributions, distinct counterexamples, regressions.

A campaign folder's Parquet rows (one per cell) are summarised per scenario
and variant: the detection rate of each strategy, the distribution of
examples and seconds to the first violation (a PNG, matplotlib), the distinct
counterexamples found (by shrunk choice blob), the expectations that failed
(a holding variant violated, a buggy one never found, a cell that crashed, a
proof that did not come out as expected), the determinism cross-check, and,
against a baseline campaign, what changed: newly violated, newly holding,
detection slower or faster. Rendered as Markdown and as one standalone HTML
file (the plot inlined), both written into the campaign folder.
"""

from __future__ import annotations

import base64
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

from raceproof.sim.verdicts import Verdict

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from raceproof.reports import campaign_folder
from raceproof.reports.html import template
from raceproof.reports.plots import save_png
from raceproof.sim import repro as repro_files

Row = dict[str, Any]
# Matplotlib 3.10 replaced boxplot's ``vert`` by ``orientation``.
HORIZONTAL: dict[str, Any] = (
    {"orientation": "horizontal"}
    if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    else {"vert": False}
)
PLOT = "report-distributions.png"
# Detection is "slower" or "faster" against a baseline when the median examples to the first
# violation changes by at least this factor (examples are machine-independent; seconds are not).
SPEED_FACTOR = 1.5


def read_rows(folder: Path) -> list[Row]:
    """Every row of ``folder/results`` (Parquet part files), sorted by cell key.

    Read part by part (``campaign_folder``): a damaged part is a one-line error naming it.
    """
    return campaign_folder.read_rows(folder)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _groups(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    grouped: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        grouped[tuple(row[k] for k in keys)].append(row)
    return dict(sorted(grouped.items()))


def detection(rows: Sequence[Row]) -> list[Row]:
    """Per scenario, variant and strategy of the search cells: how often, how fast."""
    table = []
    search = [r for r in rows if r["kind"] == "search"]
    for (scenario, variant, strategy), cells in _groups(
        search, "scenario", "variant", "strategy"
    ).items():
        found = [r for r in cells if r["verdict"] == Verdict.VIOLATED]
        examples = [r["examples_to_violation"] for r in found]
        seconds = [r["seconds"] for r in found]
        table.append(
            {
                "scenario": scenario,
                "variant": variant,
                "strategy": strategy,
                "expected": cells[0]["expected"],
                "cells": len(cells),
                "found": len(found),
                "rate": len(found) / len(cells),
                "errors": sum(r["verdict"] == Verdict.ERROR for r in cells),
                "examples_median": _median(examples),
                "examples_max": max(examples, default=None),
                "seconds_median": _median(seconds),
                "seconds_max": max(seconds, default=None),
            }
        )
    return table


def distinct_counterexamples(rows: Sequence[Row]) -> list[Row]:
    """One entry per (scenario, variant, shrunk blob): how many cells found it, and by what."""
    found = [r for r in rows if r["verdict"] == Verdict.VIOLATED and r["blob"] is not None]
    entries = []
    for (scenario, variant, blob), cells in _groups(found, "scenario", "variant", "blob").items():
        entries.append(
            {
                "scenario": scenario,
                "variant": variant,
                "blob": blob,
                "cells": len(cells),
                "deviations": cells[0]["deviations"],
                "checker": cells[0]["checker"],
                "strategies": sorted({r["strategy"] for r in cells}),
                "counterexample": cells[0]["counterexample"],
            }
        )
    return entries


def failed_expectations(rows: Sequence[Row]) -> list[Row]:
    """Variants whose cells contradict the catalogue's expectation, and cells that crashed."""
    failed = []
    for (scenario, variant), cells in _groups(rows, "scenario", "variant").items():
        expected = cells[0]["expected"]
        search = [r for r in cells if r["kind"] == "search"]
        proofs = [r for r in cells if r["kind"] == "proof"]
        errors = [r for r in cells if r["verdict"] == Verdict.ERROR]
        violated = [r for r in search if r["verdict"] == Verdict.VIOLATED]
        whys = []
        if errors:
            whys.append(
                f"{len(errors)} cell(s) crashed, e.g. {errors[0]['cell']}: {errors[0]['error']}"
            )
        if expected == Verdict.OK and violated:
            whys.append(
                f"expected to hold, violated in {len(violated)} of {len(search)} search "
                f"cells (first {violated[0]['cell']}, {violated[0]['checker']})"
            )
        if expected == Verdict.VIOLATED and search and not violated:
            whys.append(f"expected a violation, none found in {len(search)} search cells")
        for proof in proofs:
            if proof["verdict"] != Verdict.ERROR and not proof["met"]:
                whys.append(
                    f"proof {proof['verdict']} (complete={proof['complete']}), expected {expected}"
                )
        whys += _pipeline_whys([r for r in cells if r["kind"] == "pipeline"])
        if whys:
            failed.append(
                {
                    "scenario": scenario,
                    "variant": variant,
                    "expected": expected,
                    "why": "; ".join(whys),
                    "crashed": len(errors),
                    "contradicted": len(whys) > (1 if errors else 0),
                }
            )
    return failed


def _pipeline_whys(cells: Sequence[Row]) -> list[str]:
    """A pipeline experiment's cells that are not ``ok``: each the gate's, so each a failed
    expectation (a guard that broke its promise, a pipeline wrong with no fault, a cell not
    judged); the crashed ones are counted with the other crashes."""
    whys = []
    for verdict in (Verdict.VIOLATED, Verdict.INCONCLUSIVE):
        chosen = [r for r in cells if r["verdict"] == verdict]
        if chosen:
            first = chosen[0]
            said = first["checker"] or first.get("finding") or ""
            whys.append(
                f"{verdict} in {len(chosen)} of {len(cells)} cells (first {first['cell']}: {said})"
            )
    return whys


def proofs(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r["kind"] == "proof"]


def baseline_diff(rows: Sequence[Row], old_rows: Sequence[Row]) -> list[Row]:
    """What changed per scenario, variant and strategy against a previous campaign."""
    now = {(d["scenario"], d["variant"], d["strategy"]): d for d in detection(rows)}
    before = {(d["scenario"], d["variant"], d["strategy"]): d for d in detection(old_rows)}
    changes = []
    for key in sorted(set(now) | set(before)):
        new, old = now.get(key), before.get(key)
        change = None
        if new is None:
            change = "no longer run"
        elif old is None:
            change = "new in this campaign"
        elif new["found"] and not old["found"]:
            change = "newly violated"
        elif old["found"] and not new["found"]:
            change = "newly holding"
        elif new["found"] and old["found"]:
            a, b = old["examples_median"], new["examples_median"]
            if b >= a * SPEED_FACTOR:
                change = "detection slower"
            elif b * SPEED_FACTOR <= a:
                change = "detection faster"
            elif new["rate"] != old["rate"]:
                change = "detection rate changed"
        if change:
            changes.append(
                {
                    "scenario": key[0],
                    "variant": key[1],
                    "strategy": key[2],
                    "change": change,
                    "rate_before": None if old is None else old["rate"],
                    "rate_now": None if new is None else new["rate"],
                    "examples_before": None if old is None else old["examples_median"],
                    "examples_now": None if new is None else new["examples_median"],
                }
            )
    return changes


def plot(rows: Sequence[Row], path: Path) -> bool:
    """Box plots of examples and seconds to the first violation per variant and strategy."""
    found = [r for r in rows if r["kind"] == "search" and r["verdict"] == Verdict.VIOLATED]
    groups = _groups(found, "scenario", "variant", "strategy")
    if not groups:
        return False
    labels = [f"{s}/{v} [{st}]" for s, v, st in groups]
    height = max(3.0, 0.28 * len(labels) + 1.5)
    figure, axes = plt.subplots(1, 2, figsize=(13, height), sharey=True)
    for axis, column, title in (
        (axes[0], "examples_to_violation", "examples to the first violation"),
        (axes[1], "seconds", "seconds (search and shrink)"),
    ):
        data = [[max(r[column], 1e-3) for r in cells] for cells in groups.values()]
        axis.boxplot(data, showfliers=True, **HORIZONTAL)
        axis.set_xscale("log")
        axis.set_title(title, fontsize=10)
        axis.grid(True, alpha=0.3)
    axes[0].set_yticks(range(1, len(labels) + 1), labels, fontsize=7)
    axes[0].invert_yaxis()  # the first scenario at the top, as in the tables
    save_png(figure, path, dpi=90)
    return True


def pipeline_cells(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """A pipeline campaign's cells (``campaign --pipeline``): pipeline, experiment, seed, verdict
    and finding, in cell order (the baseline first for each pipeline)."""
    cells = [r for r in rows if r["kind"] == "pipeline"]
    cells.sort(key=lambda r: (r["scenario"], r["variant"] != "baseline", r["variant"], r["seed"]))
    return [
        {
            "pipeline": r["scenario"],
            "experiment": r["variant"],
            "seed": r["seed"],
            "verdict": r["verdict"],
            "checker": r["checker"],
            "finding": r.get("finding") or r.get("error") or "",
        }
        for r in cells
    ]


def summary(folder: Path, baseline: Path | None = None) -> dict[str, Any]:
    rows = read_rows(folder)
    manifest = campaign_folder.read_manifest(folder)
    checks = campaign_folder.read_determinism(folder)
    verdicts: dict[str, int] = defaultdict(int)
    for row in rows:
        verdicts[row["verdict"]] += 1
    result = {
        "folder": str(folder),
        "manifest": manifest,
        "cells": len(rows),
        "verdicts": dict(sorted(verdicts.items())),
        "detection": detection(rows),
        "counterexamples": distinct_counterexamples(rows),
        "failed": failed_expectations(rows),
        "proofs": proofs(rows),
        "determinism": checks,
        "pipeline_cells": pipeline_cells(rows),
        "baseline": None,
        "changes": [],
    }
    if baseline is not None:
        result["baseline"] = str(baseline)
        result["changes"] = baseline_diff(rows, read_rows(baseline))
    return result


# -- rendering ----------------------------------------------------------------------
def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"
    return str(value)


Table = tuple[str, list[str], list[list[str]], str]  # (title, header, rows, note)


def _detection(data: dict[str, Any]) -> Table:
    """Detection per strategy: how often and how fast each search found its violation."""
    return (
        "Detection per strategy",
        [
            "scenario",
            "variant",
            "expected",
            "strategy",
            "found",
            "rate",
            "examples median / max",
            "seconds median / max",
        ],
        [
            [
                d["scenario"],
                d["variant"],
                d["expected"],
                d["strategy"],
                f"{d['found']}/{d['cells']}",
                f"{d['rate']:.0%}",
                f"{_fmt(d['examples_median'])} / {_fmt(d['examples_max'])}",
                f"{_fmt(d['seconds_median'])} / {_fmt(d['seconds_max'])}",
            ]
            for d in data["detection"]
        ],
        "Examples are counted, so they do not depend on the machine; seconds include shrinking.",
    )


def _failed(data: dict[str, Any]) -> Table:
    """Variants whose cells contradict the catalogue's expectation, and crashed cells."""
    return (
        "Failed expectations",
        ["scenario", "variant", "expected", "why"],
        [[f["scenario"], f["variant"], f["expected"], f["why"]] for f in data["failed"]],
        "none" if not data["failed"] else "",
    )


def _counterexamples(data: dict[str, Any]) -> Table:
    """One row per distinct shrunk counterexample."""
    return (
        "Distinct counterexamples (by shrunk choice blob)",
        ["scenario", "variant", "checker", "deviations", "blob", "cells", "strategies", "file"],
        [
            [
                c["scenario"],
                c["variant"],
                _fmt(c["checker"]),
                _fmt(c["deviations"]),
                c["blob"],
                str(c["cells"]),
                ", ".join(c["strategies"]),
                c["counterexample"],
            ]
            for c in data["counterexamples"]
        ],
        "",
    )


def _proofs(data: dict[str, Any]) -> Table:
    """The merged proofs."""
    return (
        "Proofs (merged from balanced units)",
        [
            "scenario",
            "variant",
            "expected",
            "verdict",
            "complete",
            "schedules",
            "units",
            "seconds",
        ],
        [
            [
                p["scenario"],
                p["variant"],
                p["expected"],
                p["verdict"],
                _fmt(p["complete"]),
                _fmt(p["schedules"]),
                _fmt(p["shards"]),
                _fmt(p["seconds"]),
            ]
            for p in data["proofs"]
        ],
        "" if data["proofs"] else "no proofs in this campaign (`--prove`)",
    )


def _determinism(data: dict[str, Any]) -> Table:
    """The cells re-run on the driver, and whether they gave the same cell hash."""
    determinism_bad = [c for c in data["determinism"] if not c["same"]]
    return (
        "Determinism across executors",
        ["cell", "same", "ran on", "re-run on"],
        [
            [c["cell"], "yes" if c["same"] else "**NO**", c["executor"], c["driver"]]
            for c in data["determinism"]
        ],
        f"{len(data['determinism']) - len(determinism_bad)} of {len(data['determinism'])} "
        "re-run cells gave the same cell hash",
    )


def _changes(data: dict[str, Any]) -> Table:
    """What changed against the baseline campaign."""
    return (
        f"Changes against {data['baseline']}",
        [
            "scenario",
            "variant",
            "strategy",
            "change",
            "rate before / now",
            "examples median before / now",
        ],
        [
            [
                c["scenario"],
                c["variant"],
                c["strategy"],
                c["change"],
                f"{_fmt(c['rate_before'])} / {_fmt(c['rate_now'])}",
                f"{_fmt(c['examples_before'])} / {_fmt(c['examples_now'])}",
            ]
            for c in data["changes"]
        ],
        "no change" if not data["changes"] else "",
    )


def _tables(data: dict[str, Any]) -> list[Table]:
    """(title, header, rows, note) of every section that has something to say; Markdown and
    HTML render the same tables. A section with no row is left out, but for the failed
    expectations ("none") and the changes against a baseline ("no change"), and for the
    proofs' note in a campaign that searched (it says how to ask for proofs)."""
    searched = bool(data["detection"])
    sections = [_detection(data), _failed(data), _counterexamples(data), _proofs(data)]
    sections.append(_determinism(data))
    if data.get("pipeline_cells"):
        sections.insert(0, _pipeline_section(data["pipeline_cells"]))
    if data["baseline"] is not None:
        sections.append(_changes(data))
    always = {"Failed expectations", f"Changes against {data['baseline']}"}
    if searched:
        always.add("Proofs (merged from balanced units)")
    return [section for section in sections if section[2] or section[0] in always]


def _pipeline_section(cells: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]], str]:
    """A pipeline campaign's table: every pipeline × experiment × seed, its verdict and finding."""
    return (
        "Pipeline experiments (pipeline × experiment × seed)",
        ["pipeline", "experiment", "seed", "verdict", "checker", "finding"],
        [
            [
                c["pipeline"],
                c["experiment"],
                str(c["seed"]),
                c["verdict"],
                _fmt(c["checker"]),
                c["finding"],
            ]
            for c in cells
        ],
        "The verdict is the gate's (a guard that broke its promise, or a pipeline wrong "
        "with no fault); the finding is what stock Spark did, never a failure by itself.",
    )


def _headline(data: dict[str, Any]) -> str:
    options = data["manifest"]["options"]
    verdicts = ", ".join(f"{v} {k}" for k, v in data["verdicts"].items())
    return (
        f"{data['cells']} cells ({verdicts}); seeds {len(options['seeds'])}, "
        f"{options['examples']} examples per cell, strategies {', '.join(options['strategies'])}; "
        f"raceproof {data['manifest']['tool_version']} at {data['manifest']['git_commit'][:12]}"
    )


def render_markdown(data: dict[str, Any], plot_name: str | None) -> str:
    lines = [f"# Campaign {data['folder']}", "", _headline(data), ""]
    if plot_name:
        lines += [f"![examples and seconds to the first violation]({plot_name})", ""]
    for title, header, rows, note in _tables(data):
        lines += [f"## {title}", ""]
        if rows:
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += [
                "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows
            ]
            lines.append("")
        if note:
            lines += [note, ""]
    return "\n".join(lines)


def render_html(data: dict[str, Any], plot_png: bytes | None) -> str:
    """One standalone page (the plot inlined), from ``templates/campaign.html.j2``."""
    tables = [
        {
            "title": title,
            "header": header,
            "rows": [
                {
                    "bad": any(cell in ("**NO**", "newly violated") for cell in row),
                    "cells": [cell.replace("**", "") for cell in row],
                }
                for row in rows
            ],
            "note": note,
        }
        for title, header, rows, note in _tables(data)
    ]
    return template("campaign.html.j2").render(
        folder=data["folder"],
        headline=_headline(data),
        plot_base64=base64.b64encode(plot_png).decode() if plot_png else None,
        tables=tables,
    )


def write_report(
    folder: Path, baseline: Path | None = None, formats: Sequence[str] | None = None
) -> dict[str, str]:
    """Write ``report.md``, ``report.html`` and the plot into ``folder``; returns their paths."""
    formats = formats or ["md", "html"]
    data = summary(folder, baseline)
    plot_path = folder / PLOT
    has_plot = plot(read_rows(folder), plot_path)
    written = {"plot": str(plot_path)} if has_plot else {}
    if "md" in formats:
        target = folder / "report.md"
        repro_files.write_atomically(target, render_markdown(data, PLOT if has_plot else None))
        written["md"] = str(target)
    if "html" in formats:
        target = folder / "report.html"
        png = plot_path.read_bytes() if has_plot else None
        repro_files.write_atomically(target, render_html(data, png))
        written["html"] = str(target)
    return written
