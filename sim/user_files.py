"""The user's files and numbers: one way to open, read and write them, so the world is translated once.

Why it exists: every command reads or writes paths a user typed (``--out``,
``--history-out``, ``--junit``, ``report PATH``, ``--scenarios FILE``, a
pyproject entry, the pytest ini's database) and every one of them met the file
system on its own. A path longer than the system allows, a folder without
read permission, a file where a folder was expected, a symlink loop, a path
under ``/dev/null`` or on a read-only mount each escaped as an ``OSError`` and
exit 70 with a traceback. Numbers had the same story: ``int()`` accepts
Unicode digits (``٣``, ``５``) and raises ``ValueError: Exceeds the limit`` past
4,300 digits; ``json.loads`` accepts ``NaN`` and turns ``1e400`` into ``inf``.

Everything here raises ``error`` (``BadInput`` unless the caller names its own
``ValueError`` subclass) with one line naming the path or the field and what
is wrong, so the command line answers exit 2 and nothing is written:

* ``user_path(what, path)``: a context in which any ``OSError`` becomes that line;
  ``check_path_length`` refuses a name or a path the system cannot hold before
  anything is created;
* ``read_text`` / ``read_json`` / ``read_json_lines``: size, kind and nesting
  checked before parsing; JSON numbers checked while parsing (no ``NaN``, no
  infinity, no integer past ``MAX_INT_DIGITS`` digits);
* ``write_atomically``: a temporary file and a rename, so no reader sees half a file;
* ``ascii_int``: an integer a user typed or a file carries, ASCII digits only.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from raceproof.sim.configs import BadInput

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "NUMBER_HOOKS",
    "NumberRefused",
    "ascii_float",
    "ascii_int",
    "check_folder",
    "check_path_length",
    "json_depth",
    "loads",
    "read_json",
    "read_json_lines",
    "read_text",
    "shown",
    "user_path",
    "write_atomically",
]

MAX_FILE_BYTES = 64 * 1024 * 1024  # a counterexample is a few KiB; anything near this is not one
MAX_JSON_DEPTH = 200  # nesting of arrays and objects in any JSON file raceproof reads
MAX_INT_DIGITS = 4300  # Python's own limit for int(str) (sys.get_int_max_str_digits() default)
_SHOWN_CHARS = 120  # a path in a message: its start and end, so the line stays readable
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


# -- paths ----------------------------------------------------------------------------
def shown(path: object) -> str:
    """``path`` as a message shows it: whole when short, its two ends around ``...`` when long."""
    text = str(path)
    if len(text) <= _SHOWN_CHARS:
        return text
    half = _SHOWN_CHARS // 2
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


def reason(exc: OSError) -> str:
    """What the system said, in words (``File name too long``, ``Permission denied``)."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    return exc.strerror or type(exc).__name__


@contextlib.contextmanager
def user_path(what: str, path: object, error: type[Exception] = BadInput) -> Iterator[None]:
    """Inside, any ``OSError`` (or ``resolve()``'s loop) is ``error("WHAT: PATH: REASON")``, one line."""
    try:
        yield
    except OSError as exc:
        where = f"{what}: " if what else ""
        raise error(f"{where}{shown(path)}: {reason(exc)}") from None
    except RuntimeError as exc:  # Path.resolve() says a loop this way (Python < 3.13)
        if not str(exc).startswith("Symlink loop"):
            raise
        where = f"{what}: " if what else ""
        raise error(f"{where}{shown(path)}: a symbolic link loop") from None


