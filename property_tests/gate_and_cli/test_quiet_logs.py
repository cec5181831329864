"""A CI log stays quiet: ``check`` says one line per check off a terminal, and a story once.

Why this module exists: with stderr not a terminal (every CI log) ``check`` printed a
line per part and per proof unit (2,501 ``prove: unit ...`` lines in one ``make
demo``), and a broken fix printed its shrunk timeline four times (once per strategy
and for the proof), the JUnit file four times too. Now off a terminal stderr holds
one line per check, and the timeline is printed once, with the strategies that also
found it listed under it; the JUnit file holds it once, the other failures naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from property_tests.gate_and_cli.test_full_disk import BROKEN_FIX as FOUND_BY_ALL

BIN = Path(sys.executable).parent

# A fix that does not hold, in 3 parts per search: every strategy and the proof find it.
BROKEN_FIX = FOUND_BY_ALL.replace("default_examples=20", "default_examples=600")


def test_check_off_a_terminal_says_one_line_per_check_and_each_story_once(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN_FIX)
    argv = ["check", "broken-fix", "--scenarios", "broken.py", "--junit", "j.xml"]
    done = subprocess.run(
        [str(BIN / "raceproof"), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1, done.stderr[-2000:]
    # 4 checks (3 searches of 3 parts each, and the proof): one line each, no part, no unit.
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 4, done.stderr
    assert all(" done (" in line for line in lines) and "unit" not in done.stderr
    assert done.stdout.count("shrunk timeline:\n") == 1  # the story, once
    also = [line for line in done.stdout.splitlines() if line.startswith("also found by: ")]
    assert len(also) == 1 and all(word in also[0] for word in ("hypothesis", "pct", "proof"))
    assert done.stdout.count("  wrote  value=") == 2  # its two writes, in one timeline
    junit = (tmp_path / "j.xml").read_text()
    assert junit.count("<failure") == 4
    assert junit.count("shrunk timeline:\n") == 1 and junit.count("(printed once)") == 3
