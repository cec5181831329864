"""A sibling module of ``udf_kinds.py``: a helper its Python UDF calls on Spark's workers.

It sits beside the pipeline file, in a folder that is no package and not on the
workers' path, as a data engineer's ``helpers.py`` next to their job does: the
workers get it only if raceproof ships it with the pipeline's functions.
"""

from __future__ import annotations

SUFFIX = "-seen"


def tagged(key: str) -> str:
    """The key with the helper's suffix (what the sibling pipeline's UDF returns)."""
    return f"{key}{SUFFIX}"
