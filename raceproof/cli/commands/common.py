"""What every command shares: the usage error, JSON-or-human output, progress, the scenario arguments.

One command per module lives beside this one; each has an ``add(commands)`` that
registers its parser with its handler, so ``raceproof.cli.main`` only
assembles them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from raceproof.cli import signals
from raceproof.cli.validation import non_empty
from raceproof.runs import runner
from raceproof.scenarios.catalogue import (
    Scenario,
    get,
)
from raceproof.sim import (
    RunOutcome,
)
from raceproof.sim.verdicts import EXIT_FOR_VERDICT, ExitCode, Verdict

if TYPE_CHECKING:
    from raceproof.reports.story import Story


class UsageError(Exception):
    """Bad usage or bad input: exit 2 with this message."""


# -- options that cannot mean anything together ---------------------------------------------
def option_name(dest: str) -> str:
    """``check_footprints`` -> ``--check-footprints`` (every option here is named after its dest)."""
    return "--" + dest.replace("_", "-")


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the user gave the option (a flag set, a value other than its absent ``None``;
    ``0`` is given: ``--seed 0`` is a seed)."""
    value = getattr(args, dest, None)
    return value is not None and value is not False and value != [] and value != ()


def refuse_contradictions(args: argparse.Namespace, rules: Sequence[tuple[str, str, str]]) -> None:
    """Exit 2 naming both options when two that contradict each other were given together.

    Each rule is ``(dest, other_dest, why)``; the first pair given is refused, in
    the rules' order, before any work starts.
    """
    for first, second, why in rules:
        if given(args, first) and given(args, second):
            raise UsageError(
                f"{option_name(first)} and {option_name(second)} contradict each other: {why}"
            )


def refuse_orphans(args: argparse.Namespace, rules: Sequence[tuple[str, str, str]]) -> None:
    """Exit 2 when an option that only means something beside another came without it.

    Each rule is ``(dest, needed_dest, why)``: ``--knob`` without ``--growth`` sets nothing.
    """
    for first, needed, why in rules:
        if given(args, first) and not given(args, needed):
            raise UsageError(f"{option_name(first)} needs {option_name(needed)}: {why}")


# -- output helpers -----------------------------------------------------------------
_DOCUMENTS_PRINTED = [0]


def print_json(document: dict[str, Any]) -> None:
    """A ``--json`` document on stdout: one line, keys sorted, every command the same way.

    A NaN or an infinity is no JSON: such a value raises (a bug in raceproof,
    exit 70) rather than printing a document a JSON reader refuses. After a real
    signal only a document that says ``"interrupted"`` is printed: any other is a
    result the signal did not let stand (its ``Interrupted`` was lost on the way,
    swallowed in a finalizer), so the signal is raised again here instead.
    """
    if "interrupted" not in document:
        signals.raise_if_received()
    line = json.dumps(document, sort_keys=True, allow_nan=False)
    print(line)
    _DOCUMENTS_PRINTED[0] += 1


def documents_printed() -> int:
    """How many ``--json`` documents this process has printed (so none is printed twice)."""
    return _DOCUMENTS_PRINTED[0]


def emit(args: argparse.Namespace, result: dict[str, Any], human: Callable[[], None]) -> int:
    """Print ``result`` (JSON or ``human()``) and return its verdict's exit code.

    A result with no verdict, or a word that is no ``Verdict``, is a bug in
    raceproof: exit 70 with one line on stderr, never 0 (it once fell back to a pass).
    """
    if args.json:
        print_json(result)
    else:
        human()
    runner.warn_unsaved(result.get("write_error"))  # after the result, never instead of it
    word = result.get("verdict")
    if word not in set(Verdict):
        print(
            f"raceproof: internal error: this is a bug in raceproof, the result has no known "
            f"verdict ({word!r}); please report it",
            file=sys.stderr,
        )
        return ExitCode.INTERNAL
    return EXIT_FOR_VERDICT[Verdict(word)]


