"""A user's small mistakes are named as the user's, in one line, with a "did you mean".

Why this module exists: a near-miss name (``lost-updat``, ``hypotesis``,
``--exmples``) was refused without the name meant; ``prove --examples 5`` pointed
at ``raceproof --help``, which does not list ``prove``'s options; a file that
registers no scenario was only "unknown scenario"; a typo in ``world.reach`` was
silently counted as a new probe; and in the pytest fixture a typo in ``expect=``
showed raceproof's own frames, one in the scenario's name "During handling of the
above exception". Each case here also has its correct twin, which must pass.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def one_line(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["explore", "lost-updat"], "'lost-update'"),
        (["explore", "lost-update", "--variant", "fix-ca"], "'fix-cas'"),
        (["explore", "lost-update", "--strategy", "hypotesis"], "'hypothesis'"),
        (["explore", "lost-update", "--exmples", "5"], "'--examples'"),
        (["chek"], "'check'"),
        (["repro", "lost-update", "--backend", "zookeepr"], "'zookeeper'"),
    ],
)
def test_a_near_miss_name_says_the_name_meant(tmp_path: Path, argv: list[str], meant: str) -> None:
    assert f"(did you mean {meant}?)" in one_line(run(tmp_path, *argv))


def test_a_far_miss_guesses_nothing(tmp_path: Path) -> None:
    line = one_line(run(tmp_path, "explore", "zzzzzz"))
    assert "unknown scenario 'zzzzzz'" in line and "did you mean" not in line


def test_an_option_of_another_command_points_at_its_commands_help(tmp_path: Path) -> None:
    line = one_line(run(tmp_path, "prove", "lost-update", "--examples", "5"))
    assert "see `raceproof prove --help`" in line
    assert "examples" in run(tmp_path, "explore", "--help").stdout  # explore takes it


def test_a_file_registering_no_scenario_says_so(tmp_path: Path) -> None:
    (tmp_path / "nothing.py").write_text("import raceproof\nNAME = 'mine'\n")
    line = one_line(run(tmp_path, "explore", "mine", "--scenarios", "nothing.py"))
    assert "nothing.py loaded but registers no scenario" in line


PROBED = """
import raceproof
from raceproof import Scenario

def build(world, variant, config):
    def a():
        yield world.sleep(1)
        world.reach(PROBE)
        world.log("a", "x")
    world.spawn("a", a())

@raceproof.checker
def fine(history):
    return None

raceproof.register(Scenario(
    name="probed", summary="one probe", variants={"v": "v"}, expect_violation=frozenset(),
    checkers=(fine,), build=build, probes=("writers-overlap",),
))
"""


def test_a_typo_in_a_probe_name_is_the_models_error(tmp_path: Path) -> None:
    (tmp_path / "typo.py").write_text(PROBED.replace("PROBE", "'writers-overlpa'"))
    done = run(tmp_path, "explore", "probed", "--scenarios", "typo.py", "--examples", "5")
    assert done.returncode == 4, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("E   ")]
    assert len(said) == 1 and "'writers-overlpa'" in said[0]
    assert "(did you mean 'writers-overlap'?)" in said[0]
    (tmp_path / "right.py").write_text(PROBED.replace("PROBE", "'writers-overlap'"))
    fine = run(tmp_path, "explore", "probed", "--scenarios", "right.py", "--examples", "5")
    assert fine.returncode == 0, fine.stdout + fine.stderr


FIXTURE_TEST = """
def test_gate(raceproof):
    raceproof.explore(SCENARIO, variant="fix-cas", expect=EXPECT, strategy="random", examples=5)
"""


@pytest.mark.parametrize(
    ("scenario", "expect", "said"),
    [
        ("'lost-update'", "'okk'", "expect must be 'ok' or 'violated', got 'okk' (did you mean"),
        ("'lost-updat'", "'ok'", "unknown scenario 'lost-updat' (did you mean 'lost-update'?)"),
    ],
)
def test_the_fixture_says_a_typo_without_raceproofs_frames(
    tmp_path: Path, scenario: str, expect: str, said: str
) -> None:
    body = FIXTURE_TEST.replace("SCENARIO", scenario).replace("EXPECT", expect)
    (tmp_path / "test_typo.py").write_text(body)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_typo.py"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    assert said in done.stdout
    assert "During handling" not in done.stdout and "expectations.py" not in done.stdout
    assert "catalogue.py" not in done.stdout and "UnknownName" not in done.stdout
    (tmp_path / "test_typo.py").write_text(
        FIXTURE_TEST.replace("SCENARIO", "'lost-update'").replace("EXPECT", "'ok'")
    )
    fine = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert fine.returncode == 0, fine.stdout
