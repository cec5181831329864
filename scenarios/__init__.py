"""The scenario catalogue: the built-in scenarios, the user's, and how both are found.

A scenario binds a model, a workload, checkers, bounds and a race report's own
timeline. ``catalogue`` holds ``Scenario`` and ``register``, ``discovery``
finds the modules that register scenarios (entry points, ``pyproject.toml``,
``--scenarios``), and ``library`` registers the built-in ones. The command
line, the gate and the real-ZooKeeper backend live in ``raceproof.cli``,
``raceproof.gate`` and ``raceproof.zookeeper``.

Modules that lived here before 0.2 (``raceproof.scenarios.cli``,
``.gate``, ``.pytest_plugin``, ``.zookeeper``, ``.runner``, ...) still import,
with a ``DeprecationWarning`` naming the new path; they go in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

from raceproof.scenarios.catalogue import Scenario, UnknownName, all_scenarios, get

__all__ = ["Scenario", "UnknownName", "all_scenarios", "get"]

# Old module path (prefix) -> new one. A prefix maps its submodules too (``.commands.check``).
MOVED = {
    "raceproof.scenarios.cli": "raceproof.cli.main",
    "raceproof.scenarios.commands": "raceproof.cli.commands",
    "raceproof.scenarios.validation": "raceproof.cli.validation",
    "raceproof.scenarios.signals": "raceproof.cli.signals",
    "raceproof.scenarios.runner": "raceproof.runs.runner",
    "raceproof.scenarios.counterexamples": "raceproof.runs.counterexamples",
    "raceproof.scenarios.stories": "raceproof.runs.stories",
    "raceproof.scenarios.processes": "raceproof.runs.processes",
    "raceproof.scenarios.gate": "raceproof.gate.expectations",
    "raceproof.scenarios.pytest_plugin": "raceproof.gate.pytest_plugin",
    "raceproof.scenarios.zookeeper": "raceproof.zookeeper",
    "raceproof.scenarios.bench": "raceproof.measure.bench",
    "raceproof.scenarios.compare": "raceproof.measure.compare",
}


def _new_name(fullname: str) -> str | None:
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _MovedLoader(importlib.abc.Loader):
    """Hands out the module at its new path under the old name, with a deprecation warning."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module: types.ModuleType) -> None:
        """The module is the new one, already executed."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = _new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader(new))


if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedFinder())
