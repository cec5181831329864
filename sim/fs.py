"""A simulated file system: directories, files, mtimes, fsync, crash, write failure.

Enough of POSIX for state directories and checkpoints: a directory's mtime
changes when an entry is added or removed in it, a write is durable only after
``fsync``, a crash loses what was not synced, and ``listdir`` is sorted so no
run depends on directory-listing order. Every (re-)creation of a directory is a
new *generation*, so a checker can tell a resurrected directory from the
original one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from raceproof.sim.cells import Cell, CellMap, Primitive
from raceproof.sim.history import JSONValue
from raceproof.sim.world import World


class FsError(Exception):
    pass


class DiskWriteError(FsError):
    """An injected write failure (disk full, I/O error)."""


@dataclass(frozen=True)
class FileEntry:
    content: JSONValue
    mtime_ms: int
    synced: JSONValue | None = None
    ever_synced: bool = False


@dataclass(frozen=True)
class DirEntry:
    mtime_ms: int
    generation: int


def _parent(path: str) -> str:
    if not (path.startswith("/") and not path.endswith("/")):  # so not "/"
        raise ValueError(f"bad path {path!r}")
    return path.rsplit("/", 1)[0] or "/"


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


class FileSystem(Primitive):
    """One host's disk. ``fail_writes``: each write draws whether it fails (a fault).

    Its state is in cells (``raceproof.sim.cells``): each directory and each
    file is a resource of its own, and so is each directory's list of entry
    names (what ``listdir`` reads and adding or removing an entry writes).
    """

    def __init__(self, world: World, name: str = "fs", *, fail_writes: bool = False) -> None:
        self.world = world
        self.name = name
        self.fail_writes = fail_writes
        self.dirs: CellMap[str, DirEntry] = CellMap(world, f"{name}:dir", {"/": DirEntry(0, 0)})
        self.files: CellMap[str, FileEntry] = CellMap(world, f"{name}:file")
        self.listing: CellMap[str, tuple[str, ...]] = CellMap(world, f"{name}:entries", {"/": ()})
        self._generations = Cell(world, f"{name}:generations", 0)
        self.freeze()

    def _list(self, path: str) -> None:
        """``path`` is an entry of its parent now; the parent's mtime moves."""
        parent, name = _parent(path), path.rsplit("/", 1)[1]
        names = self.listing[parent]
        if name not in names:
            self.listing[parent] = tuple(sorted((*names, name)))
        self._touched(parent)

    def _unlist(self, path: str, *, touch: bool = True) -> None:
        """``path`` is gone (unless a file and a directory shared its name); mtime moves if ``touch``."""
        parent, name = _parent(path), path.rsplit("/", 1)[1]
        if path not in self.files and path not in self.dirs:
            self.listing[parent] = tuple(n for n in self.listing[parent] if n != name)
        if touch:
            self._touched(parent)

    def _touched(self, directory: str) -> None:
        entry = self.dirs[directory]
        self.dirs[directory] = DirEntry(self.world.now_ms, entry.generation)

    # -- directories -----------------------------------------------------------
    def mkdir(self, path: str, *, parents: bool = True) -> bool:
        """Create ``path`` (and parents); False if it already existed."""
        if path in self.dirs:
            return False
        parent = _parent(path)
        if parent not in self.dirs:
            if not parents:
                raise FsError(f"no such directory {parent}")
            self.mkdir(parent)
        generation = self._generations.get() + 1
        self._generations.set(generation)
        self.dirs[path] = DirEntry(self.world.now_ms, generation)
        self.listing[path] = self.listing.get(path) or ()  # a file of that name keeps no entries
        self._list(path)
        return True

    def isdir(self, path: str) -> bool:
        return path in self.dirs

    def generation(self, path: str) -> int | None:
        entry = self.dirs.get(path)
        return None if entry is None else entry.generation

    def mtime_ms(self, path: str) -> int:
        entry = self.dirs.get(path) or self.files.get(path)
        if entry is None:
            raise FsError(f"no such file or directory {path}")
        return entry.mtime_ms

    def listdir(self, path: str) -> list[str]:
        """Entry names, sorted."""
        if path not in self.dirs:
            raise FsError(f"no such directory {path}")
        return list(self.listing[path])

    def rmtree(self, path: str) -> None:
        if path == "/":
            raise FsError("the root directory cannot be removed")
        if path not in self.dirs:
            raise FsError(f"no such directory {path}")
        self._remove_below(path)
        self.dirs.pop(path)
        self.listing.pop(path)
        self._unlist(path)

    def _remove_below(self, directory: str) -> None:
        """Remove every file and directory under ``directory`` (not itself)."""
        for name in self.listing[directory]:
            path = _join(directory, name)
            if path in self.files:
                self.files.pop(path)
            if path in self.dirs:
                self._remove_below(path)
                self.dirs.pop(path)
                self.listing.pop(path)

    # -- files ---------------------------------------------------------------
    def write(self, path: str, content: JSONValue, *, sync: bool = False) -> None:
        """Write a whole file (creating it). Raises DiskWriteError when a fault fires."""
        parent = _parent(path)
        if parent not in self.dirs:
            raise FsError(f"no such directory {parent}")
        if self.fail_writes and self.world.source.draw_bool(f"{self.name}.write-fails", 0.05):
            self.world.log(self.name, "fault.disk-write", path=path)
            raise DiskWriteError(path)
        now = self.world.now_ms
        entry = self.files.get(path)
        if entry is None:
            self.files[path] = FileEntry(content, now)
            self._list(path)
        else:
            self.files[path] = replace(entry, content=content, mtime_ms=now)
        if sync:
            self.fsync(path)

    def fsync(self, path: str) -> None:
        entry = self.files[path]
        self.files[path] = replace(entry, synced=entry.content, ever_synced=True)

    def read(self, path: str) -> JSONValue:
        entry = self.files.get(path)
        if entry is None:
            raise FsError(f"no such file {path}")
        return entry.content

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def remove(self, path: str) -> None:
        del self.files[path]
        self._unlist(path)

    def crash(self) -> None:
        """Lose every write that was not fsynced (files never synced vanish)."""
        self._crash_below("/")

    def _crash_below(self, directory: str) -> None:
        for name in self.listing[directory]:
            path = _join(directory, name)
            entry = self.files.get(path)
            if entry is not None and not entry.ever_synced:
                self.files.pop(path)
                self._unlist(path, touch=False)
            elif entry is not None:
                self.files[path] = replace(entry, content=entry.synced)
            if path in self.dirs:
                self._crash_below(path)
