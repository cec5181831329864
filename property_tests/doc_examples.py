"""Run the examples of the README and the manual: Sybil parsers for python, console and sh blocks.

Why it exists: an example that drifts from the code must fail the suite, not mislead a reader.
Every page is parsed by Sybil (the MyST parsers read plain GitHub Markdown too) and its code
blocks are evaluated in order, one temporary folder per page:

- ```` ```python ````: executed alone, as a complete program (so a missing import fails). A
  block whose first line is a comment naming a file (``# races.py: ...``) is written to that
  file in the page's folder instead, for the console sessions after it. On a page listed in
  ``EXCERPTS`` a block is an excerpt of the example project's files, which
  ``test_user_project.py`` runs: every line of it must appear in one of them, in order (a
  ``def`` line by its name, as the page may leave the annotations out; comments aside),
  unless its first line is ``# A complete program...``: then it runs alone.
- ```` ```console ````: a shell session. Each ``$ `` line runs, as printed, with this
  virtualenv's ``raceproof`` first on ``PATH``; it must not exit 2 (bad input), 4 (the model
  raised) or 70 (a bug of raceproof); the lines printed under it must appear in its standard
  output, in order; ``...`` alone on a line stands for lines left out, inside a line for any text.
- ```` ```sh ````: a command listing, parsed, not run (some start Spark or take minutes): a
  ``raceproof ...`` line must be accepted by ``build_parser()`` as printed, a ``make X`` must
  name a target of the Makefile, and nothing else may appear.
- ``<!-- session: FOLDER -->`` (relative to the page) copies FOLDER into the page's folder,
  so the sessions after it run in a project of their own (the guide's ``stale_cache``).
- ```` ```toml ```` / ```` ```yaml ````: a file whose first line names it (``# pyproject.toml``,
  ``# .github/workflows/races.yml``) is written into the page's folder (a toml block without
  such a line is an excerpt, left alone). A yaml block is a CI job
  file: its ``raceproof`` and ``pytest`` commands (``run:`` steps, ``- `` script items) then run
  there and must exit 0; its ``pip install`` lines are checked to install raceproof, not run.
- ``<!-- skip: next -->`` skips the next block (Sybil's own skip parser).

A document's namespace may name ``shell``: a ``(folder, command)`` function that runs a
console session's commands in its stead (the newcomer's test runs them as another user).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sybil import Document, Example, Region, Sybil
from sybil.parsers.myst import CodeBlockParser, SkipParser

from raceproof.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
FAILING_EXITS = {2: "bad input", 4: "the model raised", 70: "a bug in raceproof"}
STALE_CACHE = DOCS / "examples" / "stale_cache"
# Pages whose python blocks are excerpts of a project the suite runs as a whole.
EXCERPTS = {
    "writing-a-scenario.md": (
        STALE_CACHE / "stale_cache.py",
        STALE_CACHE / "tests" / "test_stale_cache.py",
    ),
    "ci.md": (STALE_CACHE / "tests" / "test_stale_cache.py",),
}
# On an excerpt page, a block that opens with this comment is a complete program, run alone.
PROGRAM_HEADER = "# A complete program"
FILE_HEADER = re.compile(r"#\s*([\w.-]+(?:/[\w.-]+)*\.py)\b")
# A toml or yaml block whose first line names its file (``# pyproject.toml``,
# ``# .github/workflows/races.yml``) is written there, in the page's folder.
FILE_NAME = re.compile(r"#\s*((?:[\w.-]+/)*[\w.-]+\.(?:toml|ya?ml))\s*$")
# A CI job file's commands: ``run: ...`` steps (GitHub Actions), ``- ...`` script items (GitLab).
JOB_COMMAND = re.compile(r"^\s*(?:-\s+)?(?:run:\s+)?((?:raceproof|pytest|pip)\s.*)$")


def pages() -> list[Path]:
    """The README and every page of the manual (not the build, not the example project)."""
    found = [ROOT / "README.md"]
    for page in sorted(DOCS.rglob("*.md")):
        parts = page.relative_to(DOCS).parts
        if parts[0] not in ("_build", "examples"):
            found.append(page)
    return found


SESSION = re.compile(r"^<!-- session: (?P<folder>\S+) -->$", flags=re.MULTILINE)


def parse_sessions(document: Document) -> Iterator[Region]:
    """``<!-- session: FOLDER -->``: the page's sessions after it run in a copy of FOLDER."""
    for found in SESSION.finditer(document.text):
        yield Region(found.start(), found.end(), found.group("folder"), evaluate_session)


