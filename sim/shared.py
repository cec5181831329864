"""Shared state that records its own footprints: the reduction without ``touch``.

The proof's partial-order reduction (``raceproof.sim.reduction``) needs every
step's footprint: what shared state it reads and writes. The kernel's
primitives record theirs; state the actors share as plain Python objects
needed a ``world.touch`` next to every access and a ``declare_footprints``
promise that nothing was missed. The containers here record every read and
write themselves, through the kernel's cells (``raceproof.sim.cells``, whose ``record``
is the one caller of ``World.touch``), so
a model whose actors share state only through them and the kernel's
primitives gets the reduction with neither::

    cache = world.shared.dict("cache")          # a dict: d[k], d[k] = v, del d[k], in, get, len, ...
    seen = world.shared.set("seen")             # a set: add, discard, in, len, iteration
    acks = world.shared.counter("acks")         # a counter: acks.value, acks.add(1)
    lease = world.shared.record("lease", holder=None, token=0)  # attributes: lease.holder

Creating one declares the model's footprints (``World.declare_footprints``):
create the shared state in ``build``, before spawning the actors that use
it. Granularity: one resource per key, element and field; changing a dict's
or set's keys (insert, delete) also writes the container, which any
whole-container read (``len``, iteration) reads, so two actors adding
different keys are dependent: when the keys are known, create them up front
(``world.shared.dict("offsets", {task: 0 for task in tasks})``) and only
their values change. Store immutable values (a
list stored in a dict is tracked when replaced, not when appended to). What
cannot be tracked (an object the actors mutate in place) still takes
``world.touch``; ``prove --check-footprints`` finds what was missed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableMapping, MutableSet
from typing import TYPE_CHECKING, Any, TypeVar

from raceproof.sim.cells import key_part, record

if TYPE_CHECKING:
    from raceproof.sim.choices import ChoiceSource
    from raceproof.sim.world import World


class WholeObjectFootprints:
    """A runner whose runs record each tracked container as one resource.

    As a hand-placed ``touch`` of the whole container would: for ``raceproof
    bench --proofs``, which compares the proofs of the models that moved onto
    tracked state with the footprints their hand-placed touches had. Only
    footprints change, never a run's history. A parameter of the run (its
    source's ``whole_object_footprints``), never a switch of the process: it was
    a module-level flag, which changed every proof made while it was set.
    """

    def __init__(self, run: Callable[[ChoiceSource], Any]) -> None:
        self.run = run

    def __call__(self, source: ChoiceSource) -> Any:
        source.whole_object_footprints = True
        return self.run(source)


def _part(world: World, resource: str, part: str) -> str:
    return (
        resource if getattr(world.source, "whole_object_footprints", False) else f"{resource}{part}"
    )


K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class Shared:
    """``world.shared``: the factory of a run's tracked shared state."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._names: set[str] = set()

    def _claim(self, kind: str, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise ValueError(f"shared {kind} needs a non-empty name, got {name!r}")
        if name in self._names:
            raise ValueError(f"shared state {name!r} already exists in this run")
        self._names.add(name)
        self._world.declare_footprints()
        return f"shared:{name}"

    def dict(
        self, name: str, initial: Iterable[tuple[Any, Any]] | dict[Any, Any] = ()
    ) -> TrackedDict[Any, Any]:
        """A dict whose every read and write is a footprint."""
        return TrackedDict(self._world, self._claim("dict", name), dict(initial))

    def set(self, name: str, initial: Iterable[Any] = ()) -> TrackedSet[Any]:
        """A set whose every read and write is a footprint."""
        return TrackedSet(self._world, self._claim("set", name), set(initial))

    def counter(self, name: str, start: int = 0) -> Counter:
        """An integer read with ``.value`` and changed with ``.add(n)`` or ``.set(v)``."""
        return Counter(self._world, self._claim("counter", name), start)

    def record(self, name: str, /, **fields: Any) -> Record:
        """An object with these attributes (and no others), each one a footprint.

        ``name`` is positional-only, so a field may itself be called ``name``
        (``world.shared.record("member", name="c1", epoch=0)``). Only the
        record's own three slots (``_fields``, ``_resource``, ``_world``) are
        refused: an attribute by that name would not be the field.
        """
        taken = sorted(set(fields) & set(Record.__slots__))
        if taken:
            raise ValueError(f"shared record {name!r}: field names {taken} are the record's own")
        return Record(self._world, self._claim("record", name), fields)


class TrackedDict(MutableMapping[K, V]):
    """A dict recording ``name[key]`` per key and ``name`` for its set of keys."""

    def __init__(self, world: World, resource: str, data: dict[K, V]) -> None:
        self._world, self._resource, self._data = world, resource, data

    def _key(self, key: Any) -> str:
        return _part(self._world, self._resource, key_part(key))

    def __getitem__(self, key: K) -> V:
        record(self._world, self._key(key), write=False)
        return self._data[key]

    def __setitem__(self, key: K, value: V) -> None:
        record(self._world, self._key(key), write=True)
        if key not in self._data:
            record(self._world, self._resource, write=True)
        self._data[key] = value

    def __delitem__(self, key: K) -> None:
        record(self._world, self._key(key), write=True)
        if key in self._data:
            record(self._world, self._resource, write=True)
        del self._data[key]

    def __contains__(self, key: object) -> bool:
        record(self._world, self._key(key), write=False)
        return key in self._data

    def __iter__(self) -> Iterator[K]:
        record(self._world, self._resource, write=False)
        return iter(list(self._data))

    def __len__(self) -> int:
        record(self._world, self._resource, write=False)
        return len(self._data)

    def __repr__(self) -> str:
        return f"TrackedDict({self._resource}, {self._data!r})"


class TrackedSet(MutableSet[T]):
    """A set recording ``name[element]`` per element and ``name`` for its membership."""

    def __init__(self, world: World, resource: str, data: set[T]) -> None:
        self._world, self._resource, self._data = world, resource, data

    def _element(self, element: Any) -> str:
        return _part(self._world, self._resource, key_part(element))

    def __contains__(self, element: object) -> bool:
        record(self._world, self._element(element), write=False)
        return element in self._data

    def __iter__(self) -> Iterator[T]:
        record(self._world, self._resource, write=False)
        return iter(sorted(self._data, key=repr))  # an order that does not depend on hashing

    def __len__(self) -> int:
        record(self._world, self._resource, write=False)
        return len(self._data)

    def add(self, element: T) -> None:
        record(self._world, self._element(element), write=True)
        if element not in self._data:
            record(self._world, self._resource, write=True)
            self._data.add(element)

    def discard(self, element: T) -> None:
        record(self._world, self._element(element), write=True)
        if element in self._data:
            record(self._world, self._resource, write=True)
            self._data.discard(element)

    def __repr__(self) -> str:
        return f"TrackedSet({self._resource}, {sorted(self._data, key=repr)!r})"


class Counter:
    """A shared integer: ``value`` reads it, ``add`` and ``set`` write it."""

    def __init__(self, world: World, resource: str, start: int) -> None:
        self._world, self._resource, self._value = world, resource, start

    @property
    def value(self) -> int:
        record(self._world, self._resource, write=False)
        return self._value

    def add(self, n: int = 1) -> int:
        """Add ``n``; returns the new value."""
        record(self._world, self._resource, write=True)
        self._value += n
        return self._value

    def set(self, value: int) -> None:
        record(self._world, self._resource, write=True)
        self._value = value

    def __repr__(self) -> str:
        return f"Counter({self._resource}, {self._value})"


class Record:
    """A dataclass-like object whose attributes are each a resource ``name.field``."""

    __slots__ = ("_fields", "_resource", "_world")

    def __init__(self, world: World, resource: str, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_world", world)
        object.__setattr__(self, "_resource", resource)
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        if name not in fields:
            raise AttributeError(f"{self._resource} has no field {name!r}")
        record(self._world, _part(self._world, self._resource, f".{name}"), write=False)
        return fields[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._fields:
            raise AttributeError(f"{self._resource} has no field {name!r} (declare it at creation)")
        record(self._world, _part(self._world, self._resource, f".{name}"), write=True)
        self._fields[name] = value

    def __repr__(self) -> str:
        inside = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"Record({self._resource}, {inside})"
