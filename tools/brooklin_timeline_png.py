"""Regenerate docs/report-brooklin-timeline.png from a real run of the Brooklin report story.

Why it exists: the README shows the HTML timeline of the Brooklin report; a
picture drawn by hand, or kept from an older model, shows what the tool no
longer says. This runs the scenario's own report script (``report_script`` of
``brooklin-double-stop``, variant ``report_variant``) through the model,
renders the HTML report, and screenshots it with headless Chromium
(``/usr/bin/chromium``, installed by ``make browser``). Run from the
repository root::

    .venv/bin/python tools/brooklin_timeline_png.py [OUT.png]

It prints the run's verdicts and trace hash, so the picture can be matched to
a run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import chromium  # tools/chromium.py, the one launcher: a script's own folder is on sys.path

from raceproof.reports import render_html
from raceproof.runs.runner import repro_line
from raceproof.runs.stories import story_of_outcome
from raceproof.scenarios.catalogue import get
from raceproof.sim import KeyedReplaySource

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "report-brooklin-timeline.png"
WINDOW = "1400,1000"


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    try:
        chromium.executable()
    except chromium.ChromiumError as exc:
        print(f"brooklin_timeline_png: {exc}", file=sys.stderr)
        return 2
    scenario = get("brooklin-double-stop")
    assert scenario.report_script is not None and scenario.report_variant is not None
    variant = scenario.report_variant
    outcome = scenario.runner(variant, scenario.config)(
        KeyedReplaySource(dict(scenario.report_script))
    )
    repro = repro_line(scenario, variant, outcome.values, scenario.config)
    story = story_of_outcome(scenario, variant, scenario.config, outcome, repro=repro)
    with tempfile.TemporaryDirectory(prefix="raceproof-png-") as tmp:
        page = Path(tmp) / "brooklin.html"
        page.write_text(render_html(story), encoding="utf-8")
        try:
            chromium.screenshot(page, out, window=WINDOW)
        except chromium.ChromiumError as exc:
            print(f"brooklin_timeline_png: {exc}", file=sys.stderr)
            return 1
    for verdict in outcome.verdicts:
        print(f"{verdict.checker}: {verdict.status} {verdict.message}")
    print(f"{scenario.name} / {variant}: {outcome.status}, trace {outcome.trace_hash[:16]}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
