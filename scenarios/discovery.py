"""Finding the scenarios: the built-in catalogue and the user's, through one mechanism.

A scenario exists once a module calls ``raceproof.register`` on it. This module
finds and imports those modules, from three places, in this order:

1. the entry-point group ``raceproof.scenarios`` of every installed
   distribution (raceproof declares its own catalogue there, as ``builtin``);
2. ``[tool.raceproof] scenarios = [...]`` in the ``pyproject.toml`` of the
   current directory or its nearest parent (paths relative to that file);
3. ``--scenarios MODULE_OR_FILE`` on the command line (or the pytest plugin's
   ``--raceproof-scenarios``), repeatable.

An entry is a file when it ends in ``.py`` or names an existing path, else a
module name (imported with the pyproject's folder, or the current one, on
``sys.path``). A module that fails to import or to register raises
``ScenarioLoadError`` naming the file, the line and the error: the command line
turns it into exit 2 without a traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import tomllib
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from raceproof.scenarios import catalogue
from raceproof.sim.errors import FILE_MODULE_PREFIX, Signalled, said
from raceproof.sim.user_files import user_path

ENTRY_POINT_GROUP = "raceproof.scenarios"
BUILTIN_MODULE = "raceproof.scenarios.library"

_loaded: set[str] = set()  # keys of what was imported already (resolved files, module names)
_defaults_loaded = False
_command_line: list[str] = []  # the --scenarios entries, as the user wrote them
_registered_nothing: list[str] = []  # entries whose loading registered no scenario


class ScenarioLoadError(Exception):
    """A scenario module that failed to import or register; the message names file and line."""


def _where(exc: BaseException, target: str | None) -> str:
    """``FILE:LINE`` of the error: in the user's file when it is there, else the innermost frame."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if target is not None:
        own = [f for f in frames if Path(f.filename).resolve() == Path(target).resolve()]
        if own:
            return f"{own[-1].filename}:{own[-1].lineno}"
    if frames:
        return f"{frames[-1].filename}:{frames[-1].lineno}"
    return target or "?"


@contextmanager
def _origin(origin: str, label: str, target: str | None) -> Iterator[None]:
    catalogue._loading_origin.append(origin)
    try:
        yield
    except (ScenarioLoadError, Signalled):  # already said; a real signal stops the command
        raise
    except SystemExit as exc:  # sys.exit() in the user's module is no exit of raceproof's
        raise ScenarioLoadError(
            f"cannot load scenarios from {label}: it called sys.exit({exc.code!r})"
        ) from None
    except BaseException as exc:  # the user's module may raise anything
        # A KeyboardInterrupt it raises is no signal, GeneratorExit or a BaseException of
        # its own no bug of raceproof's, and an exception whose str() raises still has a name.
        raise ScenarioLoadError(
            f"cannot load scenarios from {label}: {_where(exc, target)}: "
            f"{type(exc).__name__}: {said(exc)}".removesuffix(": ")
        ) from None
    finally:
        catalogue._loading_origin.pop()


def _is_file(entry: str, base: Path) -> bool:
    return entry.endswith(".py") or "/" in entry or (base / entry).is_file()


def load_entry(entry: str, origin: str, base: Path | None = None) -> None:
    """Import one module or file of scenarios (once), recording where they came from.

    A path the file system refuses (too long, a folder without permission, a
    link loop) is ``ScenarioLoadError`` naming it; the module's own errors are
    its own (``_origin``).
    """
    base = Path.cwd() if base is None else base
    with user_path("cannot load scenarios", entry, ScenarioLoadError):
        _load_entry(entry, origin, base)


