"""A simulated file system: directories, files, mtimes, fsync, crash, write failure.

Enough of POSIX for state directories and checkpoints: a directory's mtime
changes when an entry is added or removed in it, a write is durable only after
``fsync``, a crash loses what was not synced, and ``listdir`` is sorted so no
run depends on directory-listing order. Every (re-)creation of a directory is a
new *generation*, so a checker can tell a resurrected directory from the
original one.
"""

from __future__ import annotations

from dataclasses import dataclass

from raceproof.sim.history import JSONValue
from raceproof.sim.world import World


class FsError(Exception):
    pass


class DiskWriteError(FsError):
    """An injected write failure (disk full, I/O error)."""


@dataclass
class FileEntry:
    content: JSONValue
    mtime_ms: int
    synced: JSONValue | None = None
    ever_synced: bool = False


@dataclass
class DirEntry:
    mtime_ms: int
    generation: int


def _parent(path: str) -> str:
    if not (path.startswith("/") and not path.endswith("/")):  # so not "/"
        raise ValueError(f"bad path {path!r}")
    return path.rsplit("/", 1)[0] or "/"


class FileSystem:
    """One host's disk. ``fail_writes``: each write draws whether it fails (a fault)."""

    def __init__(self, world: World, name: str = "fs", *, fail_writes: bool = False) -> None:
        self.world = world
        self.name = name
        self.fail_writes = fail_writes
        self.dirs: dict[str, DirEntry] = {"/": DirEntry(0, 0)}
        self.files: dict[str, FileEntry] = {}
        self._generations = 0

    # -- directories -----------------------------------------------------------
    def mkdir(self, path: str, *, parents: bool = True) -> bool:
        """Create ``path`` (and parents); False if it already existed."""
        self.world.touch(self.name)
        if path in self.dirs:
            return False
        parent = _parent(path)
        if parent not in self.dirs:
            if not parents:
                raise FsError(f"no such directory {parent}")
            self.mkdir(parent)
        self._generations += 1
        now = self.world.now_ms
        self.dirs[path] = DirEntry(now, self._generations)
        self.dirs[parent].mtime_ms = now
        return True

    def isdir(self, path: str) -> bool:
        self.world.touch(self.name, write=False)
        return path in self.dirs

    def generation(self, path: str) -> int | None:
        self.world.touch(self.name, write=False)
        entry = self.dirs.get(path)
        return None if entry is None else entry.generation

    def mtime_ms(self, path: str) -> int:
        self.world.touch(self.name, write=False)
        if path in self.dirs:
            return self.dirs[path].mtime_ms
        if path in self.files:
            return self.files[path].mtime_ms
        raise FsError(f"no such file or directory {path}")

    def listdir(self, path: str) -> list[str]:
        """Entry names, sorted."""
        self.world.touch(self.name, write=False)
        if path not in self.dirs:
            raise FsError(f"no such directory {path}")
        prefix = path.rstrip("/") + "/"
        names = {
            p[len(prefix) :].partition("/")[0]
            for p in [*self.dirs, *self.files]
            if p.startswith(prefix) and p != path
        }
        return sorted(names)

    def rmtree(self, path: str) -> None:
        self.world.touch(self.name)
        if path == "/":
            raise FsError("the root directory cannot be removed")
        if path not in self.dirs:
            raise FsError(f"no such directory {path}")
        prefix = path + "/"  # directory names never end with "/" (see _parent)
        for p in sorted(self.files):
            if p.startswith(prefix):
                del self.files[p]
        for p in sorted(self.dirs):
            if p == path or p.startswith(prefix):
                del self.dirs[p]
        self.dirs[_parent(path)].mtime_ms = self.world.now_ms

    # -- files ---------------------------------------------------------------
    def write(self, path: str, content: JSONValue, *, sync: bool = False) -> None:
        """Write a whole file (creating it). Raises DiskWriteError when a fault fires."""
        self.world.touch(self.name)
        parent = _parent(path)
        if parent not in self.dirs:
            raise FsError(f"no such directory {parent}")
        if self.fail_writes and self.world.source.draw_bool(f"{self.name}.write-fails", 0.05):
            self.world.log(self.name, "fault.disk-write", path=path)
            raise DiskWriteError(path)
        now = self.world.now_ms
        entry = self.files.get(path)
        if entry is None:
            entry = FileEntry(content, now)
            self.files[path] = entry
            self.dirs[parent].mtime_ms = now
        else:
            entry.content, entry.mtime_ms = content, now
        if sync:
            self.fsync(path)

    def fsync(self, path: str) -> None:
        self.world.touch(self.name)
        entry = self.files[path]
        entry.synced, entry.ever_synced = entry.content, True

    def read(self, path: str) -> JSONValue:
        self.world.touch(self.name, write=False)
        entry = self.files.get(path)
        if entry is None:
            raise FsError(f"no such file {path}")
        return entry.content

    def exists(self, path: str) -> bool:
        self.world.touch(self.name, write=False)
        return path in self.files or path in self.dirs

    def remove(self, path: str) -> None:
        self.world.touch(self.name)
        del self.files[path]
        self.dirs[_parent(path)].mtime_ms = self.world.now_ms

    def crash(self) -> None:
        """Lose every write that was not fsynced (files never synced vanish)."""
        self.world.touch(self.name)
        for path in sorted(self.files):
            entry = self.files[path]
            if not entry.ever_synced:
                del self.files[path]
            else:
                entry.content = entry.synced