def evaluate_session(example: Example) -> str | None:
    source = Path(example.path).parent / str(example.parsed)
    if not source.is_dir():
        return f"no folder {source} to start the session in"
    ignore = shutil.ignore_patterns("__pycache__", "counterexamples", ".pytest_cache")
    shutil.copytree(source, session_dir(example), ignore=ignore, dirs_exist_ok=True)
    return None


def session_dir(example: Example) -> Path:
    namespace = example.namespace
    if "session_dir" not in namespace:
        namespace["session_dir"] = Path(tempfile.mkdtemp(prefix="raceproof-docs-"))
    folder: Path = namespace["session_dir"]
    return folder


GAP = re.compile(r"\.\.\.(\s+#.*)?")  # a line left out, perhaps with a comment saying what
DEF = re.compile(r"((?:async )?def \w+\().*")


COMMENT = re.compile(r"\s+#\s.*$")


def _excerpt_line(line: str) -> str:
    """A line as an excerpt compares it: no trailing comment, a ``def`` by its name only."""
    line = COMMENT.sub("", line.strip())
    definition = DEF.fullmatch(line)
    return definition.group(1) + "..." if definition else line


def _excerpt_of(lines: list[str], source: Path) -> bool:
    """Every line of the block appears in ``source``, in order (``...`` skips lines)."""
    wanted = [_excerpt_line(ln) for ln in lines if ln.strip() and not GAP.fullmatch(ln.strip())]
    have = iter(COMMENT.sub("", ln.strip()) for ln in source.read_text().splitlines())
    return all(any(_line_matches(w, h) for h in have) for w in wanted)


def evaluate_python(example: Example) -> str | None:
    source: str = example.parsed
    lines = source.splitlines()
    sources = EXCERPTS.get(Path(example.path).name)
    if sources is not None and not (lines and lines[0].startswith(PROGRAM_HEADER)):
        if any(_excerpt_of(lines, s) for s in sources):
            return None
        return f"not an excerpt of {', '.join(s.name for s in sources)}:\n{source}"
    header = FILE_HEADER.match(lines[0]) if lines else None
    if header:
        target = session_dir(example) / header.group(1)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)
        return None
    code = compile(source, f"{example.path}:{example.line}", "exec", dont_inherit=True)
    exec(code, {"__name__": f"doc_example_{example.line}"})
    return None


def _line_matches(expected: str, actual: str) -> bool:
    """``...`` matches any text, and a run of spaces any run of spaces (tables realign)."""
    parts = []
    for piece in expected.strip().split("..."):
        words = piece.split()
        core = r"\s+".join(map(re.escape, words))
        if words:
            lead = r"\s+" if piece[0].isspace() else ""
            trail = r"\s+" if piece[-1].isspace() else ""
            core = lead + core + trail
        elif piece:
            core = r"\s+"
        parts.append(core)
    return re.fullmatch(".*".join(parts), actual.strip()) is not None


def _missing(expected: list[str], actual: list[str]) -> str | None:
    """The first expected line not found, in order, in the actual output."""
    remaining = iter(line.rstrip() for line in actual)
    for line in expected:
        if line.strip() in ("", "..."):
            continue
        if not any(_line_matches(line.rstrip(), got) for got in remaining):
            return line
    return None


