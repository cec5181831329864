"""Declared violation exceptions everywhere (issue 33, item 4).

``Scenario(violation_exceptions=(E,))`` makes the model's raise of ``E`` a
violation (pseudo-checker ``model-exception``). Before, only the search's own
runs knew it: the story's replay (``placed_run``, behind every saved
counterexample's reports, ``report`` and text ``replay``) left it out and
exited 70, the ``model.exception`` op recorded the scenario file's absolute
path (so the trace hash changed with the folder, and a counterexample copied
to a colleague's checkout was "out of date"), and a list or a generator was
accepted and crashed at the first raise. Here a user's project outside the
repository explores, repros, replays and reports such a scenario, is copied to
another folder and replays there with the same trace hash.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

SCENARIO = textwrap.dedent(
    '''
    """Two writers; the buggy one raises LostWrite when it finds the other mid-write."""
    import raceproof
    from raceproof.sim import checker, ok


    class LostWrite(Exception):
        pass


    def writer(world, name, variant, shared):
        yield world.sleep(world.source.choose(name + ".gap", (0, 1)))
        if shared["busy"]:
            world.reach("two writers overlap")
            if variant == "buggy":
                raise LostWrite(name + " found the other mid-write")
            yield world.sleep(1)
        shared["busy"] = True
        yield world.sleep(1)
        shared["busy"] = False
        world.log(name, "write")


    def build(world, variant, config):
        shared = {"busy": False}
        for name in ("w0", "w1"):
            world.spawn(name, writer(world, name, variant, shared))


    @checker("writes")
    def writes(history):
        return ok()


    raceproof.register(
        raceproof.Scenario(
            name="declared-raise",
            summary="a race the model reports by raising a declared exception",
            variants={"buggy": "raises LostWrite", "fixed": "waits its turn"},
            expect_violation=frozenset({"buggy"}),
            checkers=(writes,),
            build=build,
            violation_exceptions=(LostWrite,),
            probes=("two writers overlap",),
            default_examples=50,
        )
    )
    '''
)


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "declared.py").write_text(SCENARIO)
    (folder / "pyproject.toml").write_text('[tool.raceproof]\nscenarios = ["declared.py"]\n')
    return folder


def test_a_declared_exception_replays_everywhere_and_in_another_folder(tmp_path: Path) -> None:
    project = _project(tmp_path / "alice")
    found = run(project, "explore", "declared-raise", "--variant", "buggy", "--json")
    assert found.returncode == 1, found.stdout + found.stderr
    result = json.loads(found.stdout)
    assert (result["verdict"], result["checker"]) == ("violated", "model-exception")
    saved = project / result["counterexample"]
    assert Path(result["report_html"]).is_file() or (project / result["report_html"]).is_file()
    text = saved.read_text()
    assert str(tmp_path) not in text and "raceproof_user_" not in text  # nothing of the folder
    ops = [op for op in json.loads(text)["timeline"] if op["kind"] == "model.exception"]
    assert ops and ops[0]["fields"]["at"] == f"declared.py:{_line('raise LostWrite')}"
    assert ops[0]["fields"]["error"] == "LostWrite: w1 found the other mid-write"
    repro = run(project, *result["repro"].split()[1:], "--json")
    assert repro.returncode == 1 and json.loads(repro.stdout)["trace_hash"] == result["trace_hash"]
    for argv in (["replay", str(saved)], ["report", str(saved), "--format", "text"]):
        done = run(project, *argv)
        assert done.returncode in (0, 1) and "internal error" not in done.stderr, done.stderr
        assert "model-exception" in done.stdout
    proof = run(project, "prove", "declared-raise", "--variant", "buggy", "--json")
    assert proof.returncode == 1 and json.loads(proof.stdout)["verdict"] == "violated"
    held = run(project, "prove", "declared-raise", "--variant", "fixed", "--json")
    assert held.returncode == 0 and json.loads(held.stdout)["verdict"] == "ok", held.stdout
    # Bob's checkout: the same project in another folder replays Alice's file exactly.
    bob = tmp_path / "elsewhere" / "bob"
    shutil.copytree(project, bob)
    moved = bob / saved.relative_to(project)
    again = run(bob, "replay", str(moved), "--json")
    replayed = json.loads(again.stdout)
    assert again.returncode == 1, again.stdout + again.stderr
    assert replayed["same_trace_hash"] and replayed["trace_hash"] == result["trace_hash"]
    rendered = run(bob, "report", str(moved), "--format", "md")
    assert rendered.returncode == 0 and "not replayed" not in rendered.stdout


def _line(marker: str) -> int:
    return next(i for i, ln in enumerate(SCENARIO.splitlines(), 1) if marker in ln)


def test_the_story_replay_uses_the_declared_exceptions() -> None:
    """``placed_run`` (reports, text replay) judges a run as the search did."""
    from raceproof.runs.stories import placed_run
    from raceproof.scenarios.catalogue import Scenario
    from raceproof.sim import ReplaySource, World, checker, ok

    class Boom(Exception):
        pass

    def build(world: World, variant: str, config: object) -> None:
        def actor() -> None:
            world.log("a", "step")
            raise Boom("declared")

        world.spawn("a", actor)

    @checker("none")
    def none(history: object) -> object:
        return ok()

    scenario = Scenario(
        name="boom",
        summary="s",
        variants={"v": "v"},
        expect_violation=frozenset({"v"}),
        checkers=(none,),
        build=build,
        violation_exceptions=(Boom,),
    )
    searched = scenario.runner("v", scenario.config)(ReplaySource([]))
    placed, _ = placed_run(scenario, "v", scenario.config, ReplaySource([]))
    assert searched.status == placed.status == "violated"
    assert placed.trace_hash == searched.trace_hash
    assert placed.violation is not None and placed.violation.checker == "model-exception"
    plain = dataclasses.replace(scenario, violation_exceptions=())
    assert plain.runner("v", plain.config)(ReplaySource([])).status == "error"


@pytest.mark.parametrize(
    "declared",
    [
        pytest.param(lambda e: [e], id="a list"),
        pytest.param(lambda e: (k for k in (e,)), id="a generator"),
        pytest.param(lambda e: {e}, id="a set"),
        pytest.param(lambda e: e, id="a bare class"),
        pytest.param(lambda e: (e, "ValueError"), id="a name"),
        pytest.param(lambda e: (KeyboardInterrupt,), id="a BaseException"),
    ],
)
def test_violation_exceptions_must_be_a_tuple_of_exception_classes(
    declared: object, tmp_path: Path
) -> None:
    from raceproof.scenarios.catalogue import RegistrationError, get, register

    base = get("lost-update")
    bad = dataclasses.replace(
        base,
        name="lost-update-declared",
        violation_exceptions=declared(ValueError),  # type: ignore[operator]
    )
    with pytest.raises(RegistrationError, match="violation_exceptions"):
        register(bad)
    ok = dataclasses.replace(base, name="lost-update-declared", violation_exceptions=(ValueError,))
    assert register(ok).violation_exceptions == (ValueError,)


def test_a_list_of_violation_exceptions_is_exit_2_at_registration(tmp_path: Path) -> None:
    listed = SCENARIO.replace(
        "violation_exceptions=(LostWrite,)", "violation_exceptions=[LostWrite]"
    )
    (tmp_path / "listed.py").write_text(listed)
    done = run(tmp_path, "list", "--scenarios", "listed.py")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "violation_exceptions must be a tuple" in lines[0] and "got a list" in lines[0]
