"""``raceproof-output``: a block of the manual generated from a real run at build time.

Some outputs are too long to keep by hand and drift whenever a model changes (a report's
Mermaid diagram, a timeline). This directive runs ``python -m raceproof ARGS`` in a fresh
temporary folder while the manual builds and shows what it printed, or a file it wrote:

    ```{raceproof-output} repro brooklin-double-stop --report-timeline --out out
    :file: out/*.md
    :fence: mermaid
    :language: text
    ```

``:file:`` shows the one file the glob matches instead of stdout; ``:fence:`` keeps only the
first fenced block of that language in it. A run that exits 2 (bad input), 4 (the model
raised) or 70 (a bug), or a glob that matches no file or several, is an error, and
``make docs`` treats it as one (``-W``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

VERDICT_EXITS = (0, 1, 3)


def run_raceproof(argv: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "raceproof", *argv],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )


def first_fence(text: str, language: str) -> str | None:
    found = re.search(rf"^```{re.escape(language)}\n(.*?)^```", text, flags=re.S | re.M)
    return found.group(1) if found else None


class RaceproofOutput(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {  # noqa: RUF012 (docutils reads it from the class)
        "file": directives.unchanged,
        "fence": directives.unchanged,
        "language": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        argv = shlex.split(self.arguments[0])
        with tempfile.TemporaryDirectory(prefix="raceproof-docs-") as tmp:
            done = run_raceproof(argv, Path(tmp))
            if done.returncode not in VERDICT_EXITS:
                raise self.error(
                    f"raceproof {shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()}"
                )
            text = done.stdout
            if "file" in self.options:
                matches = sorted(Path(tmp).glob(self.options["file"]))
                if len(matches) != 1:
                    raise self.error(f"{self.options['file']} matched {len(matches)} files")
                text = matches[0].read_text()
        if "fence" in self.options:
            block = first_fence(text, self.options["fence"])
            if block is None:
                raise self.error(f"no ```{self.options['fence']} block in the output")
            text = block
        literal = nodes.literal_block(text.rstrip("\n"), text.rstrip("\n"))
        literal["language"] = self.options.get("language", "text")
        caption = nodes.paragraph(
            "",
            "",
            nodes.emphasis(
                "", f"Generated while this manual was built: raceproof {shlex.join(argv)}"
            ),
        )
        return [caption, literal]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("raceproof-output", RaceproofOutput)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
