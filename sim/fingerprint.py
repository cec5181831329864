"""Automatic state fingerprints: the kernel names a run's state, no hand-written function needed.

The proof's state cache (``raceproof.sim.state_cache``) cuts a run at a state the
walk explored before. Until this module it needed ``World.declare_state(fn)``,
which no built-in model wrote. Here the kernel computes a canonical text of the
whole state a run's future depends on, from what it can see:

- the shared state: every cell, ``CellMap`` and tracked container reachable from
  the run's processes and pending events, named by value (a ``CellMap`` by
  ``cells.key_name`` of its keys, never by ``repr``, ``hash`` or ``id`` order);
- each live process (sorted by its spawn identity): the event it waits on, and
  its position -- every generator of its ``yield from`` chain by code object and
  ``f_lasti``, the names of the locals it has bound and can still read
  (``raceproof.sim.liveness``: a local its code writes before reading it again
  is dead, and left out) and every value its frame holds of those, its cells and
  its evaluation stack (a ``for`` loop's iterator, by its ``__reduce__``). Not
  its step count: a step key of a live process (``/client0#0@7``, in pending
  events, event names and the sleep set the state is looked up with) is written
  relative to that process's steps so far (``relative_steps``): which step comes
  next, not how many came before;
- every pending event relative to now (delay, priority, insertion order, its
  step key and the callbacks it runs), the World's own counters that name future
  steps (spawns, timer arms), its nodes, ``after_step`` observers and reached
  probes;
- the past the checkers judge: every op of the history (time, actor, kind,
  fields), as a multiset -- in order when a checker reads op order
  (``reads_op_order``, ``World.op_order_read``); or, where the scenario declares
  what its checkers read (``raceproof.sim.past``), that summary of the history,
  and then no virtual time if it declares that nothing reads the clock's
  absolute value.

Objects are encoded as a graph: a mutable object (list, dict, instance,
generator, event, cell) gets a label at its first visit and a reference to the
label afterwards, so aliasing is part of the text and two states get equal
texts only when their object graphs are isomorphic with equal values. Dicts keep
insertion order (iteration can read it); sets are sorted by their elements'
plain names. Constants outside the state are named, not walked: the World, its
choice source and history (encoded as roots), classes, modules, code objects.

Soundness condition: equal texts mean equal futures and equal verdicts on them.
It holds for what the encoding sees; three things it cannot see are excluded by
the kernel's own rules: module globals a model mutates (principle 1: a run's
behaviour depends on its choices only; the proof's replay checks it), the wall
clock and global random (forbidden in sim/ and models/), and identity of objects
(``is`` against a sentinel is safe only for the named constants: SimPy's
``PENDING``; any other bare ``object()`` is not fingerprintable). A value the
kernel cannot name by content (a C object with no ``__reduce__``, a set of
objects with no plain name, a graph deeper than ``MAX_DEPTH``) raises
``Unfingerprintable`` with a sentence; the walk says so once and keeps the
stateless walk for that model.

Public API (for the state cache and for symmetry): ``fingerprint(world)`` (the
digest), ``state_text(world, rename=None, memo=None)`` (the canonical text; ``rename``
is applied to every string before anything is sorted by it -- str values, set
elements, ``CellMap`` keys and resources, process identities, pending step keys,
the history's op lines -- so ``symmetry.canonical`` renders the state once per
renaming of interchangeable actors), ``Memo`` (one per run: op texts computed
once), ``Unfingerprintable``. ``state_cache.kernel_state`` is the one caller
in the walk.
"""

from __future__ import annotations

import enum
import functools
import gc
import hashlib
import re
import types
from collections.abc import Callable
from typing import Any

from simpy.events import PENDING, Condition, Timeout

from raceproof.sim.cells import Cell, CellMap, key_name
from raceproof.sim.choices import ChoiceSource
from raceproof.sim.history import History, canonical_json
from raceproof.sim.liveness import live_locals
from raceproof.sim.world import World, _step_key

