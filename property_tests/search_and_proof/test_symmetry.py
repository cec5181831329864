"""Symmetry (issue 46 item 2): interchangeable actors counted once, and the check that catches a wrong one.

``raceproof.sim.symmetry`` renames the declared actors to canonical names before the
state cache fingerprints a state. Here: the canonical text of two states that differ
by a permutation is one, a name inside a longer one is never renamed, the declaration
is checked where it is made, a toy model of identical workers walks fewer runs to the
same verdict both ways (a lost update found, an atomic one proven), and the debug mode
(``--check-symmetry``) names the worker that is not like the others.
"""

from __future__ import annotations

import json

import pytest

from raceproof.cli.commands import prove_cmd
from raceproof.cli.main import main
from raceproof.scenarios.catalogue import get
from raceproof.sim import Budget, History, RunOutcome, World, checker, execute, prove
from raceproof.sim.checkers import CheckerResult, ok, violated
from raceproof.sim.symmetry import State, SymmetryMismatch, canonical, declared
from raceproof.sim.world import ProcessGenerator

ACTORS = declared(["client0", "client1"])


PROCESSES = {"client0": ["/client0#0"], "client1": ["/client1#1"]}


def _state(owner: str, ahead: str, behind: str) -> State:
    """The owner of a znode, and two clients' next steps: one due now at step 3, one later."""
    pids = {name: pid for name, (pid,) in PROCESSES.items()}
    return State(
        ordered=(f"{{'/owner': '{owner}', 'stop-client1': 1, 'client10': 2}}",),
        unordered=(f"(0, 1, '{pids[ahead]}@3')", f"(5, 1, '{pids[behind]}@1')"),
    )


def test_two_states_that_differ_by_a_permutation_have_one_canonical_text() -> None:
    text, renaming = canonical(ACTORS, PROCESSES, _state("client0", "client0", "client1"))
    image, swapped = canonical(ACTORS, PROCESSES, _state("client1", "client1", "client0"))
    other, _ = canonical(ACTORS, PROCESSES, _state("client1", "client0", "client1"))
    assert image == text and other != text
    assert {renaming.order, swapped.order} == {("client0", "client1"), ("client1", "client0")}
    assert "'stop-client1': 1, 'client10': 2" in text  # longer names are not the actor's
    assert "client0" not in text and "'/client1#1" not in text and "#0\x1e@3'" in text


def test_a_declaration_is_checked_where_it_is_made() -> None:
    assert declared(["a", ("b",)]) == (("a",), ("b",))
    assert declared(["a"]) == declared([]) == ()  # one client: nothing to exchange
    for bad, kind in (
        (["a", ("b", "n1")], ValueError),
        (["a", "a"], ValueError),
        (["a", ""], TypeError),
        (["a", "b\x1e"], TypeError),
    ):
        with pytest.raises(kind):
            declared(bad)


@checker("every-ack-counted")
def every_ack_counted(history: History) -> CheckerResult:
    acks = history.of_kind("ack")
    if acks and max(int(op.get("value")) for op in acks) != len(acks):  # type: ignore[arg-type]
        return violated("every-ack-counted", acks[-1].index, "an increment was lost")
    return ok("every-ack-counted")


def _workers(
    n: int, *, atomic: bool, symmetric: bool, odd: bool = False, rounds: int = 2
) -> RunOutcome:
    """``n`` workers, each reads the counter in one step and writes it in the next, ``rounds``
    times; an ``odd`` last worker logs its last ack differently (a declaration's slip)."""

    def build(world: World) -> None:
        world.declare_footprints()
        shared = world.shared.dict("c")
        shared["v"] = 0
        world.declare_state(lambda: repr(sorted(shared.items())))
        if symmetric:
            world.declare_symmetric(*(f"w{i}" for i in range(n)))
        for i in range(n):
            body = _worker(world, shared, f"w{i}", (atomic, odd and i == n - 1), rounds)
            world.spawn(f"w{i}", body)

    return lambda source: execute(build, source, [every_ack_counted])  # type: ignore[return-value]


