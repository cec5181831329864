"""The kernel's own failures, apart from the model's: a broken contract is a bug in raceproof.

Why it exists: a verdict must never come from raceproof's own bugs. An
exception the model, its workload or its checker raises is the model's (the
verdict ``error``, exit 4); a ``KernelError`` is raised only where one of the
kernel's contracts broke (replay alignment, choice bounds, footprint
bookkeeping, a proof's accounting) and is reported as a bug in raceproof
(exit 70). Unlike ``assert``, ``contract`` survives ``python -O``.
"""

from __future__ import annotations

__all__ = ["KernelError", "contract"]


class KernelError(RuntimeError):
    """A contract of the kernel broke: a bug in raceproof (exit 70), never a verdict."""


def contract(condition: object, message: str) -> None:
    """Raise ``KernelError(message)`` unless ``condition`` holds; kept under ``python -O``."""
    if not condition:
        raise KernelError(message)
