"""Cells: the one mechanism that records what a step reads and writes.

The proof's partial-order reduction (``raceproof.sim.reduction``) is sound only
if every step's footprint names all the shared state it read and wrote. A
footprint placed by hand beside each access (``world.touch``) is a soundness
obligation that only its author's care discharges (DESIGN.md, principle 15).
Here the state records itself: a kernel primitive keeps its mutable state in
cells, and reading a cell is a read of its resource, writing it a write, so a
read that is not recorded cannot be written. This module is the only caller of
``World.touch`` in the kernel; ``world.shared``'s tracked containers
(``raceproof.sim.shared``) record through it too::

    class Gate(Primitive):
        def __init__(self, world: World, name: str) -> None:
            self.world = world
            self.holder = Cell(world, f"gate:{name}.holder", None)  # one value
            self.waits = CellMap(world, f"gate:{name}.waits")        # one resource per key
            self.freeze()                                           # no plain state from here on

        def enter(self, actor: str) -> bool:
            if self.holder.get() is not None:                       # a read of gate:g.holder
                self.waits[actor] = self.waits.get(actor, 0) + 1    # gate:g.waits['a'], read, written
                return False
            self.holder.set(actor)                                  # a write of gate:g.holder
            return True

A ``CellMap`` has no iteration: a step that needs "every key" keeps that set in
a cell of its own (a child list, a session's ephemerals), so that inserting a
key writes only what a reader of that set reads. A key is named by
``key_part`` (the one key-to-resource function, shared with the tracked
containers). Values are immutable (a frozen dataclass, a tuple): a change is a
new value set into the cell, never an object changed in place.

The guard: a ``Primitive`` is frozen after ``freeze()`` -- rebinding an
attribute is a ``KernelError`` (exit 70, raceproof's bug) when the kernel's
code does it, an ``AttributeError`` (the model's error) when a model does -- and ``freeze``
refuses an attribute that holds plain mutable state (a list, dict, set, a
non-frozen dataclass), so a primitive cannot change state outside its cells.
A cell refuses a mutable container as its value for the same reason.

A ``Journal`` undoes the cell writes of a failed all-or-nothing operation (the
store's multi-op): the writes stay recorded (the step did make them), their
values go back.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from raceproof.sim.errors import KernelError

if TYPE_CHECKING:
    from raceproof.sim.world import World

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_MISSING: Any = object()


def record(world: World, resource: str, *, write: bool) -> None:
    """The one place the kernel names a footprint: ``resource`` read (or written) by this step."""
    world.touch(resource, write)
    if resource.endswith(ANY_KEY):  # a key with no name by value: ``dependent`` must look
        world.touch(ANY_KEY, False)


# -- keys by value ------------------------------------------------------------------------
# A key is a resource by equality, as the container compares keys: ``1``, ``1.0`` and
# ``True`` are one key, one resource ``name[1]``. The name is built from the key's value,
# never from ``repr`` (``True`` and ``1`` print differently) nor ``hash`` (a str's hash
# changes with PYTHONHASHSEED, and sleep sets cross processes under ``-j``). A key with no
# such name (a user's class, a NaN) is ``name[?]``: the reduction's ``dependent`` takes it
# as every key of that container, told to look by ``ANY_KEY``, read beside it.
ANY_KEY = "[?]"


def key_part(key: Any) -> str:
    """The resource suffix of ``key`` in a keyed container: one function for cells and tracked state."""
    name = key_name(key)
    return ANY_KEY if name is None else f"[{name}]"


def _inherits(key: Any, base: type) -> bool:
    """``key`` is a ``base`` that compares and hashes as ``base`` does (an IntEnum, a namedtuple)."""
    kind = type(key)
    return isinstance(key, base) and kind.__eq__ is base.__eq__ and kind.__hash__ is base.__hash__


def key_name(key: Any) -> str | None:
    """The name of ``key`` by value: equal keys, and only they, share it (None: it has none)."""
    if key is None:
        return "None"
    if _inherits(key, str):
        return str.__repr__(key)
    if _inherits(key, bytes):
        return bytes.__repr__(key)
    if _inherits(key, tuple):
        parts = [key_name(part) for part in tuple.__iter__(key)]
        if None in parts:
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore[arg-type]
    if _inherits(key, frozenset):
        named = {key_name(part) for part in frozenset.__iter__(key)}
        return None if None in named else "frozenset({" + ", ".join(sorted(named)) + "})"  # type: ignore[arg-type]
    return _number_name(key)


def _number_name(key: Any) -> str | None:
    """A number by its exact value: ``True``, ``1``, ``1.0``, ``Fraction(1)``, ``Decimal(1)``, ``1+0j``."""
    if _inherits(key, int):  # bool too
        return _int_name(int.__int__(key))
    if _inherits(key, float):
        return _real_name(float.__float__(key))
    if type(key) is Fraction or type(key) is Decimal:
        return _real_name(key)
    if type(key) is complex:
        if key.imag == 0:
            return _real_name(key.real)
        real, imag = _real_name(key.real), _real_name(key.imag)
        return None if real is None or imag is None else f"complex({real}, {imag})"
    return None


def _int_name(n: int) -> str:
    return str(n) if n.bit_length() < 10_000 else hex(n)  # str() refuses over 4,300 digits


def _real_name(x: float | Fraction | Decimal) -> str | None:
    if x.is_nan() if isinstance(x, Decimal) else x != x:  # NaN: a key only by identity
        return None
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    exact = Fraction(x)
    if exact.denominator == 1:
        return _int_name(exact.numerator)
    try:
        if Fraction(float(exact)) == exact:
            return repr(float(exact))  # 0.5 as the float prints it, whatever its type
    except OverflowError:
        pass
    return f"{_int_name(exact.numerator)}/{_int_name(exact.denominator)}"


# Types whose every instance is a fine cell value (no container to change in place, not a
# loose dataclass): decided once per type, then one look-up per write.
_LEAF_OK: set[type] = {str, int, bool, float, type(None), frozenset, bytes}


def _refuse_mutable(value: Any, where: str) -> None:
    """A plain mutable container (or non-frozen dataclass) cannot be a cell's value."""
    kind = type(value)
    if kind in _LEAF_OK:
        return
    if isinstance(value, tuple):
        for item in value:
            _refuse_mutable(item, where)
        return
    if isinstance(value, (list, dict, set, bytearray)):
        raise KernelError(f"{where}: a cell holds immutable values, got a {kind.__name__}")
    if _loose_dataclass(value):
        raise KernelError(f"{where}: a cell holds frozen dataclasses, got {kind.__name__}")
    _LEAF_OK.add(kind)


