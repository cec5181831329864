"""Real local-mode Spark under injected faults, judged by the same checkers as the models.

The session is started by the fixture (never mocked); if Spark cannot start,
these tests fail. They run on one xdist worker (one session per process).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sim import dataflow
from spark_integration import experiments
from spark_integration.sandbox import Sandbox, SandboxError
from spark_integration.session import spark_session, stop_session

pytestmark = pytest.mark.xdist_group("spark")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session()
    yield session
    stop_session()


def test_the_checkers_are_the_shared_ones() -> None:
    assert experiments.no_duplicate_emission is dataflow.no_duplicate_emission
    assert experiments.drain_emits_every_window is dataflow.drain_emits_every_window


def test_stale_checkpoint_restore_duplicates_on_stock_spark_and_fencing_refuses(spark: Any) -> None:
    stock = experiments.stale_checkpoint_restore(spark, guarded=False)
    assert stock.verdict == "violated" and stock.checker == "no-duplicate-emission"
    assert "emitted again" in stock.message
    guarded = experiments.stale_checkpoint_restore(spark, guarded=True)
    assert guarded.verdict == "ok"
    assert "refusing to start" in guarded.message and guarded.history.of_kind("guard.refused")


def test_available_now_drain_leaves_windows_unemitted_and_the_procedure_emits_them(
    spark: Any,
) -> None:
    stock = experiments.drain(spark, guarded=False)
    assert stock.verdict == "violated" and stock.checker == "drain-completeness"
    assert "never emitted" in stock.message
    guarded = experiments.drain(spark, guarded=True)
    assert guarded.verdict == "ok", guarded.message
    emitted = {(op.get("window"), op.get("key")) for op in guarded.history.of_kind("sink.row")}
    assert ("2026-01-01T00:00:20", "a") in emitted


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
