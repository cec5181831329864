"""The contract against what the world around a command does: paths, numbers, nesting, contradictions.

``test_fuzz_cli.py`` fuzzes what the parser sees; this file fuzzes the world a
valid-looking command line meets: a path the file system refuses (too long, a
file where a folder is expected and the reverse, a symbolic link loop or a link
to nowhere, a path under ``/dev/null``, on a read-only mount, in a folder the
user may not read), a number a user types or a file carries (Unicode digits,
more than 4,300 digits, NaN and infinity where a float is read), JSON nested
deeper than any raceproof file (on the command line and in every file read),
and options that contradict each other.

Hypothesis draws a kind, a command and the place the world meets it (an
option, an input file, a file's field), builds that world in a fresh folder
and runs the command in-process. The property is the contract: exit 2, one
line on stderr naming the option or the input, no traceback, the folder
exactly as it was; never 0, 1 or 70. Each example is tagged with
``event(kind)``, so ``make fuzz`` (``--hypothesis-show-statistics``) prints the
cases generated per kind; ``RACEPROOF_WORLD_EXAMPLES`` sets the budget (small
in ``make test``, large in ``make fuzz``).

A folder without read permission means nothing to root, so when the suite
runs as root that kind runs with the effective user ``nobody`` (``seteuid``,
restored after the command).

Below the properties, one test per kind the issue listed (each bad input it
saw, and its valid twin where there is one), and the exit-code page's table of
documented cases, each run as documented.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from raceproof.cli.main import main
from raceproof.sim import user_files

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NOBODY = 65534
WORLD = settings(
    max_examples=int(os.environ.get("RACEPROOF_WORLD_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=os.environ.get("RACEPROOF_WORLD_EXAMPLES") is None,
)


# -- running a command in a world ----------------------------------------------------------
@contextlib.contextmanager
def as_unprivileged(wanted: bool) -> Iterator[None]:
    """Root reads every folder: drop to ``nobody`` (effective uid only) so permissions count."""
    if not wanted or os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


@contextlib.contextmanager
def fresh_world() -> Iterator[Path]:
    """A folder anyone may enter (``nobody`` too), the current directory while inside."""
    before = os.getcwd()
    folder = Path(tempfile.mkdtemp(prefix="raceproof-world-"))
    folder.chmod(0o777)
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)
        for path in folder.rglob("*"):  # a locked folder must open again to be removed
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def run(argv: list[str], unprivileged: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        as_unprivileged(unprivileged),
    ):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's own usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def tree(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): (p.lstat().st_size if p.is_file() else -1)
        for p in folder.rglob("*")
    }


def assert_refused(argv: list[str], code: int, out: str, err: str, names: tuple[str, ...]) -> str:
    """Exit 2, one line naming one of ``names``, no traceback; with ``--json`` an error object."""
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, out[-500:], err[-2000:])
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, (argv, err[-2000:])
    assert any(name in lines[0] for name in names), (argv, names, lines[0])
    if "--json" in argv:
        assert json.loads(out)["verdict"] is None, (argv, out)
    return lines[0]


# -- the world's pieces -----------------------------------------------------------------------
def counterexample(folder: Path) -> Path:
    """A real counterexample (found once per session, copied into each world)."""
    if not _FOUND:
        with fresh_world():
            argv = ["explore", "lost-update", "--variant", "buggy", "--json", "--out", "cx"]
            code, out, err = run(argv)
            assert code == 1, err
            _FOUND.append(Path(json.loads(out)["counterexample"]).read_text())
    path = folder / "cx.json"
    path.write_text(_FOUND[0])
    return path


_FOUND: list[str] = []
LONG_NAME = "n" * 300
LONG_PATH = "/".join(["p" * 200] * 25)


def make_path(folder: Path, kind: str, role: str) -> str:
    """Build in ``folder`` the world a path of ``kind`` needs; the path, as the user types it.

    ``role`` is what the command expects there: ``dir`` (a folder it writes), ``file``
    (a file it writes), ``input`` (a file or folder it reads), ``module`` (a scenario file).
    """
    suffix = {"dir": "", "file": ".out", "input": ".json", "module": ".py"}[role]
    if kind == "long-name":
        return LONG_NAME + suffix
    if kind == "long-path":
        return LONG_PATH + suffix
    if kind == "under-a-file":
        (folder / "afile").write_text("a file\n")
        return "afile/x" + suffix
    if kind == "under-dev-null":
        return "/dev/null/x" + suffix
    if kind == "wrong-kind":  # a file where a folder is expected, a folder where a file is
        if role == "dir":
            (folder / "afile").write_text("a file\n")
            return "afile"
        (folder / ("afolder" + suffix)).mkdir()
        return "afolder" + suffix
    if kind == "link-loop":
        (folder / "loop").symlink_to("loop")
        return "loop" if role in ("dir", "input") else "loop/x" + suffix
    if kind == "link-to-nowhere":
        (folder / ("gone" + suffix)).symlink_to("no/such/target")
        return "gone" + suffix
    if kind == "read-only-mount":
        return "/proc/raceproof-world/x" + suffix
    if kind == "unreadable":
        locked = folder / "locked"
        locked.mkdir()
        if role == "input":
            counterexample(locked)
            name = "locked/cx.json"
        elif role == "module":
            (locked / "s.py").write_text("X = 1\n")
            name = "locked/s.py"
        else:
            name = "locked/x" + suffix
        locked.chmod(0)
        return name
    raise AssertionError(kind)


PATH_KINDS = [
    "long-name",
    "long-path",
    "under-a-file",
    "under-dev-null",
    "wrong-kind",
    "link-loop",
    "link-to-nowhere",
    "read-only-mount",
    "unreadable",
]
# Every command line that reads or writes a user path, the path as ``{P}``, its role, the
# words the refusal must name (the option, or the path for a positional input).
PATH_SLOTS: list[tuple[str, str, str]] = [
    ("explore lost-update --examples 3 --out {P}", "dir", "--out"),
    ("prove lost-update --max-schedules 3 --out {P}", "dir", "--out"),
    ("repro lost-update --out {P}", "dir", "--out"),
    ("repro lost-update --history-out {P}", "file", "--history-out"),
    ("check lost-update --examples 3 --out {P}", "dir", "--out"),
    ("check lost-update --examples 3 --junit {P}", "file", "--junit"),
    ("compare coordinator-async-append --seeds 1 --out {P}", "dir", "--out"),
    ("report cx.json --out {P}", "dir", "--out"),
    ("report {P}", "input", "{P}"),
    ("report cx.json --beside {P}", "input", "{P}"),
    ("replay {P}", "input", "{P}"),
    ("list --scenarios {P}", "module", "{P}"),
    ("--scenarios {P} list", "module", "{P}"),
    ("campaign --scenario lost-update --seeds 1 --examples 3 --out {P}", "dir", "--out"),
    ("campaign --pipeline windowed-count --seeds 1 --out {P}", "dir", "--out"),
    ("spark-check --pipeline {P}:make", "module", "{P}"),
    ("campaign --pipeline {P}:make --out c", "module", "{P}"),
]


def _named(expected: str, path: str) -> tuple[str, ...]:
    if expected != "{P}":
        return (expected,)
    return (
        user_files.shown(path)[:30],
        path[:30],
        "loop",
        "gone",
        "locked",
        "afolder",
        "/dev/null",
    )


@WORLD
@given(
    st.sampled_from(PATH_KINDS),
    st.sampled_from(PATH_SLOTS),
    st.booleans(),
)
def test_paths_the_file_system_refuses_are_one_line_and_nothing_written(
    kind: str, slot: tuple[str, str, str], as_json: bool
) -> None:
    template, role, names = slot
    event(f"path: {kind}")
    with fresh_world() as folder:
        counterexample(folder)
        path = make_path(folder, kind, role)
        argv = [w.replace("{P}", path) for w in shlex.split(template)]
        argv += ["--json"] if as_json else []
        before = tree(folder)
        code, out, err = run(argv, unprivileged=kind == "unreadable")
        assert_refused(argv, code, out, err, _named(names, path))
        assert tree(folder) == before, (argv, "something was written")


# -- numbers ----------------------------------------------------------------------------------
# Every decimal digit that is not ASCII (Arabic-Indic, Devanagari, full-width, ...): int() takes them.
NON_ASCII_DIGITS = sorted(
    c for c in map(chr, range(0x80, 0x20000)) if unicodedata.category(c) == "Nd"
)
UNICODE_DIGITS = st.text(alphabet=st.sampled_from(NON_ASCII_DIGITS), min_size=1, max_size=3)
HUGE_INTS = st.integers(user_files.MAX_INT_DIGITS + 1, 3 * user_files.MAX_INT_DIGITS).map(
    lambda n: "9" * n
)
NOT_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999"])
# Integer options (``{N}``): any of them must refuse what is not ASCII digits.
INT_SLOTS = [
    ("explore lost-update --examples {N}", "--examples"),
    ("explore lost-update --examples 3 --seed {N}", "--seed"),
    ("explore lost-update --examples 3 --strategy pct --pct-depth {N}", "--pct-depth"),
    ("prove lost-update --max-schedules {N}", "--max-schedules"),
    ("prove lost-update --max-schedules 3 -j {N}", "-j"),
    ("prove lost-update --max-schedules 3 --max-deviations {N}", "--max-deviations"),
    ("check lost-update --examples {N}", "--examples"),
    ("check lost-update --examples 3 -j {N}", "-j"),
    ("repro lost-update --seed {N}", "--seed"),
    ("repro lost-update --choices {N}:0=1", "blob"),
    ("repro lost-update --choices 4:{N}=1", "blob"),
    ("repro lost-update --set clients={N}", "clients"),
    ("campaign --scenario lost-update --seeds {N}", "--seeds"),
    ("campaign --scenario lost-update --seed-range {N}:5", "--seed-range"),
    ("campaign --scenario lost-update --seed-range 0:{N}", "--seed-range"),
    ("compare coordinator-async-append --seeds {N}", "--seeds"),
    ("bench --scenario lost-update --seeds {N}", "--seeds"),
]
FLOAT_SLOTS = [
    ("explore lost-update --examples 3 --budget {N}", "--budget"),
    ("prove lost-update --max-schedules 3 --budget {N}", "--budget"),
    ("repro lost-update --set rpc_ms={N}", "rpc_ms"),
    ("bench --proofs --scenario lost-update --proof-budget {N}", "--proof-budget"),
]


@WORLD
@given(
    st.one_of(
        st.tuples(st.just("unicode digits"), st.sampled_from(INT_SLOTS), UNICODE_DIGITS),
        st.tuples(st.just("huge integer"), st.sampled_from(INT_SLOTS), HUGE_INTS),
        st.tuples(st.just("not finite"), st.sampled_from(FLOAT_SLOTS), NOT_FINITE),
        st.tuples(st.just("unicode digits"), st.sampled_from(FLOAT_SLOTS), UNICODE_DIGITS),
    ),
    st.booleans(),
)
def test_numbers_a_user_types_are_ascii_finite_and_bounded(
    case: tuple[str, tuple[str, str], str], as_json: bool
) -> None:
    kind, (template, names), number = case
    event(f"number: {kind}")
    with fresh_world() as folder:
        argv = [w.replace("{N}", number) for w in shlex.split(template)]
        argv += ["--json"] if as_json else []
        before = tree(folder)
        code, out, err = run(argv)
        assert_refused(argv, code, out, err, (names, "integer", "number", "blob"))
        assert tree(folder) == before, (argv, "something was written")


# -- files that carry numbers and nesting -------------------------------------------------------
def _edit_counterexample(folder: Path, how: str, value: str) -> Path:
    """The real counterexample with one field's JSON text replaced by ``value`` (unparsed)."""
    path = counterexample(folder)
    raw = json.loads(path.read_text())
    field = {"int": "format_version", "blob": "blob", "deep": "config", "float": "config"}[how]
    raw[field] = "@@"
    text = json.dumps(raw).replace('"@@"', value)
    path.write_text(text)
    return path


