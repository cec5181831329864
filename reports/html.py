"""A standalone HTML timeline: one file, no network, swimlanes on a compressed time axis.

The layout is computed here, deterministically: one lane per actor, ops left
to right in history order, each idle stretch drawn on a log scale (a 10-minute
cleaner delay costs about as much width as a few ops, and a break mark says how
long it really was). The page's script draws the boxes from that layout, shows
an op's fields on hover, and marks faults, deviations and the violating op.
Below it, "what had to go differently": the failing run beside its counterpart
(the deciding deviation reverted), aligned op by op, the first op where they
part highlighted. Templated with jinja2; the CSS and JS are inline.
"""

from __future__ import annotations

import difflib
import json
import math
from importlib import resources
from typing import Any

import jinja2

from raceproof.reports.story import Story, is_fault, is_noise, op_text
from raceproof.sim import Op, canonical_json, first_divergence

BOX_W = 132
BOX_GAP = 6
STEP_PX = 10  # the next op starts at least this far right: the order stays visible
GAP_MIN_PX = 14
GAP_PER_DECADE_PX = 16
BREAK_MS = 1000  # a gap longer than this gets a break mark with its real length
LANE_H = 40


def _gap_px(gap_ms: int) -> int:
    return GAP_MIN_PX + round(GAP_PER_DECADE_PX * math.log10(1 + gap_ms))


def _duration(ms: int) -> str:
    if ms >= 3_600_000:
        return f"{ms / 3_600_000:.1f} h"
    if ms >= 60_000:
        return f"{ms / 60_000:.1f} min"
    if ms >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms} ms"


def layout(story: Story, show_all: bool = False) -> dict[str, Any]:
    """Positions of every shown op, the time ticks and the breaks (pure, deterministic)."""
    ops = story.visible_ops(show_all)
    shown_actors = {op.actor for op in ops}
    actors = [a for a in story.actors() if a in shown_actors]
    lane = {a: i for i, a in enumerate(actors)}
    x, previous_time, previous_index = 0, None, -1
    lane_end: dict[str, int] = {}
    boxes: list[dict[str, Any]] = []
    ticks: list[dict[str, Any]] = []
    breaks: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    for op in ops:
        if previous_time is None or op.time_ms > previous_time:
            if previous_time is not None:
                gap = op.time_ms - previous_time
                if gap > BREAK_MS:
                    breaks.append({"x": x + _gap_px(gap) // 2, "label": f"+{_duration(gap)}"})
                x += _gap_px(gap)
            ticks.append({"x": x, "label": f"{op.time_ms:,}".replace(",", "\u2009")})
            previous_time = op.time_ms
        x = max(x, lane_end.get(op.actor, -BOX_GAP) + BOX_GAP)
        for deviation in story.deviations_between(previous_index, op.index):
            flags.append({"x": x, "text": deviation.sentence(), "draw": deviation.draw})
        previous_index = op.index
        violations = story.violations_at(op.index)
        boxes.append(
            {
                "index": op.index,
                "x": x,
                "lane": lane[op.actor],
                "actor": op.actor,
                "time_ms": op.time_ms,
                "kind": op.kind,
                "text": op_text(op, 200),
                "fields": json.dumps(dict(op.fields), indent=1, sort_keys=True, ensure_ascii=False),
                "fault": is_fault(op),
                "noise": is_noise(op),
                "violations": [f"{v.checker}: {v.message}" for v in violations],
            }
        )
        lane_end[op.actor] = x + BOX_W
        x += STEP_PX
    width = max([b["x"] + BOX_W for b in boxes] + [400]) + 40
    return {
        "actors": actors,
        "boxes": boxes,
        "ticks": ticks,
        "breaks": breaks,
        "flags": flags,
        "width": width,
        "lane_h": LANE_H,
        "box_w": BOX_W,
    }


def _signature(op: Op) -> str:
    return f"{op.actor} {op.kind} {canonical_json(dict(op.fields))}"


def aligned(story: Story) -> dict[str, Any] | None:
    """The failing run and its counterpart, row by row (difflib on actor, kind and fields)."""
    other = story.counterpart
    if other is None:
        return None
    left, right = story.history.ops, other.history.ops
    parted = first_divergence(story.history, other.history)
    matcher = difflib.SequenceMatcher(
        a=[_signature(o) for o in left], b=[_signature(o) for o in right], autojunk=False
    )
    rows: list[dict[str, Any]] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        for k in range(max(a1 - a0, b1 - b0)):
            a = left[a0 + k] if a0 + k < a1 else None
            b = right[b0 + k] if b0 + k < b1 else None
            if a is not None and b is not None and is_noise(a) and is_noise(b) and tag == "equal":
                continue
            rows.append(
                {
                    "same": tag == "equal",
                    "left": _cell(a, story),
                    "right": _cell(b, other),
                    "parted": parted is not None
                    and (
                        (a is not None and a.index == parted)
                        or (b is not None and b.index == parted)
                    ),
                }
            )
    first = next((i for i, r in enumerate(rows) if r["parted"]), None)
    for i, row in enumerate(rows):
        row["parted"] = i == first
    rows = _collapse(rows)
    return {
        "rows": rows,
        "note": story.counterpart_note,
        "parted": parted,
        "left_title": story.title,
        "right_title": other.title,
        "left_status": story.status,
        "right_status": other.status,
    }


def _collapse(rows: list[dict[str, Any]], keep: int = 2) -> list[dict[str, Any]]:
    """Runs of more than ``2 * keep + 1`` equal rows become one "N equal ops" row."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if len(run) > 2 * keep + 1:
            out.extend(run[:keep])
            out.append({"skip": len(run) - 2 * keep, "same": True, "parted": False})
            out.extend(run[-keep:])
        else:
            out.extend(run)
        run.clear()

    for row in rows:
        if row["same"] and not row["parted"]:
            run.append(row)
        else:
            flush()
            out.append(row)
    flush()
    return out


def _cell(op: Op | None, story: Story) -> dict[str, Any] | None:
    if op is None:
        return None
    return {
        "index": op.index,
        "time_ms": op.time_ms,
        "actor": op.actor,
        "text": op_text(op, 90),
        "violated": bool(story.violations_at(op.index)),
    }


def template(name: str) -> jinja2.Template:
    """One of the package's jinja2 templates (``reports/templates``), autoescaping HTML."""
    return _environment().get_template(name)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _template_source(name: str) -> str:
    return resources.files("raceproof.reports").joinpath("templates", name).read_text("utf-8")


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element (no ``</script>``, no HTML comment openers)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(story: Story, show_all: bool = False) -> str:
    """The whole page."""
    data = {"layout": layout(story, show_all), "diff": aligned(story)}
    return template("timeline.html.j2").render(
        story=story,
        hidden=story.hidden_count(show_all),
        data_json=_script_json(data),
        diff=data["diff"],
        gap_note=(
            f"The time axis is compressed: each idle stretch is drawn on a log scale "
            f"(a break mark gives the real length of every gap over {_duration(BREAK_MS)})."
        ),
    )
