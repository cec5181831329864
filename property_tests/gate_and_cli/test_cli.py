"""The command line's contract: verdicts, exit codes, counterexample files, bad input."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from raceproof.cli.main import main
from raceproof.scenarios.catalogue import all_scenarios

RACEPROOF = shutil.which("raceproof") or str(Path(sys.executable).parent / "raceproof")


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


REQUIRED_FIELDS = {
    "scenario",
    "variant",
    "strategy",
    "verdict",
    "checker",
    "examples",
    "schedules",
    "seconds",
    "virtual_ms",
    "steps",
    "trace_hash",
    "counterexample",
    "repro",
}


@pytest.mark.parametrize("strategy", ["random", "hypothesis", "pct"])
def test_explore_buggy_finds_saves_and_replays(
    strategy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result = run_json(
        capsys,
        "explore",
        "lost-update",
        "--variant",
        "buggy",
        "--strategy",
        strategy,
        "--seed",
        "1",
        "--out",
        str(tmp_path),
    )
    assert code == 1
    assert set(result) >= REQUIRED_FIELDS
    assert result["verdict"] == "violated"
    assert result["checker"] == "final-equals-acks"
    assert result["deviations"] == 1
    saved = Path(result["counterexample"])
    assert saved.parent == tmp_path and saved.exists()
    code, replayed = run_json(capsys, "replay", str(saved))
    assert code == 1
    assert replayed["trace_hash"] == result["trace_hash"]
    assert replayed["same_trace_hash"] is True
    # The printed repro line is copy-pasteable and reproduces the same trace.
    argv = result["repro"].split()[1:]
    code, again = run_json(capsys, *argv)
    assert (code, again["trace_hash"]) == (1, result["trace_hash"])


def test_prove_fix_is_ok_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(capsys, "prove", "lost-update", "--variant", "fix-cas")
    assert code == 0
    assert result["verdict"] == "ok" and result["complete"] is True
    assert result["schedules"] > 1
    assert result["bounds_pruned"] == {}
    assert result["configuration"]["config"]["clients"] == 2
    # The state cache is on by default: every run either ran to its end, a class of its own,
    # or was cut at a state explored before; none cut as sleep-blocked.
    assert result["configuration"]["state_cache"] is True and result["states_seen"] > 0
    assert (result["sleep_blocked"], result["runs_per_class"]) == (0, 1.0)
    assert result["runs"] == result["schedules"] + result["state_cache_cuts"]
    assert result["state_cache_cuts"] > 0
    # Without it, one run per class and nothing fingerprinted.
    code, plain = run_json(
        capsys, "prove", "lost-update", "--variant", "fix-cas", "--no-state-cache"
    )
    assert code == 0 and plain["complete"] is True and plain["verdict"] == "ok"
    assert plain["configuration"]["state_cache"] is False and plain["states_seen"] == 0
    assert plain["runs"] == plain["schedules"] > result["schedules"]


def test_prove_with_a_pruning_cap_exits_inconclusive(capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(
        capsys, "prove", "lost-update", "--variant", "fix-cas", "--max-deviations", "1"
    )
    assert code == 3
    assert result["verdict"] == "inconclusive" and result["complete"] is False
    assert "max_deviations" in result["bounds_pruned"]


def test_unknown_names_exit_2_and_list_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "no-such-scenario"]) == 2
    err = capsys.readouterr().err
    assert "unknown scenario 'no-such-scenario'" in err and "lost-update" in err
    assert main(["repro", "lost-update", "--variant", "nope"]) == 2
    err = capsys.readouterr().err
    assert "valid: buggy, fix-cas" in err
    assert main(["explore", "lost-update", "--strategy", "magic"]) == 2
    assert "valid: random, hypothesis, pct" in capsys.readouterr().err


def _saved_counterexample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    _, result = run_json(
        capsys, "explore", "lost-update", "--variant", "buggy", "--out", str(tmp_path)
    )
    return Path(result["counterexample"])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: text[: len(text) // 2], "not valid JSON"),
        (lambda text: "", "not valid JSON"),
        (
            lambda text: text.replace('"format_version": 1', '"format_version": 7'),
            "format version 7",
        ),
        (
            lambda text: text.replace('"fix-cas"', '"x"').replace(
                '"variant": "buggy"', '"variant": "gone"'
            ),
            "unknown variant 'gone'",
        ),
        (lambda text: text.replace('"blob": "', '"blob": "9'), "does not match the choices"),
        (lambda text: text.replace('"actor": "client1"', '"actor": "clientX"', 1), "does not hash"),
        (
            lambda text: text.replace('"scenario": "lost-update"', '"scenario": "elsewhere"'),
            "unknown scenario 'elsewhere'",
        ),
    ],
)
def test_corrupt_or_stale_counterexamples_exit_2(
    damage: object, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _saved_counterexample(tmp_path, capsys)
    broken = tmp_path / "broken.json"
    broken.write_text(damage(path.read_text()))  # type: ignore[operator]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["replay", str(broken)]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_replay_detects_a_model_that_changed_underneath(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _saved_counterexample(tmp_path, capsys)
    raw = json.loads(path.read_text())
    raw["config"]["rpc_ms"] = [1, 20, 40]  # the model now draws from 3 options
    path.write_text(json.dumps(raw))
    assert main(["replay", str(path)]) == 2
    assert "out of date, the model changed underneath it" in capsys.readouterr().err


def test_repro_blob_that_does_not_fit_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["repro", "lost-update", "--choices", "2:0=1"]) == 2
    assert "do not fit" in capsys.readouterr().err
    assert main(["repro", "lost-update", "--report-timeline"]) == 2
    assert "no report timeline" in capsys.readouterr().err
    assert main(["repro", "lost-update", "--set", "clients"]) == 2
    assert main(["repro", "lost-update", "--set", "nonsense=1"]) == 2
    assert "fields: clients" in capsys.readouterr().err


def test_same_seed_same_trace_hash_across_processes_and_hash_seeds() -> None:
    hashes = []
    for hash_seed in ("0", "1"):
        done = subprocess.run(
            [RACEPROOF, "repro", "lost-update", "--variant", "buggy", "--seed", "4", "--json"],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONHASHSEED=hash_seed),
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        hashes.append(json.loads(done.stdout)["trace_hash"])
    assert hashes[0] == hashes[1]


def test_check_determinism_reports_same(capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(
        capsys,
        "repro",
        "lost-update",
        "--variant",
        "buggy",
        "--choices",
        "4:0=1",
        "--check-determinism",
    )
    assert code == 1
    assert result["determinism"]["same"] is True
    assert result["determinism"]["trace_hashes"] == [result["trace_hash"]] * 2


def test_list_names_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(capsys, "list")
    assert code == 0
    assert [s["scenario"] for s in result["scenarios"]] == [s.name for s in all_scenarios()]
    lost = next(s for s in result["scenarios"] if s["scenario"] == "lost-update")
    assert lost["variants"].keys() == {"buggy", "fix-cas"}
    assert lost["checkers"] == ["final-equals-acks"]


def test_human_output_shows_timeline_and_repro(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "repro",
        "lost-update",
        "--variant",
        "buggy",
        "--choices",
        "4:0=1",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "●││ 20ms #7   client0  write value=1 version=3" in out  # the slow write lands late
    assert "⚡ deviation: rpc.client0 took option 1 of 2 (draw #0)" in out
    assert "✗ final-equals-acks: 4 increments were acknowledged" in out
    assert "deviations from FIFO (1): draw #0 rpc.client0 = option 1 of 2" in out
    assert "repro: raceproof repro lost-update --variant buggy --choices 4:0=1" in out
    assert f"Markdown: {tmp_path}/lost-update--buggy--0df6354d1468.md" in out


def test_a_proof_counterexample_repro_line_runs_on_the_proof_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The proof configuration differs from the search one: the repro line must say so.
    code, result = run_json(
        capsys,
        "prove",
        "brooklin-double-stop",
        "--variant",
        "fix-zk-lookup",
        "--out",
        str(tmp_path),
    )
    assert code == 1
    assert "--set " in result["repro"]
    code, again = run_json(capsys, *shlex.split(result["repro"])[1:])
    assert (code, again["trace_hash"]) == (1, result["trace_hash"])


def test_every_json_document_is_one_sorted_line_and_never_a_nan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``print_json`` is the one way a command prints ``--json``: a NaN raises instead of printing."""
    from raceproof.cli.commands.common import print_json

    print_json({"rows": 2, "a": [1.5, {"z": 1, "b": 2}]})
    assert capsys.readouterr().out == '{"a": [1.5, {"b": 2, "z": 1}], "rows": 2}\n'
    for not_json in (float("nan"), float("inf")):
        with pytest.raises(ValueError):
            print_json({"rows": 2, "seconds": not_json})
    assert capsys.readouterr().out == ""
    assert main(["list", "--json"]) == 0
    listed = capsys.readouterr().out
    assert listed.count("\n") == 1 and json.loads(listed)["scenarios"]
