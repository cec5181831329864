"""Hostile models: a small scenario file whose code leaves by any ``BaseException``, anywhere.

Why it exists: a verdict must never be something the model's code can fake.
Code that calls ``sys.exit(0)``, raises ``KeyboardInterrupt`` or
``GeneratorExit`` itself, raises a ``BaseException`` of its own, or an
exception whose ``str()`` raises, must read as the verdict ``error`` (exit 4)
naming what it raised, never as a pass, a found race, an interrupt (130) or a
bug of raceproof's (70). ``scenario_file`` writes one such scenario to a
folder: ``KIND`` says what is raised and ``WHERE`` where (at import, in the
build, in an actor, in a checker, in a step hook (an ``always()`` invariant)).
Its variant ``quiet`` raises nothing and loses a write (a plain violation, so
a counterexample can be saved and replayed onto the raising variants).
The scenario is otherwise tiny (two actors, a few schedules), so every command
runs it in well under a second.
"""

from __future__ import annotations

from pathlib import Path

# What each kind raises, as a statement; and what the one-line message must name.
RAISES = {
    "exit0": ("sys.exit(0)", "SystemExit: sys.exit(0)"),
    "exit-str": ('sys.exit("bye")', "SystemExit: sys.exit('bye')"),
    "keyboard": ('raise KeyboardInterrupt("from the model")', "KeyboardInterrupt: from the model"),
    "generator-exit": ("raise GeneratorExit()", "GeneratorExit"),
    "base": ('raise Hostile("its own BaseException")', "Hostile: its own BaseException"),
    "bad-str": ("raise BadStr()", "BadStr: <its str() raised ValueError>"),
}
KINDS = tuple(RAISES)
WHERES = ("import", "build", "actor", "checker", "hook")

_TEMPLATE = '''
"""A hostile model: {statement} ({where})."""
import sys

import raceproof
from raceproof.sim import always, checker, invariant_checker, ok, violated


class Hostile(BaseException):
    pass


class BadStr(Exception):
    def __str__(self):
        raise ValueError("no str for you")


WHERE = {where!r}


def hostile():
    {statement}


if WHERE == "import":
    hostile()


def writer(world, name, variant, shared):
    yield world.sleep(world.source.choose(name + ".gap", (0, 1)))
    world.reach("both writers ran")
    if variant == "quiet" and name == "w1":
        return  # the quiet variant's race: w1's write is lost (a plain violation)
    if WHERE == "actor" and name == "w1":
        hostile()
    shared["count"] += 1
    world.log(name, "write", count=shared["count"])


def build(world, variant, config):
    world.log("setup", "start", variant=variant)
    if WHERE == "build" and variant != "quiet":
        hostile()
    shared = {{"count": 0}}

    def holds():
        if WHERE == "hook" and variant != "quiet" and shared["count"] == 2:
            hostile()
        return True

    always(world, "never-negative", holds)
    for name in ("w0", "w1"):
        world.spawn(name, writer(world, name, variant, shared))


@checker("two-writes")
def two_writes(history):
    if WHERE == "checker" and history.of_kind("start")[0].get("variant") != "quiet":
        hostile()
    writes = history.of_kind("write")
    if len(writes) != 2:
        return violated("a write is missing", len(history) - 1)
    return ok()


raceproof.register(
    raceproof.Scenario(
        name={name!r},
        summary={summary!r},
        variants={{"buggy": "raises", "fixed": "raises too", "quiet": "loses a write"}},
        expect_violation=frozenset({{"buggy", "quiet"}}),
        checkers=(two_writes, invariant_checker("never-negative")),
        build=build,
        default_examples=20,
    )
)
'''


def scenario_name(kind: str, where: str) -> str:
    return f"hostile-{kind}-{where}"


def scenario_file(folder: Path, kind: str, where: str) -> Path:
    """Write the scenario that raises ``kind`` at ``where`` into ``folder``; its path."""
    statement = RAISES[kind][0]
    name = scenario_name(kind, where)
    path = folder / f"{name.replace('-', '_')}.py"
    summary = f"a model whose code leaves by {statement} ({where})"
    path.write_text(_TEMPLATE.format(statement=statement, where=where, name=name, summary=summary))
    return path


def names(kind: str) -> str:
    """What the one-line message of ``kind`` says (the exception and its message)."""
    return RAISES[kind][1]
