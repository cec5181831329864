"""The verdict vocabulary has one home, ``raceproof.sim.verdicts``, and one verdict -> exit code map.

Two kinds of test: the vocabulary itself (its words, what JSON and text make
of them, each verdict's exit code, the gate's statuses), and a scan of the
source tree that fails when a verdict word is spelled out as a string literal
outside its home, so a new result cannot drift from the vocabulary.

What the scan covers, precisely: every ``.py`` file of the shipped package
folders (``sim``, ``models``, ``scenarios``, ``reports``,
``spark_integration``, ``raceproof``) and of ``tools``, except
``sim/verdicts.py``; it flags a ``str`` constant whose whole value is one of
the five verdict words. It does not flag a word used as a key (a dict
display's key, a subscript such as ``row["error"]``, the first argument of
``.get``/``.pop``/``.setdefault``), names in ``__all__`` (``ok`` and
``violated`` are also the checker helpers' names), or a line whose comment
says ``not a verdict`` (a Parquet column or a JUnit element named
``error``). Words inside longer strings (messages, docstrings) are prose and
not flagged. Tests and docs are outside the scan: they assert on the CLI's
output, which must keep saying the plain words.
"""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import pytest

from raceproof.sim.verdicts import (
    EXIT_FOR_VERDICT,
    FINDINGS,
    CheckStatus,
    ExitCode,
    GateStatus,
    Verdict,
    exit_code_for,
    gate_exit_code,
)

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("sim", "models", "scenarios", "reports", "spark_integration", "raceproof", "tools")
HOME = ROOT / "sim" / "verdicts.py"
WORDS = frozenset(v.value for v in Verdict)
KEY_METHODS = frozenset({"get", "pop", "setdefault"})
MARK = "not a verdict"


def test_the_five_words_and_their_exit_codes() -> None:
    assert [v.value for v in Verdict] == ["ok", "violated", "inconclusive", "not-reached", "error"]
    assert {v: int(exit_code_for(v)) for v in Verdict} == {
        "ok": 0,
        "violated": 1,
        "inconclusive": 3,
        "not-reached": 3,  # an unreached race window is never a pass
        "error": 4,  # the user's code raised: never a found race
    }
    assert set(EXIT_FOR_VERDICT) == set(Verdict)
    assert {Verdict.VIOLATED, Verdict.ERROR} == FINDINGS
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 70, 130, 143]
    with pytest.raises(ValueError):
        exit_code_for("unknown")  # a checker's status, not a verdict: a bug to map it


def test_json_and_text_still_say_the_plain_words() -> None:
    assert json.dumps({"verdict": Verdict.NOT_REACHED}) == '{"verdict": "not-reached"}'
    assert json.dumps({"exit": ExitCode.INCONCLUSIVE}) == '{"exit": 3}'
    assert f"{Verdict.ERROR} / {CheckStatus.UNKNOWN}" == "error / unknown"
    assert type(str(Verdict.OK)) is str and str(Verdict.OK) == "ok"


@pytest.mark.parametrize("verdict", list(Verdict))
@pytest.mark.parametrize("expected", [Verdict.OK, Verdict.VIOLATED])
def test_gate_status_of_every_verdict(verdict: Verdict, expected: Verdict) -> None:
    status = GateStatus.of(expected, verdict)
    if verdict == expected:
        assert status == GateStatus.PASS
    elif verdict == Verdict.ERROR:
        assert status == GateStatus.ERROR  # never a pass, not even where a violation was expected
    elif verdict in (Verdict.INCONCLUSIVE, Verdict.NOT_REACHED):
        assert status == GateStatus.INCONCLUSIVE
    else:
        assert status == GateStatus.FAIL


def test_gate_exit_code_orders_fail_error_inconclusive() -> None:
    every = set(GateStatus)
    assert gate_exit_code(every) == ExitCode.VIOLATED
    assert gate_exit_code(every - {GateStatus.FAIL}) == ExitCode.ERROR
    assert gate_exit_code({GateStatus.PASS, GateStatus.INCONCLUSIVE}) == ExitCode.INCONCLUSIVE
    assert gate_exit_code({GateStatus.PASS}) == ExitCode.OK
    assert gate_exit_code(set()) == ExitCode.OK


def test_old_checker_result_name_is_a_deprecated_alias() -> None:
    import raceproof
    from raceproof.sim import CheckerResult

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = raceproof.Verdict
    assert old is CheckerResult
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "CheckerResult" in str(caught[0].message)
    with pytest.raises(AttributeError):
        _ = raceproof.NoSuchName  # type: ignore[attr-defined]


# -- the scan -----------------------------------------------------------------------
def _keys(tree: ast.AST) -> set[int]:
    """ids of the str constants used as keys (see the module docstring)."""
    keys: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in KEY_METHODS
            and node.args
        ):
            keys.add(id(node.args[0]))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            keys.update(id(n) for n in ast.walk(node.value))
    return keys


def verdict_literals(source: str) -> list[tuple[int, str]]:
    """(line, word) of each verdict word spelled as a string literal in ``source``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    keys = _keys(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in WORDS
            and id(node) not in keys
            and MARK not in lines[node.lineno - 1]
        ):
            found.append((node.lineno, node.value))
    return sorted(found)


def test_the_scan_sees_a_planted_verdict_string_and_not_a_key() -> None:
    planted = 'def f(row):\n    row["error"] = row.get("ok")\n    return "violated"\n'
    assert verdict_literals(planted) == [(3, "violated")]
    assert verdict_literals('X = {"error": 1}\nY = "error"  # not a verdict: a column\n') == []
    assert verdict_literals('__all__ = ["ok", "violated"]\nZ = ("ok", "fine")\n') == [(2, "ok")]


def test_verdict_words_live_only_in_sim_verdicts() -> None:
    offenders = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == HOME:
                continue
            for line, word in verdict_literals(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {word!r}")
    assert not offenders, "use raceproof.sim.verdicts.Verdict instead of:\n" + "\n".join(offenders)
