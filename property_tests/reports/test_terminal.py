"""The terminal's plain text from ``reports/terminal.py``: column tables and verdict lines.

``columns_text`` replaced three hand-padded tables (``check``'s gate table,
``spark-check``'s, ``compare``'s) with one rich layout; the property pins that
it lays out any cells exactly as the hand-padding did (each column as wide as
its widest cell, two spaces apart, no padding after the last), markup-like
text and long rows included, so the commands' output did not change.
``verdict_line`` is the one spelling of a checker's verdict under a timeline.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from raceproof.reports.terminal import columns_text, verdict_line

CELL = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=14)


def hand_padded(rows: list[list[str]]) -> str:
    """The layout the three tables had, padded by hand: the reference."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def tables(columns: int) -> st.SearchStrategy[list[list[str]]]:
    header = st.lists(CELL.filter(str.strip), min_size=columns, max_size=columns)
    body = st.lists(st.lists(CELL, min_size=columns, max_size=columns), max_size=6)
    return st.tuples(header, body).map(lambda parts: [parts[0], *parts[1]])


@given(st.integers(1, 6).flatmap(tables))
@example([["scenario", "variant", "result"], ["[bold]a[/bold]", "", "ok"], ["b", "x  ", ""]])
def test_columns_text_lays_out_any_cells_as_the_hand_padding_did(rows: list[list[str]]) -> None:
    assert columns_text(rows) == hand_padded(rows)


def test_a_table_wider_than_any_terminal_is_neither_wrapped_nor_cut() -> None:
    rows = [[f"column {i}" for i in range(30)], ["x" * 60 for _ in range(30)]]
    text = columns_text(rows)
    assert text == hand_padded(rows)
    assert len(text.splitlines()) == 2 and len(text.splitlines()[1]) == 30 * 62 - 2


def test_a_verdict_line_names_the_op_only_when_it_has_one() -> None:
    assert verdict_line("violated", "no-loss", 7, "offset 3 lost") == (
        "  VIOLATED  no-loss (op #7)  offset 3 lost"
    )
    assert verdict_line("ok", "no-dup", None, "held") == "  OK        no-dup  held"


def test_a_minimum_width_holds_short_columns_and_yields_to_a_longer_cell() -> None:
    short = [("buggy", "reads, then sets"), ("fix-lease", "a lease")]
    assert columns_text(short, min_widths=(27,)).splitlines() == [
        "buggy" + " " * 24 + "reads, then sets",
        "fix-lease" + " " * 20 + "a lease",
    ]
    long = [*short, ("drain-before-consumers-start-stuck", "never injected")]
    assert columns_text(long, min_widths=(27,)) == hand_padded([list(row) for row in long])


def test_raceproof_list_starts_every_variant_description_in_one_column() -> None:
    """The listing once padded names to 28 by hand: a longer name pushed its description out."""
    from raceproof.cli.commands.listing import variant_lines
    from raceproof.scenarios.catalogue import all_scenarios

    scenarios = [s.describe() for s in all_scenarios()]
    longest = max(len(v) for s in scenarios for v in s["variants"])
    assert longest > 28, "the catalogue no longer has a long name: pick another case"
    for scenario in scenarios:
        lines = variant_lines(scenario)
        column = max(27, max(len(name) for name in scenario["variants"])) + 2
        assert len(lines) == len(scenario["variants"])
        for line, (name, what) in zip(lines, scenario["variants"].items(), strict=True):
            assert line.startswith(name) and line[column:].startswith(what), (line, column)
