"""The pytest plugin (entry point ``pytest11``): race gates as tests, and a counterexample database.

A test asks for the ``raceproof`` fixture and states what it expects::

    def test_leases_fix_it(raceproof):
        raceproof.explore("stale-cache", variant="fix-lease", expect="ok")
        raceproof.prove("stale-cache", variant="fix-lease", expect="ok")

How hard it looks is the *profile* (``raceproof.gate.expectations``): ``ci``
(the default: examples only, seed 0, no wall budget, so no machine's speed
can change a verdict), ``dev`` or ``thorough``, chosen by
``--raceproof-profile`` or ``$RACEPROOF_PROFILE``. A failure's message holds
the shrunk timeline, the deviations from FIFO, the one-line repro and the
counterexample file, saved in the database folder.

The database (``--raceproof-counterexamples``, ini ``raceproof_counterexamples``,
default ``counterexamples/``) is collected as regression tests: each file
replays against its own variant (must still violate) and against every
variant of its scenario expected to hold (must hold). A replay that does not
reach the race window fails as "not reached" (ini ``raceproof_not_reached =
skip`` makes it a skip; it is never a pass). A file the model has moved away
from (out of date) fails saying whether its choices still violate;
``--raceproof-rerecord`` re-records every such file of the folder whose choices
still violate before the replays run (``raceproof replay FILE --rerecord`` for
one). Scenarios come from the usual
places (entry points, ``[tool.raceproof]``) and ``--raceproof-scenarios``.
Test ids and JUnit records name the scenario and the variant, with
``pytest -n`` too (every worker collects the same sorted database).
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from raceproof.gate import expectations as gate
from raceproof.runs import counterexamples
from raceproof.scenarios import discovery
from raceproof.scenarios.catalogue import UnknownName
from raceproof.sim import CounterexampleError
from raceproof.sim.choices import ReplayMisaligned
from raceproof.sim.configs import BadInput
from raceproof.sim.errors import Nondeterministic, Signalled
from raceproof.sim.user_files import check_folder
from raceproof.sim.verdicts import Verdict

T = TypeVar("T")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("raceproof", "raceproof race gates")
    group.addoption(
        "--raceproof-profile",
        default=None,
        help=f"ci, dev or thorough (default: ${gate.PROFILE_ENV}, else ci)",
    )
    group.addoption(
        "--raceproof-scenarios",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="also load the scenarios this module or file registers (repeatable)",
    )
    group.addoption(
        "--raceproof-counterexamples",
        default=None,
        metavar="DIR",
        help="the counterexample database folder (default: ini raceproof_counterexamples)",
    )
    group.addoption(
        "--raceproof-rerecord",
        action="store_true",
        default=False,
        help="re-record the database's out-of-date counterexamples whose choices still violate",
    )
    parser.addini(
        "raceproof_counterexamples",
        "the counterexample database folder, relative to the rootdir",
        default="counterexamples",
    )
    parser.addini(
        "raceproof_not_reached",
        "fail (default) or skip: a database replay that does not reach the race window",
        default="fail",
    )


def _profile(config: pytest.Config) -> gate.Profile:
    try:
        return gate.profile_named(config.getoption("raceproof_profile"))
    except UnknownName as exc:
        raise pytest.UsageError(str(exc)) from None


def _load_scenarios(config: pytest.Config) -> None:
    try:
        discovery.ensure_loaded(config.getoption("raceproof_scenarios"))
    except discovery.ScenarioLoadError as exc:
        raise pytest.UsageError(str(exc)) from None


def _database(config: pytest.Config) -> Path:
    folder = config.getoption("raceproof_counterexamples") or config.getini(
        "raceproof_counterexamples"
    )
    path = config.rootpath / str(folder)
    try:
        # A file, /dev/null, a link loop or a path too long is no database: said at once,
        # never read as an empty one (the tests would pass without their regressions).
        check_folder(path, "raceproof_counterexamples")
        return path.resolve()
    except BadInput as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    _profile(config)  # a bad profile name is a usage error at once
    _database(config)  # and so is a database that is not a folder


def pytest_report_header(config: pytest.Config) -> str:
    return f"raceproof: profile {_profile(config).name}, counterexamples in {_database(config)}"


class _Interrupted(Signalled):
    """Ctrl-C while a gate runs a model: a real signal, so pytest stops as it would."""


@contextmanager
def _real_interrupts() -> Iterator[None]:
    """While a model runs, a real SIGINT raises ``Signalled``, which the kernel lets out.

    A ``KeyboardInterrupt`` that the model's own code raises is its error (the
    verdict ``error``, a failed test); Python's default handler raises a plain
    ``KeyboardInterrupt`` too, so for the length of the run a real Ctrl-C raises
    the subclass instead, and the session stops as on any Ctrl-C. A handler the
    user installed is left alone, as is every thread but the main one.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def handle(signum: int, frame: object) -> None:
        raise _Interrupted(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class RaceproofGate:
    """What the ``raceproof`` fixture gives a test: ``explore`` and ``prove`` with expectations."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.node = request.node
        self.config = request.config
        self.profile = _profile(request.config)
        self.out_dir = _database(request.config)
        _load_scenarios(request.config)

    def _judge(self, result: gate.CheckResult) -> gate.CheckResult:
        self.node.user_properties.append(
            # a plain str: pytest-xdist sends user_properties between processes (no enums)
            (f"raceproof {result.scenario} / {result.variant} / {result.kind}", str(result.verdict))
        )
        for probe, count in result.probes.items():  # the race window's reached counts
            self.node.user_properties.append(
                (
                    f"raceproof {result.scenario} / {result.variant} / {result.kind} / probe:{probe}",
                    count,
                )
            )
        if result.status != "pass":
            pytest.fail(result.explain(), pytrace=False)
        return result

    def _variant(self, scenario: str, variant: str | None) -> str:
        """``variant`` or the scenario's first; an unknown name fails the test in one line."""
        from raceproof.scenarios.catalogue import get

        known = _said_once(lambda: get(scenario), "")
        if variant is not None:
            _said_once(lambda: known.check_variant(variant), "")
        return variant or next(iter(known.variants))

    def explore(
        self,
        scenario: str,
        variant: str | None = None,
        *,
        expect: str | None = None,
        strategy: str | None = None,
        examples: int | None = None,
        seed: int | None = None,
    ) -> list[gate.CheckResult]:
        """Search ``variant`` with each strategy of the profile (or ``strategy``); fail if not ``expect``."""
        variant = self._variant(scenario, variant)
        strategies = (strategy,) if strategy else self.profile.strategies
        results = []
        for name in strategies:
            with _real_interrupts():  # examples=-5 or expect="okk" runs nothing: never a pass
                found = _said_once(
                    functools.partial(
                        gate.run_explore,
                        scenario,
                        variant,
                        name,
                        self.profile,
                        expect=expect,
                        examples=examples,
                        seed=seed,
                        out_dir=self.out_dir,
                    ),
                    "raceproof.explore: ",
                )
            results.append(self._judge(found))
        return results

    def prove(
        self, scenario: str, variant: str | None = None, *, expect: str | None = None
    ) -> gate.CheckResult:
        """The bounded proof of ``variant``; fail unless its verdict is ``expect`` (default: the catalogue's)."""
        variant = self._variant(scenario, variant)
        with _real_interrupts():
            found = _said_once(
                lambda: gate.run_prove(
                    scenario, variant, self.profile, expect=expect, out_dir=self.out_dir
                ),
                "raceproof.prove: ",
            )
        return self._judge(found)


def _said_once(call: Callable[[], T], prefix: str) -> T:
    """``call()``; a user's bad name or value fails the test in one line, raceproof's frames
    and the exception it replaced ("During handling ...") left out."""
    try:
        return call()
    except (UnknownName, BadInput, Nondeterministic) as exc:  # the user's, said in one line
        message = f"{prefix}{exc}"
    except ReplayMisaligned as exc:
        message = f"{prefix}{exc.as_nondeterminism()}"
    pytest.fail(message, pytrace=False)


@pytest.fixture
def raceproof(request: pytest.FixtureRequest) -> RaceproofGate:
    """Race gates: ``raceproof.explore(name, variant=..., expect=...)``, ``raceproof.prove(...)``."""
    return RaceproofGate(request)


# -- the counterexample database -----------------------------------------------------
class ReplayFailed(Exception):
    """A database replay whose verdict is not the expected one."""


class CounterexampleItem(pytest.Item):
    def __init__(self, *, variant: str, expected: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.variant = variant
        self.expected = expected

    def runtest(self) -> None:
        loaded = counterexamples.load(self.path)
        if self.variant == loaded.counterexample.variant:
            counterexamples.check_current(loaded)  # out of date: says what the choices do now
        with _real_interrupts():
            replayed = counterexamples.replay_on(loaded, self.variant)
        self.user_properties.append(
            (f"raceproof {loaded.scenario.name} / {self.variant} / replay", str(replayed.verdict))
        )
        if replayed.verdict == self.expected:
            return
        text = gate.outcome_text(replayed.outcome, f"== replay on {self.variant} ({replayed.mode})")
        if replayed.verdict == Verdict.NOT_REACHED:
            message = (
                f"not reached: {replayed.reason} (a replay that is not reached is never a pass)"
            )
            if self.config.getini("raceproof_not_reached") == "skip":
                pytest.skip(message)
            raise ReplayFailed(f"{message}\n{text}")
        raise ReplayFailed(
            f"{self.path.name} on {self.variant}: expected {self.expected}, got {replayed.verdict}\n{text}"
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(
            excinfo.value, ReplayFailed | counterexamples.OutOfDate | CounterexampleError
        ):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # The item's own name: pytest rewrites the dots of a domain that ends the node id
        # into "::" (``...71f7.json::x`` printed as ``...71f7::json::x`` under -v).
        return self.path, None, self.name


class BadCounterexampleItem(pytest.Item):
    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise ReplayFailed(self.error)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value)


class CounterexampleFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            loaded = counterexamples.load(self.path)
            if self.config.getoption("raceproof_rerecord"):
                # Deterministic bytes, written atomically: xdist workers that each
                # collect (and so re-record) the same file write the same content.
                counterexamples.rerecord(loaded)
        except (CounterexampleError, counterexamples.OutOfDate, BadInput) as exc:
            # A damaged file (the one JSON reader's size and depth checks included) or a
            # configuration its scenario refuses: one failing item saying so, no traceback.
            yield BadCounterexampleItem.from_parent(self, name="load", error=str(exc))
            return
        for variant, expected in counterexamples.regression_expectations(loaded):
            yield CounterexampleItem.from_parent(
                self,
                name=f"{loaded.scenario.name}[{variant}]",
                variant=variant,
                expected=expected,
            )


def _wanted(config: pytest.Config, folder: Path) -> bool:
    """The whole run (no paths given) or a path inside the database was asked for."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == folder or folder in path.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    folder = _database(config)
    files = counterexamples.database_files(folder)
    if not files or not _wanted(config, folder):
        return
    _load_scenarios(config)
    for path in files:
        items.extend(CounterexampleFile.from_parent(session, path=path).collect())
