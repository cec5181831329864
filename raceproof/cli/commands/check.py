"""``raceproof check``: the gate. Every expectation of the selected catalogue, never flaky.

For each scenario and variant it searches with every strategy (the ``ci``
profile: the scenario's example count, seed 0, no wall budget at all) and
proves every variant expected to hold. Exit 0 when every expectation holds,
1 when one failed (a fix violated, a bug not found), 4 when none failed but a
model raised (verdict ``error``), 3 when none failed but one was inconclusive
(a proof pruned) or not reached (a declared probe no run reached). The table
shows, after each verdict, ``rN``: how many examples or schedules reached the
least-reached declared probe. ``-j N`` spreads the checks over N processes,
each loading the same scenarios: every search cut into fixed parts of 200
examples and every proof into the units of ``prove -j`` (``raceproof.gate.parts``),
merged in order, so the verdicts and counts are the same for any N.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raceproof.cli import signals
from raceproof.cli.commands.common import (
    StatusLine,
    UsageError,
    VariantLines,
    add_command,
    print_json,
)
from raceproof.cli.validation import (
    MAX_EXAMPLES,
    int_in,
    jobs_option,
    non_empty,
    prepare_output_dir,
    prepare_output_file,
)
from raceproof.gate import expectations as gate
from raceproof.gate import parts
from raceproof.runs import processes, runner
from raceproof.scenarios import discovery
from raceproof.scenarios.catalogue import ORIGINS, all_scenarios, get
from raceproof.sim import ReplayMisaligned
from raceproof.sim.errors import Nondeterministic
from raceproof.sim.verdicts import ExitCode


def _init_worker(entries: list[str], parent_pid: int) -> None:
    """A worker leaves the signals to its parent, dies with it, and loads the same scenarios.

    Forked, it would inherit the command's handlers: a terminal's Ctrl-C (sent to the
    whole group) then interrupted every worker too, and each one reported the signal.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    processes.die_with_parent(parent_pid)
    discovery.ensure_loaded(entries)


class CheckStopped(Nondeterministic):
    """A check's model is not deterministic: the whole check stops there, saying which.

    Why stop rather than judge it ``error`` and go on: the other checks would run, but a
    check's verdict is every expectation's, and a model whose runs differ on the same
    choices leaves its own results (and a proof's units, walked in other processes with
    ``-j``) without meaning; the line names the check, so the user can leave it out.
    """

    def __init__(self, where: str, cause: Nondeterministic) -> None:
        super().__init__(cause.detail, cause.draw, cause.actor)
        self.where = where
        self.cause = str(cause)  # its own words: a divergence, or the global random module

    def __str__(self) -> str:
        return f"check stopped at {self.where}, the checks after it not run: {self.cause}"


def _stopped(task: parts.Task, exc: BaseException) -> CheckStopped:
    part = task.part if isinstance(task, parts.UnitTask) else task
    cause = exc.as_nondeterminism() if isinstance(exc, ReplayMisaligned) else exc
    assert isinstance(cause, Nondeterministic)
    return CheckStopped(f"{part.scenario} / {part.variant} {part.kind}", cause)


def _run(
    task: parts.Task, profile: gate.Profile, out_dir: Path | None
) -> parts.PartResult | parts.UnitDone:
    return parts.run_task(task, profile, out_dir)


