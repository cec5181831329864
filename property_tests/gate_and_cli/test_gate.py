"""The gate and the registry: verdicts that no clock can change, keyed replays, registration, the wheel."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.gate import expectations as gate
from raceproof.scenarios.catalogue import CATALOGUE, RegistrationError, Scenario, get, register

ROOT = Path(__file__).resolve().parents[2]


def slow_clock() -> float:
    """A clock on a machine so loaded that every reading is 1000 s after the last."""
    return float(next(_ticks) * 1000)


_ticks = itertools.count()


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis"])
def test_ci_verdicts_and_example_counts_do_not_depend_on_the_clock(strategy: str) -> None:
    ci = gate.PROFILES["ci"]
    for variant in ("buggy", "fix-cas"):
        idle = gate.run_explore("lost-update", variant, strategy, ci, examples=100)
        loaded = gate.run_explore(
            "lost-update", variant, strategy, ci, examples=100, clock=slow_clock
        )
        assert (loaded.verdict, loaded.examples, loaded.repro) == (
            idle.verdict,
            idle.examples,
            idle.repro,
        )
        assert loaded.status == "pass" and loaded.seconds >= 1000  # the clock was read, and ignored
    proof = gate.run_prove("lost-update", "fix-cas", ci, clock=slow_clock)
    assert proof.verdict == "ok" and proof.complete


def test_a_profile_with_a_wall_budget_does_feel_the_slow_clock() -> None:
    dev = gate.PROFILES["dev"]
    result = gate.run_explore("lost-update", "fix-cas", "random", dev, seed=0, clock=slow_clock)
    assert result.verdict == "inconclusive" and result.status == "inconclusive"
    assert "budget ran out" in result.notes[0]


def test_check_runs_every_expectation_and_writes_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "check.xml"
    code = main(
        [
            "check",
            "lost-update",
            "--examples",
            "300",
            "--json",
            "--junit",
            str(junit),
            "--out",
            str(tmp_path),
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["exit"] == 0 and result["profile"] == "ci"
    kinds = sorted((r["variant"], r["kind"], r["verdict"]) for r in result["results"])
    assert kinds == [
        ("buggy", "hypothesis", "violated"),
        ("buggy", "pct", "violated"),
        ("buggy", "random", "violated"),
        ("fix-cas", "hypothesis", "ok"),
        ("fix-cas", "pct", "ok"),
        ("fix-cas", "prove", "ok"),
        ("fix-cas", "random", "ok"),
    ]
    assert all(
        r["examples"] == 300
        for r in result["results"]
        if r["variant"] == "fix-cas" and r["kind"] != "prove"
    )
    cases = [
        (c.get("classname"), c.get("name")) for c in ET.parse(junit).getroot().iter("testcase")
    ]
    assert ("lost-update.fix-cas", "prove") in cases and len(cases) == 7
    assert not list(tmp_path.glob("*.json"))  # expected violations leave no files behind


def test_check_fails_when_an_expectation_fails(capsys: pytest.CaptureFixture[str]) -> None:
    wrong = gate.run_explore("lost-update", "buggy", "random", gate.PROFILES["ci"], expect="ok")
    assert wrong.status == "fail" and gate.exit_code([wrong]) == 1
    text = wrong.explain()
    assert "lost-update / buggy: expected ok, got violated" in text
    assert "deviations from FIFO (1)" in text and "repro: raceproof repro lost-update" in text
    assert "VIOLATED  final-equals-acks" in text


def test_replay_on_another_variant_holds_or_is_not_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["repro", "brooklin-double-stop", "--report-timeline", "--out", str(tmp_path)]) == 1
    capsys.readouterr()
    (file,) = tmp_path.glob("brooklin-double-stop--buggy--*.json")
    assert main(["replay", str(file), "--variant", "fix-conditional-write", "--json"]) == 0
    holds = json.loads(capsys.readouterr().out)
    assert holds["verdict"] == "ok" and holds["reached"] and holds["replay_mode"] == "keyed"
    assert main(["replay", str(file), "--variant", "fix-zk-lookup"]) == 3
    out = capsys.readouterr().out
    assert "NOT REACHED on fix-zk-lookup" in out and "this is not a pass" in out
    assert main(["replay", str(file), "--variant", "no-such-fix"]) == 2


def test_replay_of_deviations_that_never_come_up_is_not_reached(tmp_path: Path) -> None:
    from raceproof.runs import counterexamples, runner

    scenario = get("lost-update")
    outcome = scenario.runner("buggy", scenario.config)(
        __import__("raceproof").KeyedReplaySource({("rpc.client0", 0): 1})
    )
    path = runner.save_counterexample(tmp_path, scenario, "buggy", scenario.config, outcome, "t")
    loaded = counterexamples.load(path)
    # Fake a deviation the model never draws: it cannot be followed on another variant.
    loaded.counterexample.choices.append(type(outcome.choices[0])("rpc.client9", 2, 1))
    replayed = counterexamples.replay_on(loaded, "fix-cas")
    assert replayed.verdict == "not-reached" and replayed.not_reached == ["rpc.client9#0=1"]


def _scenario(name: str) -> Scenario:
    base = get("lost-update")
    return Scenario(
        name=name,
        summary="test",
        variants=base.variants,
        expect_violation=base.expect_violation,
        checkers=base.checkers,
        build=base.build,
        config=base.config,
        prove_config=base.config,
    )


def test_register_is_one_call_or_a_decorator_and_refuses_duplicates() -> None:
    try:

        @register
        def made() -> Scenario:
            return _scenario("test-decorated")

        assert get("test-decorated") is made
        with pytest.raises(RegistrationError, match="registered twice"):
            register(
                Scenario(**{**_scenario("lost-update").__dict__, "build": lambda w, v, c: None})
            )
        with pytest.raises(RegistrationError, match="unknown variants"):
            register(
                Scenario(**{**_scenario("test-bad").__dict__, "expect_violation": frozenset({"x"})})
            )
    finally:
        CATALOGUE.pop("test-decorated", None)


def test_the_wheel_installs_raceproof_as_its_only_top_level_package(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    # No packaging warning (the templates were data of no listed package: 40 lines of them).
    said = done.stdout + done.stderr
    assert "_Warning" not in said and "absent from the `packages`" not in said
    (wheel,) = tmp_path.glob("raceproof-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "raceproof/reports/templates/timeline.html.j2" in names
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"raceproof"}
    for module in (
        "sim/world.py",
        "gate/pytest_plugin.py",
        "cli/commands/check.py",
        "scenarios/library.py",
    ):
        assert f"raceproof/{module}" in names
    info = next(t for t in tops if t.endswith(".dist-info"))
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "[raceproof.scenarios]\nbuiltin = raceproof.scenarios.library" in entry_points
    assert "[pytest11]\nraceproof = raceproof.gate.pytest_plugin" in entry_points


def test_the_built_in_catalogue_registers_through_its_entry_point() -> None:
    from importlib import metadata

    from raceproof.scenarios.catalogue import ORIGINS

    get("lost-update")
    points = {ep.name: ep.value for ep in metadata.entry_points(group="raceproof.scenarios")}
    assert points["builtin"] == "raceproof.scenarios.library"
    assert ORIGINS["lost-update"] == "builtin"
