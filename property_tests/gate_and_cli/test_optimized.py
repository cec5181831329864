"""Checks that survive ``python -O`` (issue 28): refusals and kernel contracts are code, not asserts.

Python drops every ``assert`` under ``-O`` or ``PYTHONOPTIMIZE``, as some CI
images and containers set it. A configuration refusal written as an assert
then let a refused configuration run and "hold"; a kernel contract written as
one let a broken run give a verdict. These tests run the command line under
``PYTHONOPTIMIZE=1`` and compare it with a plain run, keep ``assert`` out of
the built-in configurations (an AST scan), and pin the one-line message of a
refusal and the exception types of the kernel's checks.

The suite's ``-O`` pass is here too (its last section): six modules run again with
``PYTHONOPTIMIZE=1``, and ``test_bad_input.py`` once more under ``python -m pytest``, which
rewrites more asserts (a refusal's message must still be one line there); pytest still
rewrites the modules' own asserts under ``-O`` (hence its warning, silenced). They used to be
a second pytest command after the suite (``make test-optimized``), which ``make test``
waited for: 215 s of wall time at its end on this 2-core machine. As tests of the main pass
they run beside the rest; each is a pytest of its own in a subprocess, so the flag holds for
the whole interpreter, imports included.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import raceproof
from raceproof.sim import ReplaySource, World, execute
from raceproof.sim.configs import BadInput, apply_overrides, require
from raceproof.sim.errors import KernelError

ROOT = Path(__file__).resolve().parents[2]
RACEPROOF = str(Path(sys.executable).with_name("raceproof"))


def _run(argv: list[str], *, optimize: bool, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}
    if optimize:
        env["PYTHONOPTIMIZE"] = "1"
    return subprocess.run(
        [RACEPROOF, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


# -- a refused configuration: exit 2, one line naming the field, in every mode ---------------
REFUSALS = [
    (
        "lost-update",
        "clients=0",
        "CounterConfig refuses clients=0: clients must be >= 1: need at least one client",
    ),
    ("samza-drain", "containers=0", "SamzaConfig refuses containers=0: containers must be >= 1"),
    (
        "streams-checkpoint-resurrection",
        "poll_ms=0",
        "StreamsConfig refuses poll_ms=0: poll_ms must be > 0",
    ),
    (
        "brooklin-double-stop",
        "followers=0",
        "BrooklinConfig refuses followers=0: followers must be >= 1",
    ),
    (
        "coordinator-async-append",
        "threads=0",
        "CoordinatorConfig refuses threads=0: threads must be >= 1",
    ),
]


@pytest.mark.parametrize(("scenario", "setting", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refused_configuration_is_one_line_and_exit_2_under_pythonoptimize(
    scenario: str, setting: str, message: str, tmp_path: Path
) -> None:
    done = _run(["repro", scenario, "--set", setting], optimize=True, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""  # no verdict printed for a configuration that never ran
    assert done.stderr.splitlines() == [f"raceproof: error: {scenario}: --set: {message}"]
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_lost_update_refuses_clients_0_the_same_with_and_without_optimize(tmp_path: Path) -> None:
    argv = ["repro", "lost-update", "--set", "clients=0"]
    plain, optimized = (_run(argv, optimize=o, cwd=tmp_path) for o in (False, True))
    assert plain.returncode == optimized.returncode == 2
    assert plain.stderr == optimized.stderr and "clients" in plain.stderr
    # The same scenario with a configuration it accepts runs (the refusal above is not blanket).
    ok = _run(["repro", "lost-update", "--set", "clients=1"], optimize=True, cwd=tmp_path)
    assert ok.returncode == 0 and "verdict: ok" in ok.stdout, ok.stdout + ok.stderr


# -- the gate gives the same verdicts and counts, optimized or not ---------------------------
# test_check_any_jobs.py runs lost-update's and samza-drain's -j 2 checks (its smaller proof
# configuration) under PYTHONOPTIMIZE=1 and compares the JSON with its plain -j 1 run's.


# -- kernel contracts and misuse errors are kept under -O ------------------------------------
OPTIMIZED_CHECKS = """
import sys
assert False, "this line proves asserts are off"
from raceproof.sim import History, Lock, ReplaySource, World, execute
from raceproof.sim.errors import KernelError