MAX_DEPTH = 400  # nested objects walked before a graph counts as too deep to name
# Attributes that name how a state was reached, not what it is: left out of an object's text.
# ``rp_by``: the step that triggered an event (the footprint check's ``enabled_by`` only);
# ``rp_steps``: a process's steps so far (its step keys are written relative to it instead);
# ``rp_held``: how many of them a node's pause held (its frames say where its code is).
SKIPPED_ATTRIBUTES = frozenset({"rp_by", "rp_steps", "rp_held"})
# A timeout's ``_delay`` is how long it was set for (SimPy reads it only for ``repr``): what it
# still waits is its pending entry's time, relative to now (``_Encoder.pending``).
SKIPPED_OF = {Timeout: frozenset({"_delay"})}
_ATOMS = (int, float, complex, str, bytes, type(None))
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


class Unfingerprintable(Exception):
    """Part of the state has no canonical name: the model keeps the stateless walk."""


def fingerprint(
    world: Any, rename: Callable[[str], str] | None = None, memo: Memo | None = None
) -> str:
    """The digest of ``state_text(world, rename, memo)``: 32 hex characters."""
    text = state_text(world, rename, memo)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def state_text(
    world: Any, rename: Callable[[str], str] | None = None, memo: Memo | None = None
) -> str:
    """The canonical text of ``world``'s state (see the module docstring); ``Unfingerprintable``.

    ``rename`` (for symmetry) maps each process's spawn identity (``rp_id``) and each
    actor name in the history to the one it stands for; processes are then ordered
    by their new names. ``memo``: one per run (its ops' texts, computed once).
    """
    relative = relative_steps(world)
    encoder = _Encoder(world, relative if rename is None else lambda text: rename(relative(text)))
    try:
        encoder.roots(memo if memo is not None else Memo())
    except RecursionError:
        raise Unfingerprintable("an object graph deeper than Python's recursion limit") from None
    return "\x1f".join(encoder.out)


def relative_steps(world: Any) -> Callable[[str], str]:
    """Step keys of live processes rewritten relative to their steps so far, in any text.

    ``/client0#0@7`` (the step a process takes after its 7th) becomes
    ``/client0#0@~1`` when that process has taken 6: the next one. One-to-one for a
    state (each process's count is fixed), so the sleep set's keys, renamed alike,
    still name the same steps. A finished process's keys are relative to its last count.
    """
    counts = {p.rp_id: p.rp_steps for p in world.processes}
    if not counts:
        return _same
    alternatives = "|".join(re.escape(pid) for pid in sorted(counts, key=lambda p: (-len(p), p)))
    pattern = re.compile(rf"(?<![\w#/.-])({alternatives})@(\d+)")

    def rename(text: str) -> str:
        if "@" not in text:
            return text
        return pattern.sub(lambda m: f"{m[1]}@~{int(m[2]) - counts[m[1]]}", text)

    return rename


class Memo:
    """What one run's fingerprints share: the text of each op logged so far."""

    def __init__(self) -> None:
        self.ops: list[str] = []


def _same(name: str) -> str:
    return name


def plain_name(value: Any) -> str | None:
    """The name by value of an immutable plain value (what a set may hold), else None."""
    if isinstance(value, enum.Enum):
        return f"enum:{type(value).__module__}.{type(value).__qualname__}.{value.name}"
    name = key_name(value)
    if name is None:
        return None
    return f"{type(value).__name__}:{name}"


