"""The ``raceproof`` command line: ``main`` (exit codes and errors) and one module per command.

``raceproof.cli.main`` assembles the commands of ``raceproof.cli.commands``
and maps every failure to its exit code; ``validation`` holds the option types
and output checks every command uses, ``signals`` the SIGINT/SIGTERM handling.
"""

from raceproof.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