def raised(kind, fn):
    try:
        fn()
    except kind as exc:
        return type(exc).__name__
    return "nothing"

world = World(ReplaySource([], strict=False))
lock = Lock(world, "l")
lock.try_acquire("A")
history = History()
history.append(5, "a", "x")

def kernel_bug(world):
    raise KernelError("planted")

print(raised(ValueError, lambda: world.source.choose("x", [])))
print(raised(ValueError, lambda: lock.release("B")))
print(raised(ValueError, lambda: world.timeout(1.5)))
print(raised(KernelError, lambda: history.append(4, "a", "x")))
print(raised(KernelError, lambda: execute(kernel_bug, ReplaySource([]), [])))
"""


def test_kernel_checks_hold_under_python_o(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-O", "-c", OPTIMIZED_CHECKS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ValueError"] * 3 + ["KernelError"] * 2


def test_a_kernel_error_is_never_a_finding_but_a_model_error_is() -> None:
    def kernel_bug(world: World) -> None:
        raise KernelError("planted")

    def model_bug(world: World) -> None:
        raise ValueError("the model's own")

    with pytest.raises(KernelError, match="planted"):
        execute(kernel_bug, ReplaySource([]), [])
    outcome = execute(model_bug, ReplaySource([]), [])  # the model's exception: its verdict
    assert outcome.status in ("violated", "error")


PLANTED = """
from dataclasses import dataclass

import raceproof
from raceproof import Scenario, checker
from raceproof.sim.errors import KernelError


@dataclass(frozen=True)
class Cfg:
    error: str = "kernel"


@checker("fine")
def fine(history):
    return None


def build(world, variant, config):
    def actor():
        yield world.sleep(world.source.choose("a.delay", (1, 2)))
        if world.now_ms == 2:
            raise (KernelError if config.error == "kernel" else ValueError)("planted")

    world.spawn("a", actor())


raceproof.register(Scenario(name="planted", summary="a planted failure", variants={"v": "v"},
    expect_violation=frozenset(), checkers=(fine,), build=build, config=Cfg(), prove_config=Cfg()))
"""


@pytest.mark.parametrize("optimize", [False, True])
def test_a_kernel_error_in_a_run_is_exit_70_and_a_model_error_is_not(
    optimize: bool, tmp_path: Path
) -> None:
    (tmp_path / "planted.py").write_text(PLANTED)
    load = ["--scenarios", "planted.py"]
    for argv in (["explore", "planted", "--examples", "20"], ["check", "planted"]):
        done = _run([*argv, *load], optimize=optimize, cwd=tmp_path)
        assert done.returncode == 70, done.stdout + done.stderr
        assert "KernelError: planted" in done.stderr.splitlines()[-1]
    model = ["explore", "planted", "--examples", "20", "--set", 'error="model"', *load]
    done = _run(model, optimize=optimize, cwd=tmp_path)
    assert done.returncode not in (0, 70), done.stdout + done.stderr  # the model's: a finding


# -- require, and a refusal's message stays one line whatever raised it ----------------------
def test_require_is_exported_and_refuses_with_bad_input() -> None:
    assert raceproof.require is require
    require(True, "never raised")
    with pytest.raises(BadInput, match=r"^clients must be >= 1$"):
        require(0, "clients must be >= 1")


@dataclasses.dataclass(frozen=True)
class Refusing:
    clients: int = 1
    why: str = "clients must be >= 1"
    kind: str = "value"

    def __post_init__(self) -> None:
        if self.clients < 1:
            error = {"value": ValueError, "type": TypeError, "assert": AssertionError}[self.kind]
            raise error(self.why)


@given(
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20), max_size=4),
    st.sampled_from(["value", "type", "assert"]),
)
def test_a_refusal_is_one_line_whatever_its_message(lines: list[str], kind: str) -> None:
    """As pytest's rewriting of a user's own assert appends "assert ..." lines to its message."""
    why = "\n".join(lines)
    with pytest.raises(BadInput) as caught:
        apply_overrides(Refusing(why=why, kind=kind), {"clients": 0})
    text = str(caught.value)
    assert "\n" not in text and "\r" not in text
    assert text.startswith("--set: Refusing refuses clients=0: ")
    first = why.strip().splitlines()[0].strip() if why.strip() else ""
    assert text.endswith(first or "its own checks fail")


# -- no assert in the built-in configurations and variant checks (an AST scan) ---------------
def asserts_in_configurations(source: str) -> list[str]:
    """``Class.method:line`` of every assert in a config class or a variant check of ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            is_config = node.name.endswith("Config") or any(
                "dataclass" in ast.unparse(d) for d in node.decorator_list
            )
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (
                    is_config or item.name in ("__post_init__", "validate", "__init__")
                ):
                    found += [
                        f"{node.name}.{item.name}:{a.lineno}"
                        for a in ast.walk(item)
                        if isinstance(a, ast.Assert)
                    ]
        if isinstance(node, ast.Assert) and "variant" in ast.unparse(node.test).lower():
            found.append(f"variant check:{node.lineno}")
    return sorted(set(found))