def _history(folder: Path, value: str) -> Path:
    op = '{"index":0,"time_ms":0,"actor":"a","kind":"k","fields":{"x":%s}}'
    path = folder / "h.jsonl"
    path.write_text(op % value + "\n")
    return path


def _campaign_file(folder: Path, name: str, value: str) -> Path:
    (folder / "c" / "results").mkdir(parents=True)
    (folder / "c" / "campaign.json").write_text('{"format": "raceproof-campaign"}')
    (folder / "c" / name).write_text(value)
    return folder / "c"


FILE_VALUES = {
    "huge integer": HUGE_INTS,
    "not finite": st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400"]),
    "deep nesting": st.integers(user_files.MAX_JSON_DEPTH + 1, 100_000).map(
        lambda n: "[" * n + "]" * n
    ),
}
# Where a file carries the value: (kind of value -> how to plant it, the command).
FILE_SLOTS: list[tuple[str, Callable[[Path, str], Path], str]] = [
    ("replay", lambda f, v: _edit_counterexample(f, "int", v), "replay {F}"),
    ("report", lambda f, v: _edit_counterexample(f, "deep", v), "report {F}"),
    ("replay config", lambda f, v: _edit_counterexample(f, "float", v), "replay {F}"),
    ("history", _history, "report {F} --format md"),
    ("campaign.json", lambda f, v: _campaign_file(f, "campaign.json", v), "report {F}"),
    ("determinism.json", lambda f, v: _campaign_file(f, "determinism.json", v), "report {F}"),
]


