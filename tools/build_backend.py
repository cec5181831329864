"""raceproof's build backend: setuptools', without its "Editable installation" notice.

Why this module exists: ``pip install -e .`` (``make demo``, ``make test``, the README's
install line) printed 10 lines of a setuptools ``InformationOnly`` warning, relayed by
pip 26 as a ``BuildBackendWarning``: "Please be careful with folders in your working
directory with the same name as your package". setuptools gives it to every editable
install of a mapped layout (``package-dir`` in pyproject.toml maps ``raceproof.sim`` to
``sim/`` and so on), which it serves with an import finder; it says nothing about
raceproof's configuration and cannot be configured away (setuptools' own name for the
category: information only). Everything else is setuptools' ``build_meta`` unchanged,
and every other warning, from setuptools or elsewhere, still reaches pip.
pyproject.toml names this module as the backend (``backend-path = ["tools"]``).
"""

from __future__ import annotations

import warnings
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook pip may call, unchanged)

# The notice's words in setuptools 65 to 84 (its summary line came later; this line did not change).
NOTICE = r"(?s).*folders in your working directory with the same"


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """setuptools' editable wheel, its information-only notice about the layout left out."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NOTICE, category=UserWarning)
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
