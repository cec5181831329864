"""The ``raceproof`` command line: assembles the commands and maps every failure to its exit code.

Exit codes are the contract: 0 holds / nothing found, 1 violation found,
2 bad usage or bad input (one line naming what is wrong, nothing written),
3 inconclusive or not reached (a bound was hit before a proof completed, or a
declared race-window probe was never reached), 4 the model, workload or
checker raised (verdict ``error``, with the user's own frames), 70 a bug in
raceproof itself (any exception of raceproof's own, ``BaseException``s such as
a stray Hypothesis ``StopTest`` included) (the message says so, with the version and the command),
130 / 143 stopped by a real SIGINT / SIGTERM (clean-up done, the result so far
printed), even a command that finished its work after the signal (its
``Interrupted`` lost in a finalizer): one line on stderr, no second ``--json``
document; a ``KeyboardInterrupt`` or ``sys.exit()`` of the user's code is theirs
(``error``, exit 4; bad input, exit 2, while their project loads), never 130 or
an exit code of its choosing. No traceback reaches a user except for a bug in raceproof. Every
command takes ``--json`` for one machine-readable object on stdout; human
output and progress go to stderr when it is a terminal. Each command lives in
its own module under ``raceproof.cli.commands``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import shlex
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from raceproof.cli import signals
from raceproof.cli.commands import COMMANDS
from raceproof.cli.commands.common import (
    UsageError,
    documents_printed,
    print_json,
    require_extras,
)
from raceproof.cli.validation import BadInput
from raceproof.runs import runner
from raceproof.scenarios import discovery
from raceproof.scenarios.catalogue import UnknownName
from raceproof.sim import CounterexampleError, ReplayMisaligned, user_files
from raceproof.sim.errors import Nondeterministic, did_you_mean, said
from raceproof.sim.verdicts import Verdict

__all__ = ["UsageError", "build_parser", "main"]

# What the file system says about a path it was given (not a socket's or a process's error).
PATH_ERRNOS = frozenset(
    {
        errno.ENAMETOOLONG,
        errno.EACCES,
        errno.EPERM,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ELOOP,
        errno.EROFS,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ENOENT,
        errno.EEXIST,
    }
)
BAD_INPUT = (UsageError, UnknownName, BadInput, CounterexampleError, discovery.ScenarioLoadError)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (and a JSON error object when ``--json`` was given)."""

    def error(self, message: str) -> NoReturn:
        _report_error(
            f"{message}{self._near_miss(message)} (see `{self._help_for()} --help`)", prog=self.prog
        )
        self.exit(runner.EXIT_USAGE)

    def _near_miss(self, message: str) -> str:
        """`` (did you mean '--examples'?)`` for an unrecognized option close to one it takes,
        or a choice close to one of the choices."""
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice is not None:
            return did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
        if not message.startswith("unrecognized arguments:"):
            return ""
        command = self._help_for().removeprefix("raceproof").strip()
        taken = _COMMANDS.get(command, self)._option_string_actions
        for word in message.removeprefix("unrecognized arguments:").split():
            if word.startswith("--") and (near := did_you_mean(word.split("=")[0], taken)):
                return near
        return ""

    def _help_for(self) -> str:
        """The command whose help says more: ``raceproof prove``, not ``raceproof``, for a
        word the command does not take (the top parser reports those)."""
        if self.prog != "raceproof":
            return self.prog
        named = [word for word in _WORDS if word in _COMMANDS]
        return f"raceproof {named[0]}" if named else self.prog


_JSON_WANTED = [False]
_WORDS: list[str] = []  # the command line's words (``Parser._help_for``)
_COMMANDS: dict[str, argparse.ArgumentParser] = {}  # each command's parser, by name


