"""What a newcomer run killed outright leaves behind is swept by the next run, and nothing else is.

Why it exists: ``test_newcomer.py`` makes a user and a folder and removes them in a
``finally``, which a SIGKILL skips. ``newcomer_users.sweep_stale`` (run by its fixture
first) removes users and folders whose maker is gone. These tests check it both ways:
a killed maker's user, its process and its folder go; a live maker's stay (another run on
this machine); a folder whose name does not say its maker, or names a pid the kernel gave
again (another start time), is judged by that name alone. They need root to make users
(CI is root) and fail, never skip, without it.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from property_tests import newcomer_users, processes
from property_tests.doc_examples import ROOT

# A maker killed outright: it makes a folder and a user, leaves a process of that user
# running in a session of its own (as `make demo` would be), says who, and waits.
KILLED_MAKER = """
import subprocess, sys
from property_tests import newcomer_users
base = newcomer_users.new_folder()
made = newcomer_users.make_user(base)
(base / "home").mkdir()
sleeper = subprocess.Popen(["runuser", "-u", made.name, "--", "sleep", "600"],
                           start_new_session=True)
print(made.name, made.uid, base, flush=True)
sys.stdin.read()
"""


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def running_as(uid: int) -> list[int]:
    """Live (not zombie) processes whose owner is ``uid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except FileNotFoundError:
            continue
    return [pid for pid in found if processes.alive(pid)]


def test_a_killed_runs_user_and_folder_are_swept_and_a_live_runs_are_kept() -> None:
    assert os.geteuid() == 0, "making users needs root (CI runs the suite as root)"
    maker = subprocess.Popen(
        [sys.executable, "-c", KILLED_MAKER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert maker.stdout is not None
    name, uid_text, base_text = maker.stdout.readline().split()
    stale_base, uid = Path(base_text), int(uid_text)
    live_base = newcomer_users.new_folder()
    live = newcomer_users.make_user(live_base)
    try:
        first = newcomer_users.sweep_stale()  # its maker runs: nothing of it is touched
        assert name not in first and str(stale_base) not in first
        assert user_exists(name) and stale_base.is_dir()
        maker.send_signal(signal.SIGKILL)  # no finally, no clean-up: as a killed pytest
        maker.wait(timeout=60)
        assert user_exists(name) and stale_base.is_dir()
        processes.wait_for(lambda: running_as(uid) != [], timeout_s=60, what="the user's sleep")
        removed = newcomer_users.sweep_stale()
        assert name in removed and str(stale_base) in removed
        assert not user_exists(name) and not stale_base.exists()
        assert running_as(uid) == []  # userdel refuses a user with processes, too
        assert user_exists(live.name) and live_base.is_dir()  # its maker (this test) runs
    finally:
        maker.kill()
        maker.wait(timeout=60)
        failed = newcomer_users.remove_user(live.name, live.uid)
        newcomer_users.sweep_stale()
    assert failed is None, failed
    live_base.rmdir()


def test_a_folder_is_judged_by_the_pid_and_start_time_in_its_name(tmp_path: Path) -> None:
    exited = subprocess.Popen(["sleep", "600"])
    dead_tag = newcomer_users.maker_tag(exited.pid)
    exited.kill()
    exited.wait(timeout=60)
    pid, start = newcomer_users.maker_tag().split("-")
    folders = {
        "live": f"{newcomer_users.FOLDER_PREFIX}{pid}-{start}-abc123",
        "dead": f"{newcomer_users.FOLDER_PREFIX}{dead_tag}-abc123",
        "pid given again": f"{newcomer_users.FOLDER_PREFIX}{pid}-{int(start) + 1}-abc123",
        "says no maker": f"{newcomer_users.FOLDER_PREFIX}rbn0pe5t",  # as they were named before
        "another tool's": "raceproof-zk-123-456-abc",
    }
    for folder in folders.values():
        (tmp_path / folder).mkdir()
    removed = newcomer_users.sweep_stale(tmp_path)
    assert sorted(removed) == sorted(
        str(tmp_path / folders[k]) for k in ("dead", "pid given again")
    )
    kept = {k for k, folder in folders.items() if (tmp_path / folder).is_dir()}
    assert kept == {"live", "says no maker", "another tool's"}
    assert newcomer_users.maker_gone(tmp_path / folders["says no maker"]) is None


@pytest.mark.parametrize("who", ["this process", "init"])  # names: xdist's workers must agree
def test_a_maker_that_runs_is_never_gone(who: str) -> None:
    tag = newcomer_users.maker_tag(os.getpid() if who == "this process" else 1)
    assert newcomer_users.maker_gone(Path(f"/tmp/{newcomer_users.FOLDER_PREFIX}{tag}-x1")) is False
