"""The small things a model author trips on, as a user meets them on the command line.

A scenario registered without a configuration lists, explores and proves; a
configuration whose defaults break the rules ``--set`` enforces (a negative
duration, a flag where a count belongs) is refused at registration with exit
2 and the field named, before any run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent

NO_CONFIG = """
import raceproof
from raceproof import Scenario, World

def build(world: World, variant: str, config: object) -> None:
    acks = world.shared.counter("acks")

    def client(name: str):
        yield world.sleep(1)
        seen = acks.value
        yield world.sleep(1)
        acks.set(seen + 1) if variant == "buggy" else acks.add(1)

    def audit():
        yield world.sleep(10)
        world.log("audit", "final", acks=acks.value)

    world.spawn("a", client("a"))
    world.spawn("b", client("b"))
    world.spawn("audit", audit())

@raceproof.checker
def both_counted(history):
    finals = history.of_kind("final")
    if finals and finals[-1].get("acks") != 2:
        return raceproof.violated("an increment was lost", finals[-1].index)
    return None

raceproof.register(Scenario(
    name="no-config", summary="two increments", variants={"buggy": "read then set", "fixed": "add"},
    expect_violation=frozenset({"buggy"}), checkers=(both_counted,), build=build,
))
"""

BAD_DEFAULT = """
from dataclasses import dataclass
import raceproof
from raceproof import Scenario

@dataclass(frozen=True)
class Config:
    readers: int = 2
    db_read_ms: tuple[int, ...] = (1, 30)

