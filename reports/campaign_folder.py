"""A campaign folder is data a user can damage: checked before Spark starts, read without a traceback.

Why it exists: ``raceproof campaign`` resumes into its output folder and
``raceproof report DIR`` reads it, and both trusted it. A truncated or junk
Parquet part came back as pyarrow's ``ArrowInvalid`` traceback; a ``results``
that was a file, after Spark had started, as 245 lines ending in a Java stack
trace; a folder of someone else's files was written into. Everything here
reads the folder with pyarrow alone (no Spark), so the command checks it
before the JVM starts, and each problem is one line naming the file (exit 2)
with what to do about it. Nothing is moved or deleted: the user decides.

The folder holds ``campaign.json`` (the manifest), ``results/`` (Parquet part
files, one appended per flush), ``determinism.json`` and ``counterexamples/``.
An empty folder, or one that does not exist yet, is a new campaign.

It lives in ``reports`` because a campaign folder is a report's input: the
report reads it with pyarrow alone, and ``spark_integration`` (which writes
it) imports this format from here, so the two depend one way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from raceproof.sim import repro as repro_files
from raceproof.sim.configs import BadInput
from raceproof.sim.user_files import user_path

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "COUNTEREXAMPLES",
    "DETERMINISM",
    "FORMAT",
    "MANIFEST",
    "RESULTS",
    "CampaignFolderError",
    "Row",
    "check_folder",
    "part_files",
    "read_determinism",
    "read_manifest",
    "read_rows",
]

RESULTS = "results"
MANIFEST = "campaign.json"
DETERMINISM = "determinism.json"
COUNTEREXAMPLES = "counterexamples"  # the cells' counterexample files
FORMAT = "raceproof-campaign"

Row = dict[str, Any]

# (column, Spark SQL type, what it holds); docs/reference/schemas.md's table is this list;
# spark_integration writes them (campaign_cells re-exports them), reports reads them.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("cell", "string", "the cell's key: kind/scenario/variant/strategy/seed/examples budget"),
    ("kind", "string", "`search`, or `proof` (a merged proof) with `--prove`"),
    ("scenario", "string", "scenario name"),
    ("variant", "string", "variant name"),
    ("strategy", "string", "`random`, `hypothesis`, `pct`, or `exhaustive` for a proof"),
    ("seed", "bigint", "the search's seed (0 for a proof)"),
    ("examples_budget", "bigint", "examples the cell may run (schedules, for a proof)"),
    ("expected", "string", "what the catalogue expects of the variant: `violated` or `ok`"),
    ("verdict", "string", "`violated`, `ok`, `inconclusive`, or `error` (the cell crashed)"),
    ("met", "boolean", "the verdict is the expected one"),
    ("checker", "string", "the violated checker, if any"),
    ("examples_to_violation", "bigint", "examples run up to the first violation (null if none)"),
    ("examples", "bigint", "examples run (proof: runs)"),
    ("schedules", "bigint", "distinct schedules run (proof: complete schedules)"),
    ("complete", "boolean", "proof only: nothing pruned the walk"),
    ("shards", "bigint", "proof only: the balanced units the proof was walked in"),
    ("seconds", "double", "wall seconds of the cell (varies between runs)"),
    ("virtual_ms", "bigint", "virtual milliseconds simulated by every run of the cell"),
    ("trace_hash", "string", "trace hash of the shrunk counterexample"),
    ("cell_hash", "string", "SHA-256 over the trace hashes of every run of the cell, in order"),
    ("blob", "string", "the shrunk counterexample's choice blob"),
    ("deviations", "bigint", "deviations from FIFO of the shrunk counterexample"),
    ("counterexample", "string", "its file, relative to the campaign folder"),
    (
        "error",  # a column's name, not a verdict
        "string",
        "what a crashed cell raised; for an inconclusive cell, why (a bound, undecided by CHECKER)",
    ),
    (
        "finding",
        "string",
        "a pipeline cell's finding (`campaign --pipeline`): what stock Spark (and the guard) did",
    ),
    ("tool_version", "string", "raceproof version that ran the cell"),
    ("git_commit", "string", "git commit of that raceproof"),
    ("executor", "string", "host:pid that ran the cell (varies between runs)"),
)
COLUMN_NAMES = tuple(name for name, _type, _doc in COLUMNS)
# Columns added since the first campaigns: a part written before them lacks them (read as null).
LATER_COLUMNS = frozenset({"finding"})


class CampaignFolderError(BadInput):
    """A campaign folder that cannot be resumed or reported: exit 2 with this message."""


def check_folder(out: Path) -> None:
    """Refuse, before any work, a folder a campaign cannot resume into; create nothing."""
    with user_path("", out, CampaignFolderError):
        _check_folder(out)


def _check_folder(out: Path) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise CampaignFolderError(f"{out} exists and is not a folder")
    manifest, results = out / MANIFEST, out / RESULTS
    if not manifest.exists() and not results.exists():
        if any(out.iterdir()):
            raise CampaignFolderError(
                f"{out} is not a campaign folder (no {MANIFEST}, no {RESULTS}/) and is not "
                "empty; give --out a new or empty folder"
            )
        return
    saved = out / COUNTEREXAMPLES
    if os.path.lexists(saved) and not saved.is_dir():
        # A cell's counterexample goes there beside its row: as a file it would be lost.
        raise CampaignFolderError(
            f"{saved} is not a folder: the campaign saves its cells' counterexamples there; "
            "move it away to resume"
        )
    if manifest.exists():
        read_manifest(out)
    part_files(out)
    if (out / DETERMINISM).exists():
        read_determinism(out)


def read_manifest(out: Path) -> dict[str, Any]:
    """``campaign.json``: a JSON object of the campaign format."""
    path = out / MANIFEST
    raw = repro_files.read_json(path, CampaignFolderError)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CampaignFolderError(f"{path}: not a raceproof campaign manifest")
    options = raw.get("options")
    if (
        not isinstance(options, dict)
        or not isinstance(options.get("seeds"), list)
        or not isinstance(options.get("strategies"), list)
        or not all(isinstance(s, str) for s in options["strategies"])
        or not isinstance(options.get("examples"), int)
        or not all(isinstance(raw.get(k), str) for k in ("tool_version", "git_commit"))
    ):
        raise CampaignFolderError(f"{path}: a manifest with fields missing or malformed")
    return raw


def read_determinism(out: Path) -> list[dict[str, Any]]:
    """``determinism.json``: the list of cross-checks (empty when the file is absent)."""
    path = out / DETERMINISM
    if not path.exists():
        return []
    raw = repro_files.read_json(path, CampaignFolderError)
    if not isinstance(raw, list) or not all(
        isinstance(c, dict) and isinstance(c.get("cell"), str) for c in raw
    ):
        raise CampaignFolderError(f"{path}: not a list of determinism checks")
    return raw


def part_files(out: Path) -> list[Path]:
    """The Parquet parts of ``results/``, each one's footer and columns checked."""
    results = out / RESULTS
    if os.path.lexists(results) and not results.exists():
        raise CampaignFolderError(f"{results} is a symbolic link that leads nowhere (or a loop)")
    if not results.exists():
        return []
    if not results.is_dir():
        raise CampaignFolderError(
            f"{results} is a file, not the folder of Parquet parts a campaign writes; "
            "move it away to resume"
        )
    parts = sorted(
        p for p in results.iterdir() if p.suffix == ".parquet" and not p.name.startswith((".", "_"))
    )
    for part in parts:
        _schema(part)
    return parts


def _damaged(part: Path, exc: BaseException) -> CampaignFolderError:
    said = str(exc).strip().splitlines()
    why = said[0] if said else type(exc).__name__
    return CampaignFolderError(
        f"{part}: a damaged Parquet part ({why}); move it away and run the campaign "
        "again to redo its cells"
    )


def _schema(part: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not part.is_file():
        raise CampaignFolderError(f"{part}: not a regular file")
    try:
        names = set(pq.read_schema(part).names)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _damaged(part, exc) from None
    missing = [c for c in COLUMN_NAMES if c not in names and c not in LATER_COLUMNS]
    if missing:
        raise CampaignFolderError(
            f"{part}: not a campaign results part (no column {', '.join(missing[:5])})"
        )


def read_rows(out: Path) -> list[Row]:
    """Every row of ``results/``, sorted by cell key; a damaged part is a one-line error."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: list[Row] = []
    for part in part_files(out):
        try:
            read = pq.read_table(part).to_pylist()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _damaged(part, exc) from None
        rows.extend({**dict.fromkeys(LATER_COLUMNS), **row} for row in read)
    return sorted(rows, key=lambda r: str(r["cell"]))
