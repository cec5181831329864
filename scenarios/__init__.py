"""The scenario catalogue and the ``raceproof`` command line.

A scenario binds a model, a workload, checkers, bounds and a race report's own
timeline; ``scenarios.cli`` exposes them as commands.
"""

from raceproof.scenarios.catalogue import Scenario, UnknownName, all_scenarios, get

__all__ = ["Scenario", "UnknownName", "all_scenarios", "get"]
