"""Sphinx configuration of the raceproof manual (MyST Markdown, the furo theme).

`make docs` builds it with warnings as errors into docs/_build/html. The CLI reference is
generated from ``raceproof.cli.main.build_parser()`` by the local extension
``_ext/cli_reference.py``; the API reference comes from the docstrings by autodoc.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))
# The repository root, for ``tools.chromium`` (mermaid_svg's browser): appended, so the installed
# raceproof still comes first.
sys.path.append(str(Path(__file__).resolve().parent.parent))

project = "raceproof"
author = "the raceproof authors"
copyright = "the raceproof authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "cli_reference", "run_output", "mermaid_svg"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "examples/**/tests", "**/.pytest_cache", "**/counterexamples"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# No typographic quotes or dashes: `--json` must stay two hyphens wherever it is printed
# (help texts, tables, examples), so what a reader copies from the manual runs.
smartquotes = False

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "furo"
html_title = "raceproof"