def _report_error(
    message: str, prog: str = "raceproof", *, document: bool = True, **extra: object
) -> None:
    """The one line on stderr, and with ``--json`` (unless ``document`` is false) its object.

    After a real signal the object says ``"interrupted"`` whatever the error: the
    exit code will be 130 / 143.
    """
    if _JSON_WANTED[0] and document:
        received = signals.received()
        if received and "interrupted" not in extra:
            extra["interrupted"] = signals.Interrupted(received[0]).name
        print_json({"error": message, "verdict": None, **extra})
    print(f"{prog}: error: {message}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="raceproof",
        description="Deterministic simulation of data-losing races: find, shrink, replay, prove.",
        epilog="exit codes: 0 holds / nothing found, 1 violation, 2 bad usage or input, "
        "3 inconclusive or race window not reached, 4 the model raised (verdict error), "
        "70 a bug in raceproof, 130/143 interrupted (SIGINT/SIGTERM)",
    )
    parser.add_argument("--version", action="version", version=f"raceproof {runner.tool_version()}")
    parser.add_argument(
        "--scenarios",
        dest="top_scenarios",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="also load the scenarios this module or file registers (repeatable; "
        "every command takes it too)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add(commands)
    _COMMANDS.update(commands.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    _JSON_WANTED[0] = "--json" in words
    _WORDS[:] = words
    printed_before = documents_printed()
    stdout = _Stdout(sys.stdout)
    sys.stdout = stdout
    try:
        with signals.interruptible() as signalled:
            code = _run(words, signalled.received)
            code = _a_signal_is_never_a_pass(code, signalled.received, printed_before)
        stdout.flush()
    finally:
        sys.stdout = stdout.stream
    if stdout.refused is not None:
        stdout.discard_the_rest()
        runner.warn_unsaved(
            f"the output above is incomplete: stdout refused a write ({stdout.refused.strerror})"
        )
    return code


# What a file system says when stdout is a file on it and it is full or over a size limit.
FULL_ERRNOS = frozenset({errno.EFBIG, errno.ENOSPC, errno.EDQUOT})


class _Stdout:
    """stdout, where a write the file system refuses (full, or over a size limit) is kept, not raised.

    Why: ``raceproof explore > log.txt`` on a full disk (or under ``ulimit -f``) raised
    ``OSError`` out of a ``print``, and the command said "internal error: this is a bug in
    raceproof" after a traceback, its verdict's exit code lost. Now the command runs to its
    end and keeps its exit code; what came after the refused write is dropped, and ``main``
    says so in one line on stderr.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.refused: OSError | None = None

    def write(self, text: str) -> int:
        if self.refused is None:
            try:
                return int(self.stream.write(text))
            except OSError as exc:
                self._refuse(exc)
        return len(text)

    def flush(self) -> None:
        if self.refused is None:
            try:
                self.stream.flush()
            except OSError as exc:
                self._refuse(exc)

    def _refuse(self, exc: OSError) -> None:
        if exc.errno not in FULL_ERRNOS:
            raise exc
        self.refused = exc

    def discard_the_rest(self) -> None:
        """What the stream still buffers goes nowhere: its flush at exit must not fail again."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _a_signal_is_never_a_pass(code: int, received: list[int], printed_before: int) -> int:
    """A command that received SIGINT / SIGTERM exits 130 / 143, whatever it returned.

    Its ``Interrupted`` may never have reached it (raised inside a finalizer, where
    Python swallows it): the command then ran on and returned its own exit, maybe
    0. That exit is not the verdict: the signal's is, with the usual line on stderr;
    a ``--json`` document already printed stays the only one on stdout.
    """
    if not received or code in {128 + signum for signum in received}:
        return code
    interrupted = signals.Interrupted(received[0])
    _report_error(
        f"interrupted by {interrupted.name} while the command ran: "
        "what it printed is not a verdict",
        document=documents_printed() == printed_before,
        interrupted=interrupted.name,
    )
    return interrupted.exit_code


def _run(words: list[str], received: list[int]) -> int:
    """Parse, load and run the command; every failure mapped to its exit code."""
    try:
        try:
            args = build_parser().parse_args(words)
        except SystemExit as done:  # usage errors (said in one line), --help, --version
            return done.code if isinstance(done.code, int) else runner.EXIT_USAGE
        require_extras(args)
        discovery.ensure_loaded([*args.top_scenarios, *(args.scenarios or [])])
        code: int = args.handler(args)
        return code
    except BAD_INPUT as exc:
        _report_error(str(exc))
        return runner.EXIT_USAGE
    except (Nondeterministic, ReplayMisaligned) as exc:
        # A replay of the model's own run that went otherwise (every replay of a file or of
        # a user's blob says its own error first): the user's model, the verdict error.
        said_ = exc if isinstance(exc, Nondeterministic) else exc.as_nondeterminism()
        _report_error(str(said_), verdict=Verdict.ERROR, nondeterministic=True)
        return runner.EXIT_ERROR
    except signals.Interrupted as exc:  # a real signal outside a search's own handling
        name = signals.signal_name(exc)
        _report_error(f"interrupted by {name}", interrupted=name)
        return signals.exit_code_for(exc)
    except BrokenPipeError:
        # The reader went away (`raceproof list | head`): nothing more to say to it.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 128 + 13
    except OSError as exc:
        # The last net under ``raceproof.sim.user_files``: a path the system refused that
        # no command checked first is still the user's path, said in one line.
        if exc.errno not in PATH_ERRNOS or exc.filename is None:
            return _internal_error(exc, words, received)
        _report_error(f"{user_files.shown(exc.filename)}: {user_files.reason(exc)}")
        return runner.EXIT_USAGE
    except BaseException as exc:  # StopTest and the like: a bug in raceproof
        # Neither a user's sys.exit() nor a KeyboardInterrupt their code raised gets
        # this far (the kernel, the loader and the pipeline runner make them the
        # user's error); one that does slipped past raceproof: a bug, never an exit
        # code the user's code chose, nor 130 without a signal.
        return _internal_error(exc, words, received)


def _internal_error(exc: BaseException, words: list[str], received: list[int]) -> int:
    """A bug in raceproof, said with its traceback, unless a real signal came first.

    What a signal cuts short (a py4j call whose JVM is going, a socket closed under a
    read) may raise anything on the way out: that is the interrupt, exit 130/143.
    """
    if received:
        interrupted = signals.Interrupted(received[0])
        _report_error(f"interrupted by {interrupted.name}", interrupted=interrupted.name)
        return interrupted.exit_code
    traceback.print_exc()
    command = shlex.join(["raceproof", *words])
    _report_error(
        f"internal error: this is a bug in raceproof {runner.tool_version()}, not in "
        f"your input or your system; please report it with the traceback above "
        f"(command: {command}): {type(exc).__name__}: {said(exc)}",
        internal_error=True,
    )
    return runner.EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
