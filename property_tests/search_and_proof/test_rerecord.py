"""Counterexamples that survive an upgrade: an out-of-date file says what to do, and re-records.

Why it exists: a user's stored counterexamples go out of date when the model
or the kernel changes what a run logs, though the same choices still violate
(issue 37). Here a project's model is changed on purpose, in a way that keeps
the violation (one more op logged before the check): ``replay`` must refuse
the file in one line that names the difference, says the same choices still
violate, and gives the re-record command; the pytest regression fails with the
same line; the command re-records the file and the regression passes. The
pytest option does the same for the whole folder. A change that removes the
violation is named as such and never re-recorded. ``prove`` and ``repro``
write no counterexample unless ``--out`` asks for one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from property_tests.doc_examples import ROOT

BIN = Path(sys.executable).parent
PYPROJECT = """\
[tool.raceproof]
scenarios = ["races.py"]

[tool.pytest.ini_options]
raceproof_counterexamples = "counterexamples"
"""
CHECK = '        owner, version = store.get("/owner")  # check ...\n'
LOGGED = '        world.log(me, "checking")\n' + CHECK


def readme_model() -> str:
    """The README's own ``races.py`` (the double-claim race), as printed there."""
    text = (ROOT / "README.md").read_text()
    start = text.index("# races.py")
    return text[start : text.index("```", start)]


def run(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "COLUMNS": "200"},
    )


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project with one stored counterexample of double-claim/buggy; (folder, file)."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "races.py").write_text(readme_model())
    found = run(tmp_path, "raceproof", "explore", "double-claim", "--variant", "buggy", "--json")
    assert found.returncode == 1, found.stderr
    return tmp_path, tmp_path / json.loads(found.stdout)["counterexample"]


def regression(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return run(folder, "pytest", "-q", "-p", "no:cacheprovider", *options)


def test_an_out_of_date_counterexample_says_so_and_is_re_recorded(tmp_path: Path) -> None:
    folder, saved = project(tmp_path)
    verbose = regression(folder, "-v", "-v")  # -q from regression(), so verbosity 1
    assert verbose.returncode == 0
    assert f"counterexamples/{saved.name}::double-claim[buggy] PASSED" in verbose.stdout
    model = folder / "races.py"
    model.write_text(model.read_text().replace(CHECK, LOGGED))  # the violation stays
    before = saved.read_bytes()

    refused = run(folder, "raceproof", "replay", str(saved))
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert "out of date: the replay diverges from the recorded timeline at op #0" in line
    assert "now #0" in line and "checking" in line  # the difference, named
    assert "the same choices still violate one-owner" in line
    assert f"raceproof replay {saved} --rerecord" in line
    failed = regression(folder)
    assert failed.returncode == 1 and "still violate one-owner" in failed.stdout
    assert "--rerecord" in failed.stdout and saved.read_bytes() == before

    rerecorded = run(folder, "raceproof", "replay", str(saved), "--rerecord", "--json")
    assert rerecorded.returncode == 1, rerecorded.stderr  # the replay violates, as recorded
    result = json.loads(rerecorded.stdout)
    assert result["rerecorded"] is True and result["same_trace_hash"] is True
    assert saved.read_bytes() != before
    assert regression(folder).returncode == 0
    again = run(folder, "raceproof", "replay", str(saved), "--rerecord")
    assert again.returncode == 1 and "is up to date: nothing re-recorded" in again.stdout


def test_the_pytest_option_re_records_the_whole_folder(tmp_path: Path) -> None:
    folder, saved = project(tmp_path)
    model = folder / "races.py"
    model.write_text(model.read_text().replace(CHECK, LOGGED))
    assert regression(folder).returncode == 1
    assert regression(folder, "--raceproof-rerecord").returncode == 0
    assert regression(folder).returncode == 0  # written: the plain run passes too
    assert json.loads(saved.read_text())["timeline"][0]["kind"] == "checking"


def test_choices_that_no_longer_violate_are_named_and_never_re_recorded(tmp_path: Path) -> None:
    folder, saved = project(tmp_path)
    model = folder / "races.py"
    # The buggy variant made safe: its write becomes the conditional one.
    model.write_text(model.read_text().replace('if variant == "buggy":', "if False:"))
    before = saved.read_bytes()
    for argv in (("replay", str(saved)), ("replay", str(saved), "--rerecord")):
        refused = run(folder, "raceproof", *argv)
        assert refused.returncode == 2
        (line,) = refused.stderr.splitlines()
        assert "the same choices no longer violate (verdict now ok)" in line
    assert saved.read_bytes() == before
    failed = regression(folder, "--raceproof-rerecord")
    assert failed.returncode == 1 and "no longer violate" in failed.stdout


def test_prove_and_repro_write_a_counterexample_only_when_asked(tmp_path: Path) -> None:
    folder, saved = project(tmp_path)
    saved.unlink()
    for argv in (
        ("prove", "double-claim", "--variant", "buggy"),
        ("repro", "double-claim", "--variant", "buggy", "--choices", "2:0=1"),
    ):
        done = run(folder, "raceproof", *argv)
        assert done.returncode == 1, done.stderr
        assert "counterexample: not saved (--out DIR saves it" in done.stdout
    assert list((folder / "counterexamples").glob("*.json")) == []
    asked = run(folder, "raceproof", "prove", "double-claim", "--variant", "buggy", "--out", "cx")
    assert asked.returncode == 1 and len(list((folder / "cx").glob("*.json"))) == 1
