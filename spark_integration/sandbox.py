"""A trial's own folder for input, checkpoint and sink; the fault injector touches nothing else.

Every path a fault experiment names is relative to the sandbox and checked
here before anything is read, copied or deleted:

* an empty name, ``.``, an absolute path or a ``..`` component is refused
  outright, so no spelling of a name can mean the sandbox root itself (which
  ``delete`` would otherwise remove whole) or a place outside it;
* the path is then resolved through symlinks and must still lie strictly
  inside the root: a symlink planted inside that points out is refused;
* ``copy_tree`` copies symlinks *as symlinks* and refuses a tree holding one
  that resolves outside the sandbox, so an outside file is never read in;
* ``delete`` removes a symlink itself, never what it points to.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath


class SandboxError(ValueError):
    """A path outside the trial's sandbox (or the sandbox root itself) was asked for."""


class Sandbox:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="raceproof-spark-")).resolve()
        for name in ("input", "checkpoint", "sink", "saved"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        self.files_written = 0

    def _parts(self, path: str | Path) -> tuple[str, ...]:
        text = str(path)
        pure = PurePosixPath(text)
        if not text.strip() or pure.is_absolute() or Path(text).is_absolute():
            raise SandboxError(f"{text!r}: a path relative to the sandbox is needed")
        parts = tuple(p for p in pure.parts if p != ".")
        if not parts:
            raise SandboxError(f"{text!r} names the sandbox root itself")
        if ".." in parts:
            raise SandboxError(f"{text!r}: '..' is not allowed (it leads outside the sandbox)")
        return parts

    def _within(self, resolved: Path, path: str | Path) -> Path:
        if resolved == self.root:
            raise SandboxError(f"{path} names the sandbox root itself")
        if self.root not in resolved.parents:
            raise SandboxError(f"{path} is outside the sandbox {self.root}")
        return resolved

    def inside(self, path: str | Path) -> Path:
        """``path`` resolved (symlinks followed), or SandboxError if it is not strictly inside."""
        parts = self._parts(path)
        return self._within(Path(os.path.realpath(self.root.joinpath(*parts))), path)

    def entry(self, path: str | Path) -> Path:
        """``path`` with its folder resolved but its last component kept (a symlink stays one)."""
        parts = self._parts(path)
        folder = Path(os.path.realpath(self.root.joinpath(*parts[:-1])))
        if folder != self.root:
            self._within(folder, path)
        return folder / parts[-1]

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def sink_file(self) -> Path:
        return self.root / "sink" / "rows.jsonl"

    def write_input(self, lines: list[str], *, source: str = "") -> Path:
        """One file per micro-batch (in ``input/SOURCE/`` for a pipeline with several sources):
        written under a temporary name, renamed, with a distinct mtime."""
        self.files_written += 1
        folder = f"input/{source}" if source else "input"
        self.inside(folder).mkdir(parents=True, exist_ok=True)
        final = self.inside(f"{folder}/part-{self.files_written:05d}.json")
        tmp = self.inside(f"{folder}/.part-{self.files_written:05d}.tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        os.replace(tmp, final)
        stamp = 1_700_000_000 + self.files_written
        os.utime(final, (stamp, stamp))
        return final

    def _refuse_escaping_links(self, folder: Path) -> None:
        for current, dirs, files in os.walk(folder):
            for name in dirs + files:
                item = Path(current) / name
                if item.is_symlink():
                    target = Path(os.path.realpath(item))
                    if target != self.root and self.root not in target.parents:
                        raise SandboxError(
                            f"{item} is a symlink out of the sandbox (to {target}); not copied"
                        )

    def copy_tree(self, source: str, target: str) -> None:
        """Copy the folder ``source`` to ``target`` (replaced), symlinks as symlinks."""
        src, dst = self.inside(source), self.entry(target)
        if not src.is_dir():
            raise SandboxError(f"{source} is not a folder in the sandbox")
        if dst == src or src in dst.parents:
            raise SandboxError(f"cannot copy {source} into itself ({target})")
        self._refuse_escaping_links(src)
        self._remove(dst)
        shutil.copytree(src, dst, symlinks=True)

    def delete(self, path: str) -> None:
        """Remove ``path`` (a file, a folder, or a symlink itself); never the root, never outside."""
        self._remove(self.entry(path))

    @staticmethod
    def _remove(target: Path) -> None:
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
