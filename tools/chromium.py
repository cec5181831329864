"""Headless Chromium and Mermaid, started one way for the report tests, the manual and the README picture.

Why it exists: the report tests (``property_tests/browser.py``), the manual's
Mermaid diagrams (``docs/_ext/mermaid_svg.py``, run inside Sphinx) and the
README's screenshot (``tools/brooklin_timeline_png.py``) each started the
browser with their own copy of its flags, temporary profile and Mermaid page.
This module is that logic once. It needs the standard library only (Sphinx,
pytest and a plain script all import it) and is no part of the wheel: it lives
with the repository's tools and is imported as ``tools.chromium`` (the
repository root on ``sys.path``: pytest's rootdir, the manual's ``conf.py``).

Debian's ``chromium`` and the Mermaid that npm puts into ``.cache/mermaid`` are
installed by ``make browser``; nothing here asks the network. A browser that is
missing or fails raises :class:`ChromiumError` with one message; each caller
says it its own way (a test's assertion, Sphinx's ``ExtensionError``, a
script's exit code).

Pages are loaded with ``--dump-dom`` (the DOM after the scripts ran) and a
NetLog, whose URL requests tell whether the page itself asked the network for
anything (the browser's own background requests carry no ``file://`` isolation
key and are told apart by it).
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MERMAID_DIR = ROOT / ".cache" / "mermaid"
MERMAID_JS = MERMAID_DIR / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
MERMAID_VERSION = "11.17.2"
TIMEOUT_S = 180

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--allow-file-access-from-files",
]


class ChromiumError(RuntimeError):
    """No browser, no Mermaid, or a browser run that failed: the one line saying which."""


def executable() -> str:
    """Debian's ``chromium`` (or ``chromium-browser``) on the PATH."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ChromiumError("no chromium: run `make browser` (apt-get install chromium)")
    return found


def _run(page: Path, flags: list[str], *, profile: str, window: str, budget_ms: int) -> str:
    """One headless run on ``page`` with ``flags``; its stdout, or ChromiumError with its stderr."""
    done = subprocess.run(
        [
            executable(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={window}",
            f"--virtual-time-budget={budget_ms}",
            *flags,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise ChromiumError(f"chromium failed: {done.stderr[-2000:]}")
    return done.stdout


def load(page: Path, *, budget_ms: int = 8000, window: str = "1400,900") -> tuple[str, list[str]]:
    """The DOM of ``page`` after its scripts ran, and the URLs the page requested."""
    with tempfile.TemporaryDirectory(prefix="raceproof-chromium-") as tmp:
        net_log = Path(tmp) / "net.json"
        flags = [f"--log-net-log={net_log}", "--dump-dom"]
        dom = _run(page, flags, profile=f"{tmp}/profile", window=window, budget_ms=budget_ms)
        if not dom:
            raise ChromiumError("chromium failed: it printed no DOM")
        return dom, page_requests(net_log)


def page_requests(net_log: Path) -> list[str]:
    """URLs (other than file:) that a page loaded from a file asked for, from a NetLog."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        from_page = "file://" in str(params.get("network_isolation_key", ""))
        if event["type"] == start and from_page and not str(params.get("url")).startswith("file:"):
            urls.append(params["url"])
    return urls


def screenshot(page: Path, out: Path, *, window: str = "1400,900", budget_ms: int = 4000) -> None:
    """A PNG of ``page`` as laid out in a ``window``-sized viewport, written to ``out``."""
    with tempfile.TemporaryDirectory(prefix="raceproof-chromium-") as tmp:
        flags = ["--hide-scrollbars", f"--screenshot={out.resolve()}"]
        _run(page, flags, profile=f"{tmp}/profile", window=window, budget_ms=budget_ms)
    if not out.exists():
        raise ChromiumError(f"chromium failed: it wrote no {out}")


def mermaid_js(*, install: bool) -> Path:
    """The local Mermaid; with ``install``, npm fetches the pinned version when it is missing."""
    if not MERMAID_JS.exists() and install:
        MERMAID_DIR.mkdir(parents=True, exist_ok=True)
        package = f"mermaid@{MERMAID_VERSION}"
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(MERMAID_DIR), package],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise ChromiumError(f"npm install mermaid: {done.stderr[-2000:]}")
    if not MERMAID_JS.exists():
        raise ChromiumError(
            f"no Mermaid at {MERMAID_JS}: run `make browser` (Mermaid from npm into {MERMAID_DIR})"
        )
    return MERMAID_JS


def render_mermaid(
    diagrams: list[tuple[str, str]], workdir: Path, *, install: bool = False
) -> list[tuple[bool, str]]:
    """Each ``(id, text)`` diagram drawn by Mermaid in Chromium: ``(True, svg)`` or ``(False, why)``.

    One page renders them all in order (``id`` becomes the SVG's element id);
    the results come back as JSON in the page's ``<pre id=out>``.
    """
    page = workdir / "mermaid-render.html"
    page.write_text(
        "<html><body><pre id=out></pre>"
        f"<script src={json.dumps(mermaid_js(install=install).as_uri())}></script>"
        "<script>\n"
        f"const diagrams = {json.dumps(diagrams)};\n"
        "mermaid.initialize({startOnLoad: false, maxTextSize: 200000});\n"
        "(async () => { const results = [];\n"
        "  for (const [id, text] of diagrams) {\n"
        "    try { const r = await mermaid.render(id, text); results.push([true, r.svg]); }\n"
        "    catch (e) { results.push([false, String(e.message || e).replace(/\\n/g, ' ')]); } }\n"
        "  document.getElementById('out').textContent = JSON.stringify(results); })();\n"
        "</script></body></html>\n",
        encoding="utf-8",
    )
    dom, _ = load(page, budget_ms=20000)
    start = dom.find('<pre id="out">')
    end = dom.find("</pre>", start)
    text = html.unescape(dom[start + len('<pre id="out">') : end]) if start >= 0 else ""
    if not text:
        raise ChromiumError("Mermaid did not finish")
    return [(bool(ok), str(said)) for ok, said in json.loads(text)]
