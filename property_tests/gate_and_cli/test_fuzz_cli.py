"""The command-line contract under generated input: command lines and counterexample files.

Hypothesis generates command lines for every command (each option with valid,
borderline and malformed values, unknown options and stray words) and
counterexample files (a valid one mutated field by field, truncated, given
wrong types, huge and deeply nested values), runs them in-process through
``raceproof.cli.main.main``, and asserts the contract:

* the exit code is one of 0, 1, 2, 3 (argparse's own usage errors exit 2);
* no traceback on stderr;
* with ``--json``, stdout is exactly one valid JSON object;
* nothing half-written: every file left in the output folder is a complete
  counterexample that loads, and no temporary file remains.

A third property follows the commands themselves: it walks
``build_parser()``'s subcommands and every action of each (so an option added
tomorrow is fuzzed the day it is added) and gives one of them a value that is
bad by construction — refused by the option's own type or choices, a flag
given a value, a path of the wrong kind, a malformed file or a damaged
campaign folder, a name that does not exist — and asserts exit 2, one line,
and the folder exactly as it was.

The work each example can do is bounded (tiny scenarios, a few examples, a
few schedules), and commands whose valid runs are slow (``bench``,
``compare``, ``spark-check``) are generated with at least one bad value so
they stop at validation.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raceproof.cli.main import build_parser, main
from raceproof.sim import CounterexampleError
from raceproof.sim import repro as repro_files

CONTRACT_CODES = {0, 1, 2, 3}
FUZZ = settings(
    max_examples=int(os.environ.get("RACEPROOF_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

NASTY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "-1",
        "0",
        "1e400",
        "nan",
        "inf",
        "-inf",
        "true",
        "null",
        "[]",
        "{}",
        "[[[]]]",
        "99999999999999999999",
        "1.5",
        "x" * 300,
        "\x00",
        "é",
        "--json",
        "=",
        "a=b=c",
        "/etc/passwd",
    ]
)
SMALL_INT = st.integers(-3, 6).map(str)
ANY_VALUE = st.one_of(NASTY_TEXT, SMALL_INT)
SCENARIOS = st.sampled_from(["lost-update", "lost-update", "brooklin-double-stop", "nope", ""])
VARIANTS = st.sampled_from(["buggy", "fix-cas", "", "nope"])
SETS = st.lists(
    st.tuples(
        st.sampled_from(
            ["clients", "increments", "rpc_ms", "think_ms", "start_gap_ms", "nope", ""]
        ),
        st.one_of(
            st.sampled_from(
                [
                    "1",
                    "2",
                    "0",
                    "-1",
                    "true",
                    "1.5",
                    "[]",
                    "[1,20]",
                    "[1,-2]",
                    "[[1]]",
                    "soon",
                    "NaN",
                    "1e400",
                    "null",
                    "{}",
                    "[" * 50 + "]" * 50,
                    "3000",
                ]
            ),
            st.integers(-5, 5).map(str),
        ),
    ).map(lambda kv: f"{kv[0]}={kv[1]}"),
    max_size=2,
)


def _option(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


CHOICES_TEXT = ["4:0=1", "4:", "4:0=0", "4:9=1", "0:", "x", "99999999999:", "4:1=1,0=1", "-1:"]
BACKENDS = [
    [],
    ["--backend", "nope"],
    ["--zk-hosts", "nohost:x"],
    ["--backend", "zookeeper", "--zk-hosts", "a:b"],
]


def _flag(name: str) -> st.SearchStrategy[list[str]]:
    return st.sampled_from([[], [name]])


def _repro_words(draw: st.DrawFn) -> list[str]:
    words: list[str] = []
    source = draw(st.sampled_from(["fifo", "seed", "choices", "report", "two"]))
    if source == "seed":
        words += ["--seed", draw(ANY_VALUE)]
    elif source == "choices":
        words += ["--choices", draw(st.one_of(st.sampled_from(CHOICES_TEXT), NASTY_TEXT))]
    elif source == "report":
        words += ["--report-timeline"]
    elif source == "two":
        words += ["--seed", "1", "--choices", "4:"]
    history_out = st.sampled_from(["h.jsonl", "sub/h.jsonl", ".", "/etc/passwd/x", ""])
    words += draw(_option("--history-out", history_out))
    return words + draw(st.sampled_from(BACKENDS))


def _explore_words(draw: st.DrawFn) -> list[str]:
    words = ["--examples", draw(st.one_of(st.integers(1, 5).map(str), NASTY_TEXT))]
    words += draw(_option("--strategy", st.sampled_from(["random", "pct", "hypothesis", "x"])))
    words += draw(_option("--budget", st.sampled_from(["30", "0", "-1", "nan", "inf", "x"])))
    words += draw(_option("--seed", ANY_VALUE))
    words += draw(_option("--pct-depth", st.sampled_from(["1", "3", "0", "1000000000", "x"])))
    words += draw(_option("--checker", st.sampled_from(["final-equals-acks", "", "nope"])))
    return words + draw(_option("--out", st.sampled_from(["out", "a/b", "/etc/passwd", ""])))


def _prove_words(draw: st.DrawFn) -> list[str]:
    words = ["--max-schedules", draw(st.one_of(st.integers(1, 20).map(str), NASTY_TEXT))]
    words += draw(_option("--budget", st.sampled_from(["30", "0", "nan", "-inf"])))
    words += draw(_option("--max-deviations", ANY_VALUE))
    words += draw(_option("--max-branch", ANY_VALUE))
    words += draw(_option("--checker", st.sampled_from(["", "nope", "final-equals-acks"])))
    return words + draw(_option("--out", st.sampled_from(["out", "a/b", "/etc/passwd", ""])))


def _report_words(draw: st.DrawFn) -> list[str]:
    words = [draw(st.sampled_from(["missing.json", ".", "/dev/null", "", "h.jsonl"]))]
    words += draw(_option("--format", st.sampled_from(["md", "html", "perfetto", "text", "x", ""])))
    words += draw(_option("--out", st.sampled_from(["rep", "/etc/passwd", ""])))
    words += draw(_option("--scenario", st.sampled_from(["lost-update", "nope", ""])))
    words += draw(_option("--clock", st.sampled_from(["virtual", "wall", "x"])))
    words += draw(_option("--beside", st.sampled_from(["missing.jsonl", "."])))
    return words + draw(_flag("--all"))


def _one_bad_option(*choices: list[str]) -> Callable[[st.DrawFn], list[str]]:
    """A command whose valid run takes seconds: always drawn with one bad value."""
    return lambda draw: draw(st.sampled_from(list(choices)))


def _compare_words(draw: st.DrawFn) -> list[str]:
    scenario = draw(st.sampled_from(["coordinator-async-append", "lost-update", ""]))
    bad = [
        ["--seeds", "0"],
        ["--rate", "-1"],
        ["--duration-ms", "x"],
        ["--out", "/etc/passwd"],
        ["--seeds", "nan"],
    ]
    return [
        scenario,
        *draw(st.sampled_from(bad)),
    ]  # one bad value: a valid comparison runs for seconds


# Each command's own options, drawn after the command (and its scenario, for the three that run one).
COMMAND_WORDS: dict[str, Callable[[st.DrawFn], list[str]]] = {
    "list": lambda draw: [],
    "repro": _repro_words,
    "explore": _explore_words,
    "prove": _prove_words,
    "replay": lambda draw: [draw(st.sampled_from(["missing.json", ".", "/dev/null", ""]))],
    "report": _report_words,
    "compare": _compare_words,
    "bench": _one_bad_option(
        ["--seeds", "0"],
        ["--scenario", ""],
        ["--seeds", "x"],
        ["--scenario", "nope"],
        ["--variant", ""],
    ),
    "spark-check": _one_bad_option(
        ["--experiment", "nope"],
        ["--experiment", ""],
        ["--repeat", "0"],
        ["--pipeline", "nope:x"],
        ["--bogus"],
    ),
    "nope": lambda draw: [],
}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(list(COMMAND_WORDS)))
    words = [command]
    if command in ("repro", "explore", "prove"):
        words.append(draw(SCENARIOS))
        words += draw(_option("--variant", VARIANTS))
        for item in draw(SETS):
            words += ["--set", item]
    words += COMMAND_WORDS[command](draw)
    words += draw(_flag("--json"))
    words += draw(st.sampled_from([[], [], ["--bogus-option"], ["stray"]]))
    return words


@contextlib.contextmanager
def _in_fresh_folder() -> Iterator[Path]:
    before = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(before)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse: usage errors exit 2 (and --help 0)
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def assert_contract(argv: list[str], code: int, out: str, err: str, folder: Path) -> None:
    assert code in CONTRACT_CODES, (argv, code, err[-2000:])
    assert "Traceback" not in err, (argv, err[-2000:])
    if "--json" in argv:
        lines = out.strip().splitlines()
        assert len(lines) == 1, (argv, out[:500])
        assert isinstance(json.loads(lines[0]), dict)
    for path in folder.rglob("*"):
        assert not path.name.startswith("."), f"a temporary file was left: {path}"
        if path.is_file() and path.suffix == ".json":
            repro_files.load(path)  # complete and valid
        elif path.is_file() and path.suffix == ".jsonl":
            assert path.read_text().endswith("\n")


@FUZZ
@given(command_lines())
def test_generated_command_lines_keep_the_contract(argv: list[str]) -> None:
    with _in_fresh_folder() as folder:
        code, out, err = run_cli(argv)
        assert_contract(argv, code, out, err, folder)


# -- counterexample files -----------------------------------------------------------------
_VALID: dict[str, Any] = {}


def valid_counterexample() -> dict[str, Any]:
    """A real counterexample file's JSON (found once, by a tiny search)."""
    if not _VALID:
        with _in_fresh_folder() as folder:
            code, out, _ = run_cli(
                ["explore", "lost-update", "--variant", "buggy", "--json", "--out", str(folder)]
            )
            assert code == 1
            _VALID.update(json.loads(Path(json.loads(out)["counterexample"]).read_text()))
    return json.loads(json.dumps(_VALID))


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "format",
    "format_version",
    "tool_version",
    "git_commit",
    "scenario",
    "variant",
    "config",
    "strategy",
    "deviations",
    "blob",
    "choices",
    "trace_hash",
    "verdict",
    "timeline",
]


