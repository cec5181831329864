"""SIGINT and SIGTERM: stop cleanly, report what was covered, leave nothing behind.

Why it exists: Ctrl-C during ``explore`` or ``prove`` printed a raw
``KeyboardInterrupt`` traceback and lost everything covered so far; SIGTERM
killed the process without running any clean-up, so a ZooKeeper JVM and its
folder survived; a second Ctrl-C during clean-up interrupted the clean-up.

``interruptible()`` (the command line wraps every command in it) installs one
handler for both signals:

1. the first signal raises ``Interrupted`` (a ``KeyboardInterrupt``, so every
   library treats it as one) in the main thread; ``finally`` blocks and
   context managers then stop servers and remove folders, and the command
   reports the result so far (``Coverage`` remembers it) and exits
   ``128 + signal``: 130 for SIGINT, 143 for SIGTERM;
2. a second signal is noted on stderr and otherwise ignored, so the clean-up
   finishes;
3. a third forces the exit: every registered child process is killed
   (``raceproof.runs.processes``) and the process exits at once.

A signal is never a pass. Its ``Interrupted`` can be lost: a handler that runs
inside a finalizer (py4j collects every ``JavaObject`` by a weakref callback
that calls the JVM) raises it where Python only prints "Exception ignored in",
and the command runs on. So the state remembers every signal received
(``received()``): a ``--json`` document that does not say ``"interrupted"`` is
not printed after one (``raise_if_received()`` raises it again there), and the
command line exits 128 + signal whatever the command returned. The lost
``Interrupted``'s traceback ("Exception ignored in ...") is kept off stderr: the
command line's one line says the signal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from raceproof.runs import processes
from raceproof.sim import RunOutcome, deviations
from raceproof.sim.errors import Signalled
from raceproof.sim.verdicts import Verdict

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Signalled):
    """The run was stopped by a real signal; ``exit_code`` is 128 + its number.

    Only this handler raises it: a ``KeyboardInterrupt`` that the user's code
    raises itself is no signal (the verdict ``error``, exit 4), and only an
    ``Interrupted`` exits 130 or 143.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code_for(exc: BaseException) -> int:
    """130 for a plain KeyboardInterrupt, 128 + the signal for ``Interrupted``."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


def signal_name(exc: BaseException) -> str:
    return exc.name if isinstance(exc, Interrupted) else "SIGINT"


@dataclass
class _State:
    received: list[int] = field(default_factory=list)
    quieted: dict[str, int] = field(default_factory=dict)  # logger -> its level before


# Libraries whose logs of a connection the interrupt cut (py4j's gateway and its callback
# server, as the JVM goes) are noise once raceproof says "interrupted": silent until the end.
QUIET_AFTER_A_SIGNAL = ("py4j",)


def _quiet(state: _State) -> None:
    for name in QUIET_AFTER_A_SIGNAL:
        logger = logging.getLogger(name)
        state.quieted.setdefault(name, logger.level)
        logger.setLevel(logging.CRITICAL + 1)


# The state of each ``interruptible()`` block now open in the main thread, innermost last.
_OPEN: list[_State] = []


def received() -> tuple[int, ...]:
    """The real signals the innermost open ``interruptible()`` block has received, in order."""
    return tuple(_OPEN[-1].received) if _OPEN else ()


def raise_if_received() -> None:
    """Raise ``Interrupted`` again for a signal received earlier, if there was one.

    For the moment before a result is said: a signal whose first ``Interrupted``
    reached the command was handled on its interrupted path, which does not come
    here; one that did not (swallowed in a finalizer) stops the command now.
    """
    signals = received()
    if signals:
        raise Interrupted(signals[0])


def _handler(state: _State) -> Callable[[int, FrameType | None], None]:
    def handle(signum: int, frame: FrameType | None) -> None:
        state.received.append(signum)
        count = len(state.received)
        if count == 1:
            _quiet(state)
            raise Interrupted(signum)
        if count == 2:
            with contextlib.suppress(Exception):
                sys.stderr.write(
                    f"\nraceproof: {signal.Signals(signum).name} again: still cleaning up "
                    "(send it once more to force the exit)\n"
                )
            return
        processes.kill_all()
        os._exit(128 + signum)

    return handle


def _lost_interrupts_unsaid(
    previous: Callable[[Any], object],
) -> Callable[[Any], object]:
    """``sys.unraisablehook`` that drops an ``Interrupted`` lost in a finalizer (the state
    has its signal, and the command line says it); anything else goes to ``previous``."""

    def hook(unraisable: Any) -> object:
        if isinstance(unraisable.exc_value, Interrupted):
            return None
        return previous(unraisable)

    return hook


def _not_an_interrupt(record: logging.LogRecord) -> bool:
    """Drop a library's log of our interrupt (py4j logs it with its traceback on the root logger)."""
    return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


