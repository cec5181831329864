"""The Spark sandbox: no spelling of a path reaches the root itself or anything outside it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.spark_integration.sandbox import Sandbox, SandboxError


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path / "box")
    (box.root / "checkpoint" / "offsets").mkdir()
    (box.root / "checkpoint" / "offsets" / "0").write_text("offset 0")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("not yours")
    return box


@pytest.mark.parametrize("name", ["", " ", ".", "./", "./.", "input/..", "a/../..", "..", "../box"])
def test_the_root_and_parents_are_refused(sandbox: Sandbox, name: str) -> None:
    for action in (sandbox.inside, sandbox.delete, lambda n: sandbox.copy_tree("input", n)):
        with pytest.raises(SandboxError):
            action(name)
    assert sandbox.root.is_dir() and (sandbox.root / "input").is_dir()


@pytest.mark.parametrize("name", ["/etc/passwd", "/", "//x"])
def test_absolute_paths_are_refused_even_inside(sandbox: Sandbox, name: str) -> None:
    with pytest.raises(SandboxError):
        sandbox.inside(name)
    with pytest.raises(SandboxError):
        sandbox.inside(str(sandbox.root / "input"))  # absolute, though inside: refused too


def test_a_symlink_out_is_not_followed_nor_copied_in(sandbox: Sandbox, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside" / "secret", sandbox.root / "checkpoint" / "offsets" / "leak")
    os.symlink(tmp_path / "outside", sandbox.root / "checkpoint" / "out")
    with pytest.raises(SandboxError):
        sandbox.inside("checkpoint/offsets/leak")
    with pytest.raises(SandboxError):
        sandbox.inside("checkpoint/out/secret")
    with pytest.raises(SandboxError, match="symlink out of the sandbox"):
        sandbox.copy_tree("checkpoint/offsets", "saved/offsets")
    assert not (sandbox.root / "saved" / "offsets").exists()
    with pytest.raises(SandboxError):  # a folder reached through a link out
        sandbox.delete("checkpoint/out/secret")
    sandbox.delete("checkpoint/out")  # the link itself goes, not what it points to
    assert not (sandbox.root / "checkpoint" / "out").is_symlink()
    assert (tmp_path / "outside" / "secret").read_text() == "not yours"


def test_a_symlink_inside_is_copied_as_a_symlink(sandbox: Sandbox) -> None:
    offsets = sandbox.root / "checkpoint" / "offsets"
    os.symlink("0", offsets / "latest")
    sandbox.copy_tree("checkpoint/offsets", "saved/offsets")
    copied = sandbox.root / "saved" / "offsets"
    assert (copied / "latest").is_symlink() and os.readlink(copied / "latest") == "0"
    assert (copied / "0").read_text() == "offset 0"
    sandbox.delete("saved/offsets/latest")
    assert (copied / "0").exists() and (offsets / "0").exists()


def test_copy_into_itself_and_from_a_file_are_refused(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError):
        sandbox.copy_tree("checkpoint", "checkpoint/offsets/again")
    with pytest.raises(SandboxError):
        sandbox.copy_tree("checkpoint/offsets/0", "saved/x")


SEGMENTS = st.sampled_from(["input", "checkpoint", "offsets", "0", "..", ".", "", "x", "/"])


@settings(max_examples=200, deadline=None)
@given(st.lists(SEGMENTS, max_size=5).map("/".join))
def test_any_spelling_resolves_strictly_inside_or_is_refused(name: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        box = Sandbox(Path(tmp) / "box")
        sentinel = Path(tmp) / "sentinel"
        sentinel.write_text("keep")
        try:
            resolved = box.inside(name)
        except SandboxError:
            pass
        else:
            assert box.root in resolved.parents
        with contextlib.suppress(SandboxError):
            box.delete(name)
        assert box.root.is_dir() and sentinel.read_text() == "keep"
