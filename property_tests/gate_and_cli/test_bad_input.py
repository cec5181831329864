"""Every malformed input of issue 11's examples: exit 2, one line, no traceback, nothing written.

Also the validation of a user's own configuration dataclass (declared limits,
a ``validate`` hook, types from annotations), the exit code 70 of an internal
error, and a result that cannot be written still being printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.cli.validation import BadInput, apply_overrides, limits
from raceproof.runs import runner


def _counterexample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    out = tmp_path / "found"
    assert main(["explore", "lost-update", "--variant", "buggy", "--out", str(out), "--json"]) == 1
    path = Path(json.loads(capsys.readouterr().out)["counterexample"])
    return {"path": path, "raw": json.loads(path.read_text())}


EXAMPLES = [
    ["repro", "lost-update", "--set", "clients=0"],
    ["repro", "lost-update", "--set", "rpc_ms=[]"],
    ["repro", "brooklin-double-stop", "--set", "followers=0"],
    ["repro", "lost-update", "--set", "clients=1.5"],
    ["repro", "lost-update", "--set", "think_ms=soon"],
    ["explore", "lost-update", "--set", "clients=1.5", "--examples", "3"],
    ["repro", "lost-update", "--set", "clients=true"],
    ["repro", "lost-update", "--set", "clients=NaN"],
    ["repro", "lost-update", "--set", "rpc_ms=[1,[2]]"],
    ["repro", "lost-update", "--set", "nosuchfield=1"],
    ["repro", "lost-update", "--set", "=1"],
    ["explore", "lost-update", "--strategy", "pct", "--pct-depth", "0"],
    ["explore", "lost-update", "--strategy", "pct", "--pct-depth", "1000000000"],
    ["bench", "--scenario", "lost-update", "--seeds", "0"],
    ["repro", "lost-update", "--choices", "99999999999:"],
    ["explore", "lost-update", "--examples", "5", "--out", "/etc/passwd"],
    ["explore", "lost-update", "--examples", "5", "--out", "/etc/passwd/sub"],
    ["prove", "lost-update", "--out", "/proc/no/such"],
    ["repro", "lost-update", "--history-out", "/etc/passwd/h.jsonl"],
    ["repro", "lost-update", "--history-out", "."],
    ["explore", "lost-update", "--budget", "nan", "--json"],
    ["explore", "lost-update", "--budget", "inf"],
    ["prove", "lost-update", "--budget", "0"],
    ["prove", "lost-update", "--max-schedules", "0"],
    ["prove", "lost-update", "--max-branch", "0"],
    ["prove", "lost-update", "--max-deviations", "-1"],
    ["repro", "lost-update", "--variant", ""],
    ["repro", "brooklin-double-stop", "--backend", "zookeeper", "--zk-hosts", "nohost:notaport"],
    ["repro", "brooklin-double-stop", "--backend", "zookeeper", "--zk-hosts", "127.0.0.1:1"],
    ["repro", "lost-update", "--zk-hosts", "127.0.0.1:2181"],
    ["compare", "coordinator-async-append", "--rate", "0"],
    ["explore", "lost-update", "--examples", "0"],
]


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(a) for a in EXAMPLES])
def test_each_example_is_bad_input(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], err
    assert "Traceback" not in err
    if "--json" in argv:
        assert json.loads(out)["verdict"] is None
    assert list(tmp_path.iterdir()) == []  # nothing written, not even an empty folder


def _replay(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["replay", str(path)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "edit",
    [
        lambda raw: raw["choices"][0].__setitem__(2, True),
        lambda raw: raw.__setitem__("format_version", True),
        lambda raw: raw["config"].__setitem__("clients", 0),
        lambda raw: raw["config"].__setitem__("clients", "two"),
        lambda raw: raw["config"].__setitem__("rpc_ms", []),
        lambda raw: raw.__setitem__("config", []),
        lambda raw: raw.__setitem__("blob", "99999999999:"),
        lambda raw: raw.__setitem__("choices", [["x", 1, 0]]),
        lambda raw: raw["timeline"].__setitem__(0, {"index": "0"}),
    ],
)
def test_edited_counterexamples_are_bad_input(
    edit: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx = _counterexample(tmp_path, capsys)
    edit(cx["raw"])  # type: ignore[operator]
    cx["path"].write_text(json.dumps(cx["raw"]))
    code, err = _replay(cx["path"], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_fifo_a_deep_file_and_a_folder_are_refused_without_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    for path in (fifo, deep, tmp_path):
        code, err = _replay(path, capsys)
        assert code == 2 and "Traceback" not in err, err


def test_an_internal_error_says_so_and_exits_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(runner, "outcome_fields", broken)
    assert main(["repro", "lost-update", "--json"]) == runner.EXIT_INTERNAL == 70
    out, err = capsys.readouterr()
    assert json.loads(out)["internal_error"] is True
    last = err.strip().splitlines()[-1]
    assert f"a bug in raceproof {runner.tool_version()}" in last
    assert "command: raceproof repro lost-update --json" in last
    assert "ZeroDivisionError: planted" in last


def test_a_counterexample_that_cannot_be_written_is_still_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "save_counterexample", full_disk)
    code = main(["explore", "lost-update", "--variant", "buggy", "--out", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 1 and result["verdict"] == "violated" and result["counterexample"] is None
    assert result["repro"].startswith("raceproof repro lost-update")
    assert "No space left on device" in result["write_error"] and "warning" in err


# -- a user's own configuration ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class UserConfig:
    workers: int = dataclasses.field(default=2, metadata=limits(min=1, max=8))
    delays_ms: tuple[int, ...] = (0, 5)
    ratio: float = 0.5
    name: str = "x"
    fast: bool = False
    mode: str | None = None

    def validate(self) -> None:
        if self.name == "forbidden":
            raise ValueError("name 'forbidden' is reserved")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"workers": 0}, "UserConfig.workers must be between 1 and 8, got 0"),
        ({"workers": 9}, "UserConfig.workers must be between 1 and 8, got 9"),
        ({"workers": True}, "UserConfig.workers must be an integer, got true"),
        ({"delays_ms": [1, -1]}, "UserConfig.delays_ms[1] must be between 0 and"),
        ({"delays_ms": []}, "UserConfig.delays_ms must list 1 to 1000 values, got 0"),
        ({"ratio": float("nan")}, "UserConfig.ratio must be a finite number"),
        ({"fast": 1}, "UserConfig.fast must be true or false, got 1"),
        ({"name": ""}, "UserConfig.name must be a non-empty string"),
        (
            {"name": "forbidden"},
            "UserConfig refuses name=\"forbidden\": name 'forbidden' is reserved",
        ),
        ({"mode": 3}, "UserConfig.mode must be a non-empty string, got 3"),
        ({"nope": 1}, "UserConfig has no field 'nope'; fields: workers, delays_ms"),
    ],
)
def test_a_users_configuration_is_checked_from_its_declarations(
    overrides: dict,
    message: str,  # type: ignore[type-arg]
) -> None:
    with pytest.raises(BadInput) as caught:
        apply_overrides(UserConfig(), overrides)
    assert message in str(caught.value)


def test_good_overrides_come_back_typed() -> None:
    config = apply_overrides(
        UserConfig(), {"workers": 8, "delays_ms": [3], "mode": None, "ratio": 1}
    )
    assert config == UserConfig(workers=8, delays_ms=(3,), ratio=1)


def test_every_built_in_configuration_passes_its_own_validation() -> None:
    from raceproof.scenarios.catalogue import all_scenarios, config_to_json

    for scenario in all_scenarios():
        for config in (scenario.config, scenario.prove_config):
            again = apply_overrides(config, config_to_json(config), source=scenario.name)
            assert again == config, scenario.name