@WORLD
@given(
    st.sampled_from(sorted(FILE_VALUES)).flatmap(
        lambda kind: st.tuples(st.just(kind), FILE_VALUES[kind])
    ),
    st.sampled_from(FILE_SLOTS),
)
def test_numbers_and_nesting_a_file_carries_are_refused(
    value: tuple[str, str], slot: tuple[str, Callable[[Path, str], Path], str]
) -> None:
    kind, text = value
    where, plant, template = slot
    event(f"file: {kind}")
    with fresh_world() as folder:
        path = plant(folder, text)
        argv = [w.replace("{F}", str(path.relative_to(folder))) for w in shlex.split(template)]
        before = tree(folder)
        code, out, err = run(argv)
        assert_refused(argv, code, out, err, (path.name, "campaign.json", "determinism.json"))
        assert tree(folder) == before, (argv, where, "something was written")


@WORLD
@given(
    st.one_of(
        FILE_VALUES["deep nesting"].map(lambda v: ("deep nesting", v)),
        HUGE_INTS.map(lambda v: ("huge integer", f'[[["k", {v}]]]')),
        st.sampled_from(["NaN", "Infinity", "1e400"]).map(
            lambda v: ("not finite", f'[[["k", {v}]]]')
        ),
    ),
    st.sampled_from(["spark-check --script {S}", "repro lost-update --set rpc_ms={S}"]),
)
def test_json_on_the_command_line_is_read_like_a_file(case: tuple[str, str], template: str) -> None:
    kind, text = case
    event(f"command-line JSON: {kind}")
    with fresh_world() as folder:
        argv = [w.replace("{S}", text) for w in shlex.split(template)]
        before = tree(folder)
        code, out, err = run(argv)
        assert_refused(argv, code, out, err, ("--script", "rpc_ms", "--set"))
        assert tree(folder) == before