def _worker(
    world: World, shared: object, me: str, kind: tuple[bool, bool], rounds: int
) -> ProcessGenerator:
    c: dict[str, int] = shared  # type: ignore[assignment]
    atomic, odd = kind
    for round_ in range(rounds):
        yield world.sleep(0)
        c[me] = c["v"]
        yield world.sleep(0)
        c["v"] = (c["v"] if atomic else c[me]) + 1
        del c[me]
        world.log(me, "ack", value=c["v"], last=odd and round_ == rounds - 1)


def _prove(run: object, **options: bool) -> object:
    return prove(run, budget=Budget(examples=20_000), state_cache=True, **options)  # type: ignore[arg-type]


def test_identical_workers_are_walked_once_per_permutation_with_the_same_verdicts() -> None:
    for atomic, verdict in ((True, "ok"), (False, "violated")):
        plain = _prove(_workers(3, atomic=atomic, symmetric=False))
        merged = _prove(_workers(3, atomic=atomic, symmetric=True))
        assert plain.verdict == merged.verdict == verdict  # type: ignore[attr-defined]
    plain = _prove(_workers(3, atomic=True, symmetric=False))
    merged = _prove(_workers(3, atomic=True, symmetric=True))
    assert merged.complete and merged.runs < plain.runs  # type: ignore[attr-defined]
    assert merged.states_seen < plain.states_seen  # type: ignore[attr-defined]
    assert merged.symmetric_merged > 0 and plain.symmetric_merged == 0  # type: ignore[attr-defined]


def test_the_check_passes_a_true_symmetry_and_names_the_worker_that_differs() -> None:
    checked = _prove(_workers(3, atomic=True, symmetric=True, rounds=1), state_cache_check=True)
    assert checked.verdict == "ok" and checked.state_cache_checked > 0  # type: ignore[attr-defined]
    with pytest.raises(SymmetryMismatch, match=r"w2 does not behave as the actor in its place"):
        _prove(_workers(3, atomic=True, symmetric=True, odd=True, rounds=1), state_cache_check=True)


def test_prove_checks_a_scenarios_symmetry_and_refuses_one_that_declares_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--check-symmetry`` on lost-update's clients: a proof that cut nothing, saying what it
    compared;
    on a scenario with no symmetric actors: one line, exit 2, before any work."""
    code = main(["prove", "lost-update", "--variant", "fix-cas", "--check-symmetry", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["verdict"] == "ok"
    assert result["schedules"] == result["runs"] == 46  # the check cuts no run
    # With the history summarised and no clock in the state (lost-update declares its past),
    # two clients started 5 ms apart do reach images of a state: the check compares them.
    assert result["symmetric_merged"] > 0
    assert prove_cmd.SYMMETRY_UNCHECKED not in result.get("notes", [])
    code = main(["prove", "samza-drain", "--check-symmetry"])
    err = capsys.readouterr().err
    assert code == 2 and "declares no symmetric actors" in err and len(err.splitlines()) == 1


def test_the_coordinators_declaration_merges_images_and_keeps_both_verdicts() -> None:
    """coordinator-async-append declares its two event threads; its partition queues are
    deques, named by their items (0875e05 refused them and the cache stayed off): the cache
    now merges states that differ by which thread polled which partition, and the verdicts
    are the plain walk's, both ways (block-event-loop holds, sync-assumption is found)."""
    scenario = get("coordinator-async-append")
    config = scenario.config_for("prove", {"writes": 2})
    budget = Budget(examples=5_000)
    for variant, verdict in (("block-event-loop", "ok"), ("sync-assumption", "violated")):
        merged = scenario.prove(variant, budget, config=config, state_cache=True)
        assert merged.verdict == verdict and merged.state_cache_off is None
        if verdict == "ok":  # the whole walk: it merged images (a violation may come first)
            assert merged.symmetric_merged > 0 and merged.state_cache_cuts > 0