def _load_entry(entry: str, origin: str, base: Path) -> None:
    if _is_file(entry, base):
        path = (base / entry).resolve()
        key = f"file:{path}"
        if key in _loaded:
            return
        if not path.is_file():
            raise ScenarioLoadError(f"cannot load scenarios from {entry}: no such file ({path})")
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
        name = f"{FILE_MODULE_PREFIX}{path.stem}_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ScenarioLoadError(f"cannot load scenarios from {entry}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        # The file's own folder is importable, so a scenario file can import its model.
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        registered = catalogue.registrations()
        with _origin(origin, str(path), str(path)):
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        if catalogue.registrations() == registered:
            _registered_nothing.append(entry)
        _loaded.add(key)
        return
    key = f"module:{entry}"
    if key in _loaded:
        return
    folder = str(base)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    target = None
    # Finding ``a.b`` imports ``a``: its code runs here, so its failures are the entry's too.
    with _origin(origin, entry, None):
        try:
            found = importlib.util.find_spec(entry)
            target = found.origin if found is not None else None
        except (ImportError, ValueError):
            target = None
    if target is None:
        raise ScenarioLoadError(
            f"cannot load scenarios from {entry}: no module named {entry!r} "
            f"(looked on sys.path and in {base})"
        )
    registered = catalogue.registrations()
    with _origin(origin, f"{entry} ({target})", target):
        importlib.import_module(entry)
    if catalogue.registrations() == registered:
        _registered_nothing.append(entry)
    _loaded.add(key)


def find_pyproject(start: Path | None = None) -> Path | None:
    """The ``pyproject.toml`` of ``start`` (default: the current directory) or its nearest parent."""
    here = (Path.cwd() if start is None else start).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def pyproject_entries(path: Path) -> list[str]:
    """The ``[tool.raceproof] scenarios`` list of ``path`` (empty when it has none)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioLoadError(f"cannot read {path}: {exc}") from None
    tool = data.get("tool", {})
    table = tool.get("raceproof", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ScenarioLoadError(
            f"{path}: tool.raceproof must be a table ([tool.raceproof]), "
            f"got a {type(table).__name__}"
        )
    entries = table.get("scenarios", [])
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise ScenarioLoadError(
            f"{path}: [tool.raceproof] scenarios must be a list of module names or files"
        )
    return entries


def load_entry_points() -> None:
    """Every distribution's ``raceproof.scenarios`` entry points, raceproof's own catalogue first."""
    points = sorted(
        metadata.entry_points(group=ENTRY_POINT_GROUP),
        key=lambda ep: (ep.module != BUILTIN_MODULE, ep.name),
    )
    if not any(ep.module == BUILTIN_MODULE for ep in points):
        # A source tree that was never installed has no entry points: its catalogue still loads.
        with _origin("builtin", BUILTIN_MODULE, None):
            importlib.import_module(BUILTIN_MODULE)
    for point in points:
        key = f"entry-point:{point.name}={point.value}"
        if key in _loaded:
            continue
        origin = "builtin" if point.module == BUILTIN_MODULE else f"entry-point:{point.name}"
        with _origin(origin, f"entry point {point.name} = {point.value}", None):
            point.load()
        _loaded.add(key)


def ensure_loaded(command_line: Sequence[str] = ()) -> None:
    """Load the entry points and the nearest pyproject's scenarios (once), then ``command_line``."""
    global _defaults_loaded
    if not _defaults_loaded:
        _defaults_loaded = True
        load_entry_points()
        with user_path("cannot look for pyproject.toml", Path.cwd(), ScenarioLoadError):
            pyproject = find_pyproject()
        if pyproject is not None:
            for entry in pyproject_entries(pyproject):
                load_entry(entry, f"pyproject:{pyproject}", pyproject.parent)
    for entry in command_line:
        load_entry(entry, f"command-line:{entry}")
        if entry not in _command_line:
            _command_line.append(entry)


def empty_entries_said() -> str:
    """For an unknown scenario: the entries loaded that registered none (``; x.py registers no scenario``)."""
    return "".join(
        f"; {entry} loaded but registers no scenario (raceproof.register(Scenario(...)))"
        for entry in _registered_nothing
    )


def command_line_entries() -> list[str]:
    """The ``--scenarios`` entries loaded so far, for child processes that must load the same."""
    return list(_command_line)


def scenarios_args(name: str) -> list[str]:
    """``--scenarios SPEC`` for a scenario that came from the command line, else nothing."""
    origin = catalogue.ORIGINS.get(name, "")
    if origin.startswith("command-line:"):
        return ["--scenarios", origin.removeprefix("command-line:")]
    return []