def judge_probes(
    result: dict[str, Any], scenario: Scenario, variant: str, reached: dict[str, int]
) -> None:
    """Put the probes' reached counts into ``result``; an ``ok`` that reached none is ``not-reached``."""
    verdict, counts, notes = scenario.judge_probes(variant, str(result.get("verdict")), reached)
    result["verdict"] = verdict
    result["probes"] = counts
    if notes:
        before = result.get("notes", [])
        result["notes"] = [*notes, *before] if verdict == Verdict.NOT_REACHED else [*before, *notes]


def probes_line(result: dict[str, Any], what: str) -> str | None:
    """``probes reached: NAME 12/2000 examples, ...`` for the human output (None without probes)."""
    probes = result.get("probes") or {}
    if not probes:
        return None
    counts = ", ".join(f"{name!r} {count}" for name, count in probes.items())
    return f"probes reached (of {result.get('examples', 0)} {what}): {counts}"


def emit_interrupted(
    args: argparse.Namespace, result: dict[str, Any], exc: BaseException, covered: str
) -> int:
    """The result so far of a search stopped by a signal: inconclusive unless it found a violation.

    Printed as text or JSON like any result; the exit code is 130 (SIGINT) or 143 (SIGTERM).
    """
    name = signals.signal_name(exc)
    if result.get("verdict") != Verdict.VIOLATED:
        result["verdict"] = Verdict.INCONCLUSIVE
    result["interrupted"] = name
    result["notes"] = [f"interrupted by {name} after {covered}"]
    if args.json:
        print_json(result)
    else:
        if result.get("repro"):
            print(f"counterexample: {result['counterexample'] or runner.NOT_SAVED}")
            print(f"repro: {result['repro']}")
        print(
            f"{result.get('scenario')} / {result.get('variant')}: {result['verdict']}: "
            f"interrupted by {name} after {covered}"
        )
    return signals.exit_code_for(exc)