def _loose_dataclass(value: Any) -> bool:
    """``value`` is an instance of a dataclass that is not frozen."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return False
    return not type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]


class Journal:
    """Undo for cells written during an all-or-nothing operation (``begin``/``rollback``/``end``)."""

    __slots__ = ("_undo", "after")

    def __init__(self) -> None:
        self._undo: list[tuple[Callable[[Any], None], Any]] | None = None
        self.after: list[Callable[[], None]] = []  # actions deferred to a successful end

    @property
    def active(self) -> bool:
        return self._undo is not None

    def begin(self) -> None:
        if self._undo is not None:
            raise KernelError("a journal cannot nest")
        self._undo, self.after = [], []

    def note(self, restore: Callable[[Any], None], old: Any) -> None:
        if self._undo is not None:
            self._undo.append((restore, old))

    def rollback(self) -> None:
        """Put back every value written since ``begin`` (newest first); the writes stay recorded."""
        for restore, old in reversed(self._undo or []):
            restore(old)
        self._undo, self.after = None, []

    def end(self) -> list[Callable[[], None]]:
        """Stop journaling; returns the deferred actions, for the caller to run."""
        after, self._undo, self.after = self.after, None, []
        return after


class Cell(Generic[T]):
    """One value, one resource: ``get`` reads it, ``set`` writes it."""

    __slots__ = ("_journal", "_value", "_world", "resource")

    def __init__(
        self, world: World, resource: str, value: T, *, journal: Journal | None = None
    ) -> None:
        _refuse_mutable(value, resource)
        self._world, self.resource, self._value, self._journal = world, resource, value, journal

    def get(self) -> T:
        record(self._world, self.resource, write=False)
        return self._value

    def set(self, value: T) -> None:
        record(self._world, self.resource, write=True)
        _refuse_mutable(value, self.resource)
        if self._journal is not None and self._journal.active:
            self._journal.note(self._restore, self._value)
        self._value = value

    def _restore(self, value: T) -> None:
        self._value = value

    def peek(self) -> T:
        """The value, unrecorded: for tests, reports and state fingerprints, never a step's read."""
        return self._value

    def __repr__(self) -> str:
        return f"Cell({self.resource}, {self._value!r})"


