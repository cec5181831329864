"""Mermaid diagrams drawn while the manual builds: SVG in the page, not the diagram's source.

Why it exists: "Reading a report" promised a sequence diagram and showed its raw
``sequenceDiagram`` text (issue 37). Every code block of language ``mermaid`` (a
```` ```mermaid ```` fence, or the ``raceproof-output`` directive's ``:language:
mermaid``) is rendered at build time by Mermaid in headless Chromium, both from
this machine: Debian's ``chromium`` and the Mermaid that ``make browser`` installs
from npm into ``.cache/mermaid`` (the version the report tests use). No network is
asked, so the build works offline; the page gets the SVG, and the diagram's text
below it in a collapsed "Mermaid source" (to paste into a ticket). A missing
browser or Mermaid, or a diagram Mermaid refuses, is a build error (``make docs``
runs with ``-W``; its Makefile target runs ``make browser`` first).
"""

from __future__ import annotations

import hashlib
import html
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

ROOT = Path(__file__).resolve().parent.parent.parent
MERMAID_JS = ROOT / ".cache" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--allow-file-access-from-files",
]
_rendered: dict[str, str] = {}  # diagram text -> SVG, for one build


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None or not MERMAID_JS.exists():
        raise ExtensionError(
            "Mermaid diagrams are rendered while the manual builds: run `make browser` "
            f"(Debian's chromium, and Mermaid from npm into {MERMAID_JS.parent.parent.parent})"
        )
    return found


def render(diagram: str) -> str:
    """The SVG Mermaid draws for ``diagram``, in headless Chromium, from local files only."""
    if diagram in _rendered:
        return _rendered[diagram]
    chromium = _chromium()
    name = "mermaid-" + hashlib.sha256(diagram.encode()).hexdigest()[:12]
    with tempfile.TemporaryDirectory(prefix="raceproof-mermaid-") as tmp:
        page = Path(tmp) / "render.html"
        page.write_text(
            "<html><body><pre id=out></pre>"
            f"<script src={json.dumps(MERMAID_JS.as_uri())}></script><script>\n"
            "mermaid.initialize({startOnLoad: false, maxTextSize: 200000});\n"
            f"mermaid.render({json.dumps(name)}, {json.dumps(diagram)})\n"
            "  .then(r => { document.getElementById('out').textContent = 'OK' + r.svg; })\n"
            "  .catch(e => { document.getElementById('out').textContent = 'ERR' + e; });\n"
            "</script></body></html>\n",
            encoding="utf-8",
        )
        done = subprocess.run(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={tmp}/profile",
                "--virtual-time-budget=20000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    dom = done.stdout
    start = dom.find('<pre id="out">')
    end = dom.find("</pre>", start)
    said = html.unescape(dom[start + len('<pre id="out">') : end]) if start >= 0 else ""
    if not said.startswith("OK<svg"):
        reason = said[3:] if said.startswith("ERR") else f"chromium: {done.stderr[-500:]}"
        raise ExtensionError(f"Mermaid could not draw a diagram: {reason}")
    _rendered[diagram] = said[2:]
    return _rendered[diagram]


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
