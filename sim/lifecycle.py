"""Checkers for lifecycles of named entities (datastreams, streaming queries).

Ops these checkers read (any actor may write them, simulated or real):

- ``status.write``: ``entity``, ``from`` (the value actually stored when the
  write landed), ``to``, ``version_read`` (the version the writer based its
  decision on, or null), ``version_overwritten`` (the stored version it
  replaced).
- ``stop.request`` / ``resume.ack``: ``entity``.
- ``final``: ``statuses``, a map entity -> status at quiescence.
- ``stop.process`` (or any work op given to ``processed_once``): ``streams``,
  the entities one piece of work handles; ``stop.retry``: ``streams`` whose
  failed work may be done again.

One copy serves every model and the real ZooKeeper and Spark runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from raceproof.sim.checkers import Checker, CheckerResult, checker, ok, unknown, violated
from raceproof.sim.history import History


def legal_transitions(name: str, legal: Iterable[tuple[str, str]]) -> Checker:
    """Every status write is a legal transition from the value stored at write time.

    Rewriting the same status is allowed (it changes nothing the user sees);
    ``no_lost_update`` judges whether it overwrote someone else's write.
    """
    allowed = frozenset(legal)

    @checker(name)
    def check(history: History) -> CheckerResult:
        for op in history.of_kind("status.write"):
            before, after = op.get("from"), op.get("to")
            if before != after and (before, after) not in allowed:
                return violated(
                    name,
                    op.index,
                    f"{op.actor} moved {op.get('entity')} {before} -> {after}, not a legal transition",
                )
        return ok(name)

    return check


def no_lost_update(name: str) -> Checker:
    """A write decided on version V overwrites version V, not a later one.

    A write that stores the status it replaced (STOPPED over STOPPED) loses
    nothing, whatever it was decided on: it is redundant work, which
    ``processed_once`` reports, not data loss.
    """

    @checker(name)
    def check(history: History) -> CheckerResult:
        for op in history.of_kind("status.write"):
            read, replaced = op.get("version_read"), op.get("version_overwritten")
            if op.get("from") == op.get("to"):
                continue
            if read is not None and read != replaced:
                return violated(
                    name,
                    op.index,
                    f"{op.actor} wrote {op.get('entity')}={op.get('to')} decided on version {read} "
                    f"but overwrote version {replaced} ({op.get('from')}): an update was lost",
                )
        return ok(name)

    return check


def acknowledged_resume_holds(name: str, running: str) -> Checker:
    """A resume that was acknowledged and not followed by a stop leaves the entity ``running``."""

    @checker(name)
    def check(history: History) -> CheckerResult:
        finals = history.of_kind("final")
        if not finals:
            return unknown(name, "the run ended before the final statuses were read")
        statuses = finals[-1].get("statuses") or {}
        last_resume: dict[str, int] = {}
        for op in history.ops:
            entity = op.get("entity")
            if op.kind == "resume.ack":
                last_resume[entity] = op.index
            elif op.kind == "stop.request":
                last_resume.pop(entity, None)
        for entity, index in sorted(last_resume.items()):
            final_status = statuses.get(entity)
            if final_status == running:
                continue
            culprit = next(
                (
                    op
                    for op in history.ops[index + 1 :]
                    if op.kind == "status.write"
                    and op.get("entity") == entity
                    and op.get("to") != running
                ),
                finals[-1],
            )
            trail = " -> ".join(
                str(op.get("to"))
                for op in history.ops
                if op.kind == "status.write" and op.get("entity") == entity
            )
            return violated(
                name,
                culprit.index,
                f"the resume of {entity} acknowledged at op #{index} was lost: it ends {final_status} "
                f"(set by {culprit.actor}); its writes: {trail}",
            )
        return ok(name)

    return check


def processed_once(
    name: str, request: str = "stop.request", work: str = "stop.process", retry: str = "stop.retry"
) -> Checker:
    """Each request for an entity is worked on once (the redundant second stop).

    Between one ``request`` op for an entity and the next, at most one
    ``work`` op may list the entity in its ``streams``; a ``retry`` op listing
    it (the earlier work failed) allows one more.
    """

    @checker(name)
    def check(history: History) -> CheckerResult:
        seen: dict[str, int] = {}  # entity -> op index of the work done for its last request
        for op in history.ops:
            if op.kind == request:
                seen.pop(str(op.get("entity")), None)
                continue
            if op.kind not in (work, retry):
                continue
            for entity in [str(e) for e in op.get("streams") or []]:
                if op.kind == retry:
                    seen.pop(entity, None)
                elif entity in seen:
                    return violated(
                        name,
                        op.index,
                        f"{op.actor} works on the stop of {entity} again: op #{seen[entity]} "
                        "already did, for the same request",
                    )
                else:
                    seen[entity] = op.index
        return ok(name)

    return check


def no_uncaught_error(name: str = "no-uncaught-error") -> Checker:
    """No worker thread died with an error nobody was told about (``error.uncaught`` ops)."""

    @checker(name)
    def check(history: History) -> CheckerResult:
        for op in history.of_kind("error.uncaught"):
            return violated(
                name,
                op.index,
                f"{op.get('thread')} died with an uncaught {op.get('error')}; "
                "the query handle reported no exception",
            )
        return ok(name)

    return check
