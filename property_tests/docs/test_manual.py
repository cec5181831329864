"""The manual as a reader meets it: copyable commands, links with text, figures that hold.

Why it exists: a newcomer found the CLI reference's `--x` turned into an en dash
by Sphinx's smart quotes (a pasted `raceproof bench –quick` fails), its examples
run together on one line, 18 links with no text (`[](page.md)`, nothing on
GitHub), and line counts the files did not have (issue 37). Each is pinned here:

- the CLI reference is built by Sphinx with the manual's own ``conf.py`` (a
  one-page project in a temporary folder, so the test needs no ``make docs``),
  and no code in it holds an en or em dash; every ``epilog`` example is a line
  of its own in a code block;
- no Markdown source (README and manual) has an empty-text link;
- the line counts the README and the manual state are the files' own;
- "Reading a report" shows its sequence diagram as an SVG that Chromium lays
  out (the page built from its own ``raceproof-output`` block), not the text.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

from property_tests.doc_examples import DOCS, ROOT, pages

DASHES = ("\u2013", "\u2014")  # en dash, em dash


class CodeText(HTMLParser):
    """The text inside <pre> and <code> elements, one string per element."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.current: list[str] = []
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("pre", "code"):
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "code") and self.depth:
            self.depth -= 1
            if not self.depth:
                self.found.append("".join(self.current))
                self.current = []

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.current.append(data)


def build_page(tmp_path: Path, text: str) -> Path:
    """``text`` as the one page of a Sphinx project with the manual's settings; its HTML file."""
    from sphinx.application import Sphinx

    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text(
        f"exec(open({str(DOCS / 'conf.py')!r}).read())\n"
        f"import sys\nsys.path.insert(0, {str(DOCS / '_ext')!r})\n"
        "exclude_patterns = []\n"
    )
    (source / "index.md").write_text(text)
    out = tmp_path / "html"
    app = Sphinx(
        str(source),
        str(source),
        str(out),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=sys.stderr,
        freshenv=True,
        warningiserror=True,
    )
    app.build()
    return out / "index.html"


def build_cli_reference(tmp_path: Path) -> str:
    """The CLI reference page built by Sphinx with the manual's settings; its HTML."""
    return build_page(tmp_path, "# The command line\n\n```{raceproof-cli}\n```\n").read_text()


def test_the_cli_reference_code_has_no_typographic_dash_and_examples_one_a_line(
    tmp_path: Path,
) -> None:
    html = build_cli_reference(tmp_path)
    parser = CodeText()
    parser.feed(html)
    code = parser.found
    dashed = [c for c in code if any(d in c for d in DASHES)]
    assert dashed == [], dashed[:3]
    assert "--json" in code  # an option as a reader copies it: two hyphens
    blocks = [c for c in code if c.startswith("raceproof prove lost-update")]
    assert blocks, "the prove examples are a code block"
    assert blocks[0].splitlines() == [
        "raceproof prove lost-update --variant fix-cas",
        "raceproof prove brooklin-double-stop --variant fix-conditional-write --json",
    ]
    # The help texts outside code keep their hyphens too (smartquotes = False).
    assert not any(d in html for d in DASHES)


def test_an_en_dash_in_the_reference_code_would_fail(tmp_path: Path) -> None:
    parser = CodeText()
    parser.feed("<p>a \u2013 b</p><pre>raceproof bench \u2013quick</pre><code>--json</code>")
    assert [c for c in parser.found if any(d in c for d in DASHES)] == [
        "raceproof bench \u2013quick"
    ]


EMPTY_LINK = re.compile(r"(?<!!)\[\]\(([^)]*)\)")


def test_no_markdown_link_has_empty_text() -> None:
    empty = [
        f"{page.relative_to(ROOT)}: [](){target}"
        for page in pages()
        for target in EMPTY_LINK.findall(page.read_text())
    ]
    assert empty == []
    assert EMPTY_LINK.findall("see [](a.md) and [b](b.md) and ![](c.png)") == ["a.md"]


def lines_of(path: Path) -> int:
    return len(path.read_text().splitlines())


def python_block_after(text: str, heading: str) -> list[str]:
    start = text.index(heading)
    opened = text.index("```python\n", start) + len("```python\n")
    return text[opened : text.index("\n```", opened)].splitlines()


def test_the_line_counts_the_manual_states_are_the_files() -> None:
    readme = (ROOT / "README.md").read_text()
    stated = re.search(r"^## Your own race in (\d+) lines$", readme, flags=re.MULTILINE)
    assert stated is not None
    assert int(stated.group(1)) == len(python_block_after(readme, stated.group(0)))
    guide = (DOCS / "howto" / "your-scenarios.md").read_text()
    example = DOCS / "examples" / "stale_cache"
    said = re.search(
        r"(\d+) lines of model, checker and scenario, a (\d+)-line test file and an (\d+)-line",
        " ".join(guide.split()),
    )
    assert said is not None
    assert [int(n) for n in said.groups()] == [
        lines_of(example / "stale_cache.py"),
        lines_of(example / "tests" / "test_stale_cache.py"),
        lines_of(example / "pyproject.toml"),
    ]


SEEN = """<pre id="seen"></pre><script>
const svg = document.querySelector('svg[aria-roledescription="sequence"]');
const box = svg ? svg.getBoundingClientRect() : null;
const shown = [...document.querySelectorAll('pre')].filter(p => p.checkVisibility());
document.getElementById('seen').textContent = JSON.stringify({
  width: box ? Math.round(box.width) : 0, height: box ? Math.round(box.height) : 0,
  texts: svg ? [...svg.querySelectorAll('text')].map(t => t.textContent) : [],
  sourceShown: shown.some(p => p.textContent.trim().startsWith('sequenceDiagram')),
});
</script>"""


def test_reading_a_report_shows_an_svg_sequence_diagram_in_chromium(tmp_path: Path) -> None:
    """The page's own generated-diagram block, built, then laid out by headless Chromium."""
    import html as html_module
    import json

    from property_tests import browser

    text = (DOCS / "howto" / "reading-a-report.md").read_text()
    start = text.index("```{raceproof-output}")
    block = text[start : text.index("```\n", start + 3) + 4]
    assert ":language: mermaid" in block
    page = build_page(tmp_path, f"# Reading a report\n\n{block}")
    built = page.read_text()
    page.write_text(built.replace("</body>", SEEN + "</body>"))
    dom, requests = browser.load(page)
    start = dom.index('<pre id="seen">') + len('<pre id="seen">')
    seen = json.loads(html_module.unescape(dom[start : dom.index("</pre>", start)]))
    assert seen["width"] > 300 and seen["height"] > 300, seen  # drawn, not an empty box
    assert {"stop-task2", "follower0"} <= set(seen["texts"])  # the lanes, as text of the SVG
    assert seen["sourceShown"] is False, seen  # the source is folded away under the diagram
    assert requests == []  # no network: the SVG is in the page
