"""Headless Chromium and Mermaid for the report tests: the real browser, the real Mermaid.

Debian's ``chromium`` is installed by ``make browser`` (as ZooKeeper is by
``make zookeeper``); Mermaid comes from the npm registry into ``.cache/mermaid``
(installed here on first use when ``make browser`` has not run). A missing
browser or an npm that cannot install fails the test: nothing is skipped.

Pages are loaded with ``--dump-dom`` (the DOM after the scripts ran) and a
NetLog, whose URL requests tell whether the page itself asked the network for
anything (the browser's own background requests carry no ``file://`` isolation
key and are told apart by it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MERMAID_DIR = ROOT / ".cache" / "mermaid"
MERMAID_JS = MERMAID_DIR / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
MERMAID_VERSION = "11.17.2"

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


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "no chromium: run `make browser` (apt-get install chromium)"
    return found


def mermaid_js() -> Path:
    if not MERMAID_JS.exists():
        MERMAID_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(MERMAID_DIR),
                f"mermaid@{MERMAID_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0 and MERMAID_JS.exists(), f"npm install mermaid: {done.stderr}"
    return MERMAID_JS


def load(page: Path, *, budget_ms: int = 8000, window: str = "1400,900") -> tuple[str, list[str]]:
    """The DOM of ``page`` after its scripts ran, and the URLs the page requested."""
    with tempfile.TemporaryDirectory(prefix="raceproof-chromium-") as tmp:
        net_log = Path(tmp) / "net.json"
        done = subprocess.run(
            [
                chromium(),
                *FLAGS,
                f"--user-data-dir={tmp}/profile",
                f"--window-size={window}",
                f"--virtual-time-budget={budget_ms}",
                f"--log-net-log={net_log}",
                "--dump-dom",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0 and done.stdout, f"chromium failed: {done.stderr[-2000:]}"
        return done.stdout, page_requests(net_log)


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


def screenshot(page: Path, out: Path, window: str = "1400,900") -> None:
    with tempfile.TemporaryDirectory(prefix="raceproof-chromium-") as tmp:
        done = subprocess.run(
            [
                chromium(),
                *FLAGS,
                f"--user-data-dir={tmp}/profile",
                f"--window-size={window}",
                "--hide-scrollbars",
                "--virtual-time-budget=4000",
                f"--screenshot={out.resolve()}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0 and out.exists(), f"chromium failed: {done.stderr[-2000:]}"


def render_mermaid(diagrams: list[str], workdir: Path) -> list[str]:
    """Each diagram rendered by Mermaid in Chromium: ``OK <svg bytes>`` or ``ERR <message>``."""
    page = workdir / "mermaid-check.html"
    page.write_text(
        "<html><body><pre id=out></pre>"
        f"<script src={json.dumps(mermaid_js().as_uri())}></script>"
        "<script>\n"
        f"const diagrams = {json.dumps(diagrams)};\n"
        "mermaid.initialize({startOnLoad: false, maxTextSize: 200000});\n"
        "(async () => { const results = [];\n"
        "  for (let i = 0; i < diagrams.length; i++) {\n"
        "    try { const r = await mermaid.render('d' + i, diagrams[i]);\n"
        "          results.push('OK ' + r.svg.length); }\n"
        "    catch (e) { results.push('ERR ' + String(e.message || e).replace(/\\n/g, ' ')); } }\n"
        "  document.getElementById('out').textContent = JSON.stringify(results); })();\n"
        "</script></body></html>\n",
        encoding="utf-8",
    )
    dom, _ = load(page, budget_ms=20000)
    start = dom.index('<pre id="out">') + len('<pre id="out">')
    text = dom[start : dom.index("</pre>", start)]
    assert text, "Mermaid did not finish"
    import html

    return list(json.loads(html.unescape(text)))
