"""Tests of the reports: Markdown/Mermaid, HTML, Perfetto and terminal pictures of a race."""
