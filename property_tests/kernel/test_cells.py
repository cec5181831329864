"""Cells (``raceproof.sim.cells``): every read and write of a primitive's state is its footprint.

The reduction trusts what cells record, so each case pins the entries an
access makes, and the guard that keeps a primitive's state in its cells:
a frozen primitive refuses a new attribute value and plain mutable state.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.touch_log import TouchLog
from raceproof.sim.cells import Cell, CellMap, Journal, Primitive, key_part
from raceproof.sim.errors import KernelError
from raceproof.sim.world import ProcessGenerator, World


def test_a_cell_records_a_read_on_get_and_a_write_on_set() -> None:
    world = TouchLog()
    cell = Cell(world, "g:holder", None)
    assert cell.get() is None
    cell.set("a")
    assert cell.peek() == "a"  # peek records nothing
    assert world.touched == [("g:holder", False), ("g:holder", True)]


def test_a_cell_map_records_each_key_as_its_own_resource() -> None:
    world = TouchLog()
    table = CellMap(world, "g:waits", {"a": 1})
    assert table["a"] == 1 and table.get("b") is None and "a" in table
    table["b"] = 2
    assert table.pop("a") == 1 and table.pop("zz", "none") == "none"
    with pytest.raises(KeyError):
        del table["a"]
    assert table.peek() == {"b": 2}
    assert world.touched == [
        ("g:waits['a']", False),
        ("g:waits['b']", False),
        ("g:waits['a']", False),
        ("g:waits['b']", True),
        ("g:waits['a']", True),
        ("g:waits['zz']", True),
        ("g:waits['a']", True),
    ]
    with pytest.raises(TypeError):
        iter(table)  # type: ignore[call-overload]  # no iteration: no hidden read of every key


def test_a_key_with_no_name_also_records_the_any_key_entry_and_a_named_key_does_not() -> None:
    """Cells unroll ``record``: each access of a key with no name by value (a NaN, an
    object) still reads ``[?]`` beside its resource, and no other access does."""
    world = TouchLog()
    table: CellMap[object, int] = CellMap(world, "g:t")
    opaque, nan = object(), float("nan")
    table[opaque] = 1
    assert table[opaque] == 1 and table.get(nan) is None and nan not in table and 1.0 not in table
    assert Cell(world, "g:odd[?]", 0).get() == 0 and Cell(world, "g:even", 0).get() == 0
    assert world.touched == [
        ("g:t[?]", True),
        ("[?]", False),
        ("g:t[?]", False),
        ("[?]", False),
        ("g:t[?]", False),
        ("[?]", False),
        ("g:t[?]", False),
        ("[?]", False),
        ("g:t[1]", False),
        ("g:odd[?]", False),
        ("[?]", False),
        ("g:even", False),
    ]


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3) | st.none()), max_size=8))
def test_a_rollback_puts_every_value_back_and_keeps_the_writes_recorded(
    writes: list[tuple[str, int | None]],
) -> None:
    world = TouchLog()
    journal = Journal()
    table: CellMap[str, int] = CellMap(world, "t", {"a": 0}, journal=journal)
    count = Cell(world, "n", 0, journal=journal)
    journal.begin()
    for key, value in writes:
        if value is None:
            table.pop(key)
        else:
            table[key] = value
        count.set(count.peek() + 1)
    journal.rollback()
    assert table.peek() == {"a": 0} and count.peek() == 0
    assert sum(write for _, write in world.touched) == 2 * len(writes)
    assert not journal.active


def test_a_journal_hands_back_its_deferred_actions_and_cannot_nest() -> None:
    journal = Journal()
    journal.begin()
    journal.after.append(lambda: None)
    with pytest.raises(KernelError):
        journal.begin()
    assert len(journal.end()) == 1 and not journal.active and journal.after == []


@dataclass
class Loose:
    x: int


@dataclass(frozen=True)
class Fixed:
    x: int


@pytest.mark.parametrize("value", [[1], {"a": 1}, {1}, (1, [2]), Loose(1)])
def test_a_cell_refuses_a_value_that_could_change_in_place(value: object) -> None:
    world = TouchLog()
    with pytest.raises(KernelError):
        Cell(world, "c", value)
    cell = Cell(world, "c", Fixed(1))
    with pytest.raises(KernelError):
        cell.set(value)
    with pytest.raises(KernelError):
        CellMap(world, "m")["k"] = value
    assert cell.peek() == Fixed(1)


class Gate(Primitive):
    def __init__(self, world: TouchLog, extra: object = ()) -> None:
        self.world = world
        self.holder = Cell(world, "gate.holder", None)
        self.extra = extra
        self.freeze()


def test_a_frozen_primitive_refuses_a_new_attribute_value() -> None:
    gate = Gate(TouchLog())
    with pytest.raises(AttributeError, match=r"Gate\.holder set after construction.*model's"):
        gate.holder = Cell(gate.world, "other", 1)  # from a model's (here a test's) code
    with pytest.raises(AttributeError):
        gate.fresh = 1  # type: ignore[attr-defined]
    kernel = {"__name__": "raceproof.sim.imagined", "gate": gate}
    with pytest.raises(KernelError, match=r"Gate\.holder set after construction"):
        exec("gate.holder = None", kernel)  # the same from the kernel's own code: its bug


@pytest.mark.parametrize("extra", [[], {}, set(), Loose(1), (1, [])])
def test_freeze_refuses_plain_mutable_state(extra: object) -> None:
    with pytest.raises(KernelError, match="holds plain mutable state"):
        Gate(TouchLog(), extra)


@pytest.mark.parametrize("extra", [(), "s", 3, None, Fixed(1), len, frozenset({1})])
def test_freeze_takes_immutable_values_and_callables(extra: object) -> None:
    assert Gate(TouchLog(), extra).extra == extra


def test_a_key_is_named_by_the_one_function_the_tracked_containers_use() -> None:
    world = TouchLog()
    world.declare_footprints()
    tracked = world.shared.dict("d")
    tracked[3] = 1
    CellMap(world, "d")[3] = 1
    assert world.touched[0][0] == f"shared:d{key_part(3)}"
    assert world.touched[-1][0] == f"d{key_part(3)}"


# The kernel's classes that hold a run's state and are not on cells yet (issue 44 item 1b moves
# them): the list only shrinks, and a class that moves leaves it in the same commit.
NOT_YET_ON_CELLS = {"Actor", "Network", "SimRuntime"}


def test_every_kernel_primitive_keeps_its_state_in_cells_but_the_listed_ones() -> None:
    import inspect

    import raceproof.sim

    stateful = {
        name: cls
        for name, cls in vars(raceproof.sim).items()
        if inspect.isclass(cls)
        and cls.__module__.startswith("raceproof.sim")
        and "world" in inspect.signature(cls.__init__).parameters
    }
    assert {"VersionedStore", "LaggingCache", "ZkClient", "FileSystem"} <= set(stateful)
    on_cells = {name for name, cls in stateful.items() if issubclass(cls, Primitive)}
    assert set(stateful) - on_cells == NOT_YET_ON_CELLS


def test_a_run_whose_model_changes_a_primitive_outside_its_cells_is_the_models_error() -> None:
    """The guard in a run: a model step that rebinds a primitive's state is the verdict error."""
    from raceproof.sim import ReplaySource, VersionedStore, execute

    def build(world: World) -> None:
        store = VersionedStore(world)

        def actor() -> ProcessGenerator:
            yield world.sleep(1)
            store.create("/a", 1)
            store.nodes = store.child_lists  # type: ignore[misc]  # around its cells

        world.spawn("actor", actor())

    outcome = execute(build, ReplaySource([], strict=False), [])
    assert outcome.status == "error"
    assert "VersionedStore.nodes set after construction" in str(outcome.error)
