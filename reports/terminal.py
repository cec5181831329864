"""The terminal's text: the timeline, a checker's verdict line, and plain column tables.

The timeline marks actor columns, the violating op and the deviations, noise hidden.

Drawn with ``rich``: one line per op, a narrow column per actor (a dot in the
acting actor's column, so who-did-what reads down the page like a sequence
diagram), then the op's time, index, actor and text. The deviations from FIFO
are lines of their own where they were drawn; the op where a checker became
false is red with the checker's sentence under it. Colour only on a terminal;
piped, the same text without escapes.

The commands' other terminal text comes from here too, so each kind of line
is drawn in one place: :func:`verdict_line` (a checker's verdict under a
timeline: ``check``'s counterexample, ``explore``/``repro``, a real backend's
run) and :func:`columns_text` (the tables of ``check``, ``spark-check``,
``compare``, ``list`` and ``bench``: one style), laid out by rich rather than padded by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from raceproof.reports.story import Story, is_fault, op_text

_COLOURS = [
    "cyan",
    "green",
    "magenta",
    "blue",
    "yellow",
    "bright_cyan",
    "bright_green",
    "bright_magenta",
    "bright_blue",
    "white",
]


def timeline_lines(story: Story, show_all: bool = False, width: int = 120) -> list[Text]:
    """The timeline as rich ``Text`` lines (no header, no verdicts)."""
    actors = [a for a in story.actors() if any(op.actor == a for op in story.visible_ops(show_all))]
    colour = {a: _COLOURS[i % len(_COLOURS)] for i, a in enumerate(actors)}
    lines: list[Text] = []
    legend = Text("actors: ")
    for actor in actors:
        legend.append(f"● {actor}", style=colour[actor])
        legend.append("  ")
    lines.append(legend)
    time_w = max([len(str(op.time_ms)) for op in story.history] + [1]) + 2
    lanes_w = len(actors)
    previous = -1
    for op in story.visible_ops(show_all):
        for deviation in story.deviations_between(previous, op.index):
            line = Text(" " * (lanes_w + time_w + 2))
            line.append(
                f"⚡ deviation: {deviation.sentence()} (draw #{deviation.draw})",
                style="bold yellow",
            )
            lines.append(line)
        previous = op.index
        violations = story.violations_at(op.index)
        line = Text()
        for actor in actors:
            if actor == op.actor:
                line.append("●", style=f"bold {colour[actor]}")
            else:
                line.append("│", style="grey42")
        line.append(f" {op.time_ms:>{time_w - 2}}ms ", style="grey62")
        line.append(f"#{op.index:<4}", style="grey62")
        line.append(f"{op.actor}  ", style=colour[op.actor])
        rest = max(20, width - len(line.plain))
        style = "bold red" if violations else "dark_orange" if is_fault(op) else ""
        line.append(op_text(op, rest), style=style)
        lines.append(line)
        for verdict in violations:
            mark = Text(" " * (lanes_w + time_w + 2))
            mark.append(f"✗ {verdict.checker}: {verdict.message}", style="bold red")
            lines.append(mark)
    after = story.deviations_between(previous, 1 << 62)
    for deviation in after + [d for d in story.deviations if d.before_op is None]:
        lines.append(
            Text(
                f"⚡ deviation: {deviation.sentence()} (draw #{deviation.draw})",
                style="bold yellow",
            )
        )
    hidden = story.hidden_count(show_all)
    if hidden:
        lines.append(
            Text(
                f"({hidden} noise ops hidden: checkpoints, kernel; --all shows them)",
                style="grey62",
            )
        )
    return lines


def print_timeline(story: Story, console: Console | None = None, show_all: bool = False) -> None:
    console = console or Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:  # piped: plain lines, never wrapped at a guessed width
        console.file.write(timeline_text(story, show_all))
        console.file.flush()
        return
    for line in timeline_lines(story, show_all, console.width):
        console.print(line, overflow="ellipsis", no_wrap=True)


def timeline_text(story: Story, show_all: bool = False, width: int = 160) -> str:
    """The timeline as plain text (``--format text`` and tests)."""
    return "\n".join(line.plain for line in timeline_lines(story, show_all, width)) + "\n"


def verdict_line(status: str, checker: str, op_index: int | None, message: str) -> str:
    """A checker's verdict as it stands under a timeline: status, checker, the op, its sentence."""
    where = f" (op #{op_index})" if op_index is not None else ""
    return f"  {status.upper():9} {checker}{where}  {message}"


def columns_text(
    rows: Sequence[Sequence[str]], *, min_widths: Sequence[int] = (), right: Sequence[int] = ()
) -> str:
    """``rows`` (a header, if any, first) as plain-text columns two spaces apart.

    Each column is as wide as its widest cell, or its ``min_widths`` entry if
    that is more; the columns whose index is in ``right`` are right-aligned,
    the others left-aligned. A borderless rich table that never wraps (its console as wide
    as need be), captured without escapes; each line ends at its last character
    (no padding after the last column).
    """
    least = [*min_widths, *[0] * (len(rows[0]) - len(min_widths))]
    table = Table(box=None, show_header=False, show_edge=False, pad_edge=False, padding=(0, 1))
    for i in range(len(rows[0])):
        table.add_column(
            no_wrap=True,  # and the console is as wide as the table: nothing is cut
            min_width=least[i] or None,
            justify="right" if i in right else "left",
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    widths = [max(least[i], *(cell_len(row[i]) for row in rows)) for i in range(len(rows[0]))]
    console = Console(
        width=sum(widths) + 2 * len(widths) + 1,  # wide enough that nothing is wrapped or cut
        color_system=None,
        highlight=False,
        markup=False,
        emoji=False,
    )
    with console.capture() as captured:
        console.print(table)
    return "\n".join(line.rstrip() for line in captured.get().splitlines())
