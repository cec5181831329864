"""Small ways to pass without testing (issue 33, item 5), each closed by a test that failed before.

- the pytest fixture's ``examples`` is range-checked as ``--examples`` is
  (``examples=-5`` ran nothing and passed);
- ``Scenario(probes=...)`` takes any iterable and reads it once at
  construction (a generator was used up by the checks at registration, so an
  unreached window read ``ok``);
- ``world.reach`` refuses a probe that is not a non-empty string (``reach(5)``
  beside a named probe was exit 70: the counts could not be sorted);
- a configuration's ``validate()`` hook that leaves by any ``BaseException``
  is one line of bad input, exit 2 (it was 70, or the hook's own exit code).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.gate import expectations as gate
from raceproof.scenarios.catalogue import get, register
from raceproof.sim.configs import BadInput

BIN = Path(sys.executable).parent
WINDOW = "another client wrote between a read and its write"  # lost-update's probe


@pytest.mark.parametrize("examples", [-5, 0, True, 2.5, "10", 10**10])
def test_the_gate_refuses_an_example_count_the_command_line_refuses(examples: object) -> None:
    with pytest.raises(BadInput, match="examples must be"):
        gate.run_explore(
            "lost-update",
            "fix-cas",
            "random",
            gate.PROFILES["ci"],
            examples=examples,  # type: ignore[arg-type]
        )
    with pytest.raises(BadInput, match="seed must be"):
        gate.run_explore("lost-update", "fix-cas", "random", gate.PROFILES["ci"], seed=-1)
    held = gate.run_explore("lost-update", "fix-cas", "random", gate.PROFILES["ci"], examples=5)
    assert (held.verdict, held.status, held.examples) == ("ok", "pass", 5)


def test_the_fixture_fails_a_bad_example_count_and_still_runs_a_good_one(tmp_path: Path) -> None:
    (tmp_path / "test_counts.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.parametrize("examples", [-5, 0])
            def test_bad(raceproof, examples):
                raceproof.explore("lost-update", variant="fix-cas", expect="ok",
                                  strategy="random", examples=examples)

            def test_good(raceproof):
                raceproof.explore("lost-update", variant="fix-cas", expect="ok",
                                  strategy="random", examples=20)

            def test_good_but_wrong(raceproof):
                raceproof.explore("lost-update", variant="buggy", expect="ok",
                                  strategy="random", examples=200)
            """
        )
    )
    done = subprocess.run(
        [str(BIN / "pytest"), "-p", "no:cacheprovider", "-q", "test_counts.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "3 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "raceproof.explore: examples must be between 1 and 1000000000, got -5" in done.stdout
    assert "got 0" in done.stdout


def test_probes_given_as_a_generator_are_read_once_and_judged() -> None:
    base = get("lost-update")
    scenario = register(
        dataclasses.replace(
            base, name="lost-update-generated-probes", probes=(p for p in (WINDOW, "never"))
        )
    )
    assert scenario.probes == (WINDOW, "never")
    result = gate.run_explore(scenario.name, "fix-cas", "random", gate.PROFILES["ci"], examples=20)
    assert result.verdict == "not-reached" and result.probes == {WINDOW: 20, "never": 0}
    listed = dataclasses.replace(base, name="lost-update-listed-probes", probes=[WINDOW])
    assert register(listed).probes == (WINDOW,)


REACH = textwrap.dedent(
    """
    import raceproof
    from raceproof.sim import checker, ok

    def build(world, variant, config):
        def actor():
            world.reach("named window")
            world.reach(PROBE)
            world.log("a", "done")
        world.spawn("a", actor)

    @checker("nothing")
    def nothing(history):
        return ok()

    raceproof.register(raceproof.Scenario(
        name=NAME, summary="a probe that is not a name", variants={"v": "v"},
        expect_violation=frozenset(), checkers=(nothing,), build=build,
        probes=("named window",), default_examples=3))
    """
)


@pytest.mark.parametrize("probe", ["5", "None", "''", "('a', 'b')"])
def test_reach_refuses_a_probe_that_is_not_a_name(
    probe: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"bad-reach-{zlib.crc32(probe.encode())}"
    path = tmp_path / "reach.py"
    path.write_text(f"PROBE = {probe}\nNAME = {name!r}\n" + REACH)
    code = main(["explore", name, "--scenarios", str(path), "--json", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 4 and result["verdict"] == "error", (out, err)
    assert result["error"]["type"] == "TypeError"
    assert result["error"]["message"].startswith("World.reach: a probe is named by a non-empty")
    assert "internal error" not in err


VALIDATE = textwrap.dedent(
    """
    import sys
    from dataclasses import dataclass

    import raceproof
    from raceproof.sim import checker, ok

    @dataclass(frozen=True)
    class Config:
        writers: int = 2

        def validate(self):
            if self.writers == 3:
                RAISE

    def build(world, variant, config):
        world.spawn("a", lambda: world.log("a", "done"))

    @checker("nothing")
    def nothing(history):
        return ok()

    raceproof.register(raceproof.Scenario(
        name=NAME, summary="a validate hook that raises anything", variants={"v": "v"},
        expect_violation=frozenset(), checkers=(nothing,), build=build, config=Config(),
        default_examples=3))
    """
)


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("sys.exit(0)", "SystemExit: sys.exit(0)"),
        ("raise KeyboardInterrupt('from validate')", "KeyboardInterrupt: from validate"),
        ("raise GeneratorExit", "GeneratorExit"),
        ("raise RuntimeError('no')", "RuntimeError: no"),
    ],
)
def test_a_config_hook_that_raises_anything_is_one_line_exit_2(
    statement: str, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"validate-{zlib.crc32(statement.encode())}"
    path = tmp_path / "validate.py"
    path.write_text(f"NAME = {name!r}\n" + VALIDATE.replace("RAISE", statement))
    argv = ["explore", name, "--scenarios", str(path), "--out", str(tmp_path)]
    code = main([*argv, "--set", "writers=3"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and out == "", err
    assert lines[0].endswith(f"refuses writers=3: its checks raised {named}"), lines[0]
    assert main([*argv, "--set", "writers=2", "--examples", "2"]) == 0
    capsys.readouterr()


def test_a_zero_pause_of_a_zookeeper_client_is_no_fault() -> None:
    """``ZkClient.pause(0)`` disconnected and reconnected; now it is nothing at all.

    The same run with and without the call: the same history (no ``zk.paused``
    op, no session event), and the client's calls never fail; a 1 ms pause is
    still a disconnection (both ways).
    """
    from raceproof.sim import ConnectionLoss, ReplaySource, VersionedStore, World, ZkClient

    def run(pause_ms: int | None) -> tuple[World, list[str]]:
        world = World(ReplaySource([], strict=False))
        store = VersionedStore(world)
        client = ZkClient(world, store, "app", session_timeout_ms=1000)
        heard: list[str] = []
        client.add_listener(lambda event: heard.append(event.state))

        def actor() -> object:
            yield world.sleep(10)
            if pause_ms is not None:
                client.pause(pause_ms)
            try:
                client.create("/x", 1)
            except ConnectionLoss:
                heard.append("call failed")
            yield world.sleep(10)

        world.spawn("app", actor())
        world.run_to_end()
        return world, heard

    untouched, _ = run(None)
    zero, heard = run(0)
    assert heard == [] and zero.history.trace_hash() == untouched.history.trace_hash()
    assert not zero.history.of_kind("zk.paused")
    one, heard = run(1)
    assert {"disconnected", "call failed"} <= set(heard) and one.history.of_kind("zk.paused")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=r"ZkClient\.pause"):
            run(bad)  # type: ignore[arg-type]


def test_check_json_rows_carry_schedules_as_the_schema_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A proof row's distinct schedules are under ``schedules`` (its runs under ``examples``).

    The same proof through ``prove --json`` gives the same two numbers; a search
    row's ``schedules`` are its examples, as ``explore --json`` has them.
    """
    code = main(["check", "lost-update", "--json", "--examples", "30", "--out", str(tmp_path)])
    rows = json.loads(capsys.readouterr().out)["results"]
    assert code == 0
    proofs = [r for r in rows if r["kind"] == "prove"]
    searches = [r for r in rows if r["kind"] != "prove"]
    assert proofs and searches
    for row in searches:
        assert row["schedules"] == row["examples"] >= 1
        assert row["verdict"] == "violated" or row["examples"] == 30
    for row in proofs:
        # the gate's proofs are stateless: the same as prove without its state cache
        argv = ["prove", "lost-update", "--variant", row["variant"], "--no-state-cache"]
        assert main([*argv, "--json"]) == 0
        alone = json.loads(capsys.readouterr().out)
        assert row["schedules"] == alone["schedules"] > 1
        assert row["examples"] == alone["examples"] >= row["schedules"]