class _Encoder:
    """One canonical walk over a world's state; ``out`` is its text, token by token."""

    def __init__(self, world: Any, rename: Callable[[str], str]) -> None:
        self.world, self.rename = world, rename
        self.labels: dict[int, int] = {}
        self.kept: list[Any] = []  # every labelled object, alive: a temporary's id is never reused
        self.out: list[str] = []
        self.depth = 0
        self.deferred: list[Any] = []  # conditions: labelled where met, encoded last

    # -- the roots -------------------------------------------------------------------
    def roots(self, memo: Memo) -> None:
        world = self.world
        now, past = world.now_ms, world.past
        # No clock where the scenario declares nothing reads or holds its absolute value.
        self.out.append("now=~" if past is not None and not past.absolute_time else f"now={now}")
        processes = [p for p in world.processes if p.is_alive]
        processes.sort(key=lambda p: self.rename(p.rp_id))
        self.out.append(f"processes={len(processes)}")
        for process in processes:
            self.out.append(f"proc:{self.rename(process.rp_id)}")
            self.enc(process)
        self.pending(now)
        self.out.append("world")
        for name in ("_arms", "_context", "untracked", "nodes", "paused_nodes", "after_step"):
            self.out.append(name)
            self.enc(getattr(world, name))
        spawned = sorted((self.rename(k), v) for k, v in world._spawned.items())
        self.out.append(f"spawned={spawned}")
        self.out.append(f"probes={sorted(map(self.rename, world.probes))}")
        self.out.append(
            f"flags={world.finished!r},{world.op_order_read},{world.footprints_declared}"
        )
        self.out.append("shared")
        self.enc(world._shared)
        if past is None:
            self.past(world.history, memo, ordered=world.op_order_read)
        else:  # what the checkers read of it, declared (``raceproof.sim.past``)
            self.out.append("past")
            self.enc(past.summary(world.history))
        self.conditions()

    def conditions(self) -> None:
        """Every condition (``AllOf``/``AnyOf``) met, encoded after the rest of the state.

        By then the events it waits on are labelled where their owners hold them (each
        client's ``done``), so its events are references; under declared symmetry they
        are sorted (``_condition_events``): a condition over the actors' events and its
        image with the actors exchanged are one.
        """
        while self.deferred:
            condition = self.deferred.pop(0)
            self.out.append(f"condition@{self.labels[id(condition)]}")
            _instance(self, condition)

    def pending(self, now: int) -> None:
        """Every scheduled event, relative to now, in the order SimPy would run them."""
        entries = sorted([*self.world._due, *self.world._queue], key=lambda e: e[:3])
        self.out.append(f"pending={len(entries)}")
        for time, priority, _, event in entries:
            key = _step_key(event)
            self.out.append(f"at+{time - now}/{int(priority)}/{key and self.rename(key)}")
            self.enc(event)

    def past(self, history: History, memo: Memo, *, ordered: bool) -> None:
        texts, rename = memo.ops, self.rename
        for op in history.ops[len(texts) :]:
            texts.append(f"{op.time_ms}|{op.actor}|{op.kind}|{canonical_json(op.fields)}")
        ops = [t for t in texts if t.split("|", 3)[2] != "run.end"]
        if rename is not _same:
            ops = [rename(text) for text in ops]
        if not ordered:
            ops.sort()
        self.out.append(f"history={len(ops)}")
        self.out.extend(ops)

    # -- values ----------------------------------------------------------------------
    def enc(self, value: Any) -> None:
        kind = type(value)
        handler = _HANDLERS.get(kind)
        if handler is None:
            handler = _HANDLERS[kind] = _classify(kind)
        handler(self, value)

    def labelled(self, value: Any, content: Callable[[_Encoder, Any], None]) -> None:
        """An object with identity: a label at its first visit, a reference to it later."""
        label = self.labels.get(id(value))
        if label is not None:
            self.out.append(f"@{label}")
            return
        label = self.labels[id(value)] = len(self.labels)
        self.kept.append(value)
        self.out.append(f"#{label}")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unfingerprintable(f"objects nested more than {MAX_DEPTH} deep")
        content(self, value)
        self.depth -= 1

    def sequence(self, tag: str, items: Any) -> None:
        self.out.append(f"{tag}[")
        for item in items:
            self.enc(item)
        self.out.append("]")

    def mapping(self, tag: str, items: Any) -> None:
        self.out.append(f"{tag}{{")
        for key, item in items:
            self.enc(key)
            self.enc(item)
        self.out.append("}")


def _sorted_names(encoder: _Encoder, values: Any) -> list[str]:
    """A set's elements by their names, renamed (symmetry) before they are sorted."""
    names = []
    for value in values:
        name = plain_name(value)
        if name is None:
            raise Unfingerprintable(
                f"a set holds {type(value).__name__}, which has no name by value"
            )
        names.append(encoder.rename(name))
    return sorted(names)


