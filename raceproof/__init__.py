"""raceproof: deterministic simulation of the races that lose data, for your own systems.

``import raceproof`` is the authoring API: the simulated World and its
primitives, faults, History and checkers, the Scenario a model is wrapped in
and ``register`` to make it known to the command line, the pytest plugin and
the gate, and ``explore`` / ``prove`` to run it from code. The subpackages
(``raceproof.sim``, ``raceproof.models``, ``raceproof.scenarios``,
``raceproof.reports``, ``raceproof.spark_integration``) are the folders of the
repository, mapped by ``pyproject.toml``. ``docs/writing-a-scenario.md`` is the
guide.
"""

from raceproof.scenarios.catalogue import RegistrationError, Scenario, register
from raceproof.scenarios.discovery import ScenarioLoadError
from raceproof.sim import *  # noqa: F403  (the kernel's public names are the API)
from raceproof.sim import __all__ as _sim_all

__all__ = ["RegistrationError", "Scenario", "ScenarioLoadError", "register", *_sim_all]