@st.composite
def counterexample_texts(draw: st.DrawFn) -> str:
    raw = valid_counterexample()
    how = draw(
        st.sampled_from(
            ["field", "delete", "truncate", "choice", "config", "deep", "huge", "op", "valid"]
        )
    )
    if how == "field":
        raw[draw(st.sampled_from(FIELDS))] = draw(JSON_VALUES)
    elif how == "delete":
        raw.pop(draw(st.sampled_from(FIELDS)))
    elif how == "choice":
        index = draw(st.integers(0, len(raw["choices"]) - 1))
        slot = draw(st.integers(0, 2))
        raw["choices"][index][slot] = draw(
            st.one_of(JSON_VALUES, st.sampled_from([True, -1, 10**9]))
        )
    elif how == "config":
        key = draw(st.sampled_from([*raw["config"], "nope"]))
        raw["config"][key] = draw(
            st.one_of(JSON_VALUES, st.sampled_from([0, -1, True, [], [1, -1], 10**12, "soon", 1.5]))
        )
    elif how == "deep":
        depth = draw(st.sampled_from([50, 5_000, 100_000]))
        raw[draw(st.sampled_from(FIELDS))] = json.loads(
            "[" * min(depth, 500) + "]" * min(depth, 500)
        )
        if depth > 500:
            text = json.dumps(raw)
            return text[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"
    elif how == "huge":  # (draw counts past the cap are fuzzed through the blob)
        raw[draw(st.sampled_from(["blob", "scenario", "trace_hash"]))] = draw(
            st.sampled_from(["99999999999:", "x" * 1_000_000, "9" * 5000 + ":"])
        )
    elif how == "op":
        index = draw(st.integers(0, len(raw["timeline"]) - 1))
        op = raw["timeline"][index]
        op[draw(st.sampled_from([*op, "extra"]))] = draw(JSON_VALUES)
    text = json.dumps(raw, indent=1)
    if how == "truncate":
        text = text[: draw(st.integers(0, len(text) - 1))]
    return text


@FUZZ
@given(counterexample_texts(), st.booleans())
def test_generated_counterexample_files_keep_the_contract(text: str, as_json: bool) -> None:
    with _in_fresh_folder() as folder:
        path = folder / "cx.json"
        path.write_text(text)
        argv = ["replay", str(path), *(["--json"] if as_json else [])]
        code, out, err = run_cli(argv)
        path.unlink()
        assert_contract(argv, code, out, err, folder)
        if code in (0, 1):  # accepted: then it really was a loadable counterexample
            path.write_text(text)
            try:
                repro_files.load(path)
            except CounterexampleError as exc:
                raise AssertionError(f"replay accepted a file load refuses: {exc}") from None


# -- bad invocations generated from the parser itself ------------------------------------
# Every option of every command, as ``build_parser()`` declares it today: an option added
# tomorrow is fuzzed the day it is added. One value in each invocation is bad by
# construction (its own argparse type or choices refuse it, a flag given a value, a path of
# the wrong kind, a malformed or damaged file, a name that does not exist), so every
# invocation must end in exit 2 with one line naming the problem and nothing written.
FUZZ_PARSER = settings(
    max_examples=int(os.environ.get("RACEPROOF_FUZZ_PARSER_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = _commands()
# Cheap valid values for what a command needs besides the value under test (a run that a
# bug lets through then ends in seconds instead of minutes); "cx.json" is a real counterexample.
CONTEXT = {
    "repro": ["lost-update"],
    "explore": ["lost-update", "--examples", "5"],
    "prove": ["lost-update", "--max-schedules", "5"],
    "replay": ["cx.json"],
    "report": ["cx.json", "--format", "md"],
    "check": ["lost-update", "--examples", "5"],
    "compare": ["lost-update", "--seeds", "1"],
    "campaign": ["--scenario", "lost-update", "--seeds", "1", "--examples", "5"],
}
# Untyped values, by what the option names: paths of the wrong kind, malformed files, names
# that do not exist. Fixture files and folders are made by ``_fixtures``.
WRONG_FOLDERS = ["", "afile", "afile/sub", "/proc/raceproof/x"]
DAMAGED_CAMPAIGNS = ["dcamp", "junkcamp", "afolder-with-notes"]  # for what reads a campaign
WRONG_FILES = ["", "afolder", "afile/sub.xml", "/proc/raceproof/x.xml"]
BAD_INPUTS = [
    "",
    "missing.json",
    "junk.json",
    "deep.json",
    "empty.json",
    "/dev/null",
    "afile",
    "deep.jsonl",
    "ghost.json",
]
BAD_MODULES = [
    "no_such_module_xyz",
    "broken.py",
    "exits.py",
    "five.py",
    "junk.json",
    "nope.py:factory",
    "exits.py:pipeline",
    "",
]
BAD_NAMES = ["", "no-such-name", "x" * 300, "lost-update\x00", "--"]
UNTYPED = {
    "out": WRONG_FOLDERS,
    "baseline": [*WRONG_FOLDERS, *DAMAGED_CAMPAIGNS, "afolder"],
    "junit": WRONG_FILES,
    "history_out": WRONG_FILES,
    "real_history_out": WRONG_FILES,
    "input": BAD_INPUTS,
    "file": BAD_INPUTS,
    "beside": BAD_INPUTS,
    "scenarios": BAD_MODULES,
    "pipeline": BAD_MODULES,
    "set": ["novalue", "=1", "nope=1", "clients=0", "clients=1e400", "clients=" + "[" * 300],
    "seed_range": ["5:2", "x", "", "1:99999999", "-1:3", "1:2:3"],
}
# Where one command's option reads more than its name says: a campaign's --out is resumed.
UNTYPED_IN = {("campaign", "out"): [*WRONG_FOLDERS, *DAMAGED_CAMPAIGNS]}
TYPED_CANDIDATES = [
    "",
    " ",
    "x",
    "-1",
    "0",
    "1.5",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "9" * 30,
    "1000000000000",
    "a:b",
    "h:0",
    "h:99999",
    "x" * 300,
    "\x00",
    "é",
]


def _refuses(action: argparse.Action, value: str) -> bool:
    """Whether the option's own declaration (type, choices) refuses ``value``."""
    if action.choices is not None and value not in action.choices:
        return True
    if action.type is None:
        return False
    try:
        action.type(value)  # type: ignore[operator]
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return True
    return False


def _bad_values(command: str, action: argparse.Action) -> st.SearchStrategy[str] | None:
    if action.nargs == 0:
        return None  # a flag: given a value instead (below)
    if action.type is not None or action.choices is not None:
        pool = [v for v in TYPED_CANDIDATES if _refuses(action, v)]
        return st.sampled_from(pool) if pool else None
    if (command, action.dest) in UNTYPED_IN:
        return st.sampled_from(UNTYPED_IN[command, action.dest])
    if action.dest in UNTYPED:
        return st.sampled_from(UNTYPED[action.dest])
    return st.sampled_from(BAD_NAMES[1:] if not action.option_strings else BAD_NAMES)


@st.composite
def bad_invocations(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    actions = [a for a in COMMANDS[command]._actions if not isinstance(a, argparse._HelpAction)]
    targets = [a for a in actions if a.nargs == 0 or _bad_values(command, a) is not None]
    target = draw(st.sampled_from(targets))
    context = list(CONTEXT.get(command, []))
    if not target.option_strings:  # a positional: it takes the place of the context's own
        values = _bad_values(command, target)
        assert values is not None
        value = draw(values.filter(lambda v: not v.startswith("-")))
        if context and not context[0].startswith("-"):
            context = context[1:]
        words = [command, value, *context]
    else:
        option = draw(st.sampled_from(target.option_strings))
        if target.nargs == 0:
            bad = [f"{option}=x"] if option.startswith("--") else [f"{option}x"]
        else:
            values = _bad_values(command, target)
            assert values is not None
            bad = [option, draw(values)]
        # Anywhere between the context's words, never between an option and its value.
        cuts = [i for i, w in enumerate(context) if w.startswith("-")] + [len(context)]
        cut = draw(st.sampled_from(cuts))
        words = [command, *context[:cut], *bad, *context[cut:]]
    if draw(st.booleans()):
        words.append("--json")
    return words


def _fixtures(folder: Path, junk: bytes) -> None:
    """The files the bad values name: a file, a folder, malformed and damaged inputs."""
    (folder / "afile").write_text("not a folder\n")
    (folder / "afolder").mkdir()
    (folder / "cx.json").write_text(json.dumps(valid_counterexample()))
    ghost = valid_counterexample() | {"scenario": "no-such-scenario"}
    (folder / "ghost.json").write_text(json.dumps(ghost))
    (folder / "junk.json").write_bytes(junk)
    (folder / "empty.json").write_text("")
    (folder / "deep.json").write_text("[" * 50_000 + "]" * 50_000)
    (folder / "deep.jsonl").write_text('{"fields": ' + "[" * 50_000 + "]" * 50_000 + "}\n")
    (folder / "broken.py").write_text("raise RuntimeError('a broken scenario module')\n")
    (folder / "exits.py").write_text("import sys\nsys.exit(5)\ndef pipeline(): pass\n")
    (folder / "five.py").write_text(
        "import dataclasses\nfrom raceproof.scenarios.catalogue import get, register\n"
        "register(dataclasses.replace(get('lost-update'), name='five', config=5))\n"
    )
    (folder / "afolder-with-notes").mkdir()
    (folder / "afolder-with-notes" / "notes.txt").write_text("someone else's folder\n")
    for name, part in (("dcamp", b"PAR1 not parquet"), ("junkcamp", junk)):
        (folder / name / "results").mkdir(parents=True)
        (folder / name / "campaign.json").write_text('{"format": "raceproof-campaign"}')
        (folder / name / "results" / "part-0.parquet").write_bytes(part)


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")}


@FUZZ_PARSER
@given(bad_invocations(), st.binary(max_size=200))
def test_bad_invocations_from_the_parser_are_refused_with_nothing_written(
    argv: list[str], junk: bytes
) -> None:
    valid_counterexample()  # found once, outside the folder under test
    with _in_fresh_folder() as folder:
        _fixtures(folder, junk)
        before = _snapshot(folder)
        code, out, err = run_cli(argv)
        lines = err.strip().splitlines()
        assert code == 2, (argv, code, out[-500:], err[-2000:])
        assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, (argv, err)
        if "--json" in argv:
            assert json.loads(out)["verdict"] is None, (argv, out)
        assert _snapshot(folder) == before, (argv, "something was written")


def test_every_option_of_every_command_has_a_bad_value() -> None:
    """The generator reaches every option: a flag gets a value; anything else a refused value."""
    for command, parser in COMMANDS.items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.nargs == 0 or _bad_values(command, action) is not None, (
                command,
                action.dest,
            )
