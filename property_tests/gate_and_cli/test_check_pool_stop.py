"""``check -j``'s pool stop leaves no pool thread running when it returns.

Why it exists: ``_stop_pool`` used ``shutdown(wait=False)``, so the pool's
manager thread was still closing its wake-up pipe when the interpreter exited;
the executor's exit hook wrote to that pipe unlocked and, one interrupt in
20-80, stderr got "Exception ignored ... OSError: [Errno 9] Bad file
descriptor". The race itself sits in interpreter exit (once per process, timing
dependent), so this pins the invariant that excludes it: once ``_stop_pool``
returns, every thread the pool started has ended (the pipe is closed before the
exit hook can run), at every moment of the pool's life, and the pool is shut.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

from raceproof.cli.commands import check


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


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