# -- one handler per type, chosen once (``_classify``) ----------------------------------
Handler = Callable[[_Encoder, Any], None]


def _atom(encoder: _Encoder, value: Any) -> None:
    encoder.out.append(f"{type(value).__name__}:{value!r}")


def _str(encoder: _Encoder, value: str) -> None:
    encoder.out.append(f"str:{encoder.rename(value)!r}")


def _enum(encoder: _Encoder, value: Any) -> None:
    encoder.out.append(plain_name(value) or "")


def _tuple(encoder: _Encoder, value: Any) -> None:
    encoder.sequence(f"tuple{len(value)}", value)


def _frozenset(encoder: _Encoder, value: Any) -> None:
    encoder.out.append(f"frozenset{_sorted_names(encoder, value)}")


def _named(name: Callable[[Any], str]) -> Handler:
    return lambda encoder, value: encoder.out.append(name(value))


def _builtin(encoder: _Encoder, value: Any) -> None:
    owner = value.__self__
    if owner is None or isinstance(owner, types.ModuleType):
        encoder.out.append(f"builtin:{value.__qualname__}")
    else:  # a bound method of a C type (``list.append`` of one list)
        encoder.labelled(value, _bound)


def _bound(encoder: _Encoder, value: Any) -> None:
    encoder.out.append(f"method:{value.__name__}")
    encoder.enc(value.__self__)
    if isinstance(value, types.MethodType):
        encoder.enc(value.__func__)


def _bare_object(encoder: _Encoder, value: Any) -> None:
    if value is not PENDING:
        raise Unfingerprintable("a bare object() (a sentinel known only by identity)")
    encoder.out.append("PENDING")


def _list(encoder: _Encoder, value: Any) -> None:
    encoder.sequence("list", value)


def _dict(encoder: _Encoder, value: Any) -> None:
    encoder.mapping("dict", value.items())  # insertion order: iteration can read it


def _set(encoder: _Encoder, value: Any) -> None:
    encoder.out.append(f"set{_sorted_names(encoder, value)}")


def _cell_map(encoder: _Encoder, value: CellMap[Any, Any]) -> None:
    named = []
    for key, item in value._data.items():
        name = key_name(key)
        if name is None:
            raise Unfingerprintable(f"{value.resource} has a key with no name by value")
        named.append((encoder.rename(name), item))
    named.sort(key=lambda pair: pair[0])
    encoder.out.append(f"cellmap:{encoder.rename(value.resource)}:{len(named)}")
    for name, item in named:
        encoder.out.append(name)
        encoder.enc(item)


def _cell(encoder: _Encoder, value: Cell[Any]) -> None:
    encoder.out.append(f"cell:{encoder.rename(value.resource)}")
    encoder.enc(value._value)


def _closure_cell(encoder: _Encoder, value: types.CellType) -> None:
    try:
        contents = value.cell_contents
    except ValueError:
        encoder.out.append("cell:empty")
        return
    encoder.out.append("cell")
    encoder.enc(contents)


def _function(encoder: _Encoder, value: types.FunctionType) -> None:
    encoder.out.append(f"fn:{_code_name(value.__code__)}")
    encoder.enc(value.__defaults__)
    encoder.enc(value.__kwdefaults__)
    encoder.enc(value.__closure__)


def _partial(encoder: _Encoder, value: functools.partial[Any]) -> None:
    encoder.sequence("partial", (value.func, value.args))
    encoder.mapping("kw", value.keywords.items())


def _exception(encoder: _Encoder, value: BaseException) -> None:
    encoder.sequence(f"exception:{type(value).__qualname__}", value.args)


