"""No verdict a model can fake (issue 33, item 3): whatever the model's code raises is ``error``.

A model whose code leaves by ``sys.exit(0)``, ``sys.exit("bye")``, a
``KeyboardInterrupt`` or ``GeneratorExit`` it raises itself, a
``BaseException`` of its own or an exception whose ``str()`` raises, in its
build, an actor, a checker or a step hook (an ``always()`` invariant), must
read as the verdict ``error``, exit 4, with one line naming what it raised, on
``check``, ``explore``, ``prove``, ``replay`` and ``repro``, and must fail a
pytest-fixture gate. Before, ``sys.exit(0)`` passed the gate (exit 0),
``sys.exit("bye")`` read as a found race (exit 1), a raised
``KeyboardInterrupt`` as an interrupt (130) and the rest as raceproof's bug
(70). Raised at import, each is one line naming it and exit 2 (the project does
not load), as any other import failure. Only a real signal is 130/143 (a test
sends one).

The commands run in-process (``raceproof.cli.main``, which is what the console
script calls), the fixture in a subprocess. That a real signal still stops a
search with 130/143 is ``test_interrupts``' (it sends them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from property_tests import hostile_models as hostile
from raceproof.cli.main import main

BIN = Path(sys.executable).parent
RUNNING = ("build", "actor", "checker", "hook")  # where the code runs inside a run


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every hostile scenario file, once per module (a scenario name registers once per process)."""
    folder = tmp_path_factory.mktemp("hostile")
    for kind in hostile.KINDS:
        for where in hostile.WHERES:
            hostile.scenario_file(folder, kind, where)
    return folder


