"""A trial's own folder for input, checkpoint and sink; the fault injector touches nothing else."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


class SandboxError(ValueError):
    """A path outside the trial's sandbox was asked for."""


class Sandbox:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="raceproof-spark-")).resolve()
        for name in ("input", "checkpoint", "sink", "saved"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        self.files_written = 0

    def inside(self, path: str | Path) -> Path:
        """``path`` resolved, or SandboxError if it leaves the sandbox."""
        resolved = Path(os.path.realpath(self.root / path))
        if resolved != self.root and self.root not in resolved.parents:
            raise SandboxError(f"{path} is outside the sandbox {self.root}")
        return resolved

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def sink_file(self) -> Path:
        return self.root / "sink" / "rows.jsonl"

    def write_input(self, lines: list[str]) -> Path:
        """One file per micro-batch: written under a temporary name, renamed, with a distinct mtime."""
        self.files_written += 1
        final = self.inside(f"input/part-{self.files_written:05d}.json")
        tmp = self.inside(f"input/.part-{self.files_written:05d}.tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        os.replace(tmp, final)
        stamp = 1_700_000_000 + self.files_written
        os.utime(final, (stamp, stamp))
        return final

    def copy_tree(self, source: str, target: str) -> None:
        src, dst = self.inside(source), self.inside(target)
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)

    def delete(self, path: str) -> None:
        target = self.inside(path)
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
