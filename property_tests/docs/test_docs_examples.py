"""Every example of the README and the manual runs, as printed (see ``doc_examples.py``).

One test per page: its python blocks run, its console sessions run through the installed
``raceproof`` in a fresh folder and print what the page shows, its ``sh`` listings parse.
The README and the CI tutorial are the exception: ``test_newcomer.py`` runs every example of
both as another user would (the same parsers and matcher, that user's ``make demo``
virtualenv, the tutorial's CI jobs with their ``pip install`` lines run too), so they are
not run a second time here.
The README gets its own checks: at most 250 lines, and no code block the suite cannot run or
parse. The parsers themselves are tested on small pages that must fail, so a page that
passes means something.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sybil.example import SybilFailure

from property_tests import doc_examples
from property_tests.doc_examples import DOCS, ROOT

PAGES = doc_examples.pages()
# Run whole by test_newcomer.py (its README tour and tutorial tests); here they were 23 CPU s.
AS_NEWCOMER = [ROOT / "README.md", ROOT / "docs" / "tutorial" / "your-race-in-ci.md"]
RUN_HERE = [page for page in PAGES if page not in AS_NEWCOMER]


def run_page(page: Path, folder: Path) -> int:
    """Evaluate every example of ``page`` in order, its sessions in ``folder``; how many ran."""
    count = 0
    document = doc_examples.parse(page)
    document.namespace["session_dir"] = folder
    for example in document:
        example.evaluate()
        count += 1
    return count


@pytest.mark.parametrize("page", RUN_HERE, ids=[str(p.relative_to(ROOT)) for p in RUN_HERE])
def test_every_example_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    assert run_page(page, tmp_path) == len(list(doc_examples.parse(page)))


def test_the_pages_left_to_the_newcomer_are_the_ones_it_runs() -> None:
    from property_tests.docs import test_newcomer

    assert set(AS_NEWCOMER) <= set(PAGES)
    assert {ROOT / "README.md", ROOT / test_newcomer.TUTORIAL} == set(AS_NEWCOMER)


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    fences = re.findall(r"^```(\S*)", text, flags=re.MULTILINE)
    languages = set(fences[::2])  # every other fence opens a block
    assert languages <= {"python", "console", "sh"}, languages
    assert "console" in languages and "sh" in languages
    assert "$ raceproof prove" in text and "$ raceproof check" in text
    for target in ("make demo", "make test"):
        assert target in text


def test_the_pages_carry_examples() -> None:
    # kernel-primitives.md: one complete program per primitive, each run alone.
    examples = list(doc_examples.parse(DOCS / "reference" / "kernel-primitives.md"))
    assert len(examples) == 12  # the twelfth: nodes and faults of a whole process
    counted = {p.name: len(list(doc_examples.parse(p))) for p in PAGES}
    assert counted["README.md"] >= 9
    assert counted["first-race.md"] >= 6


def page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text)
    return path


def failures(path: Path) -> list[str]:
    said = []
    document = doc_examples.parse(path)
    document.namespace["session_dir"] = path.parent
    for example in document:
        try:
            example.evaluate()
        except (SybilFailure, Exception) as exc:
            said.append(str(exc))
    return said


def test_a_drifted_session_fails(tmp_path: Path) -> None:
    ok = "```console\n$ raceproof prove lost-update --variant fix-cas\nlost-update / fix-cas: PROVEN: ...\n```\n"
    assert failures(page(tmp_path, ok)) == []
    drifted = ok.replace("PROVEN", "VIOLATED")
    assert "expected line not printed" in failures(page(tmp_path, drifted))[0]
    bad_option = "```console\n$ raceproof prove lost-update --no-such-option\n```\n"
    assert "exit 2 (bad input)" in failures(page(tmp_path, bad_option))[0]


def test_a_listing_that_does_not_parse_fails(tmp_path: Path) -> None:
    ok = "```sh\nraceproof campaign --seeds 20 --out out/c1   # a comment\nmake demo\n```\n"
    assert failures(page(tmp_path, ok)) == []
    for wrong, said in [
        ("raceproof campaign --seedz 20", "refused by the parser"),
        ("make deploy", "no such Makefile target"),
        ("pytest -q", "raceproof and make commands only"),
    ]:
        assert said in failures(page(tmp_path, f"```sh\n{wrong}\n```\n"))[0]


def test_a_broken_python_block_fails_and_a_skipped_one_does_not_run(tmp_path: Path) -> None:
    assert failures(page(tmp_path, "```python\nassert 1 + 1 == 3\n```\n"))
    assert failures(page(tmp_path, "```python\nx = undefined_name\n```\n"))
    skipped = "<!-- skip: next -->\n\n```python\nassert False\n```\n"
    assert failures(page(tmp_path, skipped)) == []


def test_the_output_matcher() -> None:
    actual = ["first line", "verdict: ok   trace abc", "last"]
    assert doc_examples._missing(["first line", "...", "last"], actual) is None
    assert doc_examples._missing(["verdict: ok ...", "last"], actual) is None
    assert doc_examples._missing(["last", "first line"], actual) == "first line"  # order
    assert doc_examples._missing(["verdict: violated ..."], actual) == "verdict: violated ..."
    # columns realign: a run of spaces matches any run of spaces, never none
    assert doc_examples._line_matches("a  b ...s  c", "a b    12.5s c")
    assert not doc_examples._line_matches("a b", "ab")
    assert not doc_examples._line_matches("ok@300 ...s", "ok@3000 1.0s")


def test_every_shell_session_is_a_console_block_so_it_runs() -> None:
    """A ``$ `` session in an unlabelled or ``text`` block would never run: it must be console."""
    stray = []
    for path in PAGES:
        inside = False
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                language = line.strip()[3:]
                if not inside and language in ("", "text", "shell", "bash"):
                    following = lines[number + 1] if number + 1 < len(lines) else ""
                    if following.startswith("$ "):
                        stray.append(f"{path.relative_to(ROOT)}:{number + 1}")
                inside = not inside
    assert stray == []


def test_every_command_quoted_in_the_readme_text_parses() -> None:
    """Commands quoted inline (``raceproof repro ... --report-timeline``) parse as printed too."""
    text = (ROOT / "README.md").read_text()
    quoted = re.findall(r"`(raceproof [^`]+|make [^`]+)`", text)
    checked = 0
    for command in quoted:
        words = command.split()
        if len(words) == 2 and words[0] == "raceproof":
            continue  # the name of a command, not a command line
        said = doc_examples.check_listing(command)
        assert said is None, said
        checked += 1
    assert checked >= 3


def test_a_ci_job_file_runs_its_commands_and_a_failing_one_fails(tmp_path: Path) -> None:
    toml = "```toml\n# pyproject.toml\n[tool.raceproof]\nscenarios = []\n```\n"
    assert failures(page(tmp_path, toml)) == []
    assert (tmp_path / "pyproject.toml").read_text().startswith("# pyproject.toml\n")
    job = (
        "```yaml\n# .gitlab-ci.yml\nrace:\n  script:\n    - pip install vendor/raceproof.whl\n"
        "    - raceproof prove lost-update --variant VARIANT\n```\n"
    )
    assert failures(page(tmp_path, job.replace("VARIANT", "fix-cas"))) == []
    assert (tmp_path / ".gitlab-ci.yml").exists()
    said = failures(page(tmp_path, job.replace("VARIANT", "buggy")))  # exit 1: the job fails
    assert said and "exit 1" in said[0]
    other = job.replace("vendor/raceproof.whl", "requests").replace("VARIANT", "fix-cas")
    assert "installs raceproof only" in failures(page(tmp_path, other))[0]
    assert doc_examples.job_commands("      - run: pytest -n 2\n    - raceproof check\n") == [
        "pytest -n 2",
        "raceproof check",
    ]
