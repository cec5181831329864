"""What ``prove`` says beside its verdict: an estimate past a float's range, and the one-schedule warning.

Issue 46 item 4: the full walk's estimate multiplies the options of every draw of a
sampled run; a model with hundreds of three-way draws overflows a float, and
``round(inf)`` made ``prove`` exit 70 before its walk. The proof's verdict stands
(violated: 1, bounded: 3), the estimate is labelled as one that overflows, in text
and in JSON (``null``, never ``Infinity``: no JSON reader takes it).

Issue 44 item 4: ``prove`` warned "no two events were ever due at the same virtual
ms and no draw had a second option" whenever the reduced walk had one class, also
when two steps were due together and commute (a full walk of two schedules, one
class). The warning is kept for a model whose full walk is one run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

SCENARIO_FILE = """
import raceproof
from raceproof import Scenario, World


@raceproof.checker
def total_above_zero(history):
    for op in history.of_kind("total"):
        if op.fields["value"] <= 0:
            return raceproof.violated("every pick was 0", op.index)
    return None


@raceproof.checker
def nothing_to_judge(history):
    return None


def build_picks(world: World, variant: str, config: object) -> None:
    total = world.shared.counter("total", 1 if variant == "holds" else 0)

    def chooser():
        for n in range(700):  # 3**700 schedules: past a float's range
            total.add(world.source.choose(f"pick{n}", (0, 1, 2)))
        world.log("chooser", "total", value=total.value)

    world.spawn("chooser", chooser)


def build_pair(world: World, variant: str, config: object) -> None:
    table = world.shared.dict("table", {"a": 0, "b": 0})

    def writer(key):
        def step():
            table[key] = 1
        return step

    def later():
        yield world.sleep(1)  # time moves on: the walk sees the instant at 0 ms end
        world.log("later", "done")

    world.spawn("a", writer("a"), interleave=True)
    world.spawn("b", writer("b" if variant == "apart" else "a"), interleave=variant != "alone")
    world.spawn("later", later)


raceproof.register(
    Scenario(
        name="many-picks",
        summary="700 three-way draws: the full walk's estimate overflows a float",
        variants={"violated": "the first run violates", "holds": "no run violates"},
        expect_violation=frozenset({"violated"}),
        checkers=(total_above_zero,),
        build=build_picks,
    )
)
raceproof.register(
    Scenario(
        name="two-writers",
        summary="two writers at one instant, on two keys or one",
        variants={"apart": "two keys: they commute", "same": "one key", "alone": "no tie"},
        expect_violation=frozenset(),
        checkers=(nothing_to_judge,),
        build=build_pair,
    )
)
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("notes")
    (made / "pyproject.toml").write_text("[project]\nname = 'notes'\n")
    (made / "notes.py").write_text(textwrap.dedent(SCENARIO_FILE))
    return made


def prove(folder: Path, name: str, variant: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "raceproof"), "prove", name, "--scenarios", "notes.py"]
    return subprocess.run(
        [*command, "--variant", variant, *options],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("variant", "code", "verdict"), [("violated", 1, "violated"), ("holds", 3, "inconclusive")]
)
def test_an_estimate_past_a_float_s_range_leaves_the_proof_s_verdict(
    folder: Path, variant: str, code: int, verdict: str
) -> None:
    done = prove(folder, "many-picks", variant, "--max-schedules", "20", "--json")
    assert done.returncode == code, done.stderr
    body = json.loads(done.stdout)
    assert body["verdict"] == verdict
    assert body["estimate"]["schedules_estimate"] is None
    assert body["estimate"]["estimate_overflows"] is True
    text = prove(folder, "many-picks", variant, "--max-schedules", "20", "--budget", "1")
    assert text.returncode == code, text.stderr
    assert "Traceback" not in text.stderr
    if variant == "holds":  # the budget warning names the estimate as one
        assert "an estimated more than 1.8e308 schedules (the estimate overflows" in text.stderr


def test_prove_estimate_labels_an_estimate_that_overflows(folder: Path) -> None:
    done = prove(folder, "many-picks", "holds", "--estimate", "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["schedules_estimate"] is None and body["estimate_overflows"] is True
    assert body["estimate_of"] == "full-walk upper bound"
    text = prove(folder, "many-picks", "holds", "--estimate")
    assert text.returncode == 0, text.stderr
    assert "an estimated more than 1.8e308 schedules" in text.stdout
    assert "beyond counting (the estimate overflows) on one core" in text.stdout
    assert "infs" not in text.stdout


WARNING = "no two events were ever due at the same virtual ms"


@pytest.mark.parametrize(
    ("variant", "options", "warned"),
    [
        ("apart", (), False),  # two steps due together that commute: one class of two schedules
        ("apart", ("--no-reduction",), False),
        ("same", (), False),
        ("alone", (), True),  # b's step is no tie: one schedule
    ],
)
def test_the_one_schedule_warning_only_when_the_full_walk_is_one_run(
    folder: Path, variant: str, options: tuple[str, ...], warned: bool
) -> None:
    done = prove(folder, "two-writers", variant, *options, "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["complete"] is True
    full = prove(folder, "two-writers", variant, "--no-reduction", "--json")
    assert (json.loads(full.stdout)["schedules"] == 1) is warned
    assert any(WARNING in note for note in body.get("notes", [])) is warned, body
    if variant == "apart" and not options:
        assert body["schedules"] == 1  # the reduction's one class, which used to warn
