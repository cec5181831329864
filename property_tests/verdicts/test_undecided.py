"""A checker's ``unknown`` is never a proof and never "hit a bound" (issue 38, item 1).

A user's scenario whose checker returns ``raceproof.unknown(...)`` on the runs
where two writes land at one instant (the history cannot order them): on the
``unsure`` variant some runs are undecided, on ``sure`` none is. ``prove`` must
say ``inconclusive`` (exit 3), never ``complete``/PROVEN, and name the checker
and an undecided run's repro; ``explore`` and ``check`` say "undecided by
CHECKER", not "hit a bound". Both directions: the ``sure`` variant is proven
(exit 0). The kernel is tested in-process too: the proof's walk, its split
first run (``prove -j``) and the search's tally.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raceproof.sim import Budget, ChoiceSource, History, RunOutcome, World, checker, execute, ok
from raceproof.sim import unknown as undecided_result
from raceproof.sim.exhaustive import UNDECIDED, prove
from raceproof.sim.explore import explore
from raceproof.sim.proof_plan import split
from raceproof.sim.verdicts import Verdict

BIN = Path(sys.executable).parent

SCENARIO = textwrap.dedent(
    '''
    """Two writers; on ``unsure`` a tie makes the checker say unknown."""
    from dataclasses import dataclass

    import raceproof
    from raceproof.sim import History, World, checker, ok, unknown


    @dataclass(frozen=True)
    class Config:
        gaps_ms: tuple[int, ...] = (0, 3)


    def writer(world, name, variant, config, shared):
        yield world.sleep(world.source.choose(f"{name}.gap", config.gaps_ms))
        if variant == "unsure" and shared["last_ms"] == world.now_ms:
            world.log(name, "tie")
        shared["last_ms"] = world.now_ms
        world.log(name, "write")


    def build(world: World, variant: str, config: Config) -> None:
        shared = {"last_ms": None}
        for i in range(2):
            world.spawn(f"w{i}", writer(world, f"w{i}", variant, config, shared))


    @checker("order-judge")
    def order_judge(history: History):
        if history.of_kind("tie"):
            return unknown("two writes at one instant: the history cannot order them")
        return ok()


    @raceproof.register
    def undecided() -> raceproof.Scenario:
        return raceproof.Scenario(
            name="undecided-race",
            summary="a checker that cannot always tell",
            variants={"unsure": "ties are logged", "sure": "no tie is logged"},
            expect_violation=frozenset(),
            checkers=(order_judge,),
            build=build,
            config=Config(),
            prove_config=Config(),
            default_examples=40,
        )
    '''
)


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), *argv, "--scenarios", "undecided_race.py"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("undecided-project")
    (folder / "undecided_race.py").write_text(SCENARIO)
    return folder


def test_prove_over_an_undecided_run_is_inconclusive_naming_the_checker(project: Path) -> None:
    done = run(project, "prove", "undecided-race", "--variant", "unsure", "--json")
    assert done.returncode == 3, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "inconclusive" and result["complete"] is False
    # equal gaps tie, in either order: (0, 0) and (3, 3), each run twice
    assert result["bounds_pruned"] == {"undecided by order-judge": 4}
    assert result["undecided"]["checkers"] == {"order-judge": 4}
    repro = result["undecided"]["repro"]
    assert repro.startswith("raceproof repro undecided-race --variant unsure --choices ")
    assert result["schedules"] == 2 and result["examples"] == 6  # judged: the unequal gaps
    assert any("undecided by order-judge" in note for note in result["notes"])
    text = run(project, "prove", "undecided-race", "--variant", "unsure")
    assert text.returncode == 3
    assert "PROVEN" not in text.stdout and "INCONCLUSIVE" in text.stdout
    assert "undecided by order-judge" in text.stdout and "cannot order them" in text.stdout
    assert "pruned by" not in text.stdout  # nothing was cut by a bound
    # the repro reruns that very run: undecided again (exit 3), not a pass
    again = subprocess.run(
        [str(BIN / "raceproof"), *repro.split()[1:], "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 3 and json.loads(again.stdout)["verdict"] == "inconclusive"


def test_prove_of_the_variant_that_always_decides_is_proven(project: Path) -> None:
    done = run(project, "prove", "undecided-race", "--variant", "sure", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "ok" and result["complete"] is True
    assert result["schedules"] == 6 and result["bounds_pruned"] == {}
    assert "undecided" not in result


def test_explore_and_check_say_undecided_by_the_checker_not_a_bound(project: Path) -> None:
    done = run(
        project, "explore", "undecided-race", "--variant", "unsure", "--examples", "40", "--json"
    )
    assert done.returncode == 3, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "inconclusive"
    assert result["undecided_by"]["order-judge"] == result["inconclusive_runs"] > 0
    assert not any("hit a bound" in note for note in result["notes"])
    assert any("undecided by order-judge" in note for note in result["notes"])
    held = run(
        project, "explore", "undecided-race", "--variant", "sure", "--examples", "40", "--json"
    )
    assert held.returncode == 0 and json.loads(held.stdout)["verdict"] == "ok"
    check = run(project, "check", "undecided-race")
    assert check.returncode == 3, check.stdout + check.stderr
    assert "undecided by order-judge" in check.stdout and "hit a bound" not in check.stdout


# -- the kernel, in-process ---------------------------------------------------------
@checker("tie-judge")
def _tie_judge(history: History) -> object:
    if history.of_kind("tie"):
        return undecided_result("a tie")
    return ok()


def _runner(first_tie: bool) -> object:
    """Two writers; a tie when both gaps are 0 (``first_tie``: the FIFO run is that tie)."""
    gaps = {"w0": (0, 3), "w1": (0, 3) if first_tie else (3, 0)}  # a tie: equal gaps

    def build(world: World) -> None:
        shared: dict[str, int | None] = {"last": None}

        def writer(name: str):  # type: ignore[no-untyped-def]
            yield world.sleep(world.source.choose(f"{name}.gap", gaps[name]))
            if shared["last"] == world.now_ms:
                world.log(name, "tie")
            shared["last"] = world.now_ms

        for i in range(2):
            world.spawn(f"w{i}", writer(f"w{i}"))

    def run(source: ChoiceSource) -> RunOutcome:
        return execute(build, source, [_tie_judge])  # type: ignore[list-item]

    return run


@pytest.mark.parametrize("first_tie", [True, False])
def test_the_walk_never_counts_an_undecided_run_as_judged(first_tie: bool) -> None:
    report = prove(_runner(first_tie), budget=Budget(examples=100))  # type: ignore[arg-type]
    assert report.verdict == Verdict.INCONCLUSIVE and not report.complete
    assert report.pruned == {UNDECIDED + "tie-judge": 4}
    assert report.schedules == 2 and report.runs == 6
    assert report.undecided is not None and report.undecided.undecided_by == ["tie-judge"]


@pytest.mark.parametrize("first_tie", [True, False])
def test_the_split_first_run_never_counts_an_undecided_run(first_tie: bool) -> None:
    _shards, first = split(_runner(first_tie))  # type: ignore[arg-type]
    if first_tie:  # the FIFO run is the tie: undecided, not a judged schedule
        assert first.schedules == 0 and first.pruned.get(UNDECIDED + "tie-judge") == 1
        assert first.undecided is not None
    else:
        assert first.schedules == 1 and first.undecided is None


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis"])
def test_the_search_names_the_undecided_checker(strategy: str) -> None:
    report = explore(_runner(True), strategy, 0, Budget(examples=30))  # type: ignore[arg-type]
    assert report.verdict == Verdict.INCONCLUSIVE
    assert report.undecided_by == {"tie-judge": report.inconclusive_runs}
    assert report.inconclusive_runs > 0
    assert [n for n in report.notes if "undecided" in n] == [
        f"{report.inconclusive_runs} runs undecided by tie-judge "
        "(the checker said unknown: its history cannot tell)"
    ]
    assert not any("bound" in note for note in report.notes)
