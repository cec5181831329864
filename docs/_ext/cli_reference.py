"""The manual's CLI reference, generated from the argparse definitions so it cannot drift.

``raceproof.cli.main.build_parser()`` is the one place the command line is defined. The
``raceproof-cli`` directive walks that parser (the top-level options, then every subcommand,
recursively) and writes one section per command: its usage, description and a table of its
options with their help text, defaults and choices. ``cli_markdown()`` is the same walk as
MyST Markdown text; ``property_tests/docs/test_docs_cli_reference.py`` checks that every option
string of every subparser appears in it, so an option added without help still shows up and
an option dropped from the walk fails the suite.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

PROG = "raceproof"


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser under ``parser`` (itself first), with the words that reach it."""
    yield path, parser
    for name, sub in sorted(_subparsers(parser)):
        yield from walk(sub, (*path, name))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs == 0:
            return names
        metavar = action.metavar or action.dest.upper()
        if isinstance(metavar, tuple):
            metavar = " ".join(metavar)
        return f"{names} `{metavar}`"
    metavar = action.metavar or action.dest
    return f"`{metavar}`"


def _details(action: argparse.Action) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        text = ""
    text = text.replace("%(default)s", str(action.default)).replace("%(prog)s", PROG)
    extras = []
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        extras.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    if action.required and action.option_strings:
        extras.append("required")
    default = action.default
    if (
        action.option_strings
        and action.nargs != 0
        and default not in (None, argparse.SUPPRESS, [], "")
        and "default" not in text
    ):
        extras.append(f"default `{default}`")
    return _cell("; ".join([t for t in [text, *extras] if t]))


def cli_markdown(parser: argparse.ArgumentParser, heading: str = "##") -> str:
    """The whole command line as MyST Markdown: a section per command, a table per section."""
    out: list[str] = []
    for path, sub in walk(parser):
        if not path:
            continue
        title = " ".join((PROG, *path))
        out.append(f"{heading} `{title}`\n")
        if sub.description:
            out.append(" ".join(sub.description.split()) + "\n")
        out.append("```text\n" + sub.format_usage().replace("usage: ", "").strip() + "\n```\n")
        rows = [a for a in sub._actions if not isinstance(a, argparse._SubParsersAction)]
        if rows:
            out.append("| argument | meaning |\n|---|---|")
            out.extend(f"| {_argument(a)} | {_details(a)} |" for a in rows)
            out.append("")
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                out.append("Subcommands: " + ", ".join(f"`{n}`" for n in sorted(action.choices)))
                out.append("")
        if sub.epilog:
            out.append(epilog_markdown(sub.epilog))
    return "\n".join(out)


def epilog_markdown(epilog: str) -> str:
    """An epilog's text as paragraphs and its indented command lines as one copyable sh block.

    ``examples:\n  raceproof prove ...\n  raceproof prove ... --json`` becomes "Examples:"
    and a code block with one command a line (not a run-together paragraph).
    """
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            out.append("```sh\n" + "\n".join(block) + "\n```\n")
            block.clear()

    for line in epilog.splitlines():
        if line.startswith((" ", "\t")) and line.strip():
            block.append(line.strip())
            continue
        flush()
        if line.strip():
            text = line.strip()
            out.append(text[0].upper() + text[1:] + "\n")
    flush()
    return "\n".join(out)


def top_level_markdown(parser: argparse.ArgumentParser) -> str:
    """The program's own usage, options and command list."""
    rows = [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]
    out = ["```text\n" + parser.format_usage().replace("usage: ", "").strip() + "\n```\n"]
    out.append("| argument | meaning |\n|---|---|")
    out.extend(f"| {_argument(a)} | {_details(a)} |" for a in rows)
    out.append("")
    commands = [name for name, _ in _subparsers(parser)]
    out.append("Commands: " + ", ".join(f"`{c}`" for c in sorted(commands)) + "\n")
    return "\n".join(out)


class CliReference(SphinxDirective):
    """``raceproof-cli``: insert the generated reference here, parsed as MyST Markdown."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from raceproof.cli.main import build_parser

        parser = build_parser()
        text = top_level_markdown(parser) + "\n" + cli_markdown(parser)
        container = nodes.container()
        # Parse the generated Markdown with the document's own (MyST) parser.
        self.state.nested_parse(
            StringList(text.splitlines(), source="raceproof.cli.main.build_parser()"),
            self.content_offset,
            container,
            match_titles=True,
        )
        return container.children


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("raceproof-cli", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
