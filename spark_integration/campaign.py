"""``raceproof campaign``: the grid scenario × variant × strategy × seed as Spark tasks, into Parquet.

The driver builds the grid (:func:`grid`), drops the cells the output folder
already holds (a re-run resumes), and submits the rest as small Spark jobs,
one task per cell, a few jobs at a time so every core stays busy while
finished rows come back early. Rows are appended to ``DIR/results/`` as
Parquet every few seconds and on Ctrl-C, so an interrupted campaign keeps
every finished cell; a job that fails (a Python worker that died) is re-run
one cell per job, and a cell that still fails becomes an ``error`` row. With
``--prove`` each variant's proof is walked in balanced units, shipped in
rounds of Spark jobs (``campaign_proof``), and merges into one row.

Executors run :func:`campaign_cells.run_cell`, which needs nothing from the
driver but the cell: an executor (a Python worker of local mode, or of a
standalone cluster on this machine) imports raceproof from the same
interpreter (``PYSPARK_PYTHON`` is the driver's ``sys.executable``).
Counterexample files are written by the driver, from the text each cell sends
back, under ``DIR/counterexamples/``. After the grid, a sample of the cells
run now is run again in the driver's own process and compared by cell hash:
a difference is a determinism failure, written to ``DIR/determinism.json``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from raceproof.reports.campaign_folder import (
    DETERMINISM,
    FORMAT,
    MANIFEST,
    RESULTS,
    CampaignFolderError,
    check_folder,
    read_determinism,
)
from raceproof.sim import repro as repro_files
from raceproof.sim.configs import BadInput
from raceproof.sim.verdicts import Verdict
from raceproof.spark_integration.campaign_cells import (
    COLUMN_NAMES,
    COLUMNS,
    Cell,
    comparable,
    error_row,
    run_cell,
)
from raceproof.spark_integration.campaign_proof import Task, prove_cell, walk_task

FLUSH_EVERY_S = 10.0
CELLS = "raceproof-campaign-cells"  # the job group of the cells' jobs (cancelled on a signal)
STOP_WAIT_S = 15.0  # a signalled campaign waits at most this for its cancelled jobs to end
DEFAULT_EXAMPLES = 100
DEFAULT_PROOF_SCHEDULES = 1_000_000

Say = Callable[[str], None]


class CampaignError(ValueError):
    """Bad campaign arguments or output folder: exit 2 with this message."""


@dataclass
class Options:
    scenarios: Sequence[str] = ()  # empty: every scenario of the catalogue
    variants: Sequence[str] = ()  # empty: every variant
    strategies: Sequence[str] = ("random", "hypothesis", "pct")
    seeds: Sequence[int] = tuple(range(20))
    examples: int = DEFAULT_EXAMPLES
    prove: bool = False
    proof_schedules: int = DEFAULT_PROOF_SCHEDULES
    master: str = "local[*]"
    out: str = "out/campaign"
    scenario_specs: Sequence[str] = ()
    scenarios_base: str = field(default_factory=lambda: str(Path.cwd()))
    cross_check: int = 3
    jobs_in_flight: int = 2
    cells_per_job: int = 0  # 0: twice the cores


@dataclass
class Summary:
    cells: int = 0
    already_done: int = 0
    ran: int = 0
    interrupted: bool = False
    interrupted_by: str | None = None  # SIGINT or SIGTERM
    seconds: float = 0.0
    verdicts: dict[str, int] = field(default_factory=dict)
    determinism: list[dict[str, Any]] = field(default_factory=list)
    master: str = ""
    parallelism: int = 0
    proofs: list[dict[str, Any]] = field(default_factory=list)  # each proof's rounds and balance

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def count(self, verdict: str) -> None:
        """One more cell with ``verdict`` (kept as its plain word, as JSON and the text say it)."""
        word = str(verdict)
        self.verdicts[word] = self.verdicts.get(word, 0) + 1


# -- the grid -----------------------------------------------------------------------
def grid(options: Options) -> list[Cell]:
    """Every cell of the campaign, in a fixed order (scenario, variant, strategy, seed)."""
    from raceproof.scenarios.catalogue import CATALOGUE, all_scenarios
    from raceproof.spark_integration.campaign_cells import load_scenarios

    load_scenarios(options.scenarios_base, options.scenario_specs)
    all_scenarios()
    names = list(options.scenarios) or sorted(CATALOGUE)
    for name in names:
        if name not in CATALOGUE:
            raise CampaignError(f"unknown scenario {name!r}; valid: {', '.join(sorted(CATALOGUE))}")
    known_variants = {v for n in names for v in CATALOGUE[n].variants}
    for variant in options.variants:
        if variant not in known_variants:
            raise CampaignError(
                f"unknown variant {variant!r} of {', '.join(names)}; "
                f"valid: {', '.join(sorted(known_variants))}"
            )
    base, specs = options.scenarios_base, tuple(options.scenario_specs)
    cells: list[Cell] = []
    for name in names:
        scenario = CATALOGUE[name]
        for variant in scenario.variants:
            if options.variants and variant not in options.variants:
                continue
            for strategy in options.strategies:
                for seed in options.seeds:
                    cells.append(
                        Cell(
                            kind="search",
                            scenario=name,
                            variant=variant,
                            strategy=strategy,
                            seed=seed,
                            examples=options.examples,
                            scenarios_base=base,
                            scenarios=specs,
                        )
                    )
            if options.prove:
                cells.append(
                    Cell(
                        kind="proof",
                        scenario=name,
                        variant=variant,
                        strategy="exhaustive",
                        seed=0,
                        examples=options.proof_schedules,
                        scenarios_base=base,
                        scenarios=specs,
                    )
                )
    return cells


# -- the Spark session --------------------------------------------------------------
def campaign_session(master: str, app_name: str = "raceproof-campaign") -> Any:
    """A SparkSession on ``master`` whose Python workers are this interpreter; JVM noise to a log.

    Separate from ``spark-check``'s local[2] session: a campaign may run on
    any master, and needs nothing of Structured Streaming.
    """
    from raceproof.spark_integration.session import (
        SparkUnavailable,
        jvm_dies_with_us,
        one_line,
        started,
    )

    jvm_dies_with_us()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    log = Path(tempfile.mkstemp(prefix="raceproof-campaign-jvm-", suffix=".log")[1])
    saved_stderr = os.dup(2)
    log_fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(log_fd, 2)
    try:
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.pyspark.python", sys.executable)
            .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
            .config("spark.sql.session.timeZone", "UTC")
        )
        if master.startswith(("local", "spark://127.", "spark://localhost")):
            builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
                "spark.driver.host", "127.0.0.1"
            )
        spark = started(builder)
    except Exception as exc:
        tail = log.read_text(errors="replace")[-4000:]
        raise SparkUnavailable(f"Spark did not start on {master}: {one_line(exc, tail)}") from exc
    finally:
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        os.close(log_fd)
        log.unlink(missing_ok=True)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# -- the output folder --------------------------------------------------------------
def read_rows(out: Path) -> list[dict[str, Any]]:
    """Every row of ``DIR/results`` (Parquet part files), sorted by cell key."""
    from raceproof.reports.campaign import read_rows as read

    return read(out)


def _plain(value: Any) -> Any:
    """A verdict as its plain word: Spark accepts only exact ``str`` for a string column."""
    return str(value) if isinstance(value, Verdict) else value


def write_rows(spark: Any, out: Path, rows: list[dict[str, Any]]) -> None:
    """Counterexample files first, then one Parquet append: a row never names a missing file.

    Each cell is written once: a row whose cell the folder already holds is
    dropped (a flush the signal cut after Spark committed it is not repeated). A
    row and its counterexample are written together or not at all: the rows keep
    their counterexample's text until the append succeeded, so a file that could
    not be written (``counterexamples`` is a file, a full disk) leaves its cell
    unwritten for a rerun, never a row naming nothing (``CampaignFolderError``).
    """
    done = {row["cell"] for row in read_rows(out)}
    fresh: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["cell"] not in done:
            fresh.setdefault(row["cell"], row)
    if not fresh:
        return
    for row in fresh.values():
        text = row.get("_counterexample")
        if text is not None and row.get("counterexample"):
            target = out / row["counterexample"]
            try:
                if not target.is_file():
                    repro_files.write_atomically(target, text)
            except (OSError, BadInput) as exc:  # the one way to user files says BadInput
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise CampaignFolderError(
                    f"{target}: cannot write cell {row['cell']}'s counterexample "
                    f"({why}); its row is not written, a rerun redoes the cell"
                ) from None
    schema = ", ".join(f"`{name}` {kind}" for name, kind, _doc in COLUMNS)
    data = [tuple(_plain(row.get(name)) for name in COLUMN_NAMES) for row in fresh.values()]
    frame = spark.createDataFrame(data, schema)
    frame.coalesce(1).write.mode("append").parquet(str(out / RESULTS))


@contextmanager
def _signals_held(on_signal: Callable[[], None] = lambda: None) -> Iterator[None]:
    """SIGINT and SIGTERM wait while rows are written, then take their usual course.

    A flush is a py4j call: a signal raised inside it returns to Python while
    the JVM may still commit the append, and the campaign's clean-up then wrote
    the same rows again (every cell twice). Held, the signal is raised again
    through the command's own handler once the rows and the bookkeeping that
    says they are written are done. The main thread only (where handlers run).
    ``on_signal()`` runs at the first signal held: the rows' append is a Spark job
    that waited behind the cells' jobs, so a signal during it cancels those first.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)
        if len(held) == 1:
            on_signal()  # what must not wait for the rows (the cells' jobs, cancelled)
        if len(held) >= 3:  # a third signal forces the exit, as it always does
            os._exit(128 + signum)

    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for number in held:
            signal.raise_signal(number)  # the command's handler: Interrupted, 130 / 143


