"""The Spark harness's capture and judging, on hand-made files and histories (no Spark needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.sim.dataflow import state_matches_inputs
from raceproof.sim.history import History
from raceproof.sim.lifecycle import no_uncaught_error
from raceproof.spark_integration import session
from raceproof.spark_integration.job import batch_files, short_error
from raceproof.spark_integration.sandbox import Sandbox, SandboxError


def _checkpoint(root: Path, log_offsets: list[int]) -> Sandbox:
    sandbox = Sandbox(root)
    (sandbox.checkpoint / "offsets").mkdir()
    (sandbox.checkpoint / "sources" / "0").mkdir(parents=True)
    for batch, offset in enumerate(log_offsets):
        (sandbox.checkpoint / "offsets" / str(batch)).write_text(
            f'v1\n{{}}\n{{"logOffset":{offset}}}\n'
        )
    for offset in range(max(log_offsets) + 1):
        entry = {"path": f"file:///x/input/part-{offset + 1:05d}.json", "batchId": offset}
        (sandbox.checkpoint / "sources" / "0" / str(offset)).write_text(
            "v1\n" + json.dumps(entry) + "\n"
        )
    return sandbox


def test_batch_files_follow_the_offsets_log_not_the_batch_id(tmp_path: Path) -> None:
    # Batch 2 is a no-data batch (the watermark moved): from then on batch id != log offset.
    sandbox = _checkpoint(tmp_path / "t", [0, 1, 1, 2])
    assert [batch_files(sandbox, b) for b in range(4)] == [
        ["part-00001.json"],
        ["part-00002.json"],
        [],
        ["part-00003.json"],
    ]


def _history(state_count: int, emitted: bool) -> History:
    history = History()
    history.append(0, "driver", "pipeline", name="count", key=["window", "key"])
    history.append(
        0, "driver", "input.file", file="f1", records=[], keys=[["w0", "a"], ["w0", "a"]]
    )
    history.append(0, "spark", "checkpoint.batch", batch=0, files=["f1"])
    if emitted:
        history.append(0, "sink", "sink.row", batch=0, row={"window": "w0", "key": "a", "count": 2})
    else:
        history.append(0, "spark", "state.row", batch=0, key=["w0", "a"], count=state_count)
    history.append(0, "spark", "state.row", batch=0, key=["w9", "z"], count=1)
    return history


def test_replay_equivalence_compares_the_store_with_the_fold_of_the_inputs() -> None:
    check = state_matches_inputs()
    # w9/z holds a record that no input had:
    assert check(_history(2, emitted=False)).status == "violated"
    history = _history(2, emitted=False)
    history.ops.pop()
    assert check(history).status == "ok"
    history = _history(3, emitted=False)
    history.ops.pop()
    verdict = check(history)
    assert verdict.status == "violated" and "holds count 3" in verdict.message
    history = _history(0, emitted=True)
    history.ops.pop()
    assert check(history).status == "unknown"  # no state read: nothing to compare


def test_an_uncaught_query_thread_death_in_the_jvm_log_is_a_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "jvm.log"
    log.write_text("WARN something\n")
    monkeypatch.setattr(session, "_JVM_LOG", log)
    offset = session.jvm_log_offset()
    with log.open("a") as handle:
        handle.write(
            'Exception in thread "stream execution thread for [id = 1, runId = 2]" '
            "java.lang.StackOverflowError\n\tat java.base/java.util.regex.Pattern\n"
        )
    (found,) = session.uncaught_errors_since(offset)
    assert found == (
        "stream execution thread for [id = 1, runId = 2]",
        "java.lang.StackOverflowError",
    )
    assert session.uncaught_errors_since(session.jvm_log_offset()) == []
    history = History()
    history.append(0, "jvm", "error.uncaught", thread=found[0], error=found[1])
    verdict = no_uncaught_error()(history)
    assert verdict.status == "violated" and "StackOverflowError" in verdict.message


def test_short_error_keeps_the_java_line() -> None:
    error = RuntimeError(
        "An error occurred while calling o1.start.\n: java.lang.IllegalStateException: "
        "Cannot start query\n\tat org.apache.Foo"
    )
    assert short_error(error) == "java.lang.IllegalStateException: Cannot start query"
    assert short_error(ValueError("")) == "ValueError"


def test_the_sandbox_refuses_paths_outside_it(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "trial")
    with pytest.raises(SandboxError, match="outside the sandbox"):
        sandbox.delete("../elsewhere")
    with pytest.raises(SandboxError):
        sandbox.inside("/etc/passwd")
    assert (
        sandbox.inside("checkpoint/offsets")
        == (tmp_path / "trial" / "checkpoint" / "offsets").resolve()
    )


def test_an_unknown_experiment_exits_2_naming_the_valid_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["spark-check", "--experiment", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown experiment 'nope'" in err and "stale-checkpoint-restore" in err


def test_spark_that_cannot_start_is_a_clear_error_with_what_the_jvm_said() -> None:
    env = {**os.environ, "JAVA_HOME": "/nonexistent-java"}
    done = subprocess.run(
        [sys.executable, "-m", "raceproof.cli.main", "spark-check", "--experiment", "drain"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot run spark-check: Spark did not start" in done.stderr
    assert "/nonexistent-java/bin/java" in done.stderr  # the JVM launcher's own words


def test_the_maintenance_point_is_a_finished_snapshot_not_its_temp_file(tmp_path: Path) -> None:
    from raceproof.spark_integration.faults import wait_snapshot

    sandbox = Sandbox(tmp_path / "t")
    store = sandbox.checkpoint / "state" / "0" / "1"
    assert wait_snapshot(sandbox, timeout_s=0.05) is None  # no state folder yet
    store.mkdir(parents=True)
    (store / "1.delta").write_bytes(b"x")
    (store / ".2.snapshot.3f2a.tmp").write_bytes(b"x")  # maintenance still writing it
    (store / ".1.delta.crc").write_bytes(b"x")
    assert wait_snapshot(sandbox, timeout_s=0.05) is None
    (store / "2.snapshot").write_bytes(b"x")
    assert wait_snapshot(sandbox, timeout_s=0.05) == store / "2.snapshot"


def test_py4j_records_caused_by_an_interrupt_are_dropped_and_others_kept() -> None:
    import logging
    import sys

    from raceproof.spark_integration.session import QUIET_AFTER_INTERRUPT

    def record_of(exc: BaseException) -> logging.LogRecord:
        try:
            raise exc
        except BaseException:
            info = sys.exc_info()
        return logging.LogRecord("py4j.clientserver", logging.ERROR, "f", 1, "m", (), info)

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise BrokenPipeError(32, "Broken pipe")  # noqa: B904 -- the chain py4j makes
    except BrokenPipeError as chained:
        after_interrupt = chained
    assert QUIET_AFTER_INTERRUPT.filter(record_of(after_interrupt)) is False
    assert QUIET_AFTER_INTERRUPT.filter(record_of(BrokenPipeError(32, "Broken pipe"))) is True
    assert logging.getLogger("py4j.java_gateway").filters.count(QUIET_AFTER_INTERRUPT) == 1