def sessions(block: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines and the output lines printed under each."""
    runs: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            runs.append((line[2:], []))
        elif runs:
            runs[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first $ command: {line!r}")
    return runs


def run_in(folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash in ``folder``, this virtualenv's ``raceproof`` first on PATH."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    return subprocess.run(
        ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=600
    )


def evaluate_console(example: Example) -> str | None:
    folder = session_dir(example)
    shell = example.namespace.get("shell", run_in)  # how a command runs (``test_newcomer.py``)
    for command, expected in sessions(example.parsed):
        done = shell(folder, command)
        said = f"$ {command}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        if done.returncode in FAILING_EXITS or done.returncode > 4 or done.returncode < 0:
            reason = FAILING_EXITS.get(done.returncode, "not a verdict")
            return f"exit {done.returncode} ({reason}):\n{said}"
        line = _missing(expected, done.stdout.splitlines())
        if line is not None:
            return f"expected line not printed, or not in order: {line!r}\n{said}"
    return None


def evaluate_file(example: Example) -> str | None:
    """A toml or yaml block: written to the file its first line names (else an excerpt, shown)."""
    source: str = example.parsed
    header = FILE_NAME.match(source.splitlines()[0]) if source.strip() else None
    if header is None:
        return None
    target = session_dir(example) / header.group(1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    return None


def job_commands(block: str) -> list[str]:
    """The ``raceproof``, ``pytest`` and ``pip`` commands of a CI job file, in order."""
    return [m.group(1).strip() for ln in block.splitlines() if (m := JOB_COMMAND.match(ln))]


def evaluate_job(example: Example) -> str | None:
    """A CI job file: written, then its raceproof and pytest commands run (exit 0 each).

    ``pip install`` lines are checked (they install raceproof), not run: the
    suite's environment has raceproof already, and a registry is not asked.
    """
    if not FILE_NAME.match(example.parsed.splitlines()[0] if example.parsed.strip() else ""):
        return f"a CI job file's first line names it (# .gitlab-ci.yml):\n{example.parsed}"
    evaluate_file(example)
    commands = job_commands(example.parsed)
    if not any(c.startswith("raceproof ") for c in commands):
        return f"a CI job file with no raceproof command:\n{example.parsed}"
    for command in commands:
        if command.startswith("pip"):
            if not re.fullmatch(r"pip install \S*raceproof\S*", command):
                return f"a job's pip line installs raceproof only: {command}"
            continue
        done = run_in(session_dir(example), command)
        if done.returncode != 0:
            return f"$ {command}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return None


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w.-]+):", text, flags=re.MULTILINE))


def listed_commands(block: str) -> list[list[str]]:
    """The command lines of an sh block: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def parse_command(words: list[str]) -> str | None:
    """None if ``raceproof`` accepts these words as printed, else what it said."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(words)
    except SystemExit as stop:
        if stop.code not in (0, None):
            return err.getvalue().strip() or f"exit {stop.code}"
    except argparse.ArgumentError as exc:
        return str(exc)
    return None


def evaluate_sh(example: Example) -> str | None:
    return check_listing(example.parsed)


def check_listing(block: str) -> str | None:
    """None if every command of ``block`` parses as printed, else what is wrong with one."""
    targets = makefile_targets()
    for words in listed_commands(block):
        line = shlex.join(words)
        if words[0] == "raceproof":
            said = parse_command(words[1:])
            if said is not None:
                return f"{line}: refused by the parser: {said}"
        elif words[0] == "make":
            unknown = [w for w in words[1:] if "=" not in w and w not in targets]
            if unknown:
                return f"{line}: no such Makefile target {unknown}"
        else:
            return f"{line}: an sh block lists raceproof and make commands only"
    return None


SYBIL = Sybil(
    parsers=[
        SkipParser(),
        parse_sessions,
        CodeBlockParser("python", evaluate_python),
        CodeBlockParser("console", evaluate_console),
        CodeBlockParser("sh", evaluate_sh),
        CodeBlockParser("toml", evaluate_file),
        CodeBlockParser("yaml", evaluate_job),
    ]
)


def parse(page: Path) -> Document:
    return SYBIL.parse(page)