def _default_scenarios(args: argparse.Namespace) -> list[Any]:
    """The user's own scenarios (their pyproject's, their ``--scenarios``) unless ``--all``.

    Inside a project with ``[tool.raceproof] scenarios``, ``raceproof check`` is that
    project's gate; the built-in catalogue is raceproof's own, checked with ``--all``.
    """
    everything = all_scenarios()
    if getattr(args, "all", False):
        return everything
    own = [
        s for s in everything if ORIGINS.get(s.name, "").startswith(("pyproject:", "command-line:"))
    ]
    return own or everything


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Kill every worker now (a search in progress is lost; the finished ones are kept).

    The pool's workers are this command's only ``multiprocessing`` children, so
    ``multiprocessing.active_children()`` names them through public API; killing
    one that already exited does nothing (``Process.kill`` checks).

    The shutdown then *waits*: with ``wait=False`` the pool's manager thread was
    still closing its wake-up pipe when the interpreter exited, and the
    executor's exit hook (``concurrent.futures.process._python_exit``) wrote to
    that pipe unlocked: one interrupt in 20-80 printed "Exception ignored ...
    OSError: [Errno 9] Bad file descriptor". Waiting joins the manager thread,
    whose last act is closing the pipe, so at exit the hook finds it closed and
    does nothing. The wait cannot hang: every worker is dead, so the manager
    thread sees their sentinels, marks the pool broken (closing the call queue's
    reader so its feeder cannot block, CPython gh-94777) and returns; a second
    signal is ignored by ``signals`` while this runs, a third exits at once.

    Unless a worker died in the middle of sending its result: the manager thread had
    read the message's length and waited for the rest, which nothing would write, and
    the shutdown waited for that thread (1 ``check -j 2`` in about 50 signalled on a
    loaded machine hung so). This process holds the result pipe's write end too, so
    the pipe never reached its end; closing that end once every worker is dead ends it
    (``recv`` raises ``EOFError``, which the manager thread takes for a broken pool).
    """
    workers = multiprocessing.active_children()
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.join(5.0)
    if not any(worker.is_alive() for worker in workers):
        # The one private name used here (as CPython 3.11 keeps the result queue; the test fails
        # first if a later Python renames it).
        result_queue = getattr(pool, "_result_queue", None)
        writer = getattr(result_queue, "_writer", None)
        if writer is not None:
            writer.close()
    pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class CheckRequest:
    """What ``check`` was asked: the profile, the parts to run, where to write."""

    profile: gate.Profile
    plan: list[parts.Part]
    checks: int
    out_dir: Path | None  # only with --out: the regression folder is explore's and the fixture's
    junit_path: Path | None


@dataclass
class CheckRun:
    """The checks that finished (all of them, or those before the signal) and when it started."""

    results: list[gate.CheckResult]
    started: float
    interrupted: BaseException | None = None


def cmd_check(args: argparse.Namespace) -> int:
    request = _parse(args)
    return _render(args, request, run_check(args, request))


def _parse(args: argparse.Namespace) -> CheckRequest:
    if args.all and args.names:
        raise UsageError(
            f"--all and the names {', '.join(args.names)} contradict each other: --all checks "
            "every scenario, the names only those; give one"
        )
    profile = gate.profile_named(args.profile or "ci")
    scenarios = [get(name) for name in args.names] if args.names else _default_scenarios(args)
    out_dir = prepare_output_dir(args.out) if args.out is not None else None
    junit_path = prepare_output_file(args.junit, "--junit") if args.junit is not None else None
    plan = parts.parts_for(scenarios, profile, args.examples)
    return CheckRequest(
        profile=profile,
        plan=plan,
        checks=len({(p.scenario, p.variant, p.kind) for p in plan}),
        out_dir=out_dir,
        junit_path=junit_path,
    )


def run_check(args: argparse.Namespace, request: CheckRequest) -> CheckRun:
    """Every part, in this process or over ``-j`` workers; a signal keeps those finished."""
    plan, profile, out_dir = request.plan, request.profile, request.out_dir
    say = StatusLine("check", not args.json, total=len(plan), quiet=True)
    parts_left = {(p.scenario, p.variant, p.kind): p.parts for p in plan}
    started = time.monotonic()
    finished: list[parts.PartResult] = []

    gate_plan = parts.GatePlan(plan, profile, out_dir)
    total = len(plan)  # the parts to run: fewer once a search's finding drops its later parts
    variants = VariantLines([parts.check_key(p) for p in plan])

    def done(outcome: parts.PartResult | parts.UnitDone) -> None:
        nonlocal total
        if isinstance(outcome, parts.UnitDone):
            part, runs = outcome.task.part, outcome.result.report.runs
            result = gate_plan.take(outcome)
            if result is None:
                unit = ".".join(map(str, outcome.result.ident)) or "root"
                say(f"{part.scenario} / {part.variant} prove: unit {unit}, {runs} runs")
                return
        else:
            part, result = outcome.part, outcome
        finished.append(result)
        said = result.check.cell if result.check is not None else ""
        if result.search is not None:
            said = f"{result.search.verdict}@{result.search.examples}"
        check = parts.check_key(part)
        dropped = len(gate_plan.ended(result))  # a search's parts after its finding
        parts_left[check] -= 1 + dropped
        total -= dropped
        mine = [r for r in finished if parts.check_key(r.part) == check]  # its parts run
        last = parts_left[check] == 0
        count = f"{len(mine)} of {part.parts}" if len(mine) < part.parts else str(part.parts)
        say(
            f"[{len(finished)}/{total}] {part.scenario} / {part.variant} {part.kind} "
            + (f"done ({count} parts)" if last else f"(part {part.index + 1}/{part.parts})")
            + f": {said}"
        )
        # A CI log gets one line per scenario/variant: all its checks' results, once done.
        if last and (
            line := variants.check_done(part.scenario, part.variant, part.kind, checked(mine))
        ):
            say.log(line)
        for twin in result.twins:  # the parts of other checks made by the same runs
            done(twin)

    try:
        if args.jobs == 1:
            while (task := gate_plan.next()) is not None:
                try:
                    outcome = parts.run_task(task, profile, out_dir)
                except (Nondeterministic, ReplayMisaligned) as exc:
                    raise _stopped(task, exc) from None
                done(outcome)
        else:
            _run_in_pool(args.jobs, request, gate_plan, done)
    except KeyboardInterrupt as exc:
        say.done()
        results = parts.results_of(finished, profile, out_dir)
        return CheckRun(results=results, started=started, interrupted=exc)
    results = parts.results_of(finished, profile, out_dir)
    say.done()
    return CheckRun(results=results, started=started)


def checked(results: list[parts.PartResult]) -> str:
    """A finished check's result as its table cell begins: a proof's cell, or the search's
    parts merged as the table merges them (on ``-j N`` a part after the finding may end
    last, its own verdict ``ok``)."""
    if results[0].check is not None:
        return results[0].check.cell
    ordered = sorted(results, key=lambda r: r.part.index)
    search = parts.merge_search([r.search for r in ordered if r.search is not None])
    return f"{search.verdict}@{search.examples}"


def _run_in_pool(
    jobs: int,
    request: CheckRequest,
    gate_plan: parts.GatePlan,
    done: Callable[[parts.PartResult | parts.UnitDone], None],
) -> None:
    """The tasks over ``jobs`` worker processes, as ``gate_plan`` hands them out (two per
    worker in flight, so none waits for the next); any exit stops the pool."""
    entries = discovery.command_line_entries()
    pool = ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(entries, os.getpid()))
    try:
        flying: dict[Future[parts.PartResult | parts.UnitDone], parts.Task] = {}
        while True:
            while len(flying) < 2 * jobs and (task := gate_plan.next()) is not None:
                flying[pool.submit(_run, task, request.profile, request.out_dir)] = task
            if not flying:
                break
            finished, _ = wait(flying, return_when=FIRST_COMPLETED)
            for future in finished:
                task = flying.pop(future)
                try:
                    outcome = future.result()
                except (Nondeterministic, ReplayMisaligned) as exc:
                    raise _stopped(task, exc) from None
                done(outcome)
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown()


def _render(args: argparse.Namespace, request: CheckRequest, run: CheckRun) -> int:
    profile, results = request.profile, run.results
    if run.interrupted is not None:
        return _interrupted(args, profile, results, request.checks, run.interrupted, run.started)
    seconds = round(time.monotonic() - run.started, 1)
    code = gate.exit_code(results)
    if args.json:
        print_json(_document(profile, results, seconds=seconds, code=code))
    else:
        _print_results(profile, results, seconds, code)
    # Written after the result is printed: a failed write (a full disk) is a warning after
    # it, one line, and the exit stays the verdict's.
    unsaved = sorted({r.unsaved for r in results if r.unsaved})
    if request.junit_path is not None:
        try:
            runner.repro_files.write_atomically(request.junit_path, gate.junit(results, seconds))
        except runner.WRITE_FAILURES as exc:
            unsaved.append(runner.unsaved(f"--junit {request.junit_path}", exc))
    runner.warn_unsaved("; ".join(unsaved))
    return code


def _print_results(
    profile: gate.Profile, results: list[gate.CheckResult], seconds: float, code: ExitCode
) -> None:
    print(gate.table(results, profile))
    if any(r.probes for r in results):
        print("rN: examples (or schedules) that reached the least-reached race-window probe")
    for story in gate.stories(results):  # each timeline once, its finders listed
        print("\n" + story)
    verdict = {
        ExitCode.OK: "every expectation holds",
        ExitCode.VIOLATED: "SOME EXPECTATIONS FAILED",
        ExitCode.ERROR: "A MODEL RAISED (verdict error: a crash, not a found race)",
        ExitCode.INCONCLUSIVE: "some expectations were inconclusive or their race window "
        "was never reached (nothing failed)",
    }[code]
    print(f"\n{verdict}: {len(results)} checks, profile {profile.name}, {seconds}s")


def _document(
    profile: gate.Profile, results: list[gate.CheckResult], *, seconds: float, code: int
) -> dict[str, Any]:
    """``check --json``: the profile, the seconds, the exit code and every check's result."""
    return {
        "profile": profile.name,
        "seconds": seconds,
        "exit": code,
        "results": [r.to_json() for r in results],
    }


