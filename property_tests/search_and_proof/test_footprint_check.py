"""Footprints are checked, not trusted; tracked shared state needs no ``touch``.

Random small models whose actors share state only through tracked containers
(``world.shared``: a dict and a counter), with no ``touch`` and no
``declare_footprints``: the reduced walk reaches exactly the final states of
the full walk, and ``prove(check_footprints=True)`` swaps the steps it treats
as commuting and finds they do. The same models with one object shared
untracked (a plain dict one actor writes and another reads at the same
instant) are caught by the check, which names both steps; a wrong footprint
on a kernel primitive is caught the same way. A built-in proof that finds its
violation passes the check on the runs before it; the whole proofs of the
variants expected to hold are checked in gate_and_cli/test_catalogue.py
(test_prove_agrees_with_the_catalogue), which walks them anyway.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raceproof.scenarios import catalogue
from raceproof.sim import (
    Bounds,
    Budget,
    ChoiceSource,
    ReplaySource,
    RunOutcome,
    World,
    execute,
    prove,
)
from raceproof.sim.footprint_check import FootprintMismatch
from raceproof.sim.outcome import Runner
from raceproof.sim.state_cache import ending
from raceproof.sim.verdicts import Verdict
from raceproof.sim.world import ProcessGenerator

Op = tuple[int, str, str]  # (delay_ms before it, kind, key)
ops = st.tuples(
    st.sampled_from((0, 1)), st.sampled_from(("r", "w", "del", "inc", "len")), st.sampled_from("xy")
)
scripts = st.lists(st.lists(ops, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3).filter(
    lambda raw: sum(len(s) for s in raw) <= 6
)
BOUNDS = Bounds(max_time_ms=10_000, max_steps=300)


@dataclasses.dataclass(frozen=True)
class Model:
    scripts: tuple[tuple[Op, ...], ...]
    planted_at_ms: int | None = None  # an untracked dict written and read at this instant


def build(world: World, model: Model) -> None:
    table = world.shared.dict("table")
    count = world.shared.counter("count")
    hidden: dict[str, str] = {}  # shared untracked: the planted mistake

    def actor(i: int, script: tuple[Op, ...]) -> ProcessGenerator:
        for delay_ms, kind, key in script:
            yield world.sleep(delay_ms)
            if kind == "r":
                world.log(f"a{i}", "read", key=key, value=table.get(key))
            elif kind == "w":
                table[key] = i
            elif kind == "del":
                table.pop(key, None)
            elif kind == "inc":
                count.add(1)
            else:
                world.log(f"a{i}", "len", n=len(table))

    def writer(at_ms: int) -> ProcessGenerator:
        yield world.sleep(at_ms)
        hidden["x"] = "written"

    def reader(at_ms: int) -> ProcessGenerator:
        yield world.sleep(at_ms)
        world.log("reader", "read", value=hidden.get("x"))

    def audit() -> ProcessGenerator:
        yield world.sleep(1_000)
        world.log("audit", "final", table=sorted(table.items()), count=count.value)

    for i, script in enumerate(model.scripts):
        world.spawn(f"a{i}", actor(i, script))
    if model.planted_at_ms is not None:
        world.spawn("writer", writer(model.planted_at_ms))
        world.spawn("reader", reader(model.planted_at_ms))
    world.spawn("audit", audit())


def runner(model: Model) -> Runner:
    def run(source: ChoiceSource) -> RunOutcome:
        return execute(lambda world: build(world, model), source, [], BOUNDS)

    return run


def _endings(model: Model, reduction: bool, check: bool = False) -> tuple[set[object], int]:
    seen: set[object] = set()
    run = runner(model)

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        seen.add(ending(outcome, 0))
        return outcome

    report = prove(
        recording, budget=Budget(examples=100_000), reduction=reduction, check_footprints=check
    )
    assert report.complete, report
    return seen, report.runs


@settings(max_examples=40, deadline=None)
@given(scripts)
def test_tracked_state_gets_the_reduction_and_reaches_the_full_walks_final_states(
    raw: list[tuple[Op, ...]],
) -> None:
    model = Model(tuple(raw))
    full, full_runs = _endings(model, reduction=False)
    reduced, reduced_runs = _endings(model, reduction=True)
    assert reduced == full
    assert reduced_runs <= full_runs
    # The footprint check's own reruns are not counted above: it runs apart, and passes.
    checked = prove(runner(model), budget=Budget(examples=100_000), check_footprints=True)
    assert checked.complete and checked.footprints_checked is not None


def test_tracked_state_alone_makes_the_reduction_skip_something() -> None:
    model = Model((((0, "w", "x"),), ((0, "w", "y"),), ((0, "inc", "x"),)))
    report = prove(runner(model), budget=Budget(examples=10_000), check_footprints=True)
    full = prove(runner(model), budget=Budget(examples=10_000), reduction=False)
    assert report.complete and full.complete
    assert report.schedules < full.schedules  # 3 independent writers: 1 class of 6 orders
    assert report.footprints_checked and report.footprints_checked > 0


@settings(max_examples=40, deadline=None)
@given(scripts, st.sampled_from((0, 1, 2)))
def test_the_check_catches_state_shared_untracked(raw: list[tuple[Op, ...]], at_ms: int) -> None:
    model = Model(tuple(raw), planted_at_ms=at_ms)
    with pytest.raises(FootprintMismatch) as caught:
        prove(runner(model), budget=Budget(examples=100_000), check_footprints=True)
    message = str(caught.value)
    assert "(writer," in message and "(reader," in message and "does not commute" in message


def test_without_the_check_the_planted_sharing_goes_unnoticed() -> None:
    """Why the check exists: the reduced proof alone reports ok, complete."""
    model = Model((((0, "w", "x"),), ((0, "r", "y"),)), planted_at_ms=0)
    seen: set[object] = set()
    run = runner(model)

    def recording(source: ChoiceSource) -> RunOutcome:
        outcome = run(source)
        seen.add(str(outcome.history.of_kind("read")[-1].get("value")))
        return outcome

    report = prove(recording, budget=Budget(examples=10_000))
    assert report.complete and seen == {"written"}  # the order where the reader sees None: skipped
    seen.clear()
    full = prove(recording, budget=Budget(examples=10_000), reduction=False)
    assert full.complete and seen == {"written", "None"}


# brooklin-redundant-stop is brooklin-double-stop's model under another checker (same_runs: the
# same runs in the same order): its three violated proofs stop at their first run, which
# double-stop's proofs of the same variants walk with their footprints checked too (here, and
# whole in test_catalogue for fix-conditional-write, which double-stop holds): 2.3 CPU s.
TWIN_WALKS_FURTHER = {"brooklin-redundant-stop": "brooklin-double-stop"}
FINDING = [
    (scenario.name, variant)
    for scenario in catalogue.all_scenarios()
    if scenario.declares_footprints and scenario.name not in TWIN_WALKS_FURTHER
    for variant in scenario.variants
    if variant in scenario.expect_violation
]


def test_a_violated_proof_left_out_is_its_twins_walk() -> None:
    for name, twin in TWIN_WALKS_FURTHER.items():
        scenario, host = catalogue.get(name), catalogue.get(twin)
        for variant in scenario.expect_violation:
            assert catalogue.same_runs(host, scenario, variant), (name, variant)
            assert (twin, variant) in FINDING or variant not in host.expect_violation


@pytest.mark.parametrize(("name", "variant"), FINDING)
def test_every_built_in_violated_proof_passes_the_footprint_check(
    name: str, variant: str, unshrunk: list[RunOutcome]
) -> None:
    """The rest of the built-in proof configurations (issue 33 item 2): a proof that finds its
    violation checks the footprints of every run before it, where a model's own footprint
    slip could hide the violation; the check passes them and the proof still finds it (or
    is cut by the budget, never ``ok``). What it found is not shrunk here (no footprint is
    checked while shrinking; test_catalogue shrinks each of these violations): 1.6-1.7 CPU s
    each of Brooklin's two."""
    report = catalogue.get(name).prove(variant, Budget(examples=150), check_footprints=True)
    assert report.verdict in (Verdict.VIOLATED, Verdict.INCONCLUSIVE)
    assert report.runs >= 1
    assert (report.verdict == Verdict.VIOLATED) == (unshrunk == [report.found] != [None])


