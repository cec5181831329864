"""raceproof as a user meets it: an installed raceproof, a project of one's own, subprocess calls.

The guide's worked example (``docs/examples/stale_cache``) is copied into a
temporary directory outside the repository and driven through the console
script and pytest, as its README-reading user would.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "stale_cache"


def run(
    cwd: Path, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / argv[0]), *argv[1:]]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "my-service"
    shutil.copytree(
        EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", "counterexamples")
    )
    return folder


def repro_of(output: str) -> list[str]:
    line = next(ln for ln in output.splitlines() if ln.startswith("repro: "))
    argv = shlex.split(line.removeprefix("repro: "))
    assert argv[0] == "raceproof"
    return argv


def test_a_user_scenario_is_listed_explored_proven_and_replayed(project: Path) -> None:
    listed = run(project / "tests", "raceproof", "list", "--json")  # the nearest parent's pyproject
    assert listed.returncode == 0, listed.stderr
    names = [s["scenario"] for s in json.loads(listed.stdout)["scenarios"]]
    assert "stale-cache" in names and "lost-update" in names  # the user's and the built-in ones

    found = run(
        project, "raceproof", "explore", "stale-cache", "--variant", "buggy", "--examples", "100"
    )
    assert found.returncode == 1, found.stderr
    assert "cache-not-stale" in found.stdout and "deviations from FIFO (1)" in found.stdout
    path = next(ln for ln in found.stdout.splitlines() if ln.startswith("counterexample: "))
    counterexample = path.removeprefix("counterexample: ")

    again = run(project, *repro_of(found.stdout))  # the printed repro line, as printed
    assert again.returncode == 1, again.stderr
    assert "VIOLATED  cache-not-stale" in again.stdout

    proof = run(project, "raceproof", "prove", "stale-cache", "--variant", "fix-lease", "--json")
    assert proof.returncode == 0, proof.stderr
    assert json.loads(proof.stdout)["complete"] is True

    exact = run(project, "raceproof", "replay", counterexample, "--json")
    assert exact.returncode == 1 and json.loads(exact.stdout)["same_trace_hash"] is True
    holds = run(project, "raceproof", "replay", counterexample, "--variant", "fix-lease", "--json")
    assert holds.returncode == 0, holds.stdout
    assert json.loads(holds.stdout)["reached"] is True
    wrong_fix = run(project, "raceproof", "replay", counterexample, "--variant", "fix-add-only")
    assert wrong_fix.returncode == 1 and "VIOLATED  cache-not-stale" in wrong_fix.stdout


def test_scenarios_from_the_command_line_repro_and_determinism(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'elsewhere'\n")
    shutil.copy(EXAMPLE / "stale_cache.py", tmp_path / "races.py")
    found = run(
        tmp_path,
        "raceproof",
        "explore",
        "stale-cache",
        "--scenarios",
        "races.py",
        "--variant",
        "buggy",
        "--strategy",
        "pct",
        "--examples",
        "50",
    )
    assert found.returncode == 1, found.stderr
    argv = repro_of(found.stdout)
    assert argv[-2:] == ["--scenarios", "races.py"]
    again = run(tmp_path, *argv, "--check-determinism")
    assert again.returncode == 1, again.stderr
    assert "determinism: same trace hash in two processes" in again.stdout
    # Without --scenarios the scenario is unknown here: the repro line needs what it carries.
    unknown = run(tmp_path, "raceproof", "list", "--json")
    assert "stale-cache" not in unknown.stdout


def test_a_module_that_fails_to_load_exits_2_naming_file_line_and_error(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import raceproof\n\nraise RuntimeError('no database')\n")
    done = run(tmp_path, "raceproof", "--scenarios", "broken.py", "list")
    assert done.returncode == 2
    assert f"{tmp_path / 'broken.py'}:3: RuntimeError: no database" in done.stderr
    assert "Traceback" not in done.stderr
    (tmp_path / "twice.py").write_text(
        (EXAMPLE / "stale_cache.py").read_text().replace('name="stale-cache"', 'name="lost-update"')
    )
    done = run(tmp_path, "raceproof", "list", "--scenarios", "twice.py")
    assert done.returncode == 2 and "'lost-update' is registered twice" in done.stderr
    line = re.search(r"twice\.py:(\d+): RegistrationError", done.stderr)
    assert (
        line is not None
        and "raceproof.register("
        in (tmp_path / "twice.py").read_text().splitlines()[int(line.group(1)) - 1]
    )


def test_pytest_gate_failure_message_database_and_junit(project: Path) -> None:
    found = run(
        project, "raceproof", "explore", "stale-cache", "--variant", "buggy", "--examples", "100"
    )
    assert found.returncode == 1
    (project / "tests" / "test_wrong_expectation.py").write_text(
        "def test_buggy_holds(raceproof):\n"
        "    raceproof.explore('stale-cache', variant='buggy', expect='ok', strategy='random')\n"
    )
    junit = project / "junit.xml"
    done = run(project, "pytest", "-n", "2", f"--junitxml={junit}", "-p", "no:cacheprovider")
    assert done.returncode == 1, done.stdout[-3000:]
    out = done.stdout
    assert "stale-cache / buggy: expected ok, got violated" in out
    assert "t=30ms  reader0  cache.fill  value=old@example.com" in out  # the shrunk timeline
    assert "deviations from FIFO (1): draw #3 reader0.db-read = option 1 of 2" in out
    assert "repro: raceproof repro stale-cache --variant buggy --choices 6:3=1" in out
    assert re.search(r"counterexample: .*counterexamples/stale-cache--buggy--\w+\.json", out)
    cases = {
        (c.get("classname"), c.get("name")): c for c in ET.parse(junit).getroot().iter("testcase")
    }
    database = [k for k in cases if k[0].startswith("counterexamples.stale-cache--buggy--")]
    assert sorted(name for _, name in database) == ["stale-cache[buggy]", "stale-cache[fix-lease]"]
    assert all(cases[k].find("failure") is None for k in database)
    recorded = {p.get("name") for p in ET.parse(junit).getroot().iter("property")}
    for variant in ("buggy", "fix-add-only", "fix-lease"):
        assert f"raceproof stale-cache / {variant} / random" in recorded
    assert "raceproof stale-cache / fix-lease / prove" in recorded
    assert "1 failed, 5 passed" in out


def test_database_replay_that_is_not_reached_never_passes(project: Path) -> None:
    """A stored file whose deviation never comes up on a fix: the fix's test fails, "not reached"."""
    found = run(
        project,
        "raceproof",
        "repro",
        "stale-cache",
        "--report-timeline",
        "--out",
        "counterexamples",
        "--json",
    )
    path = Path(json.loads(found.stdout)["counterexample"])
    raw = json.loads((project / path).read_text())
    raw["choices"].append(["reader7.db-read", 2, 1])  # a reader this configuration never starts
    values = [c[2] for c in raw["choices"]]
    raw["blob"] = f"{len(values)}:" + ",".join(f"{i}={v}" for i, v in enumerate(values) if v)
    raw["deviations"] = sum(1 for v in values if v)  # the file stays true to its choices
    (project / path).write_text(json.dumps(raw))
    done = run(project, "pytest", str(path.parent), "-p", "no:cacheprovider", "-q")
    assert done.returncode == 1, done.stdout[-3000:]
    assert (
        "not reached: its deviations reader7.db-read#0=1 never came up on fix-lease" in done.stdout
    )
    assert (
        "[buggy]" in done.stdout and "out of date" in done.stdout
    )  # its own replay no longer fits
    assert "2 failed" in done.stdout
