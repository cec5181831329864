"""The verdict machinery's behaviours, one unit test each at its boundary value (issue 38, item 2).

Each behaviour below was once broken by a hand-made mutant that survived the
whole suite while making a verdict lie; each test pins one directly, with the
value where it turns, and runs the same under the derandomized CI profile (no
test here draws at random: the models are fixed, the searches seeded):

- a search with a single run stopped at a bound is inconclusive, never ok;
- Hypothesis' shrinking keeps the finding it found: a smaller example that
  raises instead of violating is not accepted, so a violation is not reported
  as ``error``;
- a node's crash during its GC pause ends the pause;
- two overlapping connection losses, the second shorter, still expire a
  session the first one outlasts; a round trip cut by a loss is made again;
- the watermark of the first batch is none (the batch's own records never
  make it), and a stored output with an extra row is a violation;
- a resumed campaign with a different example count runs its cells again;
- ``processed_once``: a retry of one of two streams forgives that stream only.

property_tests/README.md lists these with the mutation each one was seen to fail on.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

from raceproof.sim import (
    Bounds,
    Budget,
    ChoiceSource,
    History,
    ReplaySource,
    RunOutcome,
    VersionedStore,
    World,
    ZkClient,
    checker,
    execute,
    ok,
    violated,
)
from raceproof.sim.explore import explore
from raceproof.sim.lifecycle import processed_once
from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration import generated
from raceproof.spark_integration.campaign import Options, cells_to_run, grid
from raceproof.spark_integration.pipelines.windowed_count import WindowedCount

Runner = Callable[[ChoiceSource], RunOutcome]


# -- a single bound hit ---------------------------------------------------------------------
@checker("never")
def _never(history: History) -> None:
    return None


def _bounded_once() -> Runner:
    """Every run ends quietly except the search's first, which spins past the step bound.

    (PCT's own FIFO run, which counts its schedule draws, is a replay: not an example.)
    """
    calls = [0]

    def run(source: ChoiceSource) -> RunOutcome:
        calls[0] += not isinstance(source, ReplaySource)
        spin = calls[0] == 1 and not isinstance(source, ReplaySource)

        def build(world: World) -> None:
            def actor() -> Generator[Any, Any, None]:
                yield world.sleep(world.source.choose("gap", (0, 1)))
                while spin:
                    yield world.sleep(1)

            world.spawn("a", actor())

        return execute(build, source, [_never], Bounds(max_steps=50))

    return run


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis"])
def test_a_single_bound_hit_makes_the_search_inconclusive(strategy: str) -> None:
    report = explore(_bounded_once(), strategy, 0, Budget(examples=8))
    assert report.verdict == Verdict.INCONCLUSIVE and report.verdict.exit_code == 3
    assert report.inconclusive_runs == 1
    assert "1 runs hit a bound before finishing" in report.notes
    clean = explore(_bounded_once(), strategy, 0, Budget(examples=8))
    assert clean.examples == 8  # both ways: the other seven runs alone would hold


def test_no_bound_hit_holds() -> None:
    def run(source: ChoiceSource) -> RunOutcome:
        return execute(lambda world: None, source, [_never])

    assert explore(run, "random", 0, Budget(examples=8)).verdict == Verdict.OK


# -- the shrink that changes the finding ----------------------------------------------------
def _violation_then_error() -> Runner:
    """``v >= 1`` violates; once one was seen, a smaller ``v >= 1`` raises instead.

    Shrinking from the first violation toward smaller values meets the error:
    a different finding, which the search must not take for the one it found.
    """
    first: list[int] = []

    @checker("small-v")
    def small_v(history: History) -> Any:
        drawn = history.of_kind("v")
        if drawn and int(drawn[-1].get("v")) >= 1:  # type: ignore[arg-type]
            return violated("v is not 0", drawn[-1].index)
        return ok()

    def run(source: ChoiceSource) -> RunOutcome:
        def build(world: World) -> None:
            v = world.source.choose("v", tuple(range(10)))
            world.log("a", "v", v=v)
            if v >= 1 and first and v < first[0]:
                raise RuntimeError("another bug, below the first violation")
            if v >= 1 and not first:
                first.append(v)

        return execute(build, source, [small_v])

    return run


def test_shrinking_keeps_the_finding_it_found() -> None:
    report = explore(_violation_then_error(), "hypothesis", 0, Budget(examples=200))
    assert report.verdict == Verdict.VIOLATED, report.notes
    assert report.shrunk is not None and report.shrunk.error is None
    assert report.shrunk.violation is not None and report.shrunk.violation.checker == "small-v"


# -- a crash during a pause -----------------------------------------------------------------
def _crash_in_pause(crash: bool) -> list[int]:
    """A node paused 0..1000 ms; at 10 ms crashed (or not), at 20 ms restarted: when it steps."""
    stepped: list[int] = []

    def build(world: World) -> None:
        node = world.node("n1")

        def worker() -> Generator[Any, Any, None]:
            while True:
                stepped.append(world.now_ms)
                yield world.sleep(5)

        node.on_start(lambda: node.spawn("worker", node.guard(worker())))
        node.spawn("worker", node.guard(worker()))

        def nemesis() -> Generator[Any, Any, None]:
            node.pause(1000)
            yield world.sleep(10)
            if crash:
                node.crash()
                yield world.sleep(10)
                node.restart()
            yield world.sleep(1000)
            world.finish("done")

        world.spawn("nemesis", nemesis())

    execute(build, _fifo(), [])
    return stepped


def _fifo() -> ChoiceSource:
    """Every draw takes option 0: the one schedule these fixed models need."""
    return ReplaySource([], strict=False)


def test_a_crash_during_a_pause_ends_the_pause() -> None:
    restarted = _crash_in_pause(crash=True)
    assert 20 in restarted  # the new incarnation steps at once, not when the old pause ends
    assert all(t < 20 or t >= 20 for t in restarted) and min(t for t in restarted if t > 0) == 20
    paused = _crash_in_pause(crash=False)
    assert min(t for t in paused if t > 0) >= 1000  # both ways: without the crash, it waits


# -- two overlapping connection losses ------------------------------------------------------
def _session_after(losses: list[tuple[int, int]], timeout_ms: int = 2000) -> dict[str, Any]:
    """Connection losses (at_ms, duration_ms) on one client; the session's state at 5 s."""
    seen: dict[str, Any] = {}

    def build(world: World) -> None:
        store = VersionedStore(world)
        client = ZkClient(world, store, "c", session_timeout_ms=timeout_ms)

        def nemesis() -> Generator[Any, Any, None]:
            now = 0
            for at_ms, duration_ms in losses:
                yield world.sleep(at_ms - now)
                now = at_ms
                client.lose_connection(duration_ms)
            yield world.sleep(5000 - now)
            seen.update(live=client.live, state=client.state)
            world.finish("done")

        world.spawn("nemesis", nemesis())

    execute(build, _fifo(), [])
    return seen


def test_a_shorter_second_loss_does_not_save_the_session() -> None:
    # the first loss outlasts the 2000 ms timeout; a 100 ms loss inside it changes nothing
    assert _session_after([(0, 3000), (500, 100)]) == {"live": False, "state": "expired"}
    assert _session_after([(0, 3000)]) == {"live": False, "state": "expired"}
    # both ways: losses that end before the timeout keep the session
    assert _session_after([(0, 1000), (500, 100)]) == {"live": True, "state": "connected"}
    assert _session_after([(0, 1999)]) == {"live": True, "state": "connected"}
    assert _session_after([(0, 2000)]) == {"live": False, "state": "expired"}  # the boundary


def test_a_round_trip_cut_by_a_loss_is_made_again() -> None:
    done_at: list[int] = []

    def build(world: World) -> None:
        client = ZkClient(world, VersionedStore(world), "c", session_timeout_ms=10_000)

        def caller() -> Generator[Any, Any, None]:
            yield from client.retrying(100)
            done_at.append(world.now_ms)

        def nemesis() -> Generator[Any, Any, None]:
            yield world.sleep(10)
            client.lose_connection(50)

        world.spawn("caller", caller())
        world.spawn("nemesis", nemesis())

    execute(build, _fifo(), [])
    # the reply due at 100 ms was cut at 10 ms (reconnected at 60 ms): the call is made again
    assert done_at == [200]


# -- the watermark of the first batch, an extra output row ----------------------------------
def test_the_first_batch_has_no_watermark() -> None:
    pipeline = WindowedCount()
    old, new = pipeline.records("k", 1)[0], pipeline.records("k", 100)[0]
    must, late = generated.kept(pipeline, [[new, old]], 10)
    assert must == [new, old] and late == []  # its own records never set its watermark
    # both ways: the same old record in the next batch is behind 100 - 10
    must, late = generated.kept(pipeline, [[new], [old]], 10)
    assert must == [new] and late == [old]


def _judge_stored(extra: bool) -> Any:
    pipeline = WindowedCount()
    records = [pipeline.records("k", 1)[0], pipeline.records("j", 2)[0]]
    history = History()
    history.append(0, "driver", "pipeline", name=pipeline.name, key=list(pipeline.key_fields))
    generated.log_reference(
        lambda actor, kind, **fields: history.append(1, actor, kind, **fields),
        pipeline,
        records,
        [],
        [],
    )
    rows = pipeline.expected(records)
    if extra:
        rows = [*rows, {"window": rows[0]["window"], "key": "x", "count": 1}]
    for row in rows:
        history.append(2, "sink", "sink.row", batch=1, row=row)
    return generated.within_watermark_reference()(history)


def test_an_extra_output_row_is_a_violation() -> None:
    assert _judge_stored(extra=False).status == "ok"
    verdict = _judge_stored(extra=True)
    assert verdict.status == "violated" and "key=x" in verdict.message


# -- a resumed campaign with another example count ------------------------------------------
def test_a_resumed_campaign_with_more_examples_runs_its_cells_again() -> None:
    def cells(examples: int) -> list[Any]:
        options = Options(
            scenarios=("lost-update",),
            strategies=("random",),
            seeds=(0, 1),
            examples=examples,
        )
        return [c for c in grid(options) if c.kind == "search"]

    before = cells(10)
    rows = [{"cell": c.key, "verdict": "ok"} for c in before]
    assert before and cells_to_run(before, rows) == []  # resumed as it was: nothing to redo
    after = cells(11)
    assert cells_to_run(after, rows) == after  # one example more: every cell again


# -- a retry of one of two streams ----------------------------------------------------------
def _stops(retried: list[str]) -> History:
    history = History()
    history.append(0, "ctl", "stop.request", entity="a")
    history.append(0, "ctl", "stop.request", entity="b")
    history.append(1, "leader", "stop.process", streams=["a", "b"])
    history.append(2, "leader", "stop.retry", streams=retried)
    history.append(3, "leader", "stop.process", streams=["a", "b"])
    return history


def test_a_retry_of_one_of_two_streams_forgives_that_stream_only() -> None:
    once = processed_once("once")
    verdict = once(_stops(["a"]))
    assert verdict.status == "violated" and verdict.op_index == 4
    assert "of b again" in verdict.message
    assert once(_stops(["a", "b"])).status == "ok"  # both retried: both may be worked again
