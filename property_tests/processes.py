"""The machine's process table, read from /proc, for tests that must see what a command left behind.

Signal and clean-up tests ask the same questions of the kernel: which processes
descend from this one, which are in its group, which still name a folder, is
this one still alive (a zombie is not). One reader answers them all, so a
change in how ``/proc/PID/stat`` is parsed (the command name may hold spaces and
parentheses: fields are read after the last ``)``) is made once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    """One line of the process table: its state letter, parent and process group."""

    pid: int
    state: str
    parent: int
    group: int


def table() -> list[Process]:
    """Every process now, zombies included (a process may exit while it is read)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found.append(
            Process(
                pid=int(entry.name), state=fields[0], parent=int(fields[1]), group=int(fields[2])
            )
        )
    return found


def descendants(pid: int) -> set[int]:
    """``pid``'s children, their children and so on, as the table stands now."""
    children: dict[int, list[int]] = {}
    for process in table():
        children.setdefault(process.parent, []).append(process.pid)
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def live_children(pid: int) -> set[int]:
    """``pid``'s direct children that are not zombies."""
    return {process.pid for process in table() if process.parent == pid and process.state != "Z"}


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    return [process.pid for process in table() if process.group == pgid and process.state != "Z"]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has finished: only its exit status is left)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None if it is gone or a zombie.

    A pid and its start time name one process: a pid the kernel gave again to another
    process has another start time.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])  # field 22 of proc(5); fields[0] is 3


def naming(text: str) -> list[int]:
    """Processes whose command line contains ``text`` (a temporary folder, say)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout_s`` (a hang bound)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
