"""Every pair of options the parser knows: refused before any work, naming both, or meant.

Why this module exists: options that contradict each other ran silently (``bench
--growth --proofs``, ``bench --knob`` without ``--growth``, ``bench --check-plan
--campaign``, ``check --all lost-update``, ``prove --state-cache
--check-state-cache``), ``check -j +2`` was read as 2, and a counterexample saying
``"deviations": -1`` replayed. Here every command's options are taken two at a
time: a pair its rules refuse (``CONTRADICTIONS``, ``NEEDS``) must be refused by
the command line itself, exit 2, one line naming both, before any work; every other
pair must parse, each option meaning what its own help says: the help exists, and the
pair sets each option's value exactly as the option alone does (no option of a pair
accepted changes what the other means). The issue's cases are then run as a user types
them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.commands import bench_cmd, campaign, prove_cmd, spark_check
from raceproof.cli.commands.common import UsageError, refuse_contradictions, refuse_orphans
from raceproof.cli.main import build_parser

BIN = Path(sys.executable).parent
# What each command refuses, two options at a time: (contradictions, needs).
RULES = {
    "prove": (prove_cmd.CONTRADICTIONS, ()),
    "bench": (bench_cmd.CONTRADICTIONS, bench_cmd.NEEDS),
    "campaign": (campaign.CONTRADICTIONS, ()),
    "spark-check": (spark_check.CONTRADICTIONS, ()),
}
# A value each option parses (the rest take "1").
SAMPLES = {
    "--set": "rpc_ms=1",
    "--knob": "clients=2,3",
    "--seed-range": "0:2",
    "--choices": "4:0=1",
    "--zk-hosts": "127.0.0.1:2181",
    "--script": "[]",
}
POSITIONAL = {
    "repro": ["lost-update"],
    "explore": ["lost-update"],
    "prove": ["lost-update"],
    "compare": ["lost-update"],
    "replay": ["cx.json"],
    "report": ["cx.json"],
}


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "json")]


def words(action: argparse.Action) -> list[str]:
    name = max(action.option_strings, key=len)
    if action.nargs == 0:
        return [name]
    value = (action.choices and next(iter(action.choices))) or SAMPLES.get(name, "1")
    return [name, str(value)]


def meaning(parser: argparse.ArgumentParser, command: str, action: argparse.Action) -> Any:
    """What ``action`` sets when given alone: the value its help documents."""
    alone = parser.parse_args([*POSITIONAL.get(command, []), *words(action)])
    return getattr(alone, action.dest)


def both_mean_what_they_say(
    parser: argparse.ArgumentParser, command: str, pair: tuple[argparse.Action, ...]
) -> None:
    """A pair accepted together means each option's documented meaning, unchanged by the
    other: each sets what its help says (the help exists) and what it sets alone."""
    args = parser.parse_args([*POSITIONAL.get(command, []), *words(pair[0]), *words(pair[1])])
    for action in pair:
        stated = f"{command} {max(action.option_strings, key=len)}: {action.help}"
        assert action.help, stated
        assert getattr(args, action.dest) == meaning(parser, command, action), stated


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_pair_of_options_is_refused_by_its_rules_or_parses(command: str) -> None:
    parser = commands()[command]
    contradictions, needs = RULES.get(command, ((), ()))
    pairs = 0
    for first, second in itertools.combinations(options(parser), 2):
        assert first.help and second.help, (command, first.dest, second.dest)  # its meaning
        args = parser.parse_args([*POSITIONAL.get(command, []), *words(first), *words(second)])
        pairs += 1
        try:
            refuse_contradictions(args, contradictions)
            refuse_orphans(args, needs)
        except UsageError as exc:
            said = str(exc)
            ruled = {first.dest, second.dest} & {
                d for rule in (*contradictions, *needs) for d in rule[:2]
            }
            assert ruled, (command, said)
            continue
        for dest, other, _why in contradictions:  # not refused: not a contradiction
            assert {dest, other} != {first.dest, second.dest}, (command, dest, other)
        both_mean_what_they_say(parser, command, (first, second))
    assert pairs == len(options(parser)) * (len(options(parser)) - 1) // 2


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["bench", "--growth", "--proofs"], ["--growth", "--proofs"]),
        (["bench", "--check-plan", "--campaign"], ["--check-plan", "--campaign"]),
        (["bench", "--knob", "clients=2,3"], ["--knob", "--growth"]),
        (["bench", "--growth", "--knob", "nope=1,2"], ["nope", "--knob"]),
        (["spark-check", "--script", "[]", "--seed", "0"], ["--seed", "--script"]),
        (["check", "--all", "lost-update"], ["--all", "lost-update"]),
        (["prove", "lost-update", "--state-cache", "--check-state-cache"], ["--state-cache"]),
        (["check", "-j", "+2"], ["-j", "+2"]),
    ],
)
def test_the_issues_contradictions_are_refused_before_any_work(
    tmp_path: Path, argv: list[str], named: list[str]
) -> None:
    done = subprocess.run(
        [str(BIN / "raceproof"), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(word in lines[0] for word in named), done.stderr
    assert "--set" not in lines[0] or "--set" in argv, done.stderr  # the option the user typed
    assert not list(tmp_path.iterdir())  # nothing written, no work started


def test_a_counterexample_whose_deviations_lie_is_refused(tmp_path: Path) -> None:
    cx = tmp_path / "cx"
    made = [str(BIN / "raceproof"), "repro", "lost-update", "--variant", "buggy"]
    saved = subprocess.run([*made, "--choices", "4:0=1", "--out", str(cx)], capture_output=True)
    assert saved.returncode == 1
    (path,) = cx.glob("*.json")
    replayed = subprocess.run([str(BIN / "raceproof"), "replay", str(path)], capture_output=True)
    assert replayed.returncode == 1  # the file as written replays
    data = json.loads(path.read_text())
    data["deviations"] = -1
    path.write_text(json.dumps(data))
    done = subprocess.run(
        [str(BIN / "raceproof"), "replay", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "'deviations' is -1" in done.stderr, done.stderr
