"""Markdown with a Mermaid sequence diagram: a race that pastes into a GitHub or Jira ticket.

Actors are participants in the story's stable order; each op is a message (when
one of its fields names another actor: the leader submits ``stop-task2``) or a
note over its actor; the time is a note at the left whenever it moves; each
deviation from FIFO is a note where it was drawn; the op where a checker became
false sits in a red box with the checker's sentence. Noise is hidden unless
``show_all``.

Mermaid's parser is strict: ``;`` ends a statement, ``#`` starts an entity
code, ``<``/``>`` are read as HTML, a participant name with ``-`` or ``.`` is not an
identifier. So participants are ``A0``, ``A1``… with their names as aliases,
and every text goes through :func:`mermaid_text` (entity codes for the
characters Mermaid would read). The test suite renders the result with
Mermaid itself.
"""

from __future__ import annotations

from raceproof.reports.story import Deviation, Story, op_text
from raceproof.sim import Op

# Characters Mermaid's sequence-diagram lexer would read, as its entity codes.
_ENTITIES = {"#": "#35;", ";": "#59;", "<": "#lt;", ">": "#gt;"}


def mermaid_text(text: str) -> str:
    """``text`` made safe for a Mermaid message, note or alias (one line, entities for specials)."""
    flat = " ".join(text.split())
    return "".join(_ENTITIES.get(ch, ch) for ch in flat)


def _time_label(story: Story, time_ms: int) -> str:
    return f"{time_ms:,} {'ms' if story.clock == 'virtual' else 'wall ms'}".replace(",", "\u2009")


def mermaid(story: Story, show_all: bool = False, width: int = 60) -> str:
    """The ``sequenceDiagram`` source (without the Markdown fence)."""
    actors = story.actors()
    ids = {actor: f"A{i}" for i, actor in enumerate(actors)}
    lines = ["sequenceDiagram"]
    lines += [f"    participant {ids[a]} as {mermaid_text(a)}" for a in actors]
    first = ids[actors[0]]
    last_time: int | None = None
    previous = -1
    for op in story.visible_ops(show_all):
        deviations, previous = story.deviations_between(previous, op.index), op.index
        for deviation in deviations:
            lines.append(
                f"    Note over {_deviation_actor(deviation, op, ids)}: "
                f"⚡ {mermaid_text(deviation.sentence())}"
            )
        if op.time_ms != last_time:
            lines.append(
                f"    Note left of {first}: {mermaid_text(_time_label(story, op.time_ms))}"
            )
            last_time = op.time_ms
        violations = story.violations_at(op.index)
        if violations:
            lines.append("    rect rgb(255, 214, 214)")
        text = mermaid_text(f"{op.index} · {op_text(op, width)}")
        target = _target(op, ids)
        if target is not None:
            lines.append(f"    {ids[op.actor]}->>{ids[target]}: {text}")
        else:
            lines.append(f"    Note over {ids[op.actor]}: {text}")
        for verdict in violations:
            sentence = mermaid_text(f"✗ {verdict.checker}: {verdict.message}")
            lines.append(f"    Note over {ids[op.actor]}: {sentence}")
        if violations:
            lines.append("    end")
    unplaced = [d for d in story.deviations if d.before_op is None]
    unplaced += story.deviations_between(previous, 1 << 62)
    if unplaced:
        text = "; ".join(d.sentence() for d in unplaced)
        lines.append(f"    Note over {first}: ⚡ deviations (not placed): {mermaid_text(text)}")
    return "\n".join(lines) + "\n"


def _target(op: Op, ids: dict[str, str]) -> str | None:
    """Another actor named by one of the op's fields (sorted by field name), if any."""
    for key in sorted(op.fields):
        value = op.fields[key]
        if isinstance(value, str) and value != op.actor and value in ids:
            return value
    return None


def _deviation_actor(deviation: Deviation, op: Op, ids: dict[str, str]) -> str:
    """The actor a label names (``leader.notify-delay``), else the actor of the next op."""
    for actor in sorted(ids, key=len, reverse=True):
        if deviation.label == actor or deviation.label.startswith(actor + "."):
            return ids[actor]
    return ids[op.actor]


def render_markdown(story: Story, show_all: bool = False) -> str:
    """The whole Markdown report: headline, verdicts, deviations, diagram, repro, counterpart."""
    out = [f"# {story.title}: {story.status}", ""]
    hidden = story.hidden_count(show_all)
    noise = (
        f", {hidden} noise ops hidden (checkpoints, kernel; `--all` shows them)" if hidden else ""
    )
    out.append(f"{len(story.history)} ops{noise}; {story.clock_sentence}.")
    out.append("")
    if story.verdicts:
        out.append("**Verdicts**")
        out.append("")
        for v in story.verdicts:
            where = f" at op #{v.op_index}" if v.op_index is not None else ""
            out.append(f"- **{v.status.upper()}** `{v.checker}`{where}: {v.message}".rstrip(": "))
        out.append("")
    if story.clock == "virtual":
        out.append(f"**Deviations from FIFO ({len(story.deviations)})**")
        out.append("")
        for d in story.deviations:
            where = f" (before op #{d.before_op})" if d.before_op is not None else ""
            out.append(
                f"- draw #{d.draw}: `{d.label}` took option {d.option} of {d.options}{where}"
            )
        if not story.deviations:
            out.append("- none: this is the FIFO run")
        out.append("")
    out += ["```mermaid", mermaid(story, show_all).rstrip("\n"), "```", ""]
    if story.probes:
        out += [
            "Race-window probes: "
            + "; ".join(
                f"{name}: {'reached' if count else 'NOT reached'}"
                for name, count in story.probes.items()
            ),
            "",
        ]
    if story.repro:
        out += ["Reproduce:", "", "```sh", story.repro, "```", ""]
    if story.counterpart is not None:
        out += ["## What had to go differently", "", story.counterpart_note, ""]
    elif story.counterpart_note:  # drawn as recorded: why it was not replayed
        out += [story.counterpart_note, ""]
    return "\n".join(out)