class Progress:
    """The live progress display of explore, prove, check, campaign and spark-check (rich).

    One line that fits the terminal's width and keeps moving (a spinner refreshed
    by rich's own thread, so it moves while shrinking too): the label, the counts
    from the progress dict, the elapsed time; with ``total`` (or an ``estimate``
    key in the dict) a bar, the rate per second and the time left. Nothing at all
    when stderr is not a terminal or when ``enabled`` is false (``--json``).
    Call it with each progress dict; ``phase(text)`` says what happens now
    ("shrinking"); ``done()`` removes the line.
    """

    def __init__(
        self, label: str, enabled: bool, *, total: int | None = None, count_key: str = "examples"
    ) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self.label, self.total, self.count_key = label, total, count_key
        self.started = time.monotonic()
        self.info: dict[str, Any] = {}
        self.status = ""
        self._live: Any = None
        if self.enabled:
            from rich.live import Live

            self._live = Live(self, console=self.console, refresh_per_second=8, transient=True)
            self._live.start()

    def __call__(self, info: dict[str, Any]) -> None:
        self.info = dict(info)
        if info.get("status") == Verdict.VIOLATED and self.count_key == "examples":
            self.status = "violation found: shrinking"

    def phase(self, text: str) -> None:
        self.status = text

    def line(self) -> str:
        """The status line's text (also what the tests look at)."""
        elapsed = time.monotonic() - self.started
        done = self.info.get(self.count_key)
        total = self.info.get("estimate", self.total)
        parts = [self.label]
        shown = {k: v for k, v in self.info.items() if k not in ("status", "estimate")}
        parts += [f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in shown.items()]
        if isinstance(done, int) and done and elapsed > 0:
            rate = done / elapsed
            parts.append(f"{rate:,.0f}/s")
            if isinstance(total, int) and total > 0:
                parts.append(f"{min(done, total) * 100 // total}% of {total:,}")
                left = max(0.0, (total - done) / rate)
                parts.append(f"~{_clock(left)} left")
        if self.status:
            parts.append(self.status)
        parts.append(_clock(elapsed))
        return "  ".join(parts)

    def __rich__(self) -> Any:
        from rich.spinner import Spinner
        from rich.text import Text

        width = max(20, self.console.width - 3)
        return Spinner("dots", Text(self.line(), overflow="ellipsis", no_wrap=True)[:width])

    def done(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The line off while the block prints to stdout, then back.

        While it shows, rich sends whatever is printed to stdout through the line's
        own console, stderr: a table printed then would leave a piped stdout.
        """
        live = self._live
        if live is None:
            yield
            return
        live.stop()
        try:
            yield
        finally:
            live.start()


class StatusLine:
    """What a long command is doing, for the commands that report steps (check, campaign, spark-check).

    On a terminal: one ``Progress`` line with the latest step, how many steps are
    done (against ``total`` when known), the rate and the time left. Elsewhere
    (a CI log): each step as one line on stderr, or with ``quiet`` only the lines given
    to ``log`` (``check``: one per scenario/variant; ``spark-check``: one per experiment
    judged). Nothing with ``--json``.
    As a context manager, the line goes when the block ends, however it ends.
    """

    def __init__(
        self,
        label: str,
        enabled: bool,
        *,
        total: int | None = None,
        says_start: bool = False,
        quiet: bool = False,
    ) -> None:
        self.enabled = enabled
        self.quiet = quiet
        self.progress = Progress(label, enabled, total=total, count_key="done")
        self.steps = 0
        # A step announced as it starts ("[3/10] drain ...") is done only when the next one is.
        self.says_start = says_start

    def __call__(self, line: str) -> None:
        """A step; off a terminal it is printed unless ``quiet``."""
        if not self.enabled:
            return
        if not self.progress.enabled:
            if not self.quiet:
                self.log(line)
            return
        self.progress({"done": self.steps if self.says_start else self.steps + 1})
        self.steps += 1
        self.progress.phase(line)

    def log(self, line: str) -> None:
        """A line for a log only: printed off a terminal; on one the progress line says it."""
        if self.enabled and not self.progress.enabled:
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        self.progress.done()

    def paused(self) -> contextlib.AbstractContextManager[None]:
        """The line off while the block prints to stdout (``Progress.paused``)."""
        return self.progress.paused()

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(self, *_exc: object) -> None:
        """The line goes however the work ends (a result, an error, a signal)."""
        self.done()


class VariantLines:
    """``check``'s line per scenario/variant for a CI log: its checks' results on one line.

    Off a terminal ``check`` prints no progress; a line per check was 81 lines for the
    built-in catalogue (26 variants, most with four checks), more than the result table
    printed after them. A variant's line comes when its last check is done, its results
    in the plan's order: ``[2/2] lost-update / fix-cas: random ok@2000, ..., prove ok 46 sched``.
    """

    def __init__(self, checks: Sequence[tuple[str, str, str]]) -> None:
        self.kinds: dict[tuple[str, str], list[str]] = {}
        for scenario, variant, kind in checks:
            kinds = self.kinds.setdefault((scenario, variant), [])
            if kind not in kinds:
                kinds.append(kind)
        self.said: dict[tuple[str, str], dict[str, str]] = {}
        self.lines = 0

    def check_done(self, scenario: str, variant: str, kind: str, said: str) -> str | None:
        """The variant's line once this was its last check to finish, else None."""
        key = (scenario, variant)
        results = self.said.setdefault(key, {})
        results[kind] = said
        if len(results) < len(self.kinds[key]):
            return None
        self.lines += 1
        told = ", ".join(f"{k} {results[k]}" for k in self.kinds[key])
        return f"[{self.lines}/{len(self.kinds)}] {scenario} / {variant}: {told}"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def scenario_and_variant(args: argparse.Namespace) -> tuple[Scenario, str]:
    scenario = get(args.scenario)
    default = next(iter(scenario.variants))
    if getattr(args, "report_timeline", False) and scenario.report_variant:
        default = scenario.report_variant
    variant = args.variant or default
    scenario.check_variant(variant)
    return scenario, variant


def print_outcome(outcome: RunOutcome, title: str, story: Story | None = None) -> None:
    """The human result of one run: the terminal timeline, the verdicts, the deviations."""
    from rich.console import Console

    from raceproof.reports.story import Story as _Story
    from raceproof.reports.story import VerdictView, deviations_of
    from raceproof.reports.terminal import print_timeline, verdict_line

    if story is None:
        story = _Story(
            title=title,
            history=outcome.history,
            deviations=deviations_of(outcome.choices, None, outcome.overtaken),
            verdicts=[
                VerdictView(
                    checker=v.checker, status=v.status, op_index=v.op_index, message=v.message
                )
                for v in outcome.verdicts
            ],
        )
    print(title, flush=True)
    print_timeline(story, Console(highlight=False, soft_wrap=True))
    print()
    for verdict in outcome.verdicts:
        print(verdict_line(verdict.status, verdict.checker, verdict.op_index, verdict.message))
    devs = [
        f"draw #{i} {c.label} = option {c.value} of {c.n}"
        + (
            f" ({outcome.overtaken[i][0]} ran before {outcome.overtaken[i][1]})"
            if i in outcome.overtaken
            else ""
        )
        for i, c in enumerate(outcome.choices)
        if c.value
    ]
    print(f"deviations from FIFO ({len(devs)}): " + ("; ".join(devs) if devs else "none"))
    print(
        f"verdict: {outcome.status}   trace {outcome.trace_hash[:16]}   "
        f"{outcome.virtual_ms} virtual ms, {outcome.steps} steps"
    )


def outcome_story(
    scenario: Scenario, variant: str, config: Any, outcome: RunOutcome, title: str
) -> Story:
    """The story of a run for the terminal: its deviations placed where they were drawn."""
    from raceproof.runs.stories import story_of_outcome

    story = story_of_outcome(scenario, variant, config, outcome, repro=None, counterpart=False)
    story.title = title
    return story


def print_reports(result: dict[str, Any]) -> None:
    """The paths of the reports written beside a counterexample file."""
    for key, what in (("report_md", "Markdown"), ("report_html", "HTML timeline")):
        if result.get(key):
            print(f"{what}: {result[key]}")


def add_command(
    commands: Any,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], int],
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand with ``--json`` and its handler; ``epilog`` shows examples in ``--help``."""
    sub = commands.add_parser(
        name,
        help=help_text,
        description=help_text,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.add_argument("--json", action="store_true", help="one JSON object on stdout")
    sub.add_argument(
        "--scenarios",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="also load the scenarios this module or file registers (repeatable)",
    )
    sub.set_defaults(handler=handler)
    return sub


# The optional parts: installed with ``pip install 'raceproof[spark]'`` (pyproject.toml's extras).
EXTRAS = {"pyspark": "spark", "pyarrow": "spark"}


def _needed_modules(args: argparse.Namespace) -> tuple[str, ...]:
    command = getattr(args, "command", None)
    if command == "campaign":
        return ("pyspark", "pyarrow")
    if command == "spark-check" or getattr(args, "backend", None) == "spark":
        return ("pyspark",)
    return ()


def require_extras(args: argparse.Namespace) -> None:
    """Refuse, in one line naming the extra, a command whose optional part is not installed."""
    import importlib.util

    missing = [m for m in _needed_modules(args) if importlib.util.find_spec(m) is None]
    if missing:
        extra = EXTRAS[missing[0]]
        raise UsageError(
            f"raceproof {args.command} needs {', '.join(missing)}, which is not installed: "
            f"pip install 'raceproof[{extra}]' (or, in a checkout, pip install -e '.[{extra}]')"
        )


def scenario_args(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("scenario", help="a scenario name (see `raceproof list`)")
    sub.add_argument(
        "--variant", type=non_empty, help="a variant of the scenario (default: its first)"
    )
    sub.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a configuration field (JSON value), repeatable",
    )
