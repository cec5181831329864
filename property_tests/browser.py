"""Headless Chromium and Mermaid for the report tests: the real browser, the real Mermaid.

The browser is started by ``tools/chromium.py``, the one launcher the manual's
Mermaid diagrams and the README's screenshot use too; this module says its
failures the way a test does (an assertion naming what is missing). Debian's
``chromium`` is installed by ``make browser`` (as ZooKeeper is by ``make
zookeeper``); Mermaid comes from the npm registry into ``.cache/mermaid``
(installed here on first use when ``make browser`` has not run). A missing
browser or an npm that cannot install fails the test: nothing is skipped.
"""

from __future__ import annotations

from pathlib import Path

from tools import chromium


def load(page: Path, *, budget_ms: int = 8000, window: str = "1400,900") -> tuple[str, list[str]]:
    """The DOM of ``page`` after its scripts ran, and the URLs the page requested."""
    try:
        return chromium.load(page, budget_ms=budget_ms, window=window)
    except chromium.ChromiumError as exc:
        raise AssertionError(str(exc)) from None


def render_mermaid(diagrams: list[str], workdir: Path) -> list[str]:
    """Each diagram rendered by Mermaid in Chromium: ``OK <svg length>`` or ``ERR <message>``."""
    try:
        drawn = chromium.render_mermaid(
            [(f"d{i}", diagram) for i, diagram in enumerate(diagrams)], workdir, install=True
        )
    except chromium.ChromiumError as exc:
        raise AssertionError(str(exc)) from None
    return [f"OK {len(said)}" if ok else f"ERR {said}" for ok, said in drawn]
