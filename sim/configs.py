"""Configurations checked from their own declarations: the one validation layer every run goes through.

Why it lives in the kernel: a model's configuration dataclass states its own
rules (``field(metadata=limits(min=1))``, a ``validate`` hook), and the
command line, a counterexample file, the pytest plugin and a scenario's own
defaults all check a configuration the same way, here. ``BadInput`` is the
one error of bad input: every command reports it in one line with exit 2.

* the field's annotation: ``int`` (a JSON integer, not ``true``), ``float``
  (finite), ``bool``, ``str``, ``tuple[T, ...]`` (a JSON list of ``T``,
  non-empty when ``T`` is a number or a flag: those tuples are the options a
  run draws among), ``Literal[...]``, ``T | None``; a field whose name ends in
  ``_ms`` (or any unit of time) is a duration, never negative;
* default bounds so no value can make a run exhaust the machine: unitless
  integers in ``[0, 10_000]``, durations up to 10¹² ms, at most 1,000 options;
* optional per-field limits declared once with the field:
  ``clients: int = field(default=2, metadata=limits(min=1))``;
* the dataclass's own ``__post_init__`` and an optional ``validate(self)``
  hook, which state their rules with ``require(condition, message)`` (or
  raise ``ValueError``): a refusal there is reported as bad input naming the
  fields that were set, in one line. ``require`` is code, not ``assert``: it
  holds under ``python -O`` and pytest's assertion rewriting leaves its
  message alone.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from raceproof.sim.errors import Signalled, said

__all__ = [
    "BadInput",
    "apply_overrides",
    "check_value",
    "config_from_json",
    "limits",
    "require",
]

MAX_COUNT = 10_000  # a unitless integer (clients, followers, workers, ...) unless declared
MAX_DURATION_MS = 10**12  # about 31 years of virtual time
MAX_OPTIONS = 1_000  # options of one tuple field
MAX_TEXT = 1_000  # characters of one string value
DURATION_SUFFIXES = ("_ms", "_s", "_us", "_ns", "_seconds")


class BadInput(ValueError):
    """A value from the command line or a file that cannot be used: exit 2 with this message."""


def require(condition: object, message: str) -> None:
    """Refuse a configuration: raise ``BadInput(message)`` unless ``condition`` holds.

    The way a configuration's ``__post_init__`` (or ``validate``) states a rule
    across fields, e.g. ``require(self.clients >= 1, "clients must be >= 1")``.
    Unlike ``assert`` it is kept under ``python -O``.
    """
    if not condition:
        raise BadInput(message)


def limits(
    *,
    min: float | None = None,
    max: float | None = None,
    min_len: int | None = None,
    max_len: int | None = None,
    choices: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Field metadata declaring a configuration field's limits (``field(metadata=limits(...))``)."""
    declared = {"min": min, "max": max, "min_len": min_len, "max_len": max_len, "choices": choices}
    return {"raceproof": {k: v for k, v in declared.items() if v is not None}}


# -- one value against one annotation ------------------------------------------------
def _is_duration(name: str) -> bool:
    """``delay_ms`` and the elements ``delay_ms[3]`` of a tuple of them are durations."""
    return name.split("[", 1)[0].endswith(DURATION_SUFFIXES)