@contextlib.contextmanager
def interruptible() -> Iterator[_State]:
    """SIGINT and SIGTERM raise ``Interrupted`` once, then let clean-up finish (main thread only).

    Yields the state whose ``received`` lists the real signals that came: a command that
    got one exits 130/143 whatever its unwinding raised after it (a py4j call the signal
    cut, a closed socket), never 70.
    """
    state = _State()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    previous = {signum: signal.getsignal(signum) for signum in HANDLED}
    for signum in HANDLED:
        signal.signal(signum, _handler(state))

    # py4j also logs a call the signal cut on the root logger ("Exception while sending
    # command.", py4j/java_gateway.py), with the network error as its exception: noise too.
    def not_py4j_after_a_signal(record: logging.LogRecord) -> bool:
        return not (state.received and f"{os.sep}py4j{os.sep}" in record.pathname)

    logging.getLogger().addFilter(_not_an_interrupt)
    logging.getLogger().addFilter(not_py4j_after_a_signal)
    _OPEN.append(state)
    unraisable_hook = sys.unraisablehook
    sys.unraisablehook = _lost_interrupts_unsaid(unraisable_hook)
    try:
        yield state
    finally:
        sys.unraisablehook = unraisable_hook
        _OPEN[:] = [other for other in _OPEN if other is not state]  # by identity, not ==
        logging.getLogger().removeFilter(not_py4j_after_a_signal)
        logging.getLogger().removeFilter(_not_an_interrupt)
        for name, level in state.quieted.items():
            logging.getLogger(name).setLevel(level)
        for signum, old in previous.items():
            signal.signal(signum, old)


class Coverage:
    """What a search has covered, for the result printed when it is interrupted.

    Wrap the search's runner (``coverage.runner(run)``) and its progress
    callback (``coverage.progress(callback)``): it counts runs and keeps the
    last progress snapshot and the violating run with the fewest deviations
    seen so far (a violation found before the interrupt is not lost).
    """

    def __init__(self) -> None:
        self.runs = 0
        self.first_violation_at: int | None = None
        self.best: RunOutcome | None = None
        self.snapshot: dict[str, Any] = {}

    def runner(self, run: Callable[[Any], RunOutcome]) -> Callable[[Any], RunOutcome]:
        def counted(source: Any) -> RunOutcome:
            outcome = run(source)
            self.runs += 1
            if outcome.status == Verdict.VIOLATED:
                if self.first_violation_at is None:
                    self.first_violation_at = self.runs
                if self.best is None or deviations(outcome.values) < deviations(self.best.values):
                    self.best = outcome
            return outcome

        return counted

    def progress(
        self, callback: Callable[[dict[str, Any]], None] | None
    ) -> Callable[[dict[str, Any]], None]:
        def remember(info: dict[str, Any]) -> None:
            self.snapshot = dict(info)
            if callback is not None:
                callback(info)

        return remember

    @property
    def examples(self) -> int:
        """Runs of the search itself (those after the first violation are shrinking)."""
        if self.first_violation_at is not None:
            return self.first_violation_at
        return int(self.snapshot.get("examples", self.runs))
