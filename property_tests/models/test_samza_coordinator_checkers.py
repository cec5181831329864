"""The Samza and group-coordinator checkers, called directly on small histories.

Their models' tests run whole simulations (seconds each); an injected bug in
a checker's boundary (an op exactly at the drain marker, a commit exactly at
it, an HWM exactly at the offset, an offset written twice) needs a history
that sits on that boundary, built here op by op, with the violation planted
and not. Generated histories check the verdicts against the docstrings.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from raceproof.models.group_coordinator.checkers import (
    ack_after_hwm,
    last_written_increases,
    log_matches_state,
    one_event_in_flight,
)
from raceproof.models.samza.checkers import (
    commit_discipline,
    drain_aggregation,
    drain_completeness,
    drain_liveness,
    run_isolation,
)
from raceproof.sim import CheckerResult, History, ok, unknown


def _drain(
    marker: int,
    processed: list[tuple[int, bool]],
    committed: int | None,
    **final: object,
) -> History:
    """One source partition ``s`` with its marker at ``marker``; ``processed`` lists
    (offset, after the marker was injected); ``committed`` is the final checkpoint."""
    history = History()
    for offset, after in processed:
        if not after:
            history.append(0, "task", "process", ssp="s", offset=offset, seq=offset)
    history.append(1, "driver", "drain.inject", ssp="s", marker_offset=marker)
    for offset, after in processed:
        if after:
            history.append(2, "task", "process", ssp="s", offset=offset, seq=offset)
    fields: dict[str, object] = dict(final)
    if committed is not None:
        fields["source_committed"] = {"s": committed}
    history.append(3, "observer", "final", **fields)  # type: ignore[arg-type]
    return history


def test_drain_completeness_boundaries() -> None:
    name = "drain-completeness"
    assert drain_completeness(History()) == unknown(name, "the run ended before the upgrade")
    done = [(0, False), (1, True)]
    assert drain_completeness(_drain(2, done, 2)) == ok(name)
    assert drain_completeness(_drain(2, done, 5)) == ok(name)
    # The marker offset itself processed before the marker was injected: fine.
    assert drain_completeness(_drain(2, [*done, (2, False)], 2)) == ok(name)
    # ... after it: the first op past the marker is the violation.
    after = drain_completeness(_drain(2, [*done, (2, True)], 2))
    assert (after.status, after.op_index) == ("violated", 3)
    assert after.message == "s offset 2 processed after its drain marker at 2"
    # An offset below the marker never processed.
    gap = drain_completeness(_drain(2, [(1, True)], 2))
    assert gap == CheckerResult(
        checker=name,
        status="violated",
        op_index=2,
        message="s: offsets [0] before the drain marker were never processed",
    )
    # Committed one short of the marker, or not at all.
    short = drain_completeness(_drain(2, done, 1))
    assert short == CheckerResult(
        checker=name,
        status="violated",
        op_index=3,
        message="s: last checkpoint 1 is before the drain marker at 2",
    )
    assert drain_completeness(_drain(2, done, None)).message.startswith("s: last checkpoint None")
    assert drain_completeness(_drain(0, [], None)) == ok(name)
    # No checkpoint for the partition counts as 0: one short of a marker at 1.
    assert drain_completeness(_drain(1, [(0, False)], None)).message == (
        "s: last checkpoint None is before the drain marker at 1"
    )


def test_drain_completeness_leftovers_come_first() -> None:
    name = "drain-completeness"
    left = drain_completeness(
        _drain(1, [], 0, intermediate_left={"i1": [4, 5], "i0": [], "i2": [7]})
    )
    assert left == CheckerResult(
        checker=name,
        status="violated",
        op_index=1,
        message="3 intermediate messages left for the new deployment, which cannot deserialize them: "
        "{'i1': [4, 5], 'i2': [7]}",
    )
    empty = drain_completeness(_drain(0, [], 0, intermediate_left={"i0": []}, unfired_pane_seqs=[]))
    assert empty == ok(name)
    panes = drain_completeness(_drain(1, [], 0, unfired_pane_seqs=[3, 9]))
    assert panes == CheckerResult(
        checker=name,
        status="violated",
        op_index=1,
        message="window panes never fired; the aggregates of messages [3, 9] are lost",
    )


@given(st.lists(st.sampled_from(["run0", "run1", "run2"]), max_size=5), st.booleans())
def test_only_the_current_run_is_obeyed(runs: list[str], enter: bool) -> None:
    history = History()
    for i, run in enumerate(runs):
        history.append(i, f"t{i}", "drain.enter" if enter else "drain.notified", run_id=run)
    history.append(9, "t", "drain.other", run_id="run0")
    verdict = run_isolation(history)
    stale = [i for i, run in enumerate(runs) if run != "run1"]
    if not stale:
        assert verdict == ok("run-isolation")
    else:
        at = stale[0]
        assert verdict == CheckerResult(
            checker="run-isolation",
            status="violated",
            op_index=at,
            message=f"t{at} obeyed a drain of run {runs[at]} while run1 is running",
        )


@given(st.lists(st.tuples(st.integers(0, 3), st.none() | st.integers(0, 3)), max_size=5))
def test_a_partition_is_drained_after_every_upstream(cases: list[tuple[int, int | None]]) -> None:
    history = History()
    for i, (count, expected) in enumerate(cases):
        history.append(
            i, "t", "ssp.drained", ssp=f"i{i}", producers=list(range(count)), expected=expected
        )
    verdict = drain_aggregation(history)
    bad = [i for i, (c, e) in enumerate(cases) if e is not None and c != e]
    if not bad:
        assert verdict == ok("drain-aggregation")
    else:
        at = bad[0]
        count, expected = cases[at]
        assert verdict == CheckerResult(
            checker="drain-aggregation",
            status="violated",
            op_index=at,
            message=f"i{at} declared drained after DrainMessages from {list(range(count))}, "
            f"but {expected} upstream tasks produce to it",
        )


def test_no_producers_field_is_no_producers() -> None:
    history = History()
    history.append(0, "t", "ssp.drained", ssp="i0", expected=0)
    assert drain_aggregation(history) == ok("drain-aggregation")


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("commit"), st.sampled_from(["sync", "async"]), st.booleans()),
            st.tuples(st.just("task.shutdown"), st.just(""), st.booleans()),
        ),
        max_size=6,
    )
)
def test_no_async_commit_while_draining_and_no_pending_commit_at_exit(
    ops: list[tuple[str, str, bool]],
) -> None:
    history = History()
    first: tuple[int, str] | None = None
    for i, (kind, mode, flag) in enumerate(ops):
        if kind == "commit":
            history.append(i, f"t{i}", kind, mode=mode, draining=flag)
            if mode == "async" and flag and first is None:
                first = (i, f"t{i} committed asynchronously while draining")
        else:
            history.append(i, f"t{i}", kind, commit_pending=flag)
            if flag and first is None:
                first = (i, f"t{i} shut down with a commit pending")
    verdict = commit_discipline(history)
    if first is None:
        assert verdict == ok("commit-discipline")
    else:
        assert verdict == CheckerResult("commit-discipline", "violated", *first)


def test_the_drain_liveness_reads_the_last_timeout() -> None:
    name = "drain-liveness"
    history = History()
    assert drain_liveness(history) == unknown(
        name, "the run ended before the drain finished or timed out"
    )
    history.append(0, "observer", "final")
    assert drain_liveness(history) == ok(name)
    history.append(1, "driver", "drain.timeout", after_ms=100, tasks_running=["a"])
    history.append(2, "driver", "drain.timeout", after_ms=200, tasks_running=["b"])
    history.append(3, "driver", "drain.timeout", after_ms=300, tasks_running=["c"])
    assert drain_liveness(history) == CheckerResult(
        checker=name,
        status="violated",
        op_index=3,
        message="the drain did not finish within 300 ms; still running: ['c']",
    )


# -- the group coordinator ------------------------------------------------------------------
@given(
    st.lists(
        st.tuples(st.sampled_from(["event.poll", "event.done"]), st.integers(0, 1)), max_size=8
    )
)
def test_one_event_in_flight_per_partition(events: list[tuple[str, int]]) -> None:
    history = History()
    busy: dict[int, int] = {}
    first: tuple[int, str] | None = None
    for i, (kind, partition) in enumerate(events):
        history.append(i, "coordinator", kind, partition=partition)
        if kind == "event.poll":
            if partition in busy and first is None:
                first = (
                    i,
                    f"partition {partition} polled again while the event polled at op "
                    f"#{busy[partition]} is in flight",
                )
            busy[partition] = i
        else:
            busy.pop(partition, None)
    verdict = one_event_in_flight(history)
    if first is None:
        assert verdict == ok("one-event-in-flight")
    else:
        assert verdict == CheckerResult("one-event-in-flight", "violated", *first)


def _coordinator(*ops: tuple[str, dict[str, object]]) -> History:
    history = History()
    for i, (kind, fields) in enumerate(ops):
        history.append(i, "coordinator", kind, **fields)  # type: ignore[arg-type]
    return history


def test_the_log_must_match_the_replayed_state() -> None:
    name = "log-matches-state"
    p0 = {"partition": 0}
    good = _coordinator(
        ("event.poll", p0),
        ("replay", {**p0, "batch": "a"}),
        ("log.append", {**p0, "batch": "a"}),  # in flight: not compared yet
        ("replay", {**p0, "batch": "b"}),
        ("revert", {**p0, "batches": ["b"]}),
        ("event.done", p0),
        ("replay", {**p0, "batch": "c"}),
        ("log.append", {**p0, "batch": "c"}),
        ("revert", {"partition": 1}),
    )
    assert log_matches_state(good) == ok(name)
    phantom = _coordinator(("log.append", {**p0, "batch": "x"}))
    assert log_matches_state(phantom) == CheckerResult(
        checker=name,
        status="violated",
        op_index=0,
        message="partition 0: the log holds ['x'] which the state does not (a phantom record); "
        "replaying the log would not rebuild the state",
    )
    missing = _coordinator(("event.poll", p0), ("replay", {**p0, "batch": "a"}), ("event.done", p0))
    assert log_matches_state(missing).message.startswith(
        "partition 0: the state holds ['a'] which the log does not;"
    )
    assert log_matches_state(missing).op_index == 2
    order = _coordinator(
        ("event.poll", p0),
        ("replay", {**p0, "batch": "a"}),
        ("replay", {**p0, "batch": "b"}),
        ("log.append", {**p0, "batch": "b"}),
        ("log.append", {**p0, "batch": "a"}),
        ("event.done", p0),
    )
    assert log_matches_state(order).message.startswith(
        "partition 0: the log's order ['b', 'a'] differs from the replay order ['a', 'b']"
    )
    # Once its event is done a partition is compared again at every append.
    after_done = _coordinator(
        ("event.poll", p0), ("event.done", p0), ("log.append", {**p0, "batch": "x"})
    )
    assert log_matches_state(after_done).op_index == 2
    # A second poll of another partition keeps this one's comparison.
    other = _coordinator(("event.poll", {"partition": 1}), ("log.append", {**p0, "batch": "x"}))
    assert log_matches_state(other).op_index == 1


def test_an_ack_needs_the_hwm_past_its_offset_and_its_batch_there() -> None:
    name = "ack-after-hwm"

    def ack(offset: int, hwm: int, batch: str = "a", partition: int = 0) -> History:
        return _coordinator(
            ("log.append", {"partition": 0, "batch": "a", "offset": 4}),
            ("write.ack", {"partition": partition, "batch": batch, "offset": offset, "hwm": hwm}),
        )

    assert ack_after_hwm(ack(4, 5)) == ok(name)
    assert ack_after_hwm(ack(4, 9)) == ok(name)
    assert ack_after_hwm(ack(4, 4)) == CheckerResult(
        checker=name,
        status="violated",
        op_index=1,
        message="a acknowledged at offset 4 before the HWM (4) covered it",
    )
    assert ack_after_hwm(ack(3, 5)) == CheckerResult(
        checker=name,
        status="violated",
        op_index=1,
        message="a acknowledged at offset 3 of partition 0, where the log holds None",
    )
    assert ack_after_hwm(ack(4, 5, batch="b")).message.endswith("where the log holds a")
    assert ack_after_hwm(ack(4, 5, partition=1)).status == "violated"


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4)), max_size=8))
def test_last_written_strictly_increases(writes: list[tuple[int, int]]) -> None:
    history = History()
    last: dict[int, int] = {}
    first: tuple[int, str] | None = None
    for i, (partition, offset) in enumerate(writes):
        history.append(i, "coordinator", "last-written", partition=partition, offset=offset)
        if partition in last and offset <= last[partition] and first is None:
            first = (
                i,
                f"partition {partition}: lastWrittenOffset went from {last[partition]} to {offset}",
            )
        last[partition] = offset
    verdict = last_written_increases(history)
    if first is None:
        assert verdict == ok("last-written-increases")
    else:
        assert verdict == CheckerResult("last-written-increases", "violated", *first)
