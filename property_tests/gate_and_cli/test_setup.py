"""Set-up a newcomer can finish: ``make demo`` without root, the optional parts as extras.

Why it exists: the README's set-up once wanted root for apt-get in ``make
demo`` though the gate only simulates, and nothing said how to call
``raceproof`` from outside ``.venv`` or what PySpark costs (issue 37). These
tests pin the Makefile's shape (``demo`` pulls no system package, prints how to
put ``raceproof`` on the PATH; ``test`` still installs what CI needs), the
refusal of an apt step as a non-root user, and the ``spark`` extra: core
raceproof installs without PySpark, and the commands that need it refuse in
one line naming the extra.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from raceproof.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_TARGETS = {"zookeeper", "postgres", "browser"}


def prerequisites(target: str) -> set[str]:
    text = (ROOT / "Makefile").read_text()
    found = re.search(rf"^{target}:(.*)$", text, flags=re.MULTILINE)
    assert found is not None, target
    return set(found.group(1).split())


def made_by(target: str) -> set[str]:
    """The targets ``target`` names: its prerequisites and those its recipe's ``$(MAKE)`` makes."""
    text = (ROOT / "Makefile").read_text()
    found = re.search(rf"^{target}:.*\n((?:\t.*\n)*)", text, flags=re.MULTILINE)
    assert found is not None, target
    calls = re.findall(r"\$\(MAKE\)((?: \S+)+)", found.group(1))
    return prerequisites(target) | {word for call in calls for word in call.split()}


def dry_run(*argv: str) -> str:
    done = subprocess.run(
        ["make", "-n", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_make_demo_pulls_no_system_package_and_says_how_to_reach_raceproof() -> None:
    assert not prerequisites("demo") & SYSTEM_TARGETS
    recipe = dry_run("demo")
    assert "apt-get" not in recipe and ".venv/bin/raceproof check -j 2" in recipe
    assert f"source {ROOT}/.venv/bin/activate" in recipe
    assert f'export PATH=\\"{ROOT}/.venv/bin:\\$PATH\\"' in recipe
    assert made_by("test") >= SYSTEM_TARGETS  # what CI (as root) needs, still installed
    # The PATH line first (the gate takes minutes), then the gate.
    assert recipe.index("export PATH=") < recipe.index(".venv/bin/raceproof check -j 2")


def test_make_test_draws_the_same_hypothesis_examples_on_every_run() -> None:
    """The suite runs the derandomized profile unless told otherwise: a gate is never flaky."""
    from hypothesis import settings

    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)*)", text, flags=re.MULTILINE)
    assert recipe is not None
    assert "HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENV)/bin/pytest" in recipe.group(1)
    assert re.search(r"^HYPOTHESIS_PROFILE \?= ci$", text, flags=re.MULTILINE)
    assert settings.get_profile("ci").derandomize


def test_make_test_says_the_missing_system_parts_before_any_install(tmp_path: Path) -> None:
    """As another user (an ``id`` saying 1000), with chromium missing: one line, nothing run."""
    text = (ROOT / "Makefile").read_text()
    first = re.search(r"^test:(.*)$", text, flags=re.MULTILINE)
    assert first is not None and first.group(1).split()[0] == "system-parts"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text("#!/bin/sh\necho 1000\n")
    (fake / "id").chmod(0o755)
    # Only the tools the recipe calls, chromium not among them: it is missing here.
    for tool in ("sh", "ls", "command", "make", "npm"):
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True)
        if found.stdout.startswith("/"):
            (fake / tool).symlink_to(found.stdout.strip())
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-C", str(ROOT), "system-parts"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "pip install" not in done.stdout  # the target installs nothing itself
    done = subprocess.run(
        [str(fake / "make"), "--no-print-directory", "-C", str(ROOT), "system-parts"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(fake)},
        timeout=60,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    said = done.stdout.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("make test: Debian's") and "chromium" in said[0]


def test_an_apt_step_as_another_user_names_the_package_and_stops(tmp_path: Path) -> None:
    """``need_root`` as the recipes run it, under an ``id`` that says uid 1000."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text("#!/bin/sh\necho 1000\n")
    (fake / "id").chmod(0o755)
    makefile = tmp_path / "Makefile"
    text = (ROOT / "Makefile").read_text()
    definition = re.search(r"^need_root = .*?exit 1; fi$", text, flags=re.MULTILINE | re.DOTALL)
    assert definition is not None
    makefile.write_text(
        definition.group(0) + "\n\nzookeeper:\n\t@$(call need_root,zookeeper); echo installing\n"
    )
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["make", "--no-print-directory", "-f", str(makefile), "zookeeper"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0 and "installing" not in done.stdout
    assert done.stdout.strip() == (
        "make zookeeper: Debian's zookeeper is missing; install it as root "
        "(sudo make zookeeper, or sudo apt-get install -y zookeeper)"
    )


def test_pyspark_is_the_spark_extra_and_the_suite_installs_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    assert "pyspark" not in core and "pyarrow" not in core
    extras = project["optional-dependencies"]
    for extra in ("spark", "dev"):
        names = {re.split(r"[<>=\[]", d)[0] for d in extras[extra]}
        assert {"pyspark", "pyarrow"} <= names, extra


def test_pandas_is_pinned_to_what_pyspark_supports_in_both_spark_extras() -> None:
    """PySpark 4.3.0 warns on pandas >= 3.0.0 and needs >= 2.2.0; pyspark[sql] gives the floor only."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in ("spark", "dev"):
        (pin,) = [d for d in extras[extra] if re.split(r"[<>=\[]", d)[0] == "pandas"]
        bounds = set(pin.removeprefix("pandas").replace(" ", "").split(","))
        assert bounds == {">=2.2", "<3"}, (extra, pin)


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["spark-check", "--pipeline", "mine:make"], "pyspark"),
        (["campaign", "--seeds", "1"], "pyspark, pyarrow"),
        (["repro", "samza-drain", "--backend", "spark"], "pyspark"),
    ],
)
def test_a_spark_command_without_the_extra_refuses_in_one_line(
    argv: list[str],
    missing: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    real = importlib.util.find_spec

    def without_spark(name: str, *rest: Any) -> Any:
        return None if name in ("pyspark", "pyarrow") else real(name, *rest)

    monkeypatch.setattr(importlib.util, "find_spec", without_spark)
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert f"raceproof {argv[0]} needs {missing}, which is not installed" in line
    assert "pip install 'raceproof[spark]'" in line
    monkeypatch.setattr(importlib.util, "find_spec", real)
    assert main(["check", "lost-update", "--examples", "5", "--json"]) == 0  # no extra needed


def test_the_plugin_names_how_to_register_an_unknown_scenario(tmp_path: Path) -> None:
    """A fresh project's test of a scenario nobody registered: one line, no traceback."""
    (tmp_path / "test_gate.py").write_text(
        "def test_it(raceproof):\n    raceproof.explore('stale-cache', variant='fix-lease')\n"
    )
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        [str(bin_dir / "pytest"), "-q", "-p", "no:cacheprovider", "test_gate.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    failures = [ln for ln in done.stdout.splitlines() if "unknown scenario 'stale-cache'" in ln]
    assert len(failures) >= 1, done.stdout
    assert "[tool.raceproof] scenarios" in failures[0] and "--scenarios" in failures[0]
    assert "--raceproof-scenarios" in failures[0]
    assert "Traceback" not in done.stdout and "UnknownName" not in done.stdout
    assert "catalogue.py" not in done.stdout  # no frame of raceproof's own