# -- each kind the issue saw, one test each -----------------------------------------------------
LISTED = {
    "--out a name too long": ("explore lost-update --out " + LONG_NAME, "--out"),
    "--history-out a name too long": (
        "repro lost-update --history-out " + LONG_NAME,
        "--history-out",
    ),
    "--junit a name too long": ("check lost-update --junit " + LONG_NAME, "--junit"),
    "report a name too long": ("report " + LONG_NAME, "report"),
    "--scenarios a name too long": ("--scenarios " + LONG_NAME + ".py list", "scenarios"),
    "campaign --out under /dev/null": (
        "campaign --pipeline windowed-count --out /dev/null/c",
        "/dev/null",
    ),
    "campaign --out on a read-only mount": (
        "campaign --pipeline windowed-count --out /proc/c",
        "--out",
    ),
    "--set an integer of 5000 digits": ("repro lost-update --set clients=" + "9" * 5000, "5000"),
    "-j in Arabic-Indic digits": ("prove lost-update -j ٢", "-j"),
    "--max-schedules in full-width digits": ("prove lost-update --max-schedules ５", "schedules"),
    "--examples in full-width digits": ("explore lost-update --examples ５", "--examples"),
    "repro --seed in Arabic-Indic digits": ("repro lost-update --seed ٣", "--seed"),
    "a blob in full-width digits": ("repro lost-update --choices ４:0=1", "blob"),
    "--script of 100000 brackets": ("spark-check --script " + "[" * 100_000, "--script"),
    "--budget nan": ("explore lost-update --budget nan", "--budget"),
}


