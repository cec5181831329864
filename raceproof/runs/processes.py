"""Child processes that cannot outlive raceproof: a process group, a parent-death signal, a registry.

Why it exists: a ZooKeeper JVM started for ``repro --backend zookeeper`` used
to survive a SIGTERM of the command (re-parented to pid 1, its temporary
folder left behind). Every child raceproof starts itself goes through
``spawn``:

* it runs in its own session (process group), so a terminal's Ctrl-C reaches
  only raceproof, which then stops its children in order, and ``stop`` can
  signal the child's whole group (a JVM's own children included);
* on Linux it gets ``PR_SET_PDEATHSIG`` (``prctl`` through ctypes): if the
  raceproof process dies without cleaning up — SIGKILL, a crash — the kernel
  sends the child SIGKILL. The signal fires when the *thread* that forked the
  child exits, so ``spawn`` from the main thread (or a thread that outlives
  the child);
* it is registered until stopped; ``stop_all`` (called at interpreter exit
  and on a forced exit after repeated signals) stops what is still running.

Worker processes started through ``multiprocessing`` (e.g. ``prove -j N``)
pass ``die_with_parent`` as their pool's ``initializer`` to get the same
parent-death signal. Spark's JVM is started by PySpark, which keeps a pipe
to its stdin: the JVM exits when that pipe closes, i.e. when we exit.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

PR_SET_PDEATHSIG = 1

_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LOCK = threading.Lock()


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name, use_errno=True) if name else None


def die_with_parent(parent_pid: int | None = None, signum: int = signal.SIGKILL) -> None:
    """In a child: ask the kernel for ``signum`` when the parent dies (Linux; no-op elsewhere).

    ``parent_pid`` closes the race where the parent died before the request:
    the child then exits at once.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def _preexec(parent_pid: int) -> Callable[[], None]:
    def setup() -> None:
        die_with_parent(parent_pid)

    return setup


def dying_with_parent(
    popen: Callable[..., Any], signum: int = signal.SIGKILL
) -> Callable[..., Any]:
    """``popen`` (a ``subprocess.Popen``-like callable) whose children get the parent-death signal.

    For children a library starts: PySpark launches its JVM itself, so the
    Spark session wraps PySpark's ``Popen`` with this; the library's own
    ``preexec_fn`` (PySpark's ignores SIGINT) still runs first.
    """

    def start(*args: Any, **kwargs: Any) -> Any:
        theirs = kwargs.get("preexec_fn")
        parent = os.getpid()

        def setup() -> None:
            if theirs is not None:
                theirs()
            die_with_parent(parent, signum)

        kwargs["preexec_fn"] = setup
        return popen(*args, **kwargs)

    return start


def spawn(argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv)`` in a new session, killed if we die, registered until stopped."""
    process: subprocess.Popen[bytes] = subprocess.Popen(
        list(argv),
        start_new_session=True,
        preexec_fn=_preexec(os.getpid()),
        **popen_kwargs,
    )
    with _LOCK:
        _LIVE[process.pid] = process
    return process


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def stop(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> int | None:
    """SIGTERM to the child's group, SIGKILL after ``timeout_s``; its exit code (None if unknown)."""
    try:
        if process.poll() is None:
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=timeout_s)
        else:
            # The leader is gone; anything it left in its group goes too.
            _signal_group(process, signal.SIGKILL)
    finally:
        with _LOCK:
            _LIVE.pop(process.pid, None)
    return process.returncode


def live() -> list[int]:
    """Pids of the children started through ``spawn`` and not stopped yet."""
    with _LOCK:
        return sorted(_LIVE)


def stop_all(timeout_s: float = 5.0) -> None:
    """Stop every registered child (at exit, and on a forced exit)."""
    with _LOCK:
        children = list(_LIVE.values())
    for process in children:
        with contextlib.suppress(Exception):
            stop(process, timeout_s)


def kill_all() -> None:
    """SIGKILL every registered child's group at once, without waiting (a forced exit)."""
    with _LOCK:
        children = list(_LIVE.values())
    for process in children:
        _signal_group(process, signal.SIGKILL)


atexit.register(stop_all)
