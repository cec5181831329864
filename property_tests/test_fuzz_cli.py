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

The work each example can do is bounded (tiny scenarios, a few examples, a
few schedules), and commands whose valid runs are slow (``bench``,
``compare``, ``spark-check``) are generated with at least one bad value so
they stop at validation.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raceproof.cli.main import main
from raceproof.sim import CounterexampleError
from raceproof.sim import repro as repro_files

CONTRACT_CODES = {0, 1, 2, 3}
FUZZ = settings(
    max_examples=int(os.environ.get("RACEPROOF_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

NASTY_TEXT = st.sampled_from(
    ["", " ", "-1", "0", "1e400", "nan", "inf", "-inf", "true", "null", "[]", "{}", "[[[]]]",
     "99999999999999999999", "1.5", "x" * 300, "\x00", "é", "--json", "=", "a=b=c", "/etc/passwd"]
)  # fmt: skip
SMALL_INT = st.integers(-3, 6).map(str)
ANY_VALUE = st.one_of(NASTY_TEXT, SMALL_INT)
SCENARIOS = st.sampled_from(["lost-update", "lost-update", "brooklin-double-stop", "nope", ""])
VARIANTS = st.sampled_from(["buggy", "fix-cas", "", "nope"])
SETS = st.lists(
    st.tuples(
        st.sampled_from(["clients", "increments", "rpc_ms", "think_ms", "start_gap_ms", "nope", ""]),
        st.one_of(
            st.sampled_from(["1", "2", "0", "-1", "true", "1.5", "[]", "[1,20]", "[1,-2]", "[[1]]",
                             "soon", "NaN", "1e400", "null", "{}", "[" * 50 + "]" * 50, "3000"]),
            st.integers(-5, 5).map(str),
        ),
    ).map(lambda kv: f"{kv[0]}={kv[1]}"),
    max_size=2,
)  # fmt: skip


def _option(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(
        ["list", "repro", "explore", "prove", "replay", "report", "compare", "bench", "spark-check",
         "nope"]
    ))  # fmt: skip
    words = [command]
    flag = lambda name: st.sampled_from([[], [name]])  # noqa: E731
    if command in ("repro", "explore", "prove"):
        words.append(draw(SCENARIOS))
        words += draw(_option("--variant", VARIANTS))
        for item in draw(SETS):
            words += ["--set", item]
    if command == "repro":
        source = draw(st.sampled_from(["fifo", "seed", "choices", "report", "two"]))
        if source == "seed":
            words += ["--seed", draw(ANY_VALUE)]
        elif source == "choices":
            words += ["--choices", draw(st.one_of(
                st.sampled_from(["4:0=1", "4:", "4:0=0", "4:9=1", "0:", "x", "99999999999:",
                                 "4:1=1,0=1", "-1:"]), NASTY_TEXT))]  # fmt: skip
        elif source == "report":
            words += ["--report-timeline"]
        elif source == "two":
            words += ["--seed", "1", "--choices", "4:"]
        words += draw(_option("--history-out", st.sampled_from(["h.jsonl", "sub/h.jsonl", ".",
                                                                 "/etc/passwd/x", ""])))  # fmt: skip
        words += draw(st.sampled_from([[], ["--backend", "nope"], ["--zk-hosts", "nohost:x"],
                                       ["--backend", "zookeeper", "--zk-hosts", "a:b"]]))  # fmt: skip
    if command == "explore":
        words += ["--examples", draw(st.one_of(st.integers(1, 5).map(str), NASTY_TEXT))]
        words += draw(_option("--strategy", st.sampled_from(["random", "pct", "hypothesis", "x"])))
        words += draw(_option("--budget", st.sampled_from(["30", "0", "-1", "nan", "inf", "x"])))
        words += draw(_option("--seed", ANY_VALUE))
        words += draw(_option("--pct-depth", st.sampled_from(["1", "3", "0", "1000000000", "x"])))
        words += draw(_option("--checker", st.sampled_from(["final-equals-acks", "", "nope"])))
    if command == "prove":
        words += ["--max-schedules", draw(st.one_of(st.integers(1, 20).map(str), NASTY_TEXT))]
        words += draw(_option("--budget", st.sampled_from(["30", "0", "nan", "-inf"])))
        words += draw(_option("--max-deviations", ANY_VALUE))
        words += draw(_option("--max-branch", ANY_VALUE))
        words += draw(_option("--checker", st.sampled_from(["", "nope", "final-equals-acks"])))
    if command in ("explore", "prove"):
        words += draw(_option("--out", st.sampled_from(["out", "a/b", "/etc/passwd", ""])))
    if command == "replay":
        words.append(draw(st.sampled_from(["missing.json", ".", "/dev/null", ""])))
    if command == "report":
        words.append(draw(st.sampled_from(["missing.json", ".", "/dev/null", "", "h.jsonl"])))
        words += draw(
            _option("--format", st.sampled_from(["md", "html", "perfetto", "text", "x", ""]))
        )
        words += draw(_option("--out", st.sampled_from(["rep", "/etc/passwd", ""])))
        words += draw(_option("--scenario", st.sampled_from(["lost-update", "nope", ""])))
        words += draw(_option("--clock", st.sampled_from(["virtual", "wall", "x"])))
        words += draw(_option("--beside", st.sampled_from(["missing.jsonl", "."])))
        words += draw(flag("--all"))
    if command == "compare":  # always one bad value: a valid comparison runs for seconds
        words.append(draw(st.sampled_from(["coordinator-async-append", "lost-update", ""])))
        words += draw(st.sampled_from([["--seeds", "0"], ["--rate", "-1"], ["--duration-ms", "x"],
                                       ["--out", "/etc/passwd"], ["--seeds", "nan"]]))  # fmt: skip
    if command == "bench":
        words += draw(st.sampled_from([["--seeds", "0"], ["--scenario", ""], ["--seeds", "x"],
                                       ["--scenario", "nope"], ["--variant", ""]]))  # fmt: skip
    if command == "spark-check":
        words += draw(st.sampled_from([["--experiment", "nope"], ["--experiment", ""],
                                       ["--repeat", "0"], ["--pipeline", "nope:x"], ["--bogus"]]))  # fmt: skip
    words += draw(flag("--json"))
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
            code, out, _ = run_cli(["explore", "lost-update", "--variant", "buggy", "--json",
                                    "--out", str(folder)])  # fmt: skip
            assert code == 1
            _VALID.update(json.loads(Path(json.loads(out)["counterexample"]).read_text()))
    return json.loads(json.dumps(_VALID))


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)  # fmt: skip
FIELDS = ["format", "format_version", "tool_version", "git_commit", "scenario", "variant",
          "config", "strategy", "deviations", "blob", "choices", "trace_hash", "verdict",
          "timeline"]  # fmt: skip


@st.composite
def counterexample_texts(draw: st.DrawFn) -> str:
    raw = valid_counterexample()
    how = draw(st.sampled_from(["field", "delete", "truncate", "choice", "config", "deep",
                                "huge", "op", "valid"]))  # fmt: skip
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
        raw["config"][key] = draw(st.one_of(
            JSON_VALUES, st.sampled_from([0, -1, True, [], [1, -1], 10**12, "soon", 1.5])))  # fmt: skip
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
            st.sampled_from(["99999999999:", "x" * 1_000_000, "9" * 5000 + ":"]))  # fmt: skip
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