raceproof.register(Scenario(
    name="bad-default", summary="s", variants={"v": "v"}, expect_violation=frozenset(),
    checkers=(), build=lambda world, variant, config: None, config=Config(**OVERRIDE),
))
"""


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_scenario_registered_without_a_configuration_lists_and_runs(tmp_path: Path) -> None:
    (tmp_path / "counting.py").write_text(NO_CONFIG)
    listed = run(tmp_path, "list", "--json", "--scenarios", "counting.py")
    assert listed.returncode == 0, listed.stderr
    mine = [s for s in json.loads(listed.stdout)["scenarios"] if s["scenario"] == "no-config"]
    assert mine and mine[0]["config"] == {} and mine[0]["prove_config"] == {}
    found = run(
        tmp_path, "explore", "no-config", "--variant", "buggy", "--scenarios", "counting.py"
    )
    assert found.returncode == 1, found.stderr + found.stdout
    proven = run(tmp_path, "prove", "no-config", "--variant", "fixed", "--scenarios", "counting.py")
    assert proven.returncode == 0, proven.stderr + proven.stdout
    assert "PROVEN" in proven.stdout


def test_prove_warns_when_the_actors_never_share_an_instant(tmp_path: Path) -> None:
    """Nothing ties, nothing interleaves: a proof of one schedule says it is trivial."""
    (tmp_path / "counting.py").write_text(NO_CONFIG)
    apart = NO_CONFIG.replace(
        "def client(name: str):\n        yield world.sleep(1)",
        'def client(name: str):\n        yield world.sleep(1 if name == "a" else 5)',
    )
    assert apart != NO_CONFIG
    (tmp_path / "apart.py").write_text(apart)
    warning = "warning: this configuration has one schedule: no two events were ever due"
    for module, warned in (("apart.py", True), ("counting.py", False)):
        proven = run(tmp_path, "prove", "no-config", "--variant", "fixed", "--scenarios", module)
        assert proven.returncode == 0, proven.stderr + proven.stdout
        assert (warning in proven.stdout) is warned, proven.stdout
        assert ("1 equivalence classes" in proven.stdout) is warned


def test_a_default_configuration_is_checked_like_set_values(tmp_path: Path) -> None:
    for override, field, why in (
        ("{'db_read_ms': (-5, 30)}", "db_read_ms[0]", "between 0 and"),
        ("{'readers': True}", "readers", "must be an integer"),
    ):
        (tmp_path / "bad.py").write_text(BAD_DEFAULT.replace("OVERRIDE", override))
        listed = run(tmp_path, "list", "--scenarios", "bad.py")
        assert listed.returncode == 2, listed.stdout
        lines = listed.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in listed.stderr
        assert f"Config.{field} must" in lines[0] and why in lines[0]
        assert "scenario bad-default: config" in lines[0]


EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def _code_lines(path: Path) -> int:
    return sum(
        1
        for line in path.read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    )


def test_each_worked_example_is_under_100_lines_of_model_checker_and_scenario() -> None:
    for example, module in (
        ("stale_cache", "stale_cache.py"),
        ("fencing_lease", "fencing_lease.py"),
    ):
        source = (EXAMPLES / example / module).read_text()
        assert _code_lines(EXAMPLES / example / module) < 100, example
        # The short form: tracked shared state, no hand-placed footprints.
        assert "world.shared." in source
        assert "touch(" not in source and "declare_footprints" not in source


def test_the_fencing_lease_example_runs_as_a_user_would(tmp_path: Path) -> None:
    import shutil

    project = tmp_path / "lease-service"
    shutil.copytree(
        EXAMPLES / "fencing_lease",
        project,
        ignore=shutil.ignore_patterns("__pycache__", "counterexamples"),
    )
    listed = run(project / "tests", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "fencing-lease" in [s["scenario"] for s in json.loads(listed.stdout)["scenarios"]]
    found = run(project, "explore", "fencing-lease", "--variant", "buggy", "--examples", "100")
    assert found.returncode == 1, found.stderr
    assert "worker-a wrote with token 1" in found.stdout and "gc-pause" in found.stdout
    proof = run(
        project,
        "prove",
        "fencing-lease",
        "--variant",
        "fix-fencing",
        "--check-footprints",
        "--json",
    )
    assert proof.returncode == 0, proof.stderr
    body = json.loads(proof.stdout)
    assert body["complete"] is True and body["reduction"] is True and body["footprints_checked"] > 0
    full = run(
        project, "prove", "fencing-lease", "--variant", "fix-fencing", "--no-reduction", "--json"
    )
    assert json.loads(full.stdout)["schedules"] > body["schedules"]  # the reduction skipped some
    crossed = run(
        project, "prove", "fencing-lease", "--variant", "fix-fencing", "--cross-check", "--json"
    )
    assert crossed.returncode == 0, crossed.stderr  # same verdict and final states as the full walk
    assert json.loads(crossed.stdout)["cross_checked"] == json.loads(full.stdout)["schedules"]
    # A full walk cut short (10 < its 13 schedules) compared nothing: inconclusive, one line.
    capped = ("prove", "fencing-lease", "--variant", "fix-fencing", "--cross-check")
    unfinished = run(project, *capped, "--max-schedules", "10")
    assert unfinished.returncode == 3, unfinished.stderr
    assert unfinished.stdout.splitlines() == [
        "fencing-lease / fix-fencing: INCONCLUSIVE: --cross-check: the full walk did not finish "
        "within the budget, so nothing was compared (raise --budget or --max-schedules, or "
        "prove without --cross-check)"
    ]
    unfinished_json = json.loads(run(project, *capped, "--max-schedules", "10", "--json").stdout)
    assert unfinished_json["verdict"] == "inconclusive" and "cross_checked" not in unfinished_json
    checked = run(project, "check", "--json")  # inside the project: its own scenarios only
    assert checked.returncode == 0, checked.stderr
    assert {r["scenario"] for r in json.loads(checked.stdout)["results"]} == {"fencing-lease"}
    gate = subprocess.run(
        [str(BIN / "pytest"), "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert gate.returncode == 0 and " passed" in gate.stdout, gate.stdout[-2000:]


def test_check_all_takes_the_built_in_catalogue_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from raceproof.cli.commands import check

    names = {s.name for s in check._default_scenarios(argparse.Namespace(all=True))}
    assert "lost-update" in names
    # Other tests in this process may have loaded scenarios of their own: with none loaded
    # (every origin built in), the default falls back to everything.
    monkeypatch.setattr(check, "ORIGINS", dict.fromkeys(check.ORIGINS, "builtin"))
    assert {s.name for s in check._default_scenarios(argparse.Namespace(all=False))} == names
    # With one scenario from the command line, the default is that one only.
    some = sorted(names)[0]
    monkeypatch.setitem(check.ORIGINS, some, "command-line:races.py")
    assert [s.name for s in check._default_scenarios(argparse.Namespace(all=False))] == [some]


def test_a_schedule_deviation_names_the_actor_that_ran_and_the_one_it_overtook() -> None:
    from raceproof.reports.story import deviations_of
    from raceproof.sim import ReplaySource, World, execute

    def build(world: World) -> None:
        for name in ("leader", "stop-task2"):
            world.spawn(name, lambda name=name: world.log(name, "ran"), interleave=True)

    fifo = execute(build, ReplaySource([], strict=False), [])
    assert fifo.overtaken == {} and [op.actor for op in fifo.history.of_kind("ran")] == [
        "leader",
        "stop-task2",
    ]
    swapped = execute(build, ReplaySource([1]), [])
    assert [op.actor for op in swapped.history.of_kind("ran")] == ["stop-task2", "leader"]
    assert swapped.overtaken == {0: ("stop-task2", "leader")}
    (deviation,) = deviations_of(swapped.choices, None, swapped.overtaken)
    assert deviation.sentence() == "schedule: stop-task2 ran before leader"
    assert (
        deviation.to_json()["ran"] == "stop-task2" and deviation.to_json()["overtook"] == "leader"
    )


def test_expiry_is_logged_when_each_party_learns_of_it() -> None:
    from raceproof.sim import ReplaySource, VersionedStore, World, ZkClient, execute

    def build(world: World) -> None:
        store = VersionedStore(world)
        client = ZkClient(world, store, "c1", notice_ms=(50,))
        heard: list[int] = []
        client.add_listener(lambda event: heard.append(world.now_ms))

        def expire_at_20() -> Any:
            yield world.sleep(20)
            client.expire()  # the server expires the session now

        world.spawn("fault", expire_at_20())

    outcome = execute(build, ReplaySource([], strict=False), [])
    server = outcome.history.of_kind("zk.session-expired")
    client = [op for op in outcome.history.of_kind("zk.session") if op.get("state") == "expired"]
    assert [op.time_ms for op in server] == [20]  # the server acts at 20 ms
    assert [op.time_ms for op in client] == [70]  # the client hears of it notice_ms later


UNDECORATED = """
import raceproof
from raceproof import Scenario

def build(world, variant, config):
    def a():
        yield world.sleep(world.source.choose("a.delay", (0, 1)))
        world.log("a", "x")
    world.spawn("a", a())

DECORATOR

def never_wrong(history):
    return None

raceproof.register(Scenario(
    name="undecorated", summary="a checker without its decorator", variants={"v": "v"},
    expect_violation=frozenset(), checkers=(never_wrong,), build=build,
))
"""


@pytest.mark.parametrize("command", ["explore", "prove"])
def test_a_checker_without_its_decorator_is_named_as_the_users(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "plain.py").write_text(UNDECORATED.replace("DECORATOR", ""))
    done = run(tmp_path, command, "undecorated", "--scenarios", "plain.py")
    assert done.returncode == 4, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("E   ")]
    assert len(said) == 1 and "'never_wrong'" in said[0] and "plain.py:13" in said[0]
    assert "@raceproof.checker" in said[0] and "Traceback" not in done.stderr
    (tmp_path / "decorated.py").write_text(UNDECORATED.replace("DECORATOR", "@raceproof.checker"))
    fine = run(tmp_path, command, "undecorated", "--scenarios", "decorated.py")
    assert fine.returncode == 0, fine.stdout + fine.stderr
