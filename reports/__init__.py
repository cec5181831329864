"""Renderers of histories and counterexamples: terminal, Markdown with Mermaid, HTML, Perfetto, plots.

Every renderer takes a :class:`Story` (a history and what is known about it);
this package reads counterexample and history files through ``raceproof.sim``
only. Placing deviations by replay and computing the counterpart run is done by
``raceproof.runs.stories``.
"""

from raceproof.reports.html import render_html
from raceproof.reports.markdown import mermaid, mermaid_text, render_markdown
from raceproof.reports.perfetto import perfetto_json, trace_events
from raceproof.reports.story import (
    Deviation,
    ReportInputError,
    Story,
    VerdictView,
    inputs_in,
    is_fault,
    is_noise,
    load_story,
)
from raceproof.reports.terminal import print_timeline, timeline_text

__all__ = [
    "Deviation",
    "ReportInputError",
    "Story",
    "VerdictView",
    "inputs_in",
    "is_fault",
    "is_noise",
    "load_story",
    "mermaid",
    "mermaid_text",
    "perfetto_json",
    "print_timeline",
    "render_html",
    "render_markdown",
    "timeline_text",
    "trace_events",
]
