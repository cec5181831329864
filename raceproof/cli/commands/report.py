"""``raceproof report``: pictures of a race from a counterexample, a history, or a folder of them.

Formats: ``md`` (Markdown with a Mermaid sequence diagram, for a ticket),
``html`` (the standalone timeline with the counterpart run beside it),
``perfetto`` (Chrome trace event JSON) and ``text`` (the terminal timeline).
Without ``--format``, md, html and perfetto are written; ``text`` prints.
A counterexample whose scenario still replays gets its deviations placed where
they were drawn and its counterpart computed; a history given with
``--scenario`` is judged by that scenario's checkers (a real run's too), and
``--beside`` draws a second history as the counterpart pane (a simulated
counterexample beside its ZooKeeper replay).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from raceproof.cli.commands import campaign
from raceproof.cli.commands.common import UsageError, add_command, print_json
from raceproof.cli.validation import prepare_output_dir
from raceproof.reports import (
    ReportInputError,
    inputs_in,
    perfetto_json,
    print_timeline,
    render_html,
    render_markdown,
    timeline_text,
)
from raceproof.reports.story import Story
from raceproof.runs import runner
from raceproof.runs.stories import load_for_report
from raceproof.scenarios.catalogue import UnknownName, get
from raceproof.sim import first_divergence
from raceproof.sim import repro as repro_files
from raceproof.sim.user_files import check_path_length, user_path
from raceproof.sim.verdicts import Verdict

FORMATS = {"md": ".md", "html": ".html", "perfetto": ".trace.json", "text": ".txt"}


def render(story: Story, fmt: str, show_all: bool) -> str:
    if fmt == "md":
        return render_markdown(story, show_all)
    if fmt == "html":
        return render_html(story, show_all)
    if fmt == "perfetto":
        return perfetto_json(story)
    return timeline_text(story, show_all)


def cmd_report(args: argparse.Namespace) -> int:
    check_path_length(Path(args.input), "report")
    with user_path("report", args.input):
        return _report(args)


def _report(args: argparse.Namespace) -> int:
    if campaign.is_campaign_dir(Path(args.input)) or args.baseline is not None:
        return campaign.report_campaign(args)  # a campaign folder: its own report
    formats = [args.format] if args.format else ["md", "html", "perfetto"]
    if args.scenario is not None:
        get(args.scenario)  # an unknown --scenario is bad input, whatever the input holds
    try:
        paths = inputs_in(Path(args.input))
        stories = [load_for_report(p, clock=args.clock, scenario_name=args.scenario) for p in paths]
        if args.beside is not None:  # an empty --beside is bad, not absent
            if len(stories) != 1:
                raise UsageError("--beside takes one INPUT file, not a folder")
            other = load_for_report(
                Path(args.beside), clock=args.clock, scenario_name=args.scenario
            )
            _beside(stories[0], other)
    except (ReportInputError, UnknownName) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a device, a FIFO, a folder where a file was expected, ...
        raise UsageError(f"{args.input}: cannot read it ({exc.strerror or exc})") from None
    out_dir = prepare_output_dir(args.out) if args.out is not None else None
    written: list[dict[str, Any]] = []
    for path, story in zip(paths, stories, strict=True):
        entry: dict[str, Any] = {
            "input": str(path),
            "title": story.title,
            "clock": story.clock,
            "status": story.status,
            "ops": len(story.history),
        }
        for fmt in formats:
            if fmt == "text" and out_dir is None:
                if not args.json:
                    print_timeline(story, show_all=args.all)
                    if story.counterpart is None and story.counterpart_note:
                        print(story.counterpart_note)  # drawn as recorded, and why
                continue
            folder = out_dir or path.parent
            target = folder / (_stem(path) + FORMATS[fmt])
            repro_files.write_atomically(target, render(story, fmt, args.all))
            entry[fmt] = str(target)
        written.append(entry)
    result = {"verdict": Verdict.OK, "reports": written}
    if args.json:
        print_json(result)
    else:
        for entry, story in zip(written, stories, strict=True):
            files = [entry[f] for f in formats if f in entry]
            if files:
                print(f"{entry['input']}: {entry['status']} -> " + ", ".join(files))
                if story.counterpart is None and story.counterpart_note:
                    print(f"  {story.counterpart_note}")
    return runner.EXIT_OK


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _beside(story: Story, other: Story) -> None:
    """Draw ``other`` (another run of the same schedule: a real replay) as the counterpart."""
    parted = first_divergence(story.history, other.history)
    where = f"they part at op #{parted}" if parted is not None else "the histories are equal"
    story.counterpart = other
    story.counterpart_note = (
        f"{story.title} ({story.unit}, {story.status}) beside {other.title} "
        f"({other.unit}, {other.status}); {where}."
    )


def add(commands: Any) -> None:
    sub = add_command(
        commands,
        "report",
        "pictures of a run: Markdown with Mermaid, HTML timeline, Perfetto trace, terminal",
        cmd_report,
        epilog="examples:\n"
        "  raceproof report counterexamples/brooklin-double-stop--buggy--47642b0daeb0.json\n"
        "  raceproof report counterexamples/ --format html --out reports/\n"
        "  raceproof report run.jsonl --format text --all\n"
        "  raceproof report sim.jsonl --beside zookeeper.jsonl --scenario brooklin-double-stop\n"
        "  raceproof report out/c2 --baseline out/c1     # a campaign folder",
    )
    sub.add_argument("input", help="a counterexample file, a history (.jsonl), or a folder of them")
    sub.add_argument(
        "--format",
        choices=sorted(FORMATS),
        help="one format (default: md, html and perfetto files)",
    )
    sub.add_argument("--out", help="folder for the files (default: beside each input)")
    sub.add_argument(
        "--all", action="store_true", help="show the noise too (checkpoints, kernel ops)"
    )
    sub.add_argument(
        "--clock",
        choices=["virtual", "wall"],
        help="the history's clock (default: virtual if it ends with the kernel's run.end)",
    )
    sub.add_argument("--scenario", help="judge a history with this scenario's checkers")
    sub.add_argument(
        "--baseline",
        metavar="OLD_DIR",
        help="with a campaign folder: the previous campaign to compare with",
    )
    sub.add_argument("--beside", help="a second history to draw beside the first (a real replay)")