def _generator(encoder: _Encoder, value: types.GeneratorType[Any, Any, Any]) -> None:
    """Where a generator is suspended and every value its frame holds."""
    frame = value.gi_frame
    encoder.out.append(f"gen:{_code_name(value.gi_code)}")
    if frame is None:
        encoder.out.append("done")
        return
    values = _frame_values(value)
    local = frame.f_locals  # once: each read of ``f_locals`` copies the frame's slots again
    bound = sorted(local)  # which slots are bound: the referents skip empty ones
    live = live_locals(value.gi_code, frame.f_lasti)
    if live is not None:  # no cells: the first referents are the bound locals, in slot order
        slots = [name for name in value.gi_code.co_varnames if name in local]
        kept = [v for name, v in zip(slots, values, strict=False) if name in live]
        values, bound = kept + values[len(slots) :], [name for name in bound if name in live]
    encoder.out.append(f"at:{frame.f_lasti}:{bound}")
    encoder.sequence("frame", values)


def _instance(encoder: _Encoder, value: Any) -> None:
    """A Python object: its class and every attribute (``__dict__`` and slots) by name."""
    kind = type(value)
    attributes: dict[str, Any] = {}
    for slot in _all_slots(kind):
        try:
            attributes[slot] = object.__getattribute__(value, slot)
        except AttributeError:
            continue
    attributes.update(getattr(value, "__dict__", {}))
    encoder.out.append(f"obj:{kind.__module__}.{kind.__qualname__}")
    skipped = _SKIPPED.get(kind)
    if skipped is None:
        skipped = _SKIPPED[kind] = SKIPPED_OF.get(kind, SKIPPED_ATTRIBUTES) | SKIPPED_ATTRIBUTES
    for name in sorted(attributes):
        if name in skipped:
            continue
        encoder.out.append(name)
        if name == "_events" and isinstance(value, Condition):
            _condition_events(encoder, attributes[name])
        else:
            encoder.enc(attributes[name])


def _condition_events(encoder: _Encoder, events: Any) -> None:
    """A condition's events; in a canonical order under declared symmetry.

    The order of a condition's events shows only in the order of its value (SimPy's
    ``ConditionValue``). Declaring actors symmetric promises that the model treats them
    alike, which includes not reading that order from a condition over their events
    (``raceproof.sim.symmetry``; ``--check-symmetry`` checks it): there the events that
    are references to an event labelled before come first, by label; the others follow
    in their order.
    """
    if not getattr(encoder.world, "symmetric", ()):
        encoder.enc(events)
        return
    out, encoder.out = encoder.out, []
    known = len(encoder.labels)  # labels given before: the references that may move
    texts = []
    for event in events:
        encoder.out = []
        encoder.enc(event)
        texts.append(encoder.out)
    encoder.out = out
    # References first, by label; events met here for the first time after them, in order.
    texts.sort(key=lambda text: min(_reference(text), known))
    out.append(f"events{len(texts)}[")  # sorted: stable, so first visits keep their order
    for text in texts:
        out.extend(text)
    out.append("]")


def _reduced(encoder: _Encoder, value: Any) -> None:
    """A C object (an iterator, a deque, a Decimal): by ``__reduce_ex__``, else unnamed."""
    kind = type(value)
    try:
        reduced = value.__reduce_ex__(4)
    except Exception as exc:
        raise Unfingerprintable(
            f"a {kind.__module__}.{kind.__qualname__} has no canonical content ({exc})"
        ) from None
    if isinstance(reduced, str):  # a global's name: a constant
        encoder.out.append(f"global:{reduced}")
        return
    name = f"reduced:{kind.__module__}.{kind.__qualname__}"
    listitems = reduced[3] if len(reduced) > 3 else None
    dictitems = reduced[4] if len(reduced) > 4 else None
    if listitems is None and dictitems is None:
        encoder.sequence(name, reduced)
        return
    # Items by iterator (a deque's): the iterator's own reduction names only its container
    # and an index, so the items go in here, in order (``test_fingerprint``: two deques).
    encoder.sequence(name, (*reduced[:3], *reduced[5:]))
    encoder.sequence("items", list(listitems or ()))
    encoder.sequence("pairs", [part for pair in dictitems or () for part in pair])


def _reference(text: list[str]) -> int:
    """The label a text refers back to, or a number past every label."""
    return int(text[0][1:]) if len(text) == 1 and text[0].startswith("@") else 1 << 62