def test_the_check_catches_store_writes_recorded_as_reads_in_a_built_in_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A primitive slip (every ZooKeeper write recorded as a read) in Brooklin's fixed variant."""
    record = World.touch

    def as_read(self: World, resource: str, write: bool = True) -> None:
        record(self, resource, False if resource.startswith("zk:") else write)

    monkeypatch.setattr(World, "touch", as_read)
    scenario = catalogue.get("brooklin-double-stop")
    with pytest.raises(FootprintMismatch, match=r"zk:\w+\['/brooklin/"):
        scenario.prove("fix-conditional-write", Budget(examples=300), check_footprints=True)


def test_prove_check_footprints_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from raceproof.cli.main import main

    argv = [
        "prove",
        "brooklin-double-stop",
        "--variant",
        "fix-conditional-write",
        "--max-schedules",
        "20",  # capped: the path is the same as at 300 (a command: 11 CPU s at 300, 4.7 at 100, 3 at 20)
        "--check-footprints",
    ]
    assert main([*argv, "--json"]) == 3  # a budget-capped walk: inconclusive, exit 3
    out = capsys.readouterr().out
    assert '"footprints_checked": ' in out and '"complete": false' in out
    record = World.touch

    def as_read(self: World, resource: str, write: bool = True) -> None:
        record(self, resource, False if resource.startswith("zk:") else write)

    monkeypatch.setattr(World, "touch", as_read)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "footprints are wrong" in captured.err and "Traceback" not in captured.err
    assert "PROVEN" not in captured.out


