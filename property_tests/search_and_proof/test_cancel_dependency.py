"""Issue 44's shape 4: a step that cancels or re-arms a timer at the instant the timer fires.

Why it exists: a cancelled event never runs in the order where its cancel came first, so
nothing compared it with the cancel. ``Timer.cancel``, a re-arming ``Timer.start`` or
``Debounce.cancel`` run by FIFO just before the same timer's firing at the same instant gave
``PROVEN`` (the instant shortcut took the one step it saw as commuting in every order), and
``--check-footprints`` passed it ("0 pairs"); only ``--cross-check`` saw it. The kernel's rule
now (``World._disables``): a step that cancels, disables or re-arms an event is dependent with
the step that event would have run. The cancel writes that step's resource (``step:<key>``),
the step writes it when it runs, the instant shortcut counts the cancelled step among its
instant's steps, and ``--check-footprints`` runs the order the cancel removed
(``footprint_claims.cancelled_pulls``).

The model is written as a user would, from outside this repository: a request whose timeout
(a ``Timer`` or a ``Debounce``) is due at the instant its response arrives; the response
handler cancels it (``cancel``), re-arms it for the next request (``rearm``), or cancels the
debounce (``debounce``). The buggy handler completes the request whatever happened; when the
timeout ran first the request completes twice. The fix (``fix-...``) completes it only if the
timeout was still pending. Shown both ways: the buggy variants are violated (default mode,
``--state-cache``, ``-j 2``), the fixes proven with both orders walked; with the rule reverted
(the slip) the buggy variants come out ``PROVEN`` and ``--check-footprints`` reports the cancel
as raceproof's bug (exit 70: the rule is the kernel's, whatever the model recorded).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.sim.world import World

MODEL = '''
"""A request whose timeout is due at the instant its response arrives."""
import raceproof
from raceproof import Scenario
from raceproof.sim import Debounce, Timer

KINDS = ("cancel", "rearm", "debounce")


def build(world, variant, config):
    kind = variant.removeprefix("fix-")
    request = world.shared.record("request", n=1)

    def timed_out():
        world.log("client", "completed", request=request.n, how="timeout")

    if kind == "debounce":
        timeout = Debounce(world, "timeout", 10, timed_out)
    else:
        timeout = Timer(world, "timeout", timed_out)

    def client():
        response = world.sleep(10)  # the response arrives when the timeout is due
        if kind == "debounce":
            timeout.trigger()
        else:
            timeout.start(10)
        yield response
        if kind == "rearm":
            pending = timeout.active
            answered, request.n = request.n, request.n + 1
            timeout.start(10)  # the next request's timeout
        else:
            pending, answered = timeout.cancel(), request.n
        if pending or not variant.startswith("fix-"):
            world.log("client", "completed", request=answered, how="response")
        yield world.sleep(30)  # the client goes on: the instant of the race closes
        world.log("client", "done")

    world.spawn("client", client())


@raceproof.checker
def completed_once(history):
    """Every request completes once: by its response or by its timeout."""
    seen = set()
    for op in history.of_kind("completed"):
        if op.get("request") in seen:
            return raceproof.violated(f"request {op.get('request')} completed twice", op.index)
        seen.add(op.get("request"))
    return None


raceproof.register(
    Scenario(
        name="timeout-beside-its-response",
        summary="a request's timeout due at the instant its response cancels or re-arms it",
        variants={**{k: "as written" for k in KINDS}, **{f"fix-{k}": "the fix" for k in KINDS}},
        expect_violation=frozenset(KINDS),
        checkers=(completed_once,),
        build=build,
    )
)
'''
NAME = "timeout-beside-its-response"
KINDS = ("cancel", "rearm", "debounce")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model's file, once per module (a scenario name registers once per process)."""
    path = tmp_path_factory.mktemp("shape4") / "timeout_beside_its_response.py"
    path.write_text(MODEL)
    return path


def prove(capsys: pytest.CaptureFixture[str], model: Path, variant: str, *flags: str) -> dict:
    """``raceproof prove`` on the model, in this process: its exit code and its JSON (or error)."""
    argv = ["prove", NAME, "--variant", variant, "--scenarios", str(model), "--json", *flags]
    code = main(argv)
    out, err = capsys.readouterr()
    result = json.loads(out) if out.strip() else {}
    return {"code": code, "err": err, **result}


@pytest.fixture
def rule_reverted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The slip: a cancel records nothing of the step it removed (only a resource named to it)."""

    def disables(self: World, event: object, resource: str | None) -> None:
        if resource is not None:
            self.touch(resource)

    monkeypatch.setattr(World, "_disables", disables)
    yield


@pytest.mark.parametrize("flags", [(), ("--state-cache",), ("-j", "2")], ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_a_cancel_at_its_timers_instant_is_violated_in_every_mode(
    kind: str, flags: tuple[str, ...], model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proof = prove(capsys, model, kind, *flags)
    assert (proof["code"], proof["verdict"]) == (1, "violated"), proof
    assert proof["message"] == "request 1 completed twice", proof


@pytest.mark.parametrize("kind", KINDS)
def test_the_fix_is_proven_with_the_order_the_cancel_removed_walked(
    kind: str, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proof = prove(capsys, model, f"fix-{kind}", "--check-footprints")
    assert (proof["code"], proof["verdict"], proof["complete"]) == (0, "ok", True), proof
    assert proof["schedules"] == 2, proof  # the timeout first, and the response first
    assert proof["footprints_unverified"] == 0, proof
    full = prove(capsys, model, f"fix-{kind}", "--no-reduction")
    assert (full["code"], full["schedules"]) == (0, 2), full


@pytest.mark.parametrize("kind", KINDS)
def test_with_the_rule_reverted_the_proof_passes_and_the_footprint_check_reports_it(
    kind: str, model: Path, capsys: pytest.CaptureFixture[str], rule_reverted: None
) -> None:
    slipped = prove(capsys, model, kind)
    assert (slipped["code"], slipped["verdict"], slipped["schedules"]) == (0, "ok", 1), slipped
    for variant in (kind, f"fix-{kind}"):
        checked = prove(capsys, model, variant, "--check-footprints")
        assert checked["code"] == 70, checked  # the kernel's rule broken: raceproof's bug
        said = checked["err"]
        assert "cancelled the event of step timer:timeout#1@fire" in said, said
        assert "This is raceproof's bug, not your model's" in said, said
        assert "took as commuting in every order" in said, said


@pytest.mark.parametrize("kind", KINDS)
def test_with_the_rule_the_footprint_check_passes_the_buggy_walk_too(
    kind: str, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The buggy variant's walk, checked: the violation, and no footprint reported wrong."""
    proof = prove(capsys, model, kind, "--check-footprints")
    assert (proof["code"], proof["verdict"]) == (1, "violated"), proof
    assert "footprints are wrong" not in proof["err"], proof
