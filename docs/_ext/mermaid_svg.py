"""Mermaid diagrams drawn while the manual builds: SVG in the page, not the diagram's source.

Why it exists: "Reading a report" promised a sequence diagram and showed its raw
``sequenceDiagram`` text (issue 37). Every code block of language ``mermaid`` (a
```` ```mermaid ```` fence, or the ``raceproof-output`` directive's ``:language:
mermaid``) is rendered at build time by Mermaid in headless Chromium, both from
this machine: Debian's ``chromium`` and the Mermaid that ``make browser`` installs
from npm into ``.cache/mermaid``, started by ``tools/chromium.py`` (the launcher
and Mermaid page the report tests use). No network is
asked, so the build works offline; the page gets the SVG, and the diagram's text
below it in a collapsed "Mermaid source" (to paste into a ticket). A missing
browser or Mermaid, or a diagram Mermaid refuses, is a build error (``make docs``
runs with ``-W``; its Makefile target runs ``make browser`` first).
"""

from __future__ import annotations

import hashlib
import html
import tempfile
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

from tools import chromium  # the one launcher (the repository root is on sys.path: conf.py)

_rendered: dict[str, str] = {}  # diagram text -> SVG, for one build


def render(diagram: str) -> str:
    """The SVG Mermaid draws for ``diagram``, in headless Chromium, from local files only."""
    if diagram in _rendered:
        return _rendered[diagram]
    name = "mermaid-" + hashlib.sha256(diagram.encode()).hexdigest()[:12]
    try:
        with tempfile.TemporaryDirectory(prefix="raceproof-mermaid-") as tmp:
            ((ok, said),) = chromium.render_mermaid([(name, diagram)], Path(tmp))
    except chromium.ChromiumError as exc:
        raise ExtensionError(
            f"Mermaid diagrams are rendered while the manual builds: {exc}"
        ) from None
    if not ok:
        raise ExtensionError(f"Mermaid could not draw a diagram: {said}")
    _rendered[diagram] = said
    return said


class MermaidToSvg(SphinxPostTransform):
    """Each ``mermaid`` literal block becomes its SVG and, folded away, its source."""

    default_priority = 400
    formats = ("html",)

    def run(self, **kwargs: object) -> None:
        for block in list(self.document.findall(nodes.literal_block)):
            if block.get("language") != "mermaid":
                continue
            source = block.astext()
            figure = (
                f'<div class="mermaid-diagram">{render(source)}</div>\n'
                "<details><summary>Mermaid source</summary>"
                f"<pre>{html.escape(source)}</pre></details>\n"
            )
            block.replace_self(nodes.raw("", figure, format="html"))


def setup(app: Sphinx) -> dict[str, object]:
    app.add_post_transform(MermaidToSvg)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