def _limit(folder: Path, name: str, fallback: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        return os.pathconf(folder, name)
    return fallback


def check_path_length(path: Path, what: str, error: type[ValueError] = BadInput) -> None:
    """Refuse a path the file system cannot hold (a name or the whole too long) before creating anything."""
    absolute = Path(os.path.abspath(path))
    anchor = next((p for p in [absolute, *absolute.parents] if _exists(p)), Path("/"))
    name_max = _limit(anchor, "PC_NAME_MAX", 255)
    path_max = _limit(anchor, "PC_PATH_MAX", 4096)
    for part in absolute.parts:
        if len(os.fsencode(part)) > name_max:
            raise error(
                f"{what}: {shown(path)}: a name of {len(os.fsencode(part))} bytes, longer than "
                f"the file system allows ({name_max})"
            )
    if len(os.fsencode(str(absolute))) >= path_max:
        raise error(
            f"{what}: {shown(path)}: {len(os.fsencode(str(absolute)))} bytes, longer than "
            f"the system allows for a path ({path_max})"
        )


def check_folder(path: Path, what: str, error: type[ValueError] = BadInput) -> Path:
    """A folder raceproof reads and may later write (the pytest plugin's database): absent, or a
    readable folder; never a file, a path under a file, a link to nowhere or a path too long."""
    check_path_length(path, what, error)
    with user_path(what, path, error):
        for step in [path, *path.parents]:
            if os.path.lexists(step) and not step.exists():
                raise error(f"{what}: {shown(step)} is a symbolic link that leads nowhere")
            if step.exists():
                if not step.is_dir():
                    raise error(f"{what}: {shown(step)} is not a folder")
                if step == path:  # only whether it reads: the OSError says why not
                    os.listdir(path)  # nondeterminism-ok: the order is never used
                break
    return path


def _exists(path: Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


# -- reading ----------------------------------------------------------------------------
def read_text(path: Path, error: type[ValueError] = BadInput) -> str:
    """The file's text; a FIFO, a device, a folder or a huge file is refused without reading it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{shown(path)}: no such file") from None
    except (OSError, ValueError) as exc:
        why = reason(exc) if isinstance(exc, OSError) else str(exc)
        raise error(f"{shown(path)}: cannot read it ({why})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{shown(path)}: not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise error(
            f"{shown(path)}: {info.st_size} bytes, more than raceproof reads from one file "
            f"({MAX_FILE_BYTES} bytes at most)"
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        return data.decode("utf-8")
    except OSError as exc:
        raise error(f"{shown(path)}: cannot read it ({reason(exc)})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{shown(path)}: cannot read it ({exc})") from None


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in ``text`` (strings skipped), without parsing it."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check_depth(text: str, where: str, error: type[ValueError] = BadInput) -> None:
    """Refuse JSON nested past ``MAX_JSON_DEPTH`` before ``json.loads`` recurses into it."""
    # A cheap bound first: fewer openers than the limit cannot nest past it.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_depth(text) > MAX_JSON_DEPTH:
        raise error(
            f"{where}: JSON nested too deeply (over {MAX_JSON_DEPTH} levels); not a raceproof file"
        )


class NumberRefused(Exception):
    """Raised inside ``json.loads`` by ``NUMBER_HOOKS``; the caller makes it its own one line."""


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise NumberRefused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NumberRefused(f"the number {shown(text)} is too large to be finite")
    return value


def _json_constant(name: str) -> Any:
    raise NumberRefused(f"{name} is not a number raceproof accepts")


# ``json.loads(text, **NUMBER_HOOKS)``: no NaN or Infinity, no 1e400 read as inf, no huge integer.
NUMBER_HOOKS: dict[str, Any] = {
    "parse_int": _json_int,
    "parse_float": _json_float,
    "parse_constant": _json_constant,
}


def loads(text: str, where: str, error: type[ValueError] = BadInput) -> Any:
    """``json.loads`` with the depth checked first and every number checked (no NaN, no inf, no huge int)."""
    check_depth(text, where, error)
    try:
        return json.loads(text, **NUMBER_HOOKS)
    except NumberRefused as exc:
        raise error(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise error(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}); truncated or corrupt?"
        ) from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply") from None


def read_json(path: Path, error: type[ValueError] = BadInput) -> Any:
    """The one reader of a JSON file raceproof is given (counterexample, manifest, results, script).

    Size, kind and nesting are checked before parsing; every failure is ``error``
    with one line naming the file: no ``RecursionError`` or ``MemoryError`` escapes.
    """
    return loads(read_text(path, error), shown(path), error)


def read_json_lines(path: Path, error: type[ValueError] = BadInput) -> list[Any]:
    """A JSON Lines file (a history) through the same checks, one value per non-blank line."""
    text = read_text(path, error)
    values = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+0085 etc.
        if line.strip():
            values.append(loads(line, f"{shown(path)} line {number}", error))
    return values


# -- writing ----------------------------------------------------------------------------
def write_atomically(path: Path, text: str, what: str = "") -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder.

    An ``OSError`` (a full disk, a folder made read-only since the command
    started) is ``BadInput`` naming the path, and no temporary file is left.
    """
    with user_path(what, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", dir=path.parent)
        try:
            # mkstemp makes the file private (0600); the result gets the mode any new file would.
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# -- numbers ----------------------------------------------------------------------------
def ascii_int(text: str, what: str, error: type[ValueError] = BadInput) -> int:
    """An integer a user typed or a file carries: ASCII digits (an optional sign), at most ``MAX_INT_DIGITS``.

    ``int()`` alone accepts ``٣`` and ``５`` and surrounding blanks and ``1_000``,
    and raises a bare ``ValueError`` past 4,300 digits.
    """
    if not isinstance(text, str) or not _ASCII_INT.fullmatch(text):
        raise error(f"{what}: must be an integer in ASCII digits, got {shown(repr(text))}")
    digits = len(text.lstrip("+-"))
    if digits > MAX_INT_DIGITS:
        raise error(f"{what}: an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def ascii_float(text: str, what: str, error: type[ValueError] = BadInput) -> float:
    """A finite number a user typed: ASCII digits, a point, an exponent; never NaN or infinity."""
    if not isinstance(text, str) or len(text) > 100 or not _ASCII_FLOAT.fullmatch(text):
        raise error(f"{what}: must be a number in ASCII digits, got {shown(repr(text))}")
    value = float(text)
    if not math.isfinite(value):
        raise error(f"{what}: must be a finite number, got {shown(repr(text))}")
    return value
