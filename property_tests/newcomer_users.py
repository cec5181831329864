"""The newcomer test's throw-away users and folders: made, removed, and swept when a run was killed.

Why it exists: ``docs/test_newcomer.py`` plays a newcomer as an unprivileged user
(``rpnew…``) with a folder ``/tmp/raceproof-newcomer-…``, and removes both when it ends.
A pytest killed outright (SIGKILL, a CI job cancelled) runs no ``finally``: the user, its
processes (a ``make demo`` under way) and the folder stay. So the folder's name says which
process made it, as that process's pid and start time (``raceproof-newcomer-PID-START-…``;
a pid alone could be the kernel's next process), and the user's HOME lies in that folder.
``sweep_stale`` runs before a newcomer is made: it removes every user and folder of that
shape whose maker is gone, and leaves alone those whose maker still runs (another run on
this machine) and anything not named this way.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from property_tests import processes

USER_PREFIX = "rpnew"
FOLDER_PREFIX = "raceproof-newcomer-"
TMP = Path("/tmp")
# raceproof-newcomer-PID-START-<mkdtemp's letters>
FOLDER = re.compile(rf"{FOLDER_PREFIX}(?P<pid>\d+)-(?P<start>\d+)-[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Made:
    """A user made for a newcomer test and its folder (the HOME is ``base / "home"``)."""

    name: str
    uid: int
    base: Path


def maker_tag(pid: int | None = None) -> str:
    """``PID-START`` of ``pid`` (this process by default), as a folder's name carries it."""
    pid = os.getpid() if pid is None else pid
    start = processes.started(pid)
    assert start is not None, f"process {pid} is gone"
    return f"{pid}-{start}"


def maker_gone(folder: Path) -> bool | None:
    """Whether the process that made ``folder`` is gone; None if the name does not say."""
    shape = FOLDER.fullmatch(folder.name)
    if shape is None:
        return None
    return processes.started(int(shape["pid"])) != int(shape["start"])


def new_folder(tmp: Path = TMP) -> Path:
    """A fresh folder for a newcomer, named after this process (``raceproof-newcomer-PID-START-…``)."""
    return Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{maker_tag()}-", dir=tmp))


def make_user(base: Path) -> Made:
    """An unprivileged user ``rpnew…`` whose HOME is ``base / "home"`` (not created here)."""
    name = f"{USER_PREFIX}{uuid.uuid4().hex[:10]}"
    options = ["--no-create-home", "--home-dir", str(base / "home"), "--shell", "/bin/bash", "-U"]
    made = subprocess.run(
        ["useradd", *options, name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, f"useradd {name}: {made.stderr.strip()}"
    return Made(name=name, uid=pwd.getpwnam(name).pw_uid, base=base)


def kill_processes_of(uid: int) -> None:
    """Every process left running as ``uid`` (a pool a command leaked), by its pid, until none."""
    for _ in range(20):  # one that forks while it is killed is found on the next pass
        found = 0
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
        if not found:
            return
        time.sleep(0.1)  # a pause between passes, not a measurement


def remove_user(name: str, uid: int) -> str | None:
    """The user's processes killed, then the user (and its group) deleted; what userdel said if it failed."""
    kill_processes_of(uid)
    gone = subprocess.run(["userdel", name], capture_output=True, text=True, timeout=60)
    return None if gone.returncode == 0 else f"userdel {name}: {gone.stderr.strip()}"


def sweep_stale(tmp: Path = TMP) -> list[str]:
    """Users and folders of newcomer runs whose maker is gone, removed; what was removed.

    A user counts when its name starts ``rpnew`` and its HOME is ``home`` in a folder of
    ``tmp`` named by its maker; a folder, when its name says its maker. Anything else is
    left alone, and so is everything whose maker still runs.
    """
    removed: list[str] = []
    for entry in pwd.getpwall():
        home = Path(entry.pw_dir)
        if not entry.pw_name.startswith(USER_PREFIX) or home.name != "home":
            continue
        if home.parent.parent != tmp or maker_gone(home.parent) is not True:
            continue
        failed = remove_user(entry.pw_name, entry.pw_uid)
        assert failed is None, failed
        removed.append(entry.pw_name)
    for folder in sorted(tmp.glob(f"{FOLDER_PREFIX}*")):
        if folder.is_dir() and maker_gone(folder) is True:
            shutil.rmtree(folder)
            removed.append(str(folder))
    return removed