def _run(
    capsys: pytest.CaptureFixture[str], models: Path, kind: str, where: str, *argv: str
) -> tuple[int, str, str]:
    path = models / f"{hostile.scenario_name(kind, where).replace('-', '_')}.py"
    code = main([*argv, "--scenarios", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_no_internal_error(err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err


@pytest.mark.parametrize("where", RUNNING)
@pytest.mark.parametrize("kind", hostile.KINDS)
def test_whatever_the_model_raises_is_error_exit_4_naming_it(
    kind: str, where: str, models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = hostile.scenario_name(kind, where)
    said = hostile.names(kind)
    out_dir = str(tmp_path / "cx")
    for command in (
        ["explore", name, "--variant", "buggy", "--examples", "5", "--out", out_dir],
        ["explore", name, "--strategy", "hypothesis", "--examples", "5", "--out", out_dir],
        ["prove", name, "--variant", "fixed", "--out", out_dir],
        ["repro", name, "--variant", "buggy", "--seed", "3", "--out", out_dir],
    ):
        code, out, err = _run(capsys, models, kind, where, *command)
        assert code == 4, (command, code, out, err)
        assert f"E   {said}" in out.splitlines(), (command, out)  # the one line naming it
        _assert_no_internal_error(err)
        code, out, err = _run(capsys, models, kind, where, *command, "--json")
        result = json.loads(out)
        assert code == 4 and result["verdict"] == "error", (command, result)
        error = result["error"]
        assert f"{error['type'].rpartition('.')[2]}: {error['message']}".removesuffix(": ") == said
        _assert_no_internal_error(err)
    code, out, err = _run(capsys, models, kind, where, "check", name, "--json")
    results = json.loads(out)["results"]
    assert code == 4, (code, out, err)
    erring = [r for r in results if r["verdict"] == "error"]
    assert erring and all(r["status"] == "error" for r in erring)
    assert not [r for r in results if r["verdict"] != "error" and r["variant"] != "quiet"]
    assert {r["error"]["type"].rpartition(".")[2] for r in erring} == {said.partition(":")[0]}
    code, out, err = _run(capsys, models, kind, where, "check", name)
    assert code == 4 and f"E   {said}" in out.splitlines()
    _assert_no_internal_error(err)


@pytest.mark.parametrize("where", RUNNING)
@pytest.mark.parametrize("kind", hostile.KINDS)
def test_replaying_onto_a_hostile_variant_is_error(
    kind: str, where: str, models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The quiet variant violates and is saved; its counterexample replayed onto a raising one."""
    name = hostile.scenario_name(kind, where)
    code, out, _ = _run(
        capsys,
        models,
        kind,
        where,
        "explore",
        name,
        "--variant",
        "quiet",
        "--examples",
        "5",
        "--out",
        str(tmp_path),
        "--json",
    )
    saved = json.loads(out)["counterexample"]
    assert code == 1 and saved
    for variant in ("quiet", "buggy"):
        code, out, err = _run(
            capsys, models, kind, where, "replay", saved, "--variant", variant, "--json"
        )
        result = json.loads(out)
        if variant == "quiet":  # its own variant: the violation, replayed exactly
            assert (code, result["verdict"], result["same_trace_hash"]) == (1, "violated", True)
            continue
        assert code == 4 and result["verdict"] == "error", result
        _assert_no_internal_error(err)
        code, out, err = _run(capsys, models, kind, where, "replay", saved, "--variant", variant)
        assert code == 4 and f"E   {hostile.names(kind)}" in out.splitlines(), out


@pytest.mark.parametrize("kind", hostile.KINDS)
def test_raised_at_import_is_one_line_exit_2(
    kind: str, models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = hostile.scenario_name(kind, "import")
    for command in (["list"], ["check", name], ["explore", name, "--examples", "1"]):
        code, out, err = _run(capsys, models, kind, "import", *command)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (command, code, err)
        assert lines[0].startswith("raceproof: error: cannot load scenarios from ")
        named = hostile.names(kind).replace("SystemExit: ", "it called ")
        assert lines[0].endswith(named), lines[0]
        assert out == ""


def test_the_pytest_fixture_fails_every_hostile_model(models: Path, tmp_path: Path) -> None:
    """A fixture gate (a search expecting ``violated``, a proof expecting ``ok``) fails on
    each hostile model; pytest is not stopped by a ``KeyboardInterrupt`` the model raised."""
    tests = ["import pytest", ""]
    kinds = hostile.KINDS
    for kind in kinds:
        for where in RUNNING:
            name = hostile.scenario_name(kind, where)
            tests += [
                f"def test_{name.replace('-', '_')}(raceproof):",
                f"    raceproof.explore({name!r}, variant='buggy', expect='violated',",
                "                      strategy='random', examples=5)",
                "",
                f"def test_{name.replace('-', '_')}_proof(raceproof):",
                f"    raceproof.prove({name!r}, variant='fixed', expect='ok')",
                "",
            ]
    (tmp_path / "test_gates.py").write_text("\n".join(tests))
    scenarios = [
        arg
        for kind in kinds
        for where in RUNNING
        for arg in (
            "--raceproof-scenarios",
            str(models / f"{hostile.scenario_name(kind, where).replace('-', '_')}.py"),
        )
    ]
    done = subprocess.run(
        [str(BIN / "pytest"), "-p", "no:cacheprovider", "-q", "-rf", *scenarios, "test_gates.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    total = 2 * len(kinds) * len(RUNNING)  # a search and a proof of each
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"{total} failed" in done.stdout and "passed" not in done.stdout, done.stdout[-3000:]
    assert "! KeyboardInterrupt !" not in done.stdout  # no session stopped by a fake Ctrl-C
    for kind in kinds:
        assert done.stdout.count(f"E   {hostile.names(kind)}") >= 2 * len(RUNNING), kind


@pytest.mark.parametrize("kind", hostile.KINDS)
def test_a_pipeline_factory_that_raises_anything_is_error_exit_4(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``spark-check --pipeline`` calls the factory before Spark starts: its raise is exit 4.

    A ``KeyboardInterrupt`` it raised was 130 ("interrupted by SIGINT", no signal
    sent), ``GeneratorExit`` and a ``BaseException`` of its own 70.
    """
    statement = hostile.RAISES[kind][0]
    path = tmp_path / f"factory_{kind.replace('-', '_')}.py"
    path.write_text(
        "import sys\n\n"
        "class Hostile(BaseException):\n    pass\n\n"
        "class BadStr(Exception):\n    def __str__(self):\n        raise ValueError('no')\n\n"
        f"def pipeline():\n    {statement}\n"
    )
    code = main(["spark-check", "--pipeline", f"{path}:pipeline"])
    out, err = capsys.readouterr()
    said = hostile.names(kind)
    assert code == 4, (code, out, err)
    assert f"pipeline error: the factory pipeline() of {path} raised {said}" in err, err
    _assert_no_internal_error(err)
    assert "interrupted" not in err


RAISES_LATER = """
import os
import sys

import raceproof
from raceproof.sim import checker, ok, violated

FLAG = {flag!r}


def writer(world, name, shared):
    yield world.sleep(world.source.choose(name + ".gap", (0, 1)))
    if name == "w0":
        shared["count"] += 1
        world.log(name, "write", count=shared["count"])


def build(world, variant, config):
    shared = {{"count": 0}}
    for name in ("w0", "w1"):
        world.spawn(name, writer(world, name, shared))


@checker("two-writes")
def two_writes(history):
    if os.path.exists(FLAG):
        sys.exit(0)
    if len(history.of_kind("write")) != 2:
        return violated("a write is missing", len(history) - 1)
    return ok()


raceproof.register(raceproof.Scenario(
    name="checker-raises-later", summary="its checker calls sys.exit(0) once FLAG exists",
    variants={{"v": "loses a write"}}, expect_violation=frozenset({{"v"}}),
    checkers=(two_writes,), build=build, default_examples=5))
"""


def test_a_report_whose_replay_raises_draws_the_run_as_recorded_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` replays a counterexample to place its deviations. A checker that now calls
    ``sys.exit(0)`` gives the same history judged ``error``: the report was drawn with no
    verdict at all ("not judged", the violation gone), over the counterexample's own ``.md``,
    exit 0, with nothing said. Now the run is drawn as recorded, with why it was not replayed."""
    flag = tmp_path / "HOSTILE"
    path = tmp_path / "raises_later.py"
    path.write_text(RAISES_LATER.format(flag=str(flag)))
    scenarios = ["--scenarios", str(path)]
    argv = ["explore", "checker-raises-later", "--out", str(tmp_path / "cx"), "--json"]
    assert main([*argv, *scenarios]) == 1
    saved = json.loads(capsys.readouterr().out)["counterexample"]
    flag.touch()
    said = "(not replayed: the replay ended error, not violated: SystemExit: sys.exit(0))"
    assert main(["report", saved, "--out", str(tmp_path / "out"), *scenarios]) == 0
    out = capsys.readouterr().out
    assert ": violated -> " in out and said in out, out
    (page,) = (tmp_path / "out").glob("*.md")
    text = page.read_text()
    assert "**VIOLATED** `two-writes`" in text and said in text
    assert said in next((tmp_path / "out").glob("*.html")).read_text()
    assert main(["report", saved, "--format", "text", *scenarios]) == 0
    out = capsys.readouterr().out
    assert "two-writes: a write is missing" in out and said in out


@pytest.mark.parametrize("kind", hostile.KINDS)
def test_pipeline_code_called_while_spark_runs_raises_anything_but_an_interrupt_as_its_error(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``query``, ``records``, ``read_output`` and the rest are called while Spark runs. What
    they raise is the pipeline's error (exit 4); a ``GeneratorExit`` or a ``BaseException`` of
    its own went on to the command line, which took it for raceproof's bug (exit 70). A plain
    ``KeyboardInterrupt`` is theirs too, unless PySpark's own SIGINT handler is installed (a
    session raceproof did not make): it raises one for a real Ctrl-C, left to the signal
    handling. raceproof's sessions put the command's handler back (``session.started``)."""
    import signal

    from raceproof.spark_integration.pipeline import PipelineRaised, calling_user

    namespace: dict[str, object] = {}
    exec(  # the hostile module's two exception classes and the statement as a function
        "import sys\n\nclass Hostile(BaseException):\n    pass\n\n"
        "class BadStr(Exception):\n    def __str__(self):\n        raise ValueError('no')\n\n"
        f"def query(source):\n    {hostile.RAISES[kind][0]}\n",
        namespace,
    )
    with pytest.raises(PipelineRaised) as raised:
        calling_user("query(source)", namespace["query"], None)
    assert str(raised.value) == f"pipeline error: query(source) raised {hostile.names(kind)}"

    def pyspark_handler(signum: int, frame: object) -> None:  # as pyspark.core.context's
        raise KeyboardInterrupt

    pyspark_handler.__module__ = "pyspark.core.context"
    monkeypatch.setattr(signal, "getsignal", lambda signum: pyspark_handler)
    expected = KeyboardInterrupt if kind == "keyboard" else PipelineRaised
    with pytest.raises(expected):
        calling_user("query(source)", namespace["query"], None)


def test_a_real_signal_inside_the_models_last_step_still_stops_the_run() -> None:
    """Raised by the handler inside a generator, it is that process's failure; the run ends
    in the same step (another process resumed by the same event calls ``finish``): the
    signal must still leave ``execute``, never be dropped with the run's pending events.
    """
    import os
    import signal

    from raceproof.cli import signals
    from raceproof.sim import ReplaySource, World, execute

    def build(world: World) -> None:
        gate = world.event()

        def signalled() -> object:
            yield gate
            os.kill(os.getpid(), signal.SIGINT)  # the handler raises here, in the model

        def finisher() -> object:
            yield gate
            world.finish()

        def opener() -> object:
            yield world.sleep(1)
            gate.succeed()

        world.spawn("a", signalled())
        world.spawn("b", finisher())
        world.spawn("open", opener())

    with signals.interruptible(), pytest.raises(signals.Interrupted):
        execute(build, ReplaySource([], strict=False), [])
