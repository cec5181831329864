"""The kernel's own failures, apart from the model's: a broken contract is a bug in raceproof.

Why it exists: a verdict must never come from raceproof's own bugs. An
exception the model, its workload or its checker raises is the model's (the
verdict ``error``, exit 4); a ``KernelError`` is raised only where one of the
kernel's contracts broke (replay alignment, choice bounds, footprint
bookkeeping, a proof's accounting) and is reported as a bug in raceproof
(exit 70). Unlike ``assert``, ``contract`` survives ``python -O``.
"""

from __future__ import annotations

__all__ = ["KernelError", "Signalled", "contract"]


class KernelError(RuntimeError):
    """A contract of the kernel broke: a bug in raceproof (exit 70), never a verdict."""


class Signalled(KeyboardInterrupt):
    """A real signal, raised by a signal handler: the one interrupt a run lets out.

    Model, checker and hook code may raise ``KeyboardInterrupt`` (or ``SystemExit``,
    ``GeneratorExit``, any ``BaseException``) itself: that is the model's exception,
    the verdict ``error``, never an interrupt. A handler of a real SIGINT or SIGTERM
    raises this subclass (the command line's ``Interrupted``, the pytest plugin's), so
    the kernel can tell the two apart and let only this one stop the run.
    """


def contract(condition: object, message: str) -> None:
    """Raise ``KernelError(message)`` unless ``condition`` holds; kept under ``python -O``."""
    if not condition:
        raise KernelError(message)
