"""No exception of the choice source or the kernel escapes a run as something else.

Regression for issue 22 item 2: ``VersionedStore._deliver`` waits on the
previous delivery of a persistent watch with ``yield previous``. When that
delivery's watcher drew a choice and Hypothesis stopped the test there
(``StopTest``, a ``BaseException``), SimPy threw a *copy* of the exception into
the waiting delivery; the copy, not Hypothesis' own, left the run, Hypothesis
did not recognise it and ``explore --strategy hypothesis`` ended in a traceback
with exit 1. The kernel now lets such exceptions out unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import StopTest

from raceproof.sim import (
    Budget,
    ChoiceSource,
    ReplaySource,
    Timer,
    VersionedStore,
    World,
    ZkClient,
    execute,
    explore,
)
from raceproof.sim.choices import RandomSource
from raceproof.sim.world import ProcessGenerator


class _StopOn(ChoiceSource):
    """FIFO, except the watch delays given, and ``stop`` raised at the draw labelled ``at``."""

    def __init__(self, delays: Sequence[int], at: str, stop: BaseException) -> None:
        super().__init__()
        self.delays, self.at, self.stop = list(delays), at, stop

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        if label == self.at:
            raise self.stop
        if label.endswith("watch-delay") and self.delays:
            return self.delays.pop(0)
        return 0


class Typo(Exception):
    pass


def _two_ordered_deliveries(world: World, typo: bool = False) -> None:
    """A persistent watch sees two changes; the first is delivered late, the second waits for it."""
    store = VersionedStore(world, watch_delay_ms=(0, 50))
    store.create("/a", 0)

    def watcher(event: object) -> None:
        if typo:
            raise Typo("boom")  # the model's own bug, in the first delivery
        world.source.draw_bool("watcher.reacts")  # Hypothesis may stop the test right here

    store.add_watch("/a", watcher)

    def writer() -> ProcessGenerator:
        store.set("/a", 1)  # delivered after 50 ms
        yield world.sleep(1)
        store.set("/a", 2)  # delivered after 0 ms: waits on the first delivery

    world.spawn("writer", writer())


def test_the_choice_sources_stop_leaves_the_run_as_itself() -> None:
    stop = StopTest(7)
    source = _StopOn([1, 0], "watcher.reacts", stop)
    with pytest.raises(StopTest) as raised:
        execute(_two_ordered_deliveries, source, [])
    assert raised.value is stop  # before the fix: a copy, whose __cause__ was this one


def test_a_watchers_own_exception_is_the_error_with_the_watchers_frame() -> None:
    source = _StopOn([1, 0], "unused", Typo("unused"))
    outcome = execute(lambda world: _two_ordered_deliveries(world, typo=True), source, [])
    assert outcome.status == "error" and outcome.error is not None
    assert outcome.error.type.endswith("Typo") and outcome.error.message == "boom"
    # the innermost frame of the user's code is the watcher's draw, not the kernel's yield
    assert outcome.error.frames[-1].name == "watcher"
    assert outcome.error.where.endswith(f"{__file__.rsplit('/', 1)[-1]}:{_line_of('raise Typo')}")


def _line_of(marker: str) -> int:
    with open(__file__) as handle:
        return next(i for i, line in enumerate(handle, 1) if line.strip().startswith(marker))


def test_hypothesis_search_on_ordered_watch_deliveries_ends_in_a_verdict() -> None:
    """The end-to-end form: many ordered deliveries, each drawing; Hypothesis overruns and stops."""

    def build(world: World) -> None:
        store = VersionedStore(world, watch_delay_ms=(0, 3, 7))
        store.create("/a", 0)

        def watcher(event: object) -> None:
            for i in range(10):
                world.source.draw_int(f"watcher.work{i}", 0, 1000)

        store.add_watch("/a", watcher)
        session = store.open_session()

        def writer() -> ProcessGenerator:
            for value in range(15):
                store.set("/a", value)
                yield world.sleep(world.source.choose("writer.gap", (0, 1)))
            store.expire_session(session)

        world.spawn("writer", writer())

    for seed in range(2):
        report = explore(lambda source: execute(build, source, []), "hypothesis", seed, Budget(20))
        assert report.verdict == "ok"


@settings(max_examples=40, deadline=None)
@given(
    watches=st.integers(1, 3),
    changes=st.integers(1, 8),
    expire_at=st.one_of(st.none(), st.integers(0, 8)),
    pause_ms=st.integers(0, 40),
    timer_ms=st.one_of(st.none(), st.integers(0, 30)),
    seed=st.integers(0, 2**16),
    raise_at=st.one_of(st.none(), st.integers(1, 8)),
    stop_at=st.one_of(st.none(), st.integers(1, 30)),
)
def test_no_run_ends_in_an_exception_that_is_not_the_models_own(
    watches: int,
    changes: int,
    expire_at: int | None,
    pause_ms: int,
    timer_ms: int | None,
    seed: int,
    raise_at: int | None,
    stop_at: int | None,
) -> None:
    """Random small models (watches, sessions, expiries, timers, pauses): a run ends in a
    verdict, and an exception in it is the model's own (status ``error``, its own frame);
    a choice source that stops the test (Hypothesis' StopTest) stops it as itself."""

    class ModelBug(Exception):
        pass

    def build(world: World) -> None:
        store = VersionedStore(world, watch_delay_ms=(0, 2, 9))
        store.create("/w", 0)
        client = ZkClient(world, store, "c", session_timeout_ms=20, notice_ms=(0, 3, 11))
        store.create("/e", 0, ephemeral_session=client.session)
        seen = [0]

        def watcher(event: object) -> None:
            seen[0] += 1
            if raise_at is not None and seen[0] == raise_at:
                raise ModelBug(f"delivery {seen[0]}")
            world.source.draw_bool("watcher.react")

        for i in range(watches):
            store.add_watch("/w", watcher, recursive=bool(i % 2))
        store.exists("/e", watch=watcher)  # a one-shot watch the expiry fires
        client.add_listener(lambda event: world.source.draw_bool("listener.react"))
        if timer_ms is not None:
            Timer(world, "timer", lambda: watcher(None)).start(timer_ms)

        def writer() -> ProcessGenerator:
            for value in range(changes):
                if expire_at == value:
                    client.expire()
                if value == 1 and pause_ms:
                    client.pause(pause_ms)
                store.set("/w", value)
                yield world.sleep(world.source.choose("writer.pause", (0, pause_ms)))
            yield world.sleep(5)

        world.spawn("writer", writer())

    stop = StopTest(3)
    source = _Stopping(RandomSource(seed), stop_at, stop)
    try:
        outcome = execute(build, source, [])
    except StopTest as raised:
        assert raised is stop and stop_at is not None  # the source's own, never a copy
        return
    assert outcome.status in ("ok", "error")
    if outcome.status == "error":
        assert outcome.error is not None and outcome.error.type.endswith("ModelBug")
        assert outcome.error.frames[-1].name == "watcher"
    replayed = execute(build, ReplaySource(outcome.values), [])
    assert replayed.status == outcome.status and replayed.trace_hash == outcome.trace_hash


class _Stopping(ChoiceSource):
    """``inner``'s draws, and ``stop`` raised at draw number ``at`` (as Hypothesis overruns)."""

    def __init__(self, inner: RandomSource, at: int | None, stop: BaseException) -> None:
        super().__init__()
        self.inner, self.at, self.stop, self.count = inner, at, stop, 0

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        self.count += 1
        if self.count == self.at:
            raise self.stop
        return self.inner._pick(label, n, p_nonzero, keys)


def test_a_base_exception_at_the_command_boundary_is_exit_70(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A BaseException of raceproof's own that reaches main is its bug (70); the model's is error (4).

    The model's code may leave by any BaseException (issue 33, item 3): its
    ``Escape`` is the verdict ``error``, exit 4, naming it. One raised by
    raceproof's own code (here its loader, patched) and let through is 70.
    """
    from raceproof.cli.main import main
    from raceproof.scenarios import discovery

    (tmp_path / "escape.py").write_text(
        "import raceproof\n"
        "from raceproof.sim import Bounds\n\n"
        "class Escape(BaseException):\n    pass\n\n"
        "def build(world, variant, config):\n    raise Escape('out of band')\n\n"
        "raceproof.register(raceproof.Scenario(name='escape', summary='s', variants={'v': 'v'},\n"
        "    expect_violation=frozenset(), checkers=(), build=build, config=None,\n"
        "    prove_config=None))\n"
    )
    argv = ["explore", "escape", "--scenarios", str(tmp_path / "escape.py"), "--examples", "1"]
    code = main([*argv, "--out", str(tmp_path / "cx")])
    out, err = capsys.readouterr()
    assert code == 4, err
    assert "E   Escape: out of band" in out.splitlines() and "internal error" not in err

    class Escape(BaseException):
        pass

    def escape(*args: object) -> None:
        raise Escape("out of band")

    monkeypatch.setattr(discovery, "ensure_loaded", escape)
    code = main([*argv, "--out", str(tmp_path / "cx")])
    err = capsys.readouterr().err
    assert code == 70, err
    assert "internal error: this is a bug in raceproof" in err and "Escape: out of band" in err