def _defer(encoder: _Encoder, value: Any) -> None:
    encoder.out.append("condition")
    encoder.deferred.append(value)  # its content comes last (``_Encoder.conditions``)


def _with_label(content: Handler) -> Handler:
    return lambda encoder, value: encoder.labelled(value, content)


def _classify(kind: type) -> Handler:
    """The handler of every value of type ``kind``."""
    if issubclass(kind, enum.Enum):
        return _enum
    constant = _constant(kind, World)
    if constant is not None:
        return constant
    for base, content in _CONTENTS:
        if issubclass(kind, base):
            return _with_label(content)
    if issubclass(kind, Condition) and _pure_python(kind):
        return _with_label(_defer)
    return _with_label(_instance if _pure_python(kind) else _reduced)


def _constant(kind: type, world: type) -> Handler | None:
    """Types whose values are no part of the state: named, never walked."""
    if issubclass(kind, world):
        return _named(lambda _: "WORLD")
    if issubclass(kind, (ChoiceSource, History)):
        return _named(lambda value: type(value).__name__)
    if issubclass(kind, type):
        return _named(lambda value: f"type:{value.__module__}.{value.__qualname__}")
    if kind is types.ModuleType:
        return _named(lambda value: f"module:{value.__name__}")
    if kind is types.CodeType:
        return _named(lambda value: f"code:{_code_name(value)}")
    if kind is types.BuiltinFunctionType:
        return _builtin
    if kind is object:
        return _bare_object
    return None


_CONTENTS: tuple[tuple[type, Handler], ...] = (
    (CellMap, _cell_map),
    (Cell, _cell),
    (types.GeneratorType, _generator),
    (types.FunctionType, _function),
    (types.MethodType, _bound),
    (types.CellType, _closure_cell),
    (functools.partial, _partial),
    (BaseException, _exception),
)
_HANDLERS: dict[type, Handler] = {
    **{kind: _atom for kind in (*_ATOMS, bool)},
    str: _str,
    tuple: _tuple,
    frozenset: _frozenset,
    list: _with_label(_list),
    dict: _with_label(_dict),
    set: _with_label(_set),
}


def _frame_values(value: types.GeneratorType[Any, Any, Any]) -> list[Any]:
    """The values a suspended generator's frame holds: locals, cells, then its stack.

    CPython visits a generator's frame as its code, function, then every slot
    of ``localsplus`` that is set, in order (locals, cells, free variables, the
    evaluation stack): the referents after the frame's function and code; then
    the generator's saved exception, when it has one.
    """
    referents = gc.get_referents(value)
    code = value.gi_code
    for index in range(1, len(referents)):
        before = referents[index - 1]
        if referents[index] is code and getattr(before, "__code__", None) is code:
            values = referents[index + 1 :]
            # Last, the exception being handled (``gi_exc_state``) unless NULL: None there
            # says no exception, as NULL does (a generator that left an ``except`` holds
            # it). One trailing None dropped: the stack's depth is fixed at a given
            # ``f_lasti``, so the length still tells a stack's None from that one.
            return values[:-1] if values and values[-1] is None else values
    raise Unfingerprintable(f"the frame of {code.co_qualname} could not be read")


def _code_name(code: types.CodeType) -> str:
    return f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}"


def _all_slots(kind: type) -> tuple[str, ...]:
    """Every slot of ``kind`` and its bases (not ``__dict__``/``__weakref__``), found once."""
    found = _SLOTS.get(kind)
    if found is not None:
        return found
    names = []
    for klass in kind.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__"):
                names.append(name)
    found = _SLOTS[kind] = tuple(names)
    return found


_SLOTS: dict[type, tuple[str, ...]] = {}
_SKIPPED: dict[type, frozenset[str]] = {}  # per class: the attributes ``_instance`` leaves out


def _pure_python(kind: type) -> bool:
    """Every class of ``kind``'s MRO but ``object`` is defined in Python: no hidden C state."""
    return all(k is object or k.__flags__ & _HEAP_TYPE for k in kind.__mro__)