class CellMap(Generic[K, V]):
    """A sparse map of cells, one resource per key (``resource[key]``); no iteration."""

    __slots__ = ("_data", "_journal", "_names", "_unnamed", "_world", "resource")
    __iter__ = None  # no iteration (``__getitem__`` would otherwise make one): no read of every key

    def __init__(
        self,
        world: World,
        resource: str,
        initial: dict[K, V] | None = None,
        *,
        journal: Journal | None = None,
    ) -> None:
        self._world, self.resource, self._journal = world, resource, journal
        self._data: dict[K, V] = {}
        # Each key's resource, computed once: equal keys share one name (``key_part``), so a
        # dict keyed by the key (by equality, as ``_data`` is) is a faithful memo of it.
        self._names: dict[Any, str] = {}
        # Every key with no name by value shares this one name (``record``'s test is ``is``).
        self._unnamed = f"{resource}{ANY_KEY}"
        for key, value in (initial or {}).items():
            _refuse_mutable(value, self.resource)
            self._data[key] = value

    def _name(self, key: Any) -> str:
        name = self._names.get(key)
        if name is None:
            part = key_part(key)
            name = self._unnamed if part == ANY_KEY else f"{self.resource}{part}"
            self._names[key] = name
        return name

    def _read(self, key: Any) -> None:
        """``record`` of a read of ``key``'s resource."""
        record(self._world, self._names.get(key) or self._name(key), write=False)

    def get(self, key: K, default: V | None = None) -> V | None:
        self._read(key)
        return self._data.get(key, default)

    def __getitem__(self, key: K) -> V:
        self._read(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        self._read(key)
        return key in self._data

    def __setitem__(self, key: K, value: V) -> None:
        self._write(key, value)

    def __delitem__(self, key: K) -> None:
        if self.pop(key, _MISSING) is _MISSING:
            raise KeyError(key)

    def pop(self, key: K, default: Any = None) -> Any:
        """Remove ``key`` (a write of its resource, present or not); its value, else ``default``."""
        old = self._data.get(key, _MISSING)
        self._write(key, _MISSING)
        return default if old is _MISSING else old

    def _write(self, key: K, value: Any) -> None:
        name = self._name(key)
        record(self._world, name, write=True)
        if value is not _MISSING:
            _refuse_mutable(value, name)
        old = self._data.get(key, _MISSING)
        if self._journal is not None and self._journal.active:
            self._journal.note(lambda back: self._put(key, back), old)
        self._put(key, value)

    def _put(self, key: K, value: Any) -> None:
        if value is _MISSING:
            self._data.pop(key, None)
        else:
            self._data[key] = value

    def peek(self) -> dict[K, V]:
        """A copy of the map, unrecorded: for tests, reports and fingerprints, never a step's read."""
        return dict(self._data)

    def __repr__(self) -> str:
        return f"CellMap({self.resource}, {self._data!r})"


class Scratch(Generic[T]):
    """A value that never outlives one call: ``with scratch.using(v):`` sets it, then puts it back.

    Not shared state (between steps it is always at rest), so not recorded:
    for a flag a primitive raises while it runs a callback (a request being
    applied at the server). A value still set when the step ends would be a
    leak, and ``using`` makes that impossible.
    """

    __slots__ = ("value",)

    def __init__(self, rest: T) -> None:
        self.value = rest

    @contextmanager
    def using(self, value: T) -> Iterator[None]:
        rest, self.value = self.value, value
        try:
            yield
        finally:
            self.value = rest


_CELLS = (Cell, CellMap, Journal, Scratch)
_SCALARS = (str, int, float, bool, bytes, type(None), frozenset, range)


class Primitive:
    """A kernel primitive whose state is all in cells: frozen by ``freeze()`` at the end of ``__init__``.

    From then on, rebinding an attribute is a ``KernelError``; ``freeze``
    itself refuses an attribute holding plain mutable state. An attribute may
    hold a cell, an immutable value, a callable, the World, another
    primitive, or one of ``REFERENCES`` (kernel objects not yet on cells,
    each named there; the list only shrinks).
    """

    __frozen = False

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__frozen:
            said = f"{type(self).__name__}.{name} set after construction: "
            said += "a primitive's state changes only through its cells"
            # Whose mistake: the kernel's own code (raceproof's bug, exit 70), or the model's,
            # which set it from outside (its error, exit 4: DESIGN.md principle 14).
            if sys._getframe(1).f_globals.get("__name__", "").startswith("raceproof.sim"):
                raise KernelError(said)
            raise AttributeError(f"{said} (the model's code set it)")
        object.__setattr__(self, name, value)

    def freeze(self) -> None:
        """No plain state from here on; every attribute is checked once, now."""
        for name, value in vars(self).items():
            if not _reference_ok(value):
                raise KernelError(
                    f"{type(self).__name__}.{name} holds plain mutable state "
                    f"({type(value).__name__}): keep it in a cell"
                )
        object.__setattr__(self, "_Primitive__frozen", True)


@functools.cache
def _references() -> tuple[type, ...]:
    """What a primitive may always hold: the classes ``_reference_ok`` accepts outright."""
    from raceproof.sim.world import World  # a cycle at import time: world -> shared -> cells

    return (*_CELLS, Primitive, World, *_SCALARS)


# Kernel classes a primitive may hold a reference to though they are not (yet) on cells:
# each one's own state is its owner's obligation. Only shrinks (issue 44).
REFERENCES: tuple[str, ...] = ()


def _reference_ok(value: Any) -> bool:
    if isinstance(value, _references()):
        return True
    if isinstance(value, tuple):
        return all(_reference_ok(item) for item in value)
    if type(value).__name__ in REFERENCES:
        return True
    if isinstance(value, (list, dict, set, bytearray)):
        return False
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return not _loose_dataclass(value)
    return callable(value)