def test_the_scan_finds_an_assert_in_a_configuration() -> None:
    source = textwrap.dedent("""
        @dataclass
        class MyConfig:
            n: int = 1
            def __post_init__(self):
                assert self.n >= 1
        def build(world, variant, config):
            assert variant in VARIANTS
        """)
    assert asserts_in_configurations(source) == ["MyConfig.__post_init__:6", "variant check:8"]


def test_no_assert_in_the_built_in_configurations() -> None:
    models = sorted((ROOT / "models").rglob("*.py"))
    configs = 0
    for path in models:
        source = path.read_text()
        assert asserts_in_configurations(source) == [], path
        configs += source.count("require(")
    assert configs >= 20  # every model states its rules with require (not vacuous)


def test_the_guides_require_example_runs() -> None:
    """docs/tutorial/writing-a-scenario.md shows ``require`` in a configuration: that example runs as shown."""
    text = (ROOT / "docs" / "tutorial" / "writing-a-scenario.md").read_text()
    block = text.split("<!-- optimize:require-example -->", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {"__name__": "guide_example"}
    exec(compile(code, "writing-a-scenario.md", "exec", dont_inherit=True), namespace)
    assert namespace["message"].endswith("of the last reader's start")


# -- the suite's -O pass ---------------------------------------------------------------------
HERE = "property_tests/gate_and_cli"
PYTEST = str(Path(sys.executable).with_name("pytest"))

# Left out under -O: test_optimized.py's tests that run a command in a mode they set themselves
# (PYTHONOPTIMIZE=1 or none, or python -O): they run the same whatever the suite's mode, so the
# main pass has run each already (11 CPU s).
OPTIMIZED = f"{HERE}/test_optimized.py"
SETS_ITS_OWN_MODE = (
    f"{OPTIMIZED}::test_a_refused_configuration_is_one_line_and_exit_2_under_pythonoptimize",
    f"{OPTIMIZED}::test_lost_update_refuses_clients_0_the_same_with_and_without_optimize",
    f"{OPTIMIZED}::test_kernel_checks_hold_under_python_o",
    f"{OPTIMIZED}::test_a_kernel_error_in_a_run_is_exit_70_and_a_model_error_is_not",
)
# And the catalogue's largest holding proofs run whole in the main pass only; under -O a smaller
# proof of the same scenario still holds, so every scenario has a proof of each verdict here:
# - brooklin-double-stop's 4,096 classes (judged by both Brooklin scenarios' checkers) and 1,016:
#   the same model and kernel code still run in its buggy and fix-zk-lookup variants, whose
#   violations the catalogue test requires (its holding proofs are test_check_any_jobs' smaller
#   ones, which the main pass compares on -j 1 and -j 2);
# - samza-drain's drain (1,504 classes, 15 CPU s): test_check_any_jobs proves it on the smaller
#   configuration (812) on -j 1 and on -j 2 under -O and compares the JSON reports, counts included;
#   its seven violated variants run here;
# - coordinator-async-append's verify-then-write (7.5 CPU s): block-event-loop, a holding proof
#   of the same model (3 CPU s), runs here with its footprints checked.
CATALOGUE = f"{HERE}/test_catalogue.py::test_prove_agrees_with_the_catalogue"
OPTIMIZED_LARGEST = (
    f"{CATALOGUE}[brooklin-double-stop+brooklin-redundant-stop/fix-stop-dedupe]",
    f"{CATALOGUE}[brooklin-double-stop/fix-conditional-write]",
    f"{CATALOGUE}[samza-drain/drain]",
    f"{CATALOGUE}[coordinator-async-append/verify-then-write]",
)
# And two of the three files a pytest database may not be (its refusal is the same check; each
# is two pytests of their own, 3 CPU s under -O): "a file" runs under -O.
HOSTILE = f"{HERE}/test_hostile_world.py::test_a_pytest_database_that_is_no_folder_stops_the_run"
OPTIMIZED_SAME_REFUSAL = (f"{HOSTILE}[/dev/null]", f"{HOSTILE}[under a file]")
# And test_gate's wheel build (pip and setuptools package the source; no raceproof code runs,
# so no assert of it: 3.4 CPU s).
WHEEL = f"{HERE}/test_gate.py::test_the_wheel_installs_raceproof_as_its_only_top_level_package"
# This pass's own tests (they are in one of the six modules): not again inside it.
THIS_PASS = (
    f"{HERE}/test_optimized.py::test_suite_pass_modules_under_pythonoptimize",
    f"{HERE}/test_optimized.py::test_suite_pass_refusals_under_python_m_pytest",
)
# The six modules, in three pytest runs of about the same CPU (measured under -O with the tests
# above left out: the catalogue 15.1 CPU s, the hostile world 15.1, the other four 13.3).
OPTIMIZED_RUNS = {
    "catalogue": ("test_catalogue.py",),
    "hostile-world": ("test_hostile_world.py",),
    "cli-gate-refusals": (
        "test_bad_input.py",
        "test_cli.py",
        "test_gate.py",
        "test_optimized.py",
    ),
}


def _pytest(argv: list[str], *, optimize: bool) -> subprocess.CompletedProcess[str]:
    # A pytest of its own: not this worker's xdist variables, nor this run's -O setting.
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONOPTIMIZE" and not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))
    }
    if optimize:
        env["PYTHONOPTIMIZE"] = "1"
    return subprocess.run(
        [*argv, "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=1800,
    )


def _passed(done: subprocess.CompletedProcess[str]) -> int:
    """How many tests the run passed; it must have failed, errored and skipped none."""
    said = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, said
    summary = done.stdout.strip().splitlines()[-1]
    assert not re.search(r"\b(failed|errors?|skipped)\b", summary), said
    found = re.search(r"(\d+) passed", summary)
    assert found is not None, said
    return int(found.group(1))


@pytest.mark.parametrize("run", sorted(OPTIMIZED_RUNS))
def test_suite_pass_modules_under_pythonoptimize(run: str) -> None:
    files = [f"{HERE}/{name}" for name in OPTIMIZED_RUNS[run]]
    deselect = [*SETS_ITS_OWN_MODE, *OPTIMIZED_LARGEST, *OPTIMIZED_SAME_REFUSAL, WHEEL]
    deselect += THIS_PASS
    argv = [PYTEST, "-W", "ignore::pytest.PytestConfigWarning"]
    for test in deselect:
        argv += ["--deselect", test]
    done = _pytest([*argv, *files], optimize=True)
    # Not vacuous: every module ran (a test per module at least; the catalogue runs 21 of its 25).
    assert _passed(done) >= (20 if run == "catalogue" else 10)


def test_suite_pass_refusals_under_python_m_pytest() -> None:
    done = _pytest([sys.executable, "-m", "pytest", f"{HERE}/test_bad_input.py"], optimize=False)
    assert _passed(done) >= 10