def _show(value: Any) -> str:
    text = json.dumps(value) if _jsonable(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _check_number(name: str, value: Any, want: type, rules: Mapping[str, Any]) -> Any:
    if want is int:
        if not isinstance(value, int) or isinstance(value, bool):
            unit = " (milliseconds)" if _is_duration(name) else ""
            raise BadInput(f"{name} must be an integer{unit}, got {_show(value)}")
    elif not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise BadInput(f"{name} must be a finite number, got {_show(value)}")
    low = rules.get("min", 0)
    high = rules.get("max", MAX_DURATION_MS if _is_duration(name) else MAX_COUNT)
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadInput(f"{name} must be {span}, got {_show(value)}")
    return value


def check_value(name: str, annotation: Any, value: Any, rules: Mapping[str, Any]) -> Any:
    """``value`` (as read from JSON) checked against ``annotation``; lists come back as tuples."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if "choices" in rules and value not in rules["choices"]:
        allowed = ", ".join(_show(c) for c in rules["choices"])
        raise BadInput(f"{name} must be one of {allowed}, got {_show(value)}")
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        others = [a for a in args if a is not type(None)]
        errors = []
        for option in others:
            try:
                return check_value(name, option, value, rules)
            except BadInput as exc:
                errors.append(str(exc))
        raise BadInput(
            errors[0] if len(errors) == 1 else f"{name}: {_show(value)} fits none of its types"
        )
    if origin is typing.Literal:
        if value not in args or type(value) not in {type(a) for a in args}:
            raise BadInput(
                f"{name} must be one of {', '.join(_show(a) for a in args)}, got {_show(value)}"
            )
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise BadInput(f"{name} must be true or false, got {_show(value)}")
        return value
    if annotation in (int, float):
        return _check_number(name, value, annotation, rules)
    if annotation is str:
        if not isinstance(value, str) or not 0 < len(value) <= rules.get("max_len", MAX_TEXT):
            raise BadInput(f"{name} must be a non-empty string, got {_show(value)}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise BadInput(f"{name} must be a list, got {_show(value)}")
        # Tuples of numbers or flags are the options a run draws among: never empty.
        # Tuples of names may be empty (e.g. "streams resumed") unless the field says min_len.
        numeric = bool(args) and args[0] in (int, float, bool)
        low, high = rules.get("min_len", 1 if numeric else 0), rules.get("max_len", MAX_OPTIONS)
        if not low <= len(value) <= high:
            raise BadInput(f"{name} must list {low} to {high} values, got {len(value)}")
        element_rules = {k: v for k, v in rules.items() if k in ("min", "max")}
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(
                check_value(f"{name}[{i}]", args[0], v, element_rules) for i, v in enumerate(value)
            )
        if args and len(args) != len(value):
            raise BadInput(f"{name} must list exactly {len(args)} values, got {len(value)}")
        return tuple(
            check_value(f"{name}[{i}]", a, v, element_rules)
            for i, (a, v) in enumerate(zip(args, value, strict=False))
        )
    # A type this module does not know (a user's own): only JSON-shaped, bounded values.
    if not _jsonable(value):
        raise BadInput(f"{name}: {_show(value)} is not a plain JSON value")
    return tuple(value) if isinstance(value, list) else value


# -- whole configurations ---------------------------------------------------------------
def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: the value is checked as plain JSON
        return {}


def apply_overrides(template: Any, overrides: Mapping[str, Any], *, source: str = "--set") -> Any:
    """``template`` (a configuration dataclass instance) with ``overrides`` checked and applied.

    ``source`` names where the values came from (``--set``, a file) in messages.
    """
    cls = type(template)
    if not dataclasses.is_dataclass(template) or isinstance(template, type):
        raise TypeError(f"{cls.__name__} is not a configuration dataclass")
    fields = {f.name: f for f in dataclasses.fields(template) if f.init}
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise BadInput(
            f"{source}: {cls.__name__} has no field {unknown[0]!r}; fields: {', '.join(fields)}"
        )
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        rules = fields[name].metadata.get("raceproof", {})
        try:
            values[name] = check_value(name, hints.get(name, Any), value, rules)
        except BadInput as exc:
            raise BadInput(f"{source}: {cls.__name__}.{exc}") from None
    shown = ", ".join(f"{k}={_show(v)}" for k, v in overrides.items())
    try:
        config = dataclasses.replace(template, **values)
        hook = getattr(config, "validate", None)
        if callable(hook):
            hook()
    except (AssertionError, ValueError, TypeError) as exc:
        # One line whatever raised it: pytest's rewriting of a user's own ``assert``
        # appends its explanation on further lines.
        lines = str(exc).strip().splitlines()
        reason = lines[0].strip() if lines and lines[0].strip() else "its own checks fail"
        raise BadInput(f"{source}: {cls.__name__} refuses {shown}: {reason}") from None
    except BaseException as exc:  # the user's __post_init__/validate: anything
        if isinstance(exc, Signalled):  # a real signal stops the command
            raise
        raise BadInput(
            f"{source}: {cls.__name__} refuses {shown}: its checks raised "
            f"{type(exc).__name__}: {said(exc)}".removesuffix(": ")
        ) from None
    return config


def config_from_json(template: Any, raw: Any, *, source: str) -> Any:
    """A configuration read from a file: a JSON object of fields, each checked like ``--set``."""
    if not isinstance(raw, Mapping):
        raise BadInput(f"{source}: the configuration must be a JSON object")
    return apply_overrides(template, raw, source=source)