@pytest.mark.parametrize("case", LISTED)
def test_each_bad_input_the_issue_listed(case: str) -> None:
    command, says = LISTED[case]
    with fresh_world() as folder:
        argv = shlex.split(command)
        before = tree(folder)
        code, out, err = run(argv)
        assert_refused(argv, code, out, err, (says,))
        assert tree(folder) == before


def test_ascii_numbers_are_still_numbers() -> None:
    """The other direction: the same options with ASCII digits run."""
    with fresh_world():
        assert run(["repro", "lost-update", "--variant", "fix-cas", "--seed", "3"])[0] == 0
        assert run(["repro", "lost-update", "--variant", "buggy", "--choices", "4:0=1"])[0] == 1
        assert run(["prove", "lost-update", "--variant", "fix-cas", "--max-schedules", "5"])[0] == 3
    assert user_files.ascii_int("-12", "x") == -12 and user_files.ascii_float("1.5e3", "x") == 1500
    for bad in ("٣", "５", " 5", "1_000", "", "0x10", "9" * 4301):
        with pytest.raises(user_files.BadInput):
            user_files.ascii_int(bad, "x")


def test_a_campaign_folder_whose_results_is_a_link_loop_is_one_line() -> None:
    with fresh_world() as folder:
        (folder / "c").mkdir()
        (folder / "c" / "campaign.json").write_text('{"format": "raceproof-campaign"}')
        (folder / "c" / "results").symlink_to("results")
        for argv in (["report", "c"], ["campaign", "--scenario", "lost-update", "--out", "c"]):
            code, out, err = run(argv)
            assert_refused(argv, code, out, err, ("results", "c/"))


