"""Issue 23's bad inputs on the newer surfaces, one test each: one line, exit 2, nothing written.

``check``, ``report``, ``campaign`` (its options and its folder, which a user
can damage), ``spark-check``'s pipeline factory and a user's project (its
pyproject table, its scenario modules). Each case names what the issue saw
(a gate started, a traceback, an empty folder left behind) and asserts the
contract instead: exit 2, one line on stderr naming the problem, no
traceback, and the working folder exactly as it was (no output folder, no
``.hypothesis/``, no report files). None of these starts Spark.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from raceproof.cli.main import main
from raceproof.sim import repro as repro_files
from raceproof.sim import user_files
from raceproof.spark_integration import campaign
from raceproof.spark_integration.campaign_cells import COLUMN_NAMES, COLUMNS, Cell, run_cell

_ARROW = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
}

BIN = Path(sys.executable).parent
HUGE = "9" * 30


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _refused(
    folder: Path, argv: list[str], capsys: pytest.CaptureFixture[str], says: str = ""
) -> str:
    """Run ``argv`` in ``folder``; assert the contract; return the one line said."""
    before = _tree(folder)
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
    assert says in lines[0], lines[0]
    assert _tree(folder) == before, "something was written"
    return lines[0]


def _refused_in_a_process(folder: Path, *argv: str, says: str = "") -> str:
    """The same contract for a fresh ``raceproof`` process (user projects load once per process)."""
    before = _tree(folder)
    done = subprocess.run(
        [str(BIN / "raceproof"), *argv], cwd=folder, capture_output=True, text=True, timeout=300
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert says in lines[0], lines[0]
    assert _tree(folder) == [*before] or set(_tree(folder)) - set(before) <= {"__pycache__"}
    return lines[0]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder\n")
    (tmp_path / "afolder").mkdir()
    return tmp_path


# -- check ------------------------------------------------------------------------------
CHECK_CASES = {
    "examples beyond explore's cap": (["--examples", HUGE], "--examples"),
    "examples 0": (["--examples", "0"], "--examples"),
    "100000 processes": (["-j", "100000"], "-j/--jobs"),
    "junit in an unwritable folder": (["--junit", "/proc/raceproof.xml"], "--junit"),
    "junit inside a file": (["--junit", "afile/x.xml"], "is a file"),
    "junit at a folder": (["--junit", "afolder"], "is a folder"),
    "junit empty": (["--junit", ""], "--junit"),
    "out an existing file": (["--out", "afile"], "--out"),
    "out in an unwritable folder": (["--out", "/proc/raceproof-out"], "--out"),
    "out empty": (["--out", " "], "--out"),
    "unknown profile": (["--profile", "fast"], "profile"),
}


@pytest.mark.parametrize("case", CHECK_CASES)
def test_check_refuses_before_starting_the_gate(
    case: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, says = CHECK_CASES[case]
    _refused(here, ["check", "lost-update", *options], capsys, says)
    assert not (here / ".hypothesis").exists()


def test_check_accepts_a_good_junit_path_and_writes_it(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other direction: the same options, valid, run the gate and write the report."""
    code = main(["check", "lost-update", "--examples", "20", "--junit", "out/r.xml", "--json"])
    assert code == 0, capsys.readouterr()
    assert "<testsuite" in (here / "out" / "r.xml").read_text()


# -- report -----------------------------------------------------------------------------
def _counterexample(folder: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["explore", "lost-update", "--examples", "50", "--out", str(folder), "--json"]) == 1
    capsys.readouterr()
    return next(folder.glob("*.json"))