def _interrupted(
    args: argparse.Namespace,
    profile: gate.Profile,
    results: list[gate.CheckResult],
    total: int,
    exc: BaseException,
    started: float,
) -> int:
    """The checks finished before the signal, as a table or JSON; exit 130 or 143."""
    name = signals.signal_name(exc)
    seconds = round(time.monotonic() - started, 1)
    note = f"interrupted by {name} after {len(results)} of {total} checks"
    code = signals.exit_code_for(exc)
    if args.json:
        document = _document(profile, results, seconds=seconds, code=code)
        print_json(document | {"interrupted": name, "notes": [note]})
        return code
    if results:
        print(gate.table(results, profile))
    print(f"\n{note}, profile {profile.name}, {seconds}s: not a verdict")
    return code


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "check",
        "the gate: every expectation of the catalogue, examples-only budgets",
        cmd_check,
        epilog="examples:\n"
        "  raceproof check\n"
        "  raceproof check lost-update --junit out/raceproof.xml\n"
        "  raceproof check --scenarios my_races.py -j 2 --json",
    )
    sub.add_argument(
        "names",
        nargs="*",
        metavar="SCENARIO",
        help="only these (default: the project's own scenarios if it has any, else all)",
    )
    sub.add_argument(
        "--all",
        action="store_true",
        help="every scenario, the built-in catalogue too (default inside a project: its own)",
    )
    sub.add_argument(
        "--examples",
        type=int_in(1, MAX_EXAMPLES),
        help="examples per search (default: each scenario's own count)",
    )
    sub.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report here")
    sub.add_argument(
        "-j", "--jobs", type=jobs_option(), default=1, help="processes to run in (default 1)"
    )
    sub.add_argument(
        "--profile",
        type=non_empty,
        help="ci (default: examples only, seed 0, no wall budget), dev or thorough",
    )
    sub.add_argument(
        "--out",
        type=non_empty,
        default=None,
        help="save the counterexamples of unexpected violations in this folder "
        "(default: nothing is written)",
    )