# Small configurations of two built-in proofs (about a second each): the coordinator's wakeup
# event, which both threads wait on, is a step named by the step that triggered it
# (``World._name_event``); with that name taken away the kernel cannot name it, and pairs
# beside it cannot be swapped. Brooklin's steps are all process steps and timer firings.
COORDINATOR = ["coordinator-async-append", "--variant", "block-event-loop", "--set", "writes=2"]
ALL_NAMED = [
    "brooklin-double-stop",
    "--variant",
    "fix-stop-dedupe",
    *("--set", "stop_gap_ms=[10333]", "--set", "gc_pause_ms=[0]"),
    *("--set", "resume_think_ms=[8000]", "--set", "leader_notify_ms=[3000]"),
]


def test_a_check_that_left_pairs_unverified_is_no_proof(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Say less: a complete walk whose footprints were not all checked is inconclusive, exit 3."""
    from raceproof.cli.main import main

    monkeypatch.setattr(World, "_name_event", lambda self, event: None)  # events unnamed
    assert main(["prove", *COORDINATOR]) == 0  # the walk itself holds, complete
    capsys.readouterr()
    assert main(["prove", *COORDINATOR, "--check-footprints", "--json"]) == 3
    body = json.loads(capsys.readouterr().out)
    assert body["verdict"] == Verdict.INCONCLUSIVE and body["complete"] is True
    assert body["footprints_unverified"] > 0
    assert any(note.startswith("--check-footprints: ") for note in body["notes"])
    assert main(["prove", *COORDINATOR, "--check-footprints"]) == 3
    text = capsys.readouterr().out
    assert ": INCONCLUSIVE: " in text and "NOT checked" in text and "PROVEN" not in text


@pytest.mark.parametrize("argv", [ALL_NAMED, COORDINATOR], ids=["brooklin", "coordinator"])
def test_a_check_that_followed_every_pair_proves(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The coordinator's wakeup, which both threads wait on, is named: every pair is followed."""
    from raceproof.cli.main import main

    assert main(["prove", *argv, "--check-footprints", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["verdict"] == Verdict.OK and body["complete"] is True
    assert body["footprints_checked"] > 0 and body["footprints_unverified"] == 0
    assert main(["prove", *argv, "--check-footprints"]) == 0
    text = capsys.readouterr().out
    assert ": PROVEN: " in text and "(0 could not be followed)" in text


def _thread_states_touched(run: Runner) -> list[str]:
    """The thread-state resources one run of ``run`` (its first options) records."""
    seen: list[str] = []
    record = World.touch

    def noted(self: World, resource: str, write: bool = True) -> None:
        if "thread-states" in resource:
            seen.append(resource)
        record(self, resource, write)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(World, "touch", noted)
        run(ReplaySource([], strict=False))
    return seen


def test_a_model_moved_onto_tracked_state_proves_no_larger_than_with_whole_object_touches() -> None:
    """Kafka Streams' thread states moved from a hand-placed touch of them all to a tracked dict."""
    from raceproof.sim.shared import WholeObjectFootprints

    scenario = catalogue.get("streams-checkpoint-resurrection")
    run = scenario.runner("fix-load-after-lock", scenario.prove_config)
    before = _thread_states_touched(run)
    tracked = scenario.prove("fix-load-after-lock", Budget(examples=100_000), state_cache=False)
    whole = scenario.prove(
        "fix-load-after-lock",
        Budget(examples=100_000),
        whole_object_footprints=True,
        state_cache=False,
    )
    assert tracked.complete and whole.complete
    assert tracked.schedules <= whole.schedules
    # A parameter of those runs only: a run made after it records a resource per thread, as
    # before it (a third proof compared counts here, which are equal on this configuration
    # either way: 1,024), and a run it wraps records the dict whole.
    assert before and all(r.startswith("shared:thread-states['") for r in before), before
    assert _thread_states_touched(run) == before
    assert set(_thread_states_touched(WholeObjectFootprints(run))) == {"shared:thread-states"}


def test_a_zombie_controller_on_session_clients_is_proven_small_with_checked_footprints() -> None:
    """Issue 24 item 3's shape: ZkClient sessions (pause, expiry, notices) and a feeder reading
    the controllers' tracked state; no touch, no declare_footprints in the model."""
    from property_tests.zombie_model import ZombieConfig, runner

    config = ZombieConfig(pause_ms=(0, 200, 300), notice_ms=(0, 50), polls=6, feed_ms=50, feeds=8)
    found = prove(runner("buggy", config), budget=Budget(examples=10_000))
    assert found.verdict == "violated"
    fixed = prove(runner("fix", config), budget=Budget(examples=10_000), check_footprints=True)
    full = prove(runner("fix", config), budget=Budget(examples=10_000), reduction=False)
    assert fixed.complete and full.complete and fixed.verdict == full.verdict == "ok"
    assert fixed.schedules < 1_500 and fixed.schedules < full.schedules
    assert fixed.footprints_checked


def test_the_check_runs_in_every_shard_of_a_parallel_proof() -> None:
    from raceproof.sim.proof_plan import prove_parallel

    planted = Model((((0, "w", "x"), (0, "r", "y")), ((0, "inc", "x"),)), planted_at_ms=1)
    with pytest.raises(FootprintMismatch, match="does not commute"):
        prove_parallel(runner(planted), 2, budget=Budget(examples=10_000), check_footprints=True)
    clean = dataclasses.replace(planted, planted_at_ms=None)
    report = prove_parallel(runner(clean), 2, budget=Budget(examples=10_000), check_footprints=True)
    assert report.complete and report.footprints_checked is not None


def _touched(source: ChoiceSource) -> list[str]:
    """The resources a tracked dict's and record's writes touch in a world over ``source``."""
    world = World(source)
    seen: list[str] = []
    world.touch = lambda resource, write=True: seen.append(resource)  # type: ignore[method-assign]
    offsets = world.shared.dict("offsets", {"a": 0})
    lease = world.shared.record("lease", holder=None)
    offsets["a"] = 1
    lease.holder = "w1"
    return seen


def test_whole_object_footprints_is_a_parameter_of_the_run_it_wraps() -> None:
    """One resource per container only in the runs ``WholeObjectFootprints`` wraps: a run
    before it and a run after it over fresh sources record a resource per key and field."""
    from raceproof.sim import RandomSource
    from raceproof.sim.shared import WholeObjectFootprints

    fine = _touched(RandomSource(0))
    whole = WholeObjectFootprints(_touched)(RandomSource(0))
    after = _touched(RandomSource(0))
    assert fine == after and len(fine) == 2
    assert all(resource.endswith(("['a']", ".holder")) for resource in fine), fine
    assert whole == [fine[0].removesuffix("['a']"), fine[1].removesuffix(".holder")], whole