def test_a_long_path_in_a_pyproject_entry_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.raceproof]\nscenarios = ["{LONG_NAME}.py"]\n')
    done = subprocess.run(
        [str(BIN / "raceproof"), "list"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "cannot load scenarios" in lines[0] and "Traceback" not in done.stderr


def _pytest_in(folder: Path) -> subprocess.CompletedProcess[str]:
    argv = [str(BIN / "pytest"), "-q", "-p", "no:cacheprovider"]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("where", ["a file", "/dev/null", "under a file"])
def test_a_pytest_database_that_is_no_folder_stops_the_run(tmp_path: Path, where: str) -> None:
    """``raceproof_counterexamples`` naming a file is no empty database: a usage error at once."""
    (tmp_path / "afile").write_text("x\n")
    name = {"a file": "afile", "/dev/null": "/dev/null", "under a file": "afile/db"}[where]
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nraceproof_counterexamples = {name}\n")
    (tmp_path / "test_x.py").write_text("def test_ok():\n    pass\n")
    done = _pytest_in(tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 4, said[-2000:]  # pytest's own usage error
    assert "raceproof_counterexamples" in said and "Traceback" not in said, said[-2000:]
    (tmp_path / "pytest.ini").write_text("[pytest]\nraceproof_counterexamples = db\n")
    done = _pytest_in(tmp_path)  # the other direction: a folder not there yet is fine
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]


# -- contradictions, and the exit-code page's documented cases ----------------------------------
EXIT_CODES_PAGE = ROOT / "docs" / "reference" / "exit-codes.md"
_ROW = re.compile(r"^\| `raceproof ([^`]+)` \| (\d+) \| (.+) \|$")


def documented_cases() -> list[tuple[str, int, list[str]]]:
    """The rows of the page's table of documented cases: command, exit code, words said."""
    cases = []
    for line in EXIT_CODES_PAGE.read_text().splitlines():
        match = _ROW.match(line.strip())
        if match:
            says = re.findall(r"`([^`]+)`", match.group(3))
            cases.append((match.group(1), int(match.group(2)), says))
    return cases


def test_the_page_documents_cases() -> None:
    assert len(documented_cases()) >= 15


@pytest.mark.parametrize("case", documented_cases(), ids=lambda c: c[0])
def test_each_documented_case_behaves_as_the_page_says(
    case: tuple[str, int, list[str]], no_jvm: None
) -> None:
    command, expected, says = case
    with fresh_world() as folder:
        counterexample(folder)
        (folder / "afile").write_text("a file\n")
        (folder / "exits.py").write_text("import sys\ndef pipeline():\n    sys.exit(5)\n")
        for name, override in (
            ("five", "    def read_output(self, spark):\n        return 5\n"),
            ("bogus", "    output_mode = 'bogus'\n"),
        ):
            (folder / f"{name}.py").write_text(WINDOWED.format(override=override))
        argv = shlex.split(command)
        before = tree(folder)
        code, out, err = run(argv)
        lines = err.strip().splitlines()
        assert code == expected, (argv, code, err[-2000:])
        assert "Traceback" not in err, err[-2000:]
        said = lines[-1] if expected == 2 else out + err
        assert all(word in said for word in says), (says, said[-2000:])
        if expected == 2:
            assert len(lines) == 1 and tree(folder) == before, (lines, "something was written")


# -- the user's pipeline: declarations and hooks, judged before Spark starts ---------------------
# One override of the built-in windowed count at a time: a declaration that is wrong (exit 2,
# the field named) or a hook that returns the wrong type or raises (exit 4, the hook named).
DECLARATIONS = {
    "schema": ["'not ddl'", "''", "5", "'key STRNG, ts TIMESTAMP'", "'key STRING,'", "None"],
    "output_mode": ["'bogus'", "5", "None", "'Append '"],
    "max_lateness_s": ["-5", "'10'", "1.5", "True", "float('nan')", "10**9"],
}
HOOK_RETURNS = {
    "records": ("key, second", ["5", "None", "[1, 2]", "'x'", "{'key': 'k'}", "[None]"]),
    "expected": ("records", ["None", "5", "[1]", "'rows'"]),
    "read_output": ("spark", ["5", "[1, 2]", "'x'", "{}"]),
    "write_stream": ("frame", ["42", "'x'", "[]", "None"]),
}
SIGNATURES = {"records": "key", "expected": "", "query": "a, b", "read_output": ""}
HOOK_CASES = st.one_of(
    st.sampled_from(sorted(DECLARATIONS)).flatmap(
        lambda name: st.sampled_from(DECLARATIONS[name]).map(
            lambda value: ("declaration", name, f"    {name} = {value}\n")
        )
    ),
    st.sampled_from(sorted(HOOK_RETURNS)).flatmap(
        lambda hook: st.sampled_from(HOOK_RETURNS[hook][1]).map(
            lambda value: (
                "hook returns",
                hook,
                f"    def {hook}(self, {HOOK_RETURNS[hook][0]}):\n        return {value}\n",
            )
        )
    ),
    st.sampled_from(["records", "expected"]).map(
        lambda hook: (
            "hook raises",
            hook,
            f"    def {hook}(self, *args):\n        raise RuntimeError('from the user')\n",
        )
    ),
    st.sampled_from(sorted(SIGNATURES)).map(
        lambda hook: (
            "signature",
            hook,
            f"    def {hook}(self{', ' if SIGNATURES[hook] else ''}{SIGNATURES[hook]}):\n"
            "        return []\n",
        )
    ),
)
WINDOWED = (
    "from raceproof.spark_integration.pipelines.windowed_count import WindowedCount\n"
    "class Job(WindowedCount):\n{override}\ndef make():\n    return Job()\n"
)
PIPELINE_COMMANDS = [
    "spark-check --pipeline job.py:make",
    "spark-check --pipeline job.py:make --experiment drain --json",
    "campaign --pipeline job.py:make --seeds 1 --out c",
]


@pytest.fixture
def no_jvm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to start Spark fails the test: these checks must need no session."""
    from raceproof.spark_integration import session

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a Spark session was started for a check that needs none")

    monkeypatch.setattr(session, "spark_session", refuse)


@WORLD
@given(HOOK_CASES, st.sampled_from(PIPELINE_COMMANDS))
def test_a_pipelines_mistakes_are_said_before_spark_starts(
    no_jvm: None, case: tuple[str, str, str], command: str
) -> None:
    kind, name, override = case
    event(f"pipeline: {kind}")
    with fresh_world() as folder:
        module = f"job_{abs(hash((override, command))) % 10**12}"  # a fresh module each time
        (folder / f"{module}.py").write_text(WINDOWED.format(override=override))
        argv = shlex.split(command.replace("job.py", f"{module}.py"))
        before = tree(folder)
        code, _out, err = run(argv)
        lines = err.strip().splitlines()
        expected = 2 if kind in ("declaration", "signature") else 4
        assert code == expected, (argv, override, code, err[-2000:])
        assert lines and name in lines[-1] and "Traceback" not in err, (override, err[-2000:])
        if expected == 2:
            assert len(lines) == 1, err
        assert tree(folder) == before, (argv, "something was written")


# -- the DDL parser that needs no JVM ----------------------------------------------------------------
PRIMITIVES = st.sampled_from(
    ["STRING", "int", "BIGINT", "double", "TIMESTAMP", "boolean", "DATE", "binary", "Long"]
)
DDL_TYPES = st.recursive(
    st.one_of(
        PRIMITIVES,
        st.tuples(st.integers(1, 38), st.integers(0, 9)).map(
            lambda ps: f"DECIMAL({ps[0]},{ps[1]})"
        ),
        st.integers(1, 99).map(lambda n: f"VARCHAR({n})"),
    ),
    lambda inner: st.one_of(
        inner.map(lambda t: f"ARRAY<{t}>"),
        st.tuples(PRIMITIVES, inner).map(lambda kv: f"MAP<{kv[0]}, {kv[1]}>"),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda ts: "STRUCT<" + ", ".join(f"f{i}: {t}" for i, t in enumerate(ts)) + ">"
        ),
    ),
    max_leaves=6,
)


@WORLD
@given(st.lists(DDL_TYPES, min_size=1, max_size=4), st.booleans())
def test_generated_ddl_parses_to_its_columns(types: list[str], not_null: bool) -> None:
    from raceproof.spark_integration.preflight import ddl_columns

    names = [f"c{i}" for i in range(len(types))]
    suffix = " NOT NULL" if not_null else ""
    schema = ", ".join(f"{n} {t}{suffix}" for n, t in zip(names, types, strict=True))
    assert ddl_columns(schema) == names
    broken = [schema + ",", "x " + schema, schema + " y", f"{schema}, {names[0]} INT"]
    if ">" in schema:
        broken.append(schema.replace(">", "", 1))  # an unclosed ARRAY/MAP/STRUCT
    for text in broken:
        with pytest.raises(ValueError):
            ddl_columns(text)


def test_the_built_in_pipelines_pass_the_checks_before_spark() -> None:
    """The other direction: every built-in pipeline meets what the checks ask."""
    from raceproof.spark_integration.pipeline import BUILT_IN, resolve

    for name in BUILT_IN:
        assert resolve(name).name  # load_pipeline runs preflight.check


def test_campaign_pipeline_gets_the_scenario_campaigns_checks(no_jvm: None) -> None:
    """A foreign folder is exit 2, a factory that raises exit 4; neither starts Spark."""
    with fresh_world() as folder:
        (folder / "theirs").mkdir()
        (folder / "theirs" / "notes.txt").write_text("someone else's\n")
        (folder / "raises.py").write_text("def make():\n    raise KeyError('no config')\n")
        argv = ["campaign", "--pipeline", "windowed-count", "--out", "theirs"]
        before = tree(folder)
        code, out, err = run(argv)
        assert_refused(argv, code, out, err, ("not a campaign folder",))
        code, out, err = run(["campaign", "--pipeline", "raises.py:make", "--out", "c"])
        assert code == 4, err
        assert "make()" in err and "KeyError" in err and "Traceback" not in err, err
        assert tree(folder) == before, "something was written"
