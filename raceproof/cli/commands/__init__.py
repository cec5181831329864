"""The ``raceproof`` commands, one module each; ``COMMANDS`` is the order ``--help`` lists them in."""

from raceproof.cli.commands import (
    bench_cmd,
    campaign,
    check,
    compare_cmd,
    explore_cmd,
    listing,
    prove_cmd,
    replay,
    report,
    repro,
    spark_check,
)

COMMANDS = (
    listing,
    repro,
    explore_cmd,
    prove_cmd,
    replay,
    report,
    check,
    compare_cmd,
    spark_check,
    campaign,
    bench_cmd,
)

__all__ = ["COMMANDS"]
