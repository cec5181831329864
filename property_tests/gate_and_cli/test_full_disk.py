"""A full disk or a file-size limit loses nothing that was found: the result, then one warning.

Why this module exists: ``explore --out``, ``repro --history-out``, ``prove --out``,
``check --out`` and ``check --junit`` on a full file system exited 2 with nothing
printed: the violation found was neither shown nor saved. Now the result is printed
first, then one line ``raceproof: warning: the result above is not saved: ...``, and
the exit is the verdict's (1 here: each command finds a violation); no file is left
half-written (no temporary file, no counterexample without its reports).

Two worlds: a file-size limit (``RLIMIT_FSIZE`` of 1,024 bytes, set in the child
before it starts, as ``ulimit -f 1`` does; Python ignores ``SIGXFSZ``, so a write
fails with ``EFBIG``), and a full tmpfs of 64 KiB (mounted here when the suite runs
as root with the right to mount, else that half is skipped, saying so). The same
commands without the limit exit 1 and write their files: the check fails both ways.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

# A fix that does not hold, expected to: ``check`` saves its counterexample (with --out).
BROKEN_FIX = """
import raceproof
from raceproof import Scenario

def build(world, variant, config):
    box = world.shared.counter("box")
    def client(me):
        seen = box.value
        world.log(me, "read", value=seen, padding="." * 1000)  # a file over the 1 KiB limit
        yield world.sleep(world.source.choose(f"{me}.rpc", (0, 1)))
        box.set(seen + 1)
        world.log(me, "wrote", value=seen + 1)
    world.spawn("a", client("a"))
    world.spawn("b", client("b"))

@raceproof.checker
def both_counted(history):
    writes = history.of_kind("wrote")
    if len(writes) == 2 and writes[-1].get("value") != 2:
        return raceproof.violated("an increment was lost", writes[-1].index)
    return None

raceproof.register(Scenario(
    name="broken-fix", summary="a fix that does not hold", variants={"fix": "still racy"},
    expect_violation=frozenset(), checkers=(both_counted,), build=build, default_examples=20,
))
"""

COMMANDS = {
    "explore --out": ["explore", "lost-update", "--variant", "buggy", "--out", "{dir}"],
    "repro --history-out": [
        *("repro", "lost-update", "--variant", "buggy", "--choices", "4:0=1"),
        *("--history-out", "{dir}/history.jsonl"),
    ],
    "prove --out": ["prove", "lost-update", "--variant", "buggy", "--out", "{dir}"],
    "check --out": ["check", "broken-fix", "--scenarios", "{cwd}/broken.py", "--out", "{dir}"],
    "check --junit": [
        "check",
        "broken-fix",
        "--scenarios",
        "{cwd}/broken.py",
        "--junit",
        "{dir}/j.xml",
    ],
}
# What the printed result holds, that the user must see even when nothing could be saved.
SHOWN = {
    "explore --out": "repro: raceproof repro lost-update --variant buggy",
    "repro --history-out": "verdict: violated",
    "prove --out": "repro: raceproof repro lost-update --variant buggy",
    "check --out": "SOME EXPECTATIONS FAILED",
    "check --junit": "SOME EXPECTATIONS FAILED",
}


def run(
    cwd: Path, name: str, folder: Path, limit: Callable[[], None] | None
) -> subprocess.CompletedProcess[str]:
    argv = [word.format(dir=folder, cwd=cwd) for word in COMMANDS[name]]
    return subprocess.run(
        [str(BIN / "raceproof"), *argv],
        cwd=cwd,
        capture_output=True,  # pipes: the limit is on files, the output still flows
        text=True,
        timeout=600,
        preexec_fn=limit,
    )


def small_files() -> None:
    """In the child, before raceproof starts: ``ulimit -f 1`` (1,024 bytes)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, filled to the last byte; skipped where the suite may not mount."""
    mount = tmp_path / "full"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root?): the rlimit half runs alone")
    try:
        filler = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(filler, b"x" * 4096):  # until the file system says ENOSPC
                pass
        except OSError:
            pass
        finally:
            os.close(filler)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def assert_result_then_warning(done: subprocess.CompletedProcess[str], name: str) -> None:
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert SHOWN[name] in done.stdout
    assert "Traceback" not in done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, done.stderr[-2000:]
    assert warnings[0].startswith("raceproof: warning: the result above is not saved")
    assert done.stderr.rstrip().endswith(warnings[0])  # after everything else


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_file_size_limit_prints_the_result_then_one_warning(tmp_path: Path, name: str) -> None:
    (tmp_path / "broken.py").write_text(BROKEN_FIX)
    folder = tmp_path / "out"
    folder.mkdir()
    assert_result_then_warning(run(tmp_path, name, folder, small_files), name)
    assert not list(folder.iterdir())  # nothing half-written, no temporary file
    saved = run(tmp_path, name, folder, None)  # without the limit: the same verdict, saved
    assert saved.returncode == 1 and "warning" not in saved.stderr, saved.stderr[-2000:]
    assert list(folder.iterdir())


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_full_file_system_prints_the_result_then_one_warning(
    tmp_path: Path, full_tmpfs: Path, name: str
) -> None:
    (tmp_path / "broken.py").write_text(BROKEN_FIX)
    before = sorted(os.listdir(full_tmpfs))  # nondeterminism-ok: compared as sorted lists
    assert_result_then_warning(run(tmp_path, name, full_tmpfs, None), name)
    assert sorted(os.listdir(full_tmpfs)) == before  # nondeterminism-ok: sorted


def test_check_writes_counterexamples_only_with_out(tmp_path: Path) -> None:
    """The regression folder ``counterexamples/`` is explore's and the fixture's, not check's."""
    (tmp_path / "broken.py").write_text(BROKEN_FIX)
    argv = [str(BIN / "raceproof"), "check", "broken-fix", "--scenarios", "broken.py"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py"]
    asked = subprocess.run([*argv, "--out", "cx"], cwd=tmp_path, capture_output=True, timeout=600)
    assert asked.returncode == 1 and list((tmp_path / "cx").glob("broken-fix--fix--*.json"))


def test_stdout_on_the_full_file_system_keeps_the_verdicts_exit(tmp_path: Path) -> None:
    """``raceproof explore > log.txt`` under the limit: printing the result itself fails.

    It raised ``OSError`` out of a ``print`` ("internal error: this is a bug in
    raceproof", a traceback, exit 70); now the exit is the verdict's (1), stderr ends
    with one line saying the output is incomplete, and the log holds what fit. The
    other way: without the limit, the whole result and no warning.
    """
    argv = [str(BIN / "raceproof"), "explore", "lost-update", "--variant", "buggy"]
    for limit in (small_files, None):
        log = tmp_path / f"log-{limit is None}.txt"
        with log.open("w") as out:
            done = subprocess.run(
                argv,
                cwd=tmp_path,
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                timeout=600,
                preexec_fn=limit,
            )
        assert done.returncode == 1, done.stderr[-2000:]
        assert "Traceback" not in done.stderr and "bug in raceproof" not in done.stderr
        shown = log.read_text()
        if limit is None:
            assert done.stderr == "" and SHOWN["explore --out"] in shown
        else:
            lines = done.stderr.strip().splitlines()  # the counterexample's warning, then this
            assert lines[-1] == (
                "raceproof: warning: the output above is incomplete: stdout refused a write "
                "(File too large)"
            ), done.stderr
            assert all(line.startswith("raceproof: warning: ") for line in lines), done.stderr
            assert 0 < len(shown) <= 1024