def write_manifest(out: Path, options: Options, summary: Summary) -> None:
    """``DIR/campaign.json``: the options and the summary so far (``report`` reads it)."""
    from raceproof.runs import runner

    manifest = {
        "format": FORMAT,
        "format_version": 1,
        "tool_version": runner.tool_version(),
        "git_commit": runner.git_commit(),
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        "summary": summary.to_json(),
    }
    repro_files.write_atomically(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")


# -- running ------------------------------------------------------------------------
def _run_search_job(sc: Any, cells: list[Cell]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = sc.parallelize(cells, len(cells)).map(run_cell).collect()
    return rows


class Stopping(Exception):
    """The campaign got a signal: a job not yet submitted (a proof's next round) is not."""


def run_proof_job(
    sc: Any, proof: Cell, stopping: Callable[[], bool] = lambda: False
) -> list[dict[str, Any]]:
    """One proof: its rounds, each one Spark job of its ready units (``campaign_proof``);
    none submitted once ``stopping()`` says the campaign got a signal."""

    def ship(tasks: list[Task]) -> list[dict[str, Any]]:
        if stopping():
            raise Stopping("the campaign is stopping")
        done: list[dict[str, Any]] = sc.parallelize(tasks, len(tasks)).map(walk_task).collect()
        return done

    return [prove_cell(proof, ship, max(1, sc.defaultParallelism))]


def _isolate(sc: Any, cells: list[Cell], exc: BaseException) -> list[dict[str, Any]]:
    """A failed job: run its cells one per job; a cell that fails alone is an error row."""
    rows: list[dict[str, Any]] = []
    for cell in cells:
        try:
            rows.extend(
                _run_search_job(sc, [cell]) if cell.kind == "search" else run_proof_job(sc, cell)
            )
        except Exception as again:
            message = str(again).strip().splitlines()
            first = message[0] if message else repr(again)
            rows.append(error_row(cell, expected_of(cell), f"the task failed: {first}"))
    del exc
    return rows


def expected_of(cell: Cell) -> str:
    from raceproof.scenarios.catalogue import CATALOGUE

    scenario = CATALOGUE.get(cell.scenario)
    return (
        Verdict.VIOLATED
        if scenario is not None and cell.variant in scenario.expect_violation
        else Verdict.OK
    )


def chunks(cells: list[Cell], size: int) -> Iterable[list[Cell]]:
    search = [c for c in cells if c.kind == "search"]
    for start in range(0, len(search), size):
        yield search[start : start + size]
    for proof in (c for c in cells if c.kind == "proof"):
        yield [proof]


def cells_to_run(cells: list[Cell], rows: list[dict[str, Any]]) -> list[Cell]:
    """The cells a resumed campaign still runs: those whose key no row of ``rows`` holds.

    A cell's key names everything that changes its verdict (kind, scenario, variant,
    strategy, seed and the example count), so a campaign resumed with more examples
    runs its cells again instead of reporting the old ``ok``.
    """
    done = {row["cell"] for row in rows}
    return [c for c in cells if c.key not in done]


def run(options: Options, say: Say | None = None, spark: Any = None) -> Summary:
    """Run (or resume) a campaign into ``options.out``; returns what it did.

    The steps, top down: refuse a damaged folder, build the grid and drop the
    cells the folder holds, start Spark, run the rest as jobs (:class:`_Running`),
    and close: rows written, determinism checked, manifest, session stopped.
    """
    say = say or (lambda _line: None)
    out = Path(options.out)
    check_folder(out)  # before any work: a damaged or foreign folder is refused
    cells = grid(options)
    todo = cells_to_run(cells, read_rows(out))
    summary = Summary(cells=len(cells), already_done=len(cells) - len(todo), master=options.master)
    if not todo:
        say(f"campaign {out}: all {len(cells)} cells already done")
        return summary
    own_session = spark is None
    handlers = _signal_handlers()
    spark = spark or campaign_session(options.master)
    out.mkdir(parents=True, exist_ok=True)  # only once Spark is up: a bad master leaves nothing
    summary.parallelism = spark.sparkContext.defaultParallelism
    say(
        f"campaign {out}: {len(todo)} of {len(cells)} cells to run on {options.master} "
        f"({summary.parallelism} cores)"
    )
    running = _Running(options=options, out=out, spark=spark, say=say, summary=summary, todo=todo)
    running.run_jobs(handlers, own_session=own_session)
    return summary


class _Running:
    """One campaign run on Spark: its jobs in flight, the rows they bring back, and its close.

    Rows are taken as jobs finish (counted, kept for the determinism check) and
    flushed to Parquet every ``FLUSH_EVERY_S``; a signal stops the jobs and keeps
    what finished; the close writes what is pending whatever happened.
    """

    def __init__(
        self,
        *,
        options: Options,
        out: Path,
        spark: Any,
        say: Say,
        summary: Summary,
        todo: list[Cell],
    ) -> None:
        self.options, self.out, self.spark, self.say = options, out, spark, say
        self.summary, self.todo = summary, todo
        self.sc = spark.sparkContext
        self.started = time.perf_counter()
        self.pending: list[dict[str, Any]] = []  # taken, not yet written
        self.ran: list[dict[str, Any]] = []  # every row taken, as the determinism check compares it
        self.last_flush = time.monotonic()
        self.stopping = False  # a signal came: a failed job is not isolated cell by cell
        self.in_flight: set[Future[list[dict[str, Any]]]] = set()

    def run_jobs(self, handlers: dict[int, Any], *, own_session: bool) -> None:
        """Every batch of ``todo`` as a Spark job, a few in flight; then :meth:`close`.

        A signal (the command's handler, or a plain KeyboardInterrupt) reaches the main
        thread, which waits on the jobs: :meth:`interrupted` cancels them.
        """
        size = self.options.cells_per_job or max(1, 2 * self.summary.parallelism)
        previous_handler = _own_signals(handlers)
        try:
            for batch in chunks(self.todo, size):
                self.start(batch)
                if len(self.in_flight) >= self.options.jobs_in_flight:
                    self.take_finished()
            while self.in_flight:
                self.take_finished()
        except KeyboardInterrupt as exc:
            self.interrupted(exc)
        finally:
            _restore_sigint(previous_handler)
            self.close(own_session=own_session)

    def start(self, batch: list[Cell]) -> None:
        """``batch``'s job in a daemon thread, its future in flight first: a pool's threads are
        joined at exit, and one still in a py4j call (or orphaned by a signal inside ``submit``,
        not yet listed by the pool) kept a signalled campaign alive after its summary."""
        future: Future[list[dict[str, Any]]] = Future()
        self.in_flight.add(future)

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return  # cancelled by a signal before it started
            try:
                self.sc.setJobGroup(CELLS, "raceproof campaign cells", interruptOnCancel=True)
                future.set_result(self.job(batch))
            except BaseException as exc:  # the job's end, whatever it is, is the future's
                future.set_exception(exc)

        threading.Thread(target=work, name="raceproof-campaign-job", daemon=True).start()

    def job(self, batch: list[Cell]) -> list[dict[str, Any]]:
        """One batch's rows (a job thread); a failed job is re-run cell by cell unless stopping.
        Once the campaign is stopping, no job is submitted (its rows would not be kept)."""
        if self.stopping:
            raise Stopping("the campaign is stopping")
        try:
            if batch[0].kind == "proof":
                return run_proof_job(self.sc, batch[0], lambda: self.stopping)
            return _run_search_job(self.sc, batch)
        except Exception as exc:
            if self.stopping:
                raise
            return _isolate(self.sc, batch, exc)

    def take_finished(self) -> None:
        """Wait for at least one job in flight to finish; take its rows."""
        finished, self.in_flight = wait(self.in_flight, return_when=FIRST_COMPLETED)
        for future in finished:
            self.take(future.result())

    def take(self, rows: list[dict[str, Any]], quiet: bool = False) -> None:
        """Count ``rows`` and keep them to write; unless ``quiet``, say the progress and flush."""
        self.pending.extend(rows)
        self.ran.extend(comparable(r) | {"_executor": r["executor"]} for r in rows)
        for row in rows:
            self.summary.count(row["verdict"])
            if "_balance" in row:
                self.summary.proofs.append(row["_balance"])
        if quiet:
            return
        self.say(f"  {len(self.ran)}/{len(self.todo)} cells  {self.elapsed_s():7.1f}s")
        if time.monotonic() - self.last_flush >= FLUSH_EVERY_S:
            self.flush()
            self.last_flush = time.monotonic()

    def flush(self) -> None:
        """The pending rows into Parquet, signals held: the rows and "they are written" together."""
        with _signals_held(on_signal=self.cancel_soon):
            write_rows(self.spark, self.out, self.pending)
            self.pending.clear()

    def interrupted(self, exc: KeyboardInterrupt) -> None:
        """A signal: cancel the jobs until none runs (at most ``STOP_WAIT_S``; one cancel missed a
        job submitted just after it, which ran every cell), and take the rows of those done."""
        self.stopping = True
        self.summary.interrupted = True
        self.summary.interrupted_by = getattr(exc, "name", "SIGINT")
        give_up = time.monotonic() + STOP_WAIT_S
        while True:
            for future in self.in_flight:
                future.cancel()  # one whose thread has not started its job: it never will
            self.cancel_cells()
            running = {f for f in self.in_flight if not f.done()}
            if not running or time.monotonic() > give_up:
                break
            wait(running, timeout=0.5)
        for future in self.in_flight:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.take(future.result(), quiet=True)

    def cancel_cells(self) -> None:
        """Cancel the cells' jobs (their group: not the rows' append)."""
        _quietly(lambda: self.sc.cancelJobGroup(CELLS))

    def cancel_soon(self) -> None:
        """A signal held while rows are written: the cells' jobs cancelled now, from a thread."""
        self.stopping = True
        threading.Thread(target=self.cancel_cells, name="raceproof-cancel", daemon=True).start()

    def close(self, *, own_session: bool) -> None:
        """Write what is pending, check determinism (unless interrupted), the manifest, stop."""
        summary = self.summary
        if summary.interrupted:  # the signal may have cut a py4j call short: keep what we can
            with _signals_held():
                if not _quietly(lambda: write_rows(self.spark, self.out, self.pending)):
                    kept = {row["cell"] for row in read_rows(self.out)}
                    self.ran[:] = [row for row in self.ran if row["cell"] in kept]
                self.pending.clear()
        else:
            self.flush()
        summary.ran = len(self.ran)
        summary.seconds = round(self.elapsed_s(), 3)
        if summary.interrupted:
            print(
                f"interrupted by {summary.interrupted_by or 'SIGINT'}: kept the {len(self.ran)} "
                "finished cells",
                file=sys.stderr,
            )
        else:
            self.check_determinism()
        write_manifest(self.out, self.options, summary)
        if own_session:
            self.stop_session()

    def stop_session(self) -> None:
        """Stop the session; after a signal, a JVM whose session would not stop (a py4j call the
        signal cut) is killed: it outlived the command on its hooks, holding its stdout."""
        if not self.summary.interrupted:
            self.spark.stop()
            return
        jvm = getattr(getattr(self.sc, "_gateway", None), "proc", None)
        if not _quietly(self.spark.stop) and jvm is not None:
            with contextlib.suppress(Exception):
                jvm.terminate()  # its shutdown hooks remove Spark's folders
                jvm.wait(timeout=STOP_WAIT_S)
            with contextlib.suppress(Exception):
                jvm.kill()

    def check_determinism(self) -> None:
        """Re-run a sample in the driver (:func:`cross_check`) into ``determinism.json``."""
        try:
            self.summary.determinism = cross_check(self.ran, self.options, self.say)
            _write_determinism(self.out, self.summary.determinism)
        except KeyboardInterrupt as exc:  # every row is written: the rest is the check
            self.summary.interrupted = True
            self.summary.interrupted_by = getattr(exc, "name", "SIGINT")
            print(
                f"interrupted by {self.summary.interrupted_by}: every cell was written; "
                "the determinism check was not",
                file=sys.stderr,
            )

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started


def _quietly(action: Callable[[], Any]) -> bool:
    """``action()`` after an interrupt: a py4j error then is the signal's doing, not news."""
    try:
        action()
    except Exception:
        return False
    return True


def _signal_handlers() -> dict[int, Any]:
    """SIGINT's handler now, before PySpark installs its own (the command's, under the CLI)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signal.SIGINT: signal.getsignal(signal.SIGINT)}


def _own_signals(handlers: dict[int, Any]) -> Any:
    """SIGINT back to the handler found before the session; PySpark's becomes a plain
    KeyboardInterrupt. Returns the handler to restore when the campaign ends."""
    if threading.current_thread() is not threading.main_thread():
        return None
    before = handlers.get(signal.SIGINT, signal.getsignal(signal.SIGINT))
    handler = before
    if not callable(handler) or getattr(handler, "__module__", "").startswith("pyspark"):
        handler = signal.default_int_handler
    signal.signal(signal.SIGINT, handler)
    return before


def _restore_sigint(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


# -- determinism across executors ---------------------------------------------------
def cross_check(rows: list[dict[str, Any]], options: Options, say: Say) -> list[dict[str, Any]]:
    """Re-run a sample of the search cells in this (the driver's) process; compare cell hashes."""
    candidates = [r for r in rows if r["kind"] == "search" and r["verdict"] != Verdict.ERROR]
    candidates.sort(key=lambda r: hashlib.sha256(r["cell"].encode()).hexdigest())
    checks = []
    for row in candidates[: options.cross_check]:
        cell = Cell(
            kind="search",
            scenario=row["scenario"],
            variant=row["variant"],
            strategy=row["strategy"],
            seed=int(row["seed"]),
            examples=int(row["examples_budget"]),
            scenarios_base=options.scenarios_base,
            scenarios=tuple(options.scenario_specs),
        )
        again = run_cell(cell)
        same = again["cell_hash"] == row["cell_hash"] and again["trace_hash"] == row["trace_hash"]
        checks.append(
            {
                "cell": row["cell"],
                "same": same,
                "executor": row["_executor"],
                "driver": again["executor"],
                "cell_hash": row["cell_hash"],
                "driver_cell_hash": again["cell_hash"],
            }
        )
        if not same:
            say(
                f"DETERMINISM FAILURE: {row['cell']} differs between {row['_executor']} and the driver"
            )
    if checks:
        say(
            f"determinism: {sum(c['same'] for c in checks)}/{len(checks)} cells re-run in the "
            "driver gave the same cell hash"
        )
    return checks


def _write_determinism(out: Path, checks: list[dict[str, Any]]) -> None:
    path = out / DETERMINISM
    previous = read_determinism(out)
    merged = {c["cell"]: c for c in previous} | {c["cell"]: c for c in checks}
    text = json.dumps([merged[k] for k in sorted(merged)], indent=1) + "\n"
    repro_files.write_atomically(path, text)
