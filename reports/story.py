"""What every picture of a run is drawn from: one ``Story`` (a history with what is known about it).

Renderers (Markdown with Mermaid, HTML, Perfetto trace, terminal) all take a
``Story``: the ops, which clock they are in (virtual ms of the simulation or
wall ms of a real run), the checkers' verdicts, the deviations from FIFO and
where in the history each was drawn, the repro line, and optionally the
counterpart run (the same choices with the deciding deviation reverted). The
layer rule holds: this module reads counterexample files and history files
through ``raceproof.sim`` only; replaying a scenario to place the deviations
and to compute the counterpart is done above, in ``raceproof.scenarios``.

Which ops are noise, which actors come first, what counts as a fault: decided
here once, so every renderer hides and orders the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from raceproof.sim import Choice, History, Op
from raceproof.sim import repro as repro_files
from raceproof.sim.history import op_from_json
from raceproof.sim.repro import CounterexampleError
from raceproof.sim.verdicts import CheckStatus

Clock = Literal["virtual", "wall"]

NOISE_KINDS = frozenset({"checkpoint"})
NOISE_ACTORS = frozenset({"kernel"})


class ReportInputError(ValueError):
    """An input that is neither a counterexample file nor a history; the message says why."""


@dataclass(frozen=True)
class Deviation:
    """One draw that left the boring choice: ``leader.notify-delay`` took option 1 of 2."""

    draw: int
    label: str
    option: int
    options: int
    before_op: int | None = None  # the index of the first op logged after the draw, if known
    # A schedule deviation of a run replayed here: the actor that ran and the one it overtook.
    ran: str | None = None
    overtook: str | None = None

    def sentence(self) -> str:
        if self.ran is not None:
            return f"{self.label}: {self.ran} ran before {self.overtook}"
        return f"{self.label} took option {self.option} of {self.options}"

    def to_json(self) -> dict[str, Any]:
        named = {} if self.ran is None else {"ran": self.ran, "overtook": self.overtook}
        return {
            "draw": self.draw,
            "label": self.label,
            "option": self.option,
            "options": self.options,
            "before_op": self.before_op,
            **named,
        }


@dataclass(frozen=True)
class VerdictView:
    checker: str
    status: str
    op_index: int | None
    message: str


@dataclass
class Story:
    """A history and everything a report says about it."""

    title: str
    history: History
    clock: Clock = "virtual"
    verdicts: list[VerdictView] = field(default_factory=list)
    deviations: list[Deviation] = field(default_factory=list)
    repro: str | None = None
    source: str = ""
    scenario: str | None = None
    variant: str | None = None
    counterpart: Story | None = None
    counterpart_note: str = ""
    reverted: Deviation | None = None  # the deviation the counterpart reverts
    # race-window probe -> whether this run reached it (times reached; 0: never)
    probes: dict[str, int] = field(default_factory=dict)

    # -- what the renderers ask ------------------------------------------------
    @property
    def unit(self) -> str:
        return "virtual ms" if self.clock == "virtual" else "wall ms"

    @property
    def clock_sentence(self) -> str:
        if self.clock == "virtual":
            return "times are virtual ms of the simulated clock"
        return "times are wall ms since the real run began"

    @property
    def violations(self) -> list[VerdictView]:
        return [v for v in self.verdicts if v.status == CheckStatus.VIOLATED]

    @property
    def status(self) -> str:
        if self.violations:
            return CheckStatus.VIOLATED
        if not self.verdicts:
            return "not judged"
        unknown = any(v.status == CheckStatus.UNKNOWN for v in self.verdicts)
        return CheckStatus.UNKNOWN if unknown else CheckStatus.OK

    def violations_at(self, index: int) -> list[VerdictView]:
        return [v for v in self.violations if v.op_index == index]

    def deviations_between(self, after: int, upto: int) -> list[Deviation]:
        """Deviations drawn after op ``after`` was logged, up to op ``upto`` (shown before it)."""
        return [
            d for d in self.deviations if d.before_op is not None and after < d.before_op <= upto
        ]

    def visible_ops(self, show_all: bool = False) -> list[Op]:
        """The ops a picture shows: noise hidden unless ``show_all``; a marked op always shows."""
        marked = {v.op_index for v in self.violations}
        return [
            op
            for op in self.history
            if show_all or not is_noise(op) or op.index in marked or is_fault(op)
        ]

    def actors(self) -> list[str]:
        """Actors in a stable order: by first appearance, noise actors last."""
        seen: dict[str, None] = {}
        for op in self.history:
            seen.setdefault(op.actor, None)
        names = list(seen)
        return [a for a in names if a not in NOISE_ACTORS] + [a for a in names if a in NOISE_ACTORS]

    def hidden_count(self, show_all: bool = False) -> int:
        return len(self.history) - len(self.visible_ops(show_all))


def is_noise(op: Op) -> bool:
    """Model-internal checkpoints and kernel bookkeeping: hidden unless ``--all``."""
    return op.kind in NOISE_KINDS or op.actor in NOISE_ACTORS


def is_fault(op: Op) -> bool:
    """An injected fault (the nemesis's ops, a crash, a pause)."""
    return (
        op.actor == "nemesis"
        or op.kind.startswith("fault.")
        or op.kind in {"actor.crashed", "actor.paused", "model.crash"}
    )


def op_text(op: Op, width: int = 70) -> str:
    """``status.write entity=A from=READY to=STOPPED`` cut to ``width`` characters."""
    body = " ".join(f"{k}={_value_text(v)}" for k, v in sorted(op.fields.items()))
    text = f"{op.kind} {body}".rstrip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _value_text(value: Any) -> str:
    """A value for a picture: JSON without the quotes (``{A:STOPPED,B:READY}``); hover shows it all."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).replace(
        '"', ""
    )


def deviations_of(
    choices: Sequence[Choice],
    positions: Sequence[int] | None = None,
    overtaken: Mapping[int, tuple[str, str]] | None = None,
) -> list[Deviation]:
    """The nonzero draws of a recording, placed at ``positions`` (op index per draw) when known,
    schedule deviations naming their actors when the run's ``overtaken`` is known."""
    found = []
    for draw, choice in enumerate(choices):
        if choice.value:
            where = positions[draw] if positions is not None and draw < len(positions) else None
            ran, overtook = (overtaken or {}).get(draw, (None, None))
            found.append(
                Deviation(
                    draw=draw,
                    label=choice.label,
                    option=choice.value,
                    options=choice.n,
                    before_op=where,
                    ran=ran,
                    overtook=overtook,
                )
            )
    return found


def guess_clock(history: History) -> Clock:
    """A simulated history ends with the kernel's ``run.end``; a real run's does not."""
    ends = history.of_kind("run.end")
    return "virtual" if ends and ends[-1].actor == "kernel" else "wall"


# -- reading inputs ---------------------------------------------------------------
def story_of_counterexample(path: Path) -> Story:
    try:
        cx = repro_files.load(path)
    except CounterexampleError as exc:
        raise ReportInputError(str(exc)) from None
    verdict = cx.verdict
    return Story(
        title=f"{cx.scenario} / {cx.variant}",
        history=cx.history,
        clock="virtual",
        verdicts=[
            VerdictView(
                checker=str(verdict.get("checker")),
                status=str(verdict.get("status", CheckStatus.VIOLATED)),
                op_index=verdict.get("op_index"),
                message=str(verdict.get("message", "")),
            )
        ],
        deviations=deviations_of(cx.choices),
        repro=f"raceproof replay {path}",
        source=str(path),
        scenario=cx.scenario,
        variant=cx.variant,
    )


def story_of_history(path: Path, clock: Clock | None = None) -> Story:
    lines = repro_files.read_json_lines(path, ReportInputError)
    try:
        history = History(op_from_json(raw) for raw in lines)
    except (ValueError, KeyError, TypeError, AssertionError, RecursionError) as exc:
        raise ReportInputError(f"{path}: not a history (JSON Lines of ops): {exc}") from None
    if not len(history):
        raise ReportInputError(f"{path}: an empty history")
    chosen = clock or guess_clock(history)
    run = "simulated run" if chosen == "virtual" else "real run"
    return Story(title=f"{path.stem} ({run})", history=history, clock=chosen, source=str(path))


def is_counterexample_file(path: Path) -> bool:
    """A counterexample is one JSON object naming its format; a history is JSON Lines."""
    try:
        raw = repro_files.read_json(path, ReportInputError)
    except ReportInputError:
        return False
    return isinstance(raw, dict) and "format" in raw


def inputs_in(path: Path) -> list[Path]:
    """A file, or the counterexample and history files of a directory, in name order."""
    if not path.exists():
        raise ReportInputError(f"{path}: no such file or directory")
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ReportInputError(f"{path}: not a regular file or a folder")
    found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".jsonl"))
    if not found:
        raise ReportInputError(f"{path}: no counterexample (.json) or history (.jsonl) files in it")
    return found


def load_story(path: Path, clock: Clock | None = None) -> Story:
    story = (
        story_of_counterexample(path)
        if is_counterexample_file(path)
        else story_of_history(path, clock)
    )
    return replace(story, clock=clock) if clock else story
