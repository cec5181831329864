"""``--check-footprints`` blames the right party: the model's footprints (exit 2) or raceproof's (exit 70).

Issue 44 item 4: with equal keys of different types named apart (the shape-1
slip, in raceproof's own key naming), the check found the pair and told the user
to "track it, or world.touch it", although the model shared nothing but
``world.shared`` state. Here the same slip is planted in ``cells.key_part`` (as
``shared.py`` imports it) and the model is tracked-only: the check says it is
raceproof's bug, exit 70, naming the two operations (``TrackedDict.__setitem__``).
Both directions: a model that shares a plain dict beside its tracked state, and
one that places a ``world.touch`` of its own, are still told to fix their
footprints (exit 2), slip or none; without the slip the tracked-only model proves
its violation with every footprint checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from raceproof.cli.main import main
from raceproof.scenarios import catalogue
from raceproof.scenarios.catalogue import Scenario
from raceproof.sim import History, World, checker, ok, violated
from raceproof.sim import shared as shared_module

NAME = "blame-toy"


@checker("first-write-stays")
def first_write_stays(history: History) -> Any:
    for op in history.of_kind("final"):
        if op.fields["value"] == "late":
            return violated("the late write replaced the first one", op.index)
    return ok()


def build(world: World, variant: str, config: object) -> None:
    """``late`` (FIFO first) writes the key 1.0, ``first`` the key 1; a judge reads key 1."""
    table = world.shared.dict("table", {1: "init"})
    plain = {"value": "init"}  # the "plain" variant's actors share this, untracked

    def late() -> None:
        if variant == "plain":
            plain["value"] = "late"
        else:
            table[1.0] = "late"
        if variant == "by-hand":
            world.touch("audit", write=False)  # a footprint the model places itself

    def first() -> None:
        table[1] = "first"
        plain["value"] = "first"

    def judge() -> Any:
        yield world.sleep(1)
        value = plain["value"] if variant == "plain" else table[1]
        world.log("judge", "final", value=value)

    world.spawn("late", late, interleave=True)
    world.spawn("first", first, interleave=True)
    world.spawn("judge", judge, interleave=True)


@pytest.fixture
def toy() -> Iterator[None]:
    catalogue.CATALOGUE[NAME] = Scenario(
        name=NAME,
        summary="two writers of one key, as 1 and as 1.0",
        variants={"tracked": "tracked state only", "plain": "a plain dict", "by-hand": "a touch"},
        expect_violation=frozenset({"tracked", "plain", "by-hand"}),
        checkers=(first_write_stays,),
        build=build,
    )
    try:
        yield
    finally:
        del catalogue.CATALOGUE[NAME]


@pytest.fixture
def repr_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape-1 slip, in raceproof's code: keys named by ``repr`` (1 and 1.0 apart)."""
    monkeypatch.setattr(shared_module, "key_part", lambda key: f"[{key!r}]")


def check(variant: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["prove", NAME, "--variant", variant, "--check-footprints"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.usefixtures("toy", "repr_keys")
def test_a_kernel_slip_under_a_tracked_only_model_is_raceproof_s_bug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = check("tracked", capsys)
    assert code == 70, out + err
    said = err.strip().splitlines()[-1]  # after the traceback, as every exit 70 says it
    assert "internal error" in said and "This is raceproof's bug, not your model's" in said
    assert said.count("TrackedDict.__setitem__") == 2, said  # the two operations, named
    assert "track it" not in err and "PROVEN" not in out


@pytest.mark.parametrize("variant", ["plain", "by-hand"])
@pytest.mark.usefixtures("toy", "repr_keys")
def test_the_model_s_own_footprints_are_still_the_model_s_to_fix(
    variant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = check(variant, capsys)
    assert code == 2, out + err
    assert "footprints are wrong" in err and "track it, or world.touch it" in err
    assert "raceproof's bug" not in err and "Traceback" not in err


@pytest.mark.usefixtures("toy")
def test_without_the_slip_the_tracked_only_model_is_violated_with_its_footprints_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = check("tracked", capsys)
    assert code == 1, out + err
    assert "NOT proven" in out and "raceproof's bug" not in err
