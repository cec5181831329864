"""The manual's CLI reference is generated from the parser, and nothing of the parser is left out.

``docs/_ext/cli_reference.py`` renders ``raceproof.cli.main.build_parser()`` at build time.
These tests hold it to the parser: every option string and positional argument of every
subcommand appears in the section of that subcommand, an option added to a parser shows up
without touching the docs, and the reference page really uses the generator.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from raceproof.cli.main import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"
_spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "_ext" / "cli_reference.py")
assert _spec is not None and _spec.loader is not None
cli_reference = importlib.util.module_from_spec(_spec)
sys.modules["cli_reference"] = cli_reference
_spec.loader.exec_module(cli_reference)


def sections(text: str) -> dict[str, str]:
    """Each ``## `raceproof ...``` section of the generated text, by its command."""
    parts = re.split(r"^## `(raceproof[^`]*)`$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def arguments(parser: argparse.ArgumentParser) -> list[str]:
    """What a reader must find: every option string, and every positional's name."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if action.option_strings:
            found.extend(action.option_strings)
        else:
            found.append(str(action.metavar or action.dest))
    return found


def missing(parser: argparse.ArgumentParser) -> list[str]:
    text = sections(cli_reference.cli_markdown(parser))
    gaps = []
    for path, sub in cli_reference.walk(parser):
        if not path:
            continue
        command = " ".join(("raceproof", *path))
        body = text.get(command)
        if body is None:
            gaps.append(f"{command}: no section")
            continue
        gaps.extend(f"{command}: {a}" for a in arguments(sub) if f"`{a}`" not in body)
    return gaps


def test_every_option_of_every_command_is_in_the_reference() -> None:
    parser = build_parser()
    commands = [path for path, _ in cli_reference.walk(parser) if path]
    assert len(commands) >= 11  # list, explore, prove, repro, replay, report, check, ...
    assert missing(parser) == []
    top = cli_reference.top_level_markdown(parser)
    assert all(f"`{a}`" in top for a in arguments(parser))


@given(
    name=st.from_regex(r"--[a-z][a-z0-9-]{2,20}", fullmatch=True),
    helped=st.booleans(),
    index=st.integers(min_value=0),
)
def test_an_option_added_to_any_command_appears_without_touching_the_docs(
    name: str, helped: bool, index: int
) -> None:
    parser = build_parser()
    subs = [sub for path, sub in cli_reference.walk(parser) if path]
    target = subs[index % len(subs)]
    if name in target._option_string_actions:
        return
    target.add_argument(name, help="a new option" if helped else None)
    assert missing(parser) == []
    assert f"`{name}`" in cli_reference.cli_markdown(parser)


def test_a_reference_that_drops_an_option_is_caught() -> None:
    parser = build_parser()
    real = cli_reference.cli_markdown
    try:
        cli_reference.cli_markdown = lambda p, heading="##": real(p, heading).replace(
            "`--variant`", "`--flavour`"
        )
        assert any(gap.endswith(": --variant") for gap in missing(parser))
    finally:
        cli_reference.cli_markdown = real


def test_the_reference_page_is_generated() -> None:
    page = (DOCS / "reference" / "cli.md").read_text()
    assert "```{raceproof-cli}" in page
    conf = (DOCS / "conf.py").read_text()
    assert '"cli_reference"' in conf
