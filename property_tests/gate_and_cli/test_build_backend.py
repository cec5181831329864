"""The install prints no packaging warning: raceproof's build backend leaves out one notice.

Why this module exists: ``pip install -e .`` (``make demo``'s and ``make test``'s install,
the README's) printed setuptools' "Editable installation" notice, 10 lines relayed by
pip 26 as a ``BuildBackendWarning``, which setuptools gives every editable install of a
mapped layout. ``tools/build_backend.py`` wraps setuptools' backend and leaves out that
notice only. Here: the wrapper with the notice's words from setuptools 84 and 65 and
another warning planted, recorded as pip's hook runner records them: only the other one
reaches pip. (A real isolated build, pip 26.3 and setuptools 84, took 30 s here: too
long for the suite; the suite's setuptools, 65, cannot read the project's PEP 639
license, so it cannot build the project in-process.)
"""

from __future__ import annotations

import importlib.util
import tomllib
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# setuptools 84's text (``InformationOnly.emit``), then 65's (``warnings.warn(msg, ...)``).
NOTICE_84 = (
    "Editable installation.\n!!\n\n        " + "*" * 80 + "\n        Please be careful with "
    "folders in your working directory with the same\n        name as your package as they "
    "may take precedence during imports.\n        " + "*" * 80 + "\n\n!!"
)
NOTICE_65 = (
    "\n\n        Please be careful with folders in your working directory with the same\n"
    "        name as your package as they may take precedence during imports.\n        "
)


class InformationOnly(UserWarning):
    """setuptools' category for the notice (``setuptools.warnings.InformationOnly``)."""


def backend() -> ModuleType:
    """``tools/build_backend.py``, found as pyproject.toml's ``[build-system]`` names it."""
    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    (folder,) = system["backend-path"]
    path = ROOT / folder / f"{system['build-backend']}.py"
    spec = importlib.util.spec_from_file_location("raceproof_build_backend", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded(hook: Callable[[], Any]) -> list[str]:
    """The user warnings ``hook`` gives, as pip's in-process hook runner collects them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hook()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_the_backend_leaves_out_the_layout_notice_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = backend()

    def planted(*_: object) -> str:
        warnings.warn(NOTICE_84, InformationOnly, stacklevel=1)
        warnings.warn(NOTICE_65, InformationOnly, stacklevel=1)
        warnings.warn("a real problem with the package data", UserWarning, stacklevel=1)
        return "raceproof-0.1.0-0.editable-py3-none-any.whl"

    monkeypatch.setattr(module._setuptools, "build_editable", planted)
    assert recorded(planted) == [NOTICE_84, NOTICE_65, "a real problem with the package data"]
    assert recorded(lambda: module.build_editable("dist")) == [
        "a real problem with the package data"
    ]