@pytest.mark.parametrize("kind", ["counterexample", "history"])
def test_report_of_a_deeply_nested_file_is_refused_before_parsing(
    kind: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "counterexample":
        (here / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
        name = "deep.json"
    else:
        op = '{"index":0,"time_ms":0,"actor":"a","kind":"k","fields":{"x":%s}}'
        (here / "deep.jsonl").write_text(op % ("[" * 50_000 + "]" * 50_000) + "\n")
        name = "deep.jsonl"
    _refused(here, ["report", name], capsys, "nested")
    _refused(here, ["report", name, "--out", "reports"], capsys, "nested")


def test_every_json_reader_checks_the_size_first(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cx = _counterexample(here / "cx", capsys)
    monkeypatch.setattr(user_files, "MAX_FILE_BYTES", 100)  # the one reader's limit
    _refused(here, ["report", str(cx)], capsys, "bytes")
    _refused(here, ["replay", str(cx)], capsys, "bytes")


def test_json_depth_skips_strings_and_counts_nesting() -> None:
    assert repro_files.json_depth('{"a": [1, {"b": "[[[[{{{"}]}') == 3
    assert repro_files.json_depth("[]") == 1 and repro_files.json_depth('"[["') == 0


def test_report_of_a_counterexample_naming_an_unknown_scenario_writes_nothing(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx = _counterexample(here / "cx", capsys)
    raw = json.loads(cx.read_text())
    raw["scenario"] = "no-such-scenario"
    cx.write_text(json.dumps(raw))
    _refused(here, ["report", str(cx)], capsys, "no-such-scenario")
    _refused(here, ["report", str(cx), "--out", "reports"], capsys, "no-such-scenario")
    raw["scenario"] = "lost-update"  # the other direction: the same file, a known scenario
    cx.write_text(json.dumps(raw))
    assert main(["report", str(cx), "--format", "md", "--json"]) == 0
    assert cx.with_suffix(".md").exists()


# -- a user's project ----------------------------------------------------------------
SCENARIO_CONFIG_5 = textwrap.dedent(
    """
    import dataclasses
    from raceproof.scenarios.catalogue import get, register
    register(dataclasses.replace(get("lost-update"), name="five", config=5))
    """
)


def test_a_scenario_registering_config_5_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "five.py").write_text(SCENARIO_CONFIG_5)
    line = _refused_in_a_process(tmp_path, "--scenarios", "five.py", "check", "five")
    assert "config must be an instance of a configuration dataclass" in line


def test_a_pyproject_whose_tool_raceproof_is_not_a_table_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool]\nraceproof = "x"\n')
    _refused_in_a_process(tmp_path, "list", says="tool.raceproof must be a table")
    (tmp_path / "pyproject.toml").write_text("tool = 3\n")  # not even a [tool] table
    done = subprocess.run(
        [str(BIN / "raceproof"), "list", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "lost-update" in done.stdout, done.stderr


def test_sys_exit_in_a_scenario_module_or_a_pipeline_factory_is_a_message(tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(5)\n")
    _refused_in_a_process(tmp_path, "--scenarios", "exits.py", "list", says="sys.exit(5)")
    # A pipeline factory is the user's code running: its sys.exit is a pipeline error (exit 4,
    # verdict ``error``), shown with the user's own frame, never a silent exit 5.
    (tmp_path / "pipe.py").write_text("import sys\ndef pipeline():\n    sys.exit(5)\n")
    done = subprocess.run(
        [str(BIN / "raceproof"), "spark-check", "--pipeline", "pipe.py:pipeline"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 4, (done.returncode, done.stderr)
    last = done.stderr.strip().splitlines()[-1]
    assert (
        "pipeline error: the factory pipeline() of pipe.py raised SystemExit: sys.exit(5)" in last
    )
    assert "sys.exit(5)" in done.stderr and "Traceback" not in done.stderr


# -- campaign: options and folders -------------------------------------------------------
CAMPAIGN_OPTIONS = {
    "out an existing file": (["--out", "afile"], "--out"),
    "out in an unwritable folder": (["--out", "/proc/raceproof-campaign"], "--out"),
    "out empty": (["--out", ""], "--out"),
    "seeds 0": (["--seeds", "0"], "--seeds"),
    "examples huge": (["--examples", HUGE], "--examples"),
    "cross-check negative": (["--cross-check", "-1"], "--cross-check"),
    "master empty": (["--master", ""], "--master"),
    "a foreign folder": (["--out", "."], "not a campaign folder"),
}


@pytest.mark.parametrize("case", CAMPAIGN_OPTIONS)
def test_campaign_options_are_checked_before_spark_starts(
    case: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, says = CAMPAIGN_OPTIONS[case]
    _refused(here, ["campaign", "--scenario", "lost-update", *options], capsys, says)


def test_a_master_that_fails_leaves_no_folder(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _refused(
        here,
        [
            "campaign",
            "--scenario",
            "lost-update",
            "--seeds",
            "1",
            "--master",
            "bogus://x",
            "--out",
            "out/c",
        ],
        capsys,
        "bogus://x",
    )
    assert not (here / "out").exists()


def _campaign_folder(folder: Path) -> Path:
    folder.mkdir()
    options = campaign.Options(scenarios=("lost-update",), strategies=("random",), seeds=(0,))
    campaign.write_manifest(folder, options, campaign.Summary())
    (folder / "results").mkdir()
    row = run_cell(
        Cell(
            kind="search",
            scenario="lost-update",
            variant="buggy",
            strategy="random",
            seed=0,
            examples=20,
        )
    )
    row.pop("_counterexample")
    schema = pa.schema([(name, _ARROW[kind]) for name, kind, _doc in COLUMNS])
    table = pa.Table.from_pylist([{k: row.get(k) for k in COLUMN_NAMES}], schema=schema)
    pq.write_table(table, folder / "results" / "part-00000.parquet")
    return folder


def _truncate(part: Path) -> None:
    part.write_bytes(part.read_bytes()[:-20])


def _results_a_file(folder: Path) -> None:
    shutil.rmtree(folder / "results")
    (folder / "results").write_text("x")


DAMAGE = {
    "a truncated part": (lambda f: _truncate(f / "results" / "part-00000.parquet"), "part-00000"),
    "a junk part": (
        lambda f: (f / "results" / "part-00001.parquet").write_bytes(b"PAR1 junk"),
        "part-00001",
    ),
    "a part of another table": (
        lambda f: pq.write_table(pa.table({"x": [1]}), f / "results" / "part-00002.parquet"),
        "not a campaign results part",
    ),
    "results replaced by a file": (_results_a_file, "results is a file"),
    "a manifest without its options": (
        lambda f: (f / "campaign.json").write_text('{"format": "raceproof-campaign"}'),
        "campaign.json",
    ),
    "a junk manifest": (lambda f: (f / "campaign.json").write_text("{"), "campaign.json"),
    "a deep manifest": (
        lambda f: (f / "campaign.json").write_text("[" * 5000 + "]" * 5000),
        "campaign.json",
    ),
    "a junk determinism file": (
        lambda f: (f / "determinism.json").write_text('{"a": 1}'),
        "determinism.json",
    ),
}


@pytest.mark.parametrize("case", DAMAGE)
def test_a_damaged_campaign_folder_is_one_line_naming_the_file(
    case: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, says = DAMAGE[case]
    folder = _campaign_folder(here / "c")
    damage(folder)
    _refused(here, ["campaign", "--scenario", "lost-update", "--out", "c"], capsys, says)
    _refused(here, ["report", "c"], capsys, says)


def test_an_undamaged_campaign_folder_reports(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other direction: the same folder, undamaged, is read and reported."""
    _campaign_folder(here / "c")
    assert main(["report", "c", "--format", "md", "--json"]) == 0, capsys.readouterr().err
    assert (here / "c" / "report.md").exists()


def test_the_plugin_reads_its_database_through_the_same_checks(tmp_path: Path) -> None:
    """A deep or truncated file in the counterexample database is one failing item, no traceback."""
    database = tmp_path / "counterexamples"
    database.mkdir()
    (database / "deep.json").write_text("[" * 50_000 + "]" * 50_000)
    (database / "trunc.json").write_text('{"format": "raceproof-counterexample"')
    (tmp_path / "test_x.py").write_text("def test_ok():\n    pass\n")
    done = subprocess.run(
        [str(BIN / "pytest"), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "2 failed, 1 passed" in done.stdout, done.stdout[-2000:]
    assert "JSON nested too deeply" in done.stdout and "not valid JSON" in done.stdout
    assert "Traceback" not in done.stdout and "RecursionError" not in done.stdout
