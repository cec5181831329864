"""raceproof: deterministic simulation of the races that lose data, for your own systems.

``import raceproof`` is the authoring API: the simulated World and its
primitives, faults, History and checkers, the Scenario a model is wrapped in
and ``register`` to make it known to the command line, the pytest plugin and
the gate, and ``explore`` / ``prove`` to run it from code. The subpackages
``raceproof.sim`` (the kernel), ``raceproof.models``, ``raceproof.scenarios``
(the catalogue), ``raceproof.reports`` and ``raceproof.spark_integration`` are
folders at the top of the repository, mapped by ``pyproject.toml``; this
folder holds the rest: ``cli`` (the commands), ``gate`` (the gate and the
pytest plugin), ``runs`` (results and counterexample files), ``measure``
(bench, compare) and ``zookeeper`` (the real backend).
``docs/tutorial/writing-a-scenario.md`` is the guide.
"""

from raceproof.scenarios.catalogue import RegistrationError, Scenario, register
from raceproof.scenarios.discovery import ScenarioLoadError
from raceproof.sim import *  # noqa: F403  (the kernel's public names are the API)
from raceproof.sim import __all__ as _sim_all

__all__ = ["RegistrationError", "Scenario", "ScenarioLoadError", "register", *_sim_all]


def __getattr__(name: str) -> object:
    """``Verdict``, the checker result's old name, still imports (with a DeprecationWarning)."""
    if name == "Verdict":
        from raceproof import sim

        return sim.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
