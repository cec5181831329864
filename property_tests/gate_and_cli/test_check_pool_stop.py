"""``check -j``'s pool stop leaves no pool thread running when it returns.

Why it exists: ``_stop_pool`` used ``shutdown(wait=False)``, so the pool's
manager thread was still closing its wake-up pipe when the interpreter exited;
the executor's exit hook wrote to that pipe unlocked and, one interrupt in
20-80, stderr got "Exception ignored ... OSError: [Errno 9] Bad file
descriptor". The race itself sits in interpreter exit (once per process, timing
dependent), so this pins the invariant that excludes it: once ``_stop_pool``
returns, every thread the pool started has ended (the pipe is closed before the
exit hook can run), at every moment of the pool's life, and the pool is shut.

And a worker killed in the middle of sending its result (CI saw ``check -j 2 --json``
hang after a SIGTERM so): the manager thread had read the message's length and waited
for bytes no one would write, and the stop waited for it. The worker here writes half a
message itself and sleeps, the state that kill leaves, so the moment is not left to luck.
"""

from __future__ import annotations

import multiprocessing
import os
import struct
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

from raceproof.cli.commands import check


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


_POOL: ProcessPoolExecutor | None = None  # the pool a forked worker writes half a result to


def _half_sent() -> None:
    """In a worker: a result message's length (20,922 bytes) and 100 of them, then nothing."""
    assert _POOL is not None
    os.write(_POOL._result_queue._writer.fileno(), struct.pack("!i", 20_922) + b"x" * 100)  # type: ignore[attr-defined]
    time.sleep(120)


def _reading_half_a_result() -> ProcessPoolExecutor:
    """A pool whose manager thread waits for the rest of a message a worker began."""
    global _POOL
    _POOL = pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
    pool.submit(_half_sent)
    manager = pool._executor_manager_thread  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while "_recv" not in _functions(manager):
        assert time.monotonic() < deadline, "the manager thread never read the half message"
        time.sleep(0.01)
    return pool


def _functions(thread: threading.Thread) -> set[str]:
    frame = sys._current_frames().get(thread.ident or -1)
    names = set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return names


def test_stop_pool_returns_when_a_worker_died_sending_its_result() -> None:
    before = set(threading.enumerate())
    pool = _reading_half_a_result()
    stopper = threading.Thread(target=check._stop_pool, args=(pool,), daemon=True)
    stopper.start()
    stopper.join(60.0)  # a hang bound: the stop takes well under a second
    assert not stopper.is_alive(), "the stop hung on the half-sent result"
    assert _pool_threads(before) == []


def test_without_closing_the_pipe_the_stop_hangs_on_a_half_sent_result() -> None:
    """The other way: kill and shut down as before the fix, and the manager thread stays
    in ``recv``; closing this process's write end (the fix) lets it end."""
    before = set(threading.enumerate())
    pool = _reading_half_a_result()
    for worker in multiprocessing.active_children():
        worker.kill()
        worker.join(30.0)
    stopper = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, daemon=True)
    stopper.start()
    stopper.join(2.0)
    assert stopper.is_alive() and "_recv" in _functions(pool._executor_manager_thread)  # type: ignore[attr-defined]
    pool._result_queue._writer.close()  # type: ignore[attr-defined]
    stopper.join(60.0)
    assert not stopper.is_alive()
    assert _pool_threads(before) == []


def _pool_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.is_alive()]


@pytest.mark.parametrize("moment", ["before-submit", "just-submitted", "running", "one-done"])
def test_stop_pool_joins_the_pool_threads_at_every_moment(moment: str) -> None:
    for _ in range(5):
        before = set(threading.enumerate())
        pool = ProcessPoolExecutor(2)
        futures = []
        if moment != "before-submit":
            futures = [pool.submit(_nap, s) for s in (0.0, 30.0, 30.0, 30.0)]
        if moment == "running":
            while not futures[1].running():
                time.sleep(0.001)
        if moment == "one-done":
            futures[0].result(timeout=30)
        check._stop_pool(pool)
        assert _pool_threads(before) == [], moment
        assert all(f.done() for f in futures), moment
        with pytest.raises(RuntimeError):
            pool.submit(_nap, 0.0)


def test_without_the_wait_a_pool_thread_outlives_the_stop() -> None:
    """The other way: the old order (kill, shutdown without waiting) returns with the
    manager thread still alive, the state in which the exit hook raced it."""
    before = set(threading.enumerate())
    pool = ProcessPoolExecutor(2)
    futures = [pool.submit(_nap, s) for s in (30.0, 30.0, 30.0)]
    while not futures[0].running():
        time.sleep(0.001)
    pool.shutdown(wait=False, cancel_futures=True)
    left = _pool_threads(before)
    assert left != []
    for worker in multiprocessing.active_children():  # leave nothing behind
        worker.kill()
    for thread in left:
        thread.join(30.0)
    assert _pool_threads(before) == []
