"""Validation at the edge: every value a user gives is checked here, before any work starts.

Why one module: a bad value used to travel into the model and come back as an
``AssertionError`` traceback, a ``model-crash`` "violation" (exit 1, the code
for a found race) or a counterexample file written for it. Every command-line
value and every field read from a file now goes through the checks below, so
bad input ends in one line naming the field, the value and what is allowed,
exit 2, and nothing written. Assertions inside the kernel and the models stay
for what only a bug can break.

**Configurations** (any scenario's dataclass, the user's own included) are
checked by ``raceproof.sim.configs`` from their own declarations, never from
rules kept in the CLI; this module re-exports its names.

**Options** of the command line use the argparse types below
(``int_in``, ``positive_seconds``, ``non_empty``, ``zk_hosts``); **outputs**
(``--out``, ``--history-out``) are created or checked writable by
``prepare_output_dir`` / ``prepare_output_file`` before the search runs.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raceproof.sim.configs import (
    BadInput,
    apply_overrides,
    config_from_json,
    limits,
)
from raceproof.sim.explore import MAX_EXAMPLES as _SEARCH_CAP
from raceproof.sim.user_files import (
    NUMBER_HOOKS,
    NumberRefused,
    ascii_float,
    ascii_int,
    check_path_length,
    shown,
    user_path,
)

__all__ = [
    "MAX_EXAMPLES",
    "BadInput",
    "apply_overrides",
    "config_from_json",
    "int_in",
    "jobs_option",
    "limits",
    "non_empty",
    "parse_overrides",
    "positive_seconds",
    "prepare_output_dir",
    "prepare_output_file",
    "zk_hosts",
]


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value is read as JSON when it parses, else as a string."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadInput(f"--set takes KEY=VALUE, got {item!r}")
        try:
            value = json.loads(text, **NUMBER_HOOKS)
        except (json.JSONDecodeError, RecursionError):
            value = text
        except NumberRefused as exc:
            raise BadInput(f"--set {key}: {exc}") from None
        overrides[key] = value
    return overrides


# -- command-line option types (argparse ``type=``) -----------------------------------
MAX_EXAMPLES = _SEARCH_CAP  # examples of one search: every --examples, the fixture's too
JOBS_PER_CORE = 4  # -j N: worker processes at most this many times the machine's cores


def jobs_option() -> Callable[[str], int]:
    """``-j N``: 1 to ``JOBS_PER_CORE`` times the cores (thousands of forked workers help nobody)."""
    return int_in(1, JOBS_PER_CORE * (os.cpu_count() or 1))


def int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer option in ``[low, high]``."""

    def parse(text: str) -> int:
        if text[:1] == "+":  # `-j +2`: a count has no sign
            raise argparse.ArgumentTypeError(f"must be an integer without a sign, got {text!r}")
        try:
            value = ascii_int(text, "integer")
        except BadInput:
            raise argparse.ArgumentTypeError(
                f"must be an integer in ASCII digits, got {shown(repr(text))}"
            ) from None
        if value < low or (high is not None and value > high):
            span = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {span}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_seconds(text: str) -> float:
    """A wall budget: a finite number of seconds above 0."""
    try:
        value = ascii_float(text, "seconds")
    except BadInput:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds above 0, got {shown(repr(text))}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds above 0, got {text!r}"
        )
    return value


def non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def zk_hosts(text: str) -> str:
    """``HOST:PORT[,HOST:PORT...]`` with ports in 1..65535 (a chroot suffix is not allowed)."""
    if not text or "/" in text:
        raise argparse.ArgumentTypeError(f"must be HOST:PORT[,HOST:PORT...], got {text!r}")
    for part in text.split(","):
        host, sep, port = part.strip().rpartition(":")
        valid = port.isascii() and port.isdigit() and len(port) <= 5
        if not sep or not host or not valid or not 1 <= int(port) <= 65535:
            raise argparse.ArgumentTypeError(
                f"must be HOST:PORT[,HOST:PORT...] with a port in 1..65535, got {part!r}"
            )
    return text


# -- outputs ------------------------------------------------------------------------------
def _probe_writable(folder: Path, option: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".raceproof-probe-", dir=folder)
    except OSError as exc:
        raise BadInput(f"{option}: cannot write in {shown(folder)} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def _existing_ancestor(path: Path, option: str) -> Path:
    for parent in [path, *path.parents]:
        if os.path.lexists(parent):
            if not parent.exists():  # a link to nowhere, or a loop of links
                raise BadInput(f"{option}: {shown(parent)} is a symbolic link that leads nowhere")
            if not parent.is_dir():
                raise BadInput(f"{option}: {shown(parent)} is a file, not a folder")
            return parent
    return Path(".")


def prepare_output_dir(text: str, option: str = "--out") -> Path:
    """Check that the folder ``text`` exists and is writable, or can be created; create nothing.

    A folder that does not exist yet is checked through its nearest existing
    ancestor, so a search that finds nothing leaves nothing behind. A path the
    system cannot hold (too long), a link loop, a file on the way: one line.
    """
    if not text.strip():
        raise BadInput(f"{option}: must name a folder")
    path = Path(text)
    check_path_length(path, option)
    with user_path(option, path):
        if path.exists() and not path.is_dir():
            raise BadInput(f"{option}: {shown(path)} exists and is not a folder")
        _probe_writable(_existing_ancestor(path, option), option)
    return path


def prepare_output_file(text: str, option: str) -> Path:
    """Check that the file ``text`` can be written (its folder writable or creatable)."""
    if not text.strip():
        raise BadInput(f"{option}: must name a file")
    path = Path(text)
    check_path_length(path, option)
    with user_path(option, path):
        if path.is_dir() or text.endswith(os.sep):
            raise BadInput(f"{option}: {shown(path)} is a folder, not a file")
        if os.path.lexists(path) and not path.exists():
            raise BadInput(f"{option}: {shown(path)} is a symbolic link that leads nowhere")
        if path.exists() and not path.is_file():
            raise BadInput(f"{option}: {shown(path)} is not a regular file")
        _probe_writable(_existing_ancestor(path.parent, option), option)
    return path
