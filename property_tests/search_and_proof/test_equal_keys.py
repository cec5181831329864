"""Keys are resources by equality: ``1``, ``1.0`` and ``True`` are one key of a tracked container.

Issue 44's first shape: a ``world.shared.dict`` (or ``set``) written by one actor
under the key ``1`` and read or written by another under ``1.0`` or ``True``. The
container sees one key; footprints named by ``repr`` saw two, so the reduction took
the two steps as commuting and ``prove`` said PROVEN where the swapped order
violates. Here the shape is a user's scenario file, proven from the command line
(default mode, ``--state-cache``, ``-j 2``); distinct keys stay independent, so the
reduction still skips their second order. The naming function (``cells.key_name``)
is checked on generated keys: equal keys share a name, unequal ones do not, a key with
no name by value conflicts with every key of its container, and the names are the same
under another ``PYTHONHASHSEED`` (a str's hash changes with it; a sleep set crosses
processes under ``-j``).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.touch_log import TouchLog
from raceproof.sim.cells import ANY_KEY, key_name
from raceproof.sim.reduction import dependent

BIN = Path(sys.executable).parent

# ``late`` is spawned first, so FIFO runs it first and the first schedule holds; only the
# other order of the two steps at 0 ms violates. ``distinct`` uses another key: it holds.
SCENARIO_FILE = """
import raceproof
from raceproof import Scenario, World

VARIANTS = {"float": "the key 1.0", "bool": "the key True", "distinct": "the key 2"}
OTHER = {"float": 1.0, "bool": True, "distinct": 2}


@raceproof.checker
def first_write_stays(history):
    for op in history.of_kind("final"):
        if op.fields["value"] == "late":
            return raceproof.violated("the late write replaced the first one", op.index)
    return None


@raceproof.checker
def reader_sees_member(history):
    for op in history.of_kind("saw"):
        if not op.fields["present"]:
            return raceproof.violated("the reader missed the member 1", op.index)
    return None


def build_dict(world: World, variant: str, config: object) -> None:
    table = world.shared.dict("table", {1: "init", 2: "init"})  # no key is added
    other = OTHER[variant]

    def late():
        table[other] = "late"

    def first():
        table[1] = "first"

    def judge():
        yield world.sleep(1)
        world.log("judge", "final", value=table[1])

    world.spawn("late", late, interleave=True)
    world.spawn("first", first, interleave=True)
    world.spawn("judge", judge, interleave=True)


def build_set(world: World, variant: str, config: object) -> None:
    members = world.shared.set("members", {1, 2})
    other = OTHER[variant]

    def reader():
        world.log("reader", "saw", present=1 in members)

    def remover():
        members.discard(other)

    world.spawn("reader", reader, interleave=True)
    world.spawn("remover", remover, interleave=True)


for name, build, check in (
    ("equal-keys-dict", build_dict, first_write_stays),
    ("equal-keys-set", build_set, reader_sees_member),
):
    raceproof.register(
        Scenario(
            name=name,
            summary="two actors at one instant, one key written as 1 and as 1.0 or True",
            variants=VARIANTS,
            expect_violation=frozenset({"float", "bool"}),
            checkers=(check,),
            build=build,
        )
    )
"""

MODES = {"default": [], "state-cache": ["--state-cache"], "j2": ["-j", "2"]}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("equal-keys")
    (made / "pyproject.toml").write_text("[project]\nname = 'keys'\n")
    (made / "keys.py").write_text(textwrap.dedent(SCENARIO_FILE))
    return made


def prove(folder: Path, name: str, variant: str, *options: str) -> tuple[int, dict[str, Any]]:
    command = [str(BIN / "raceproof"), "prove", name, "--scenarios", "keys.py"]
    done = subprocess.run(
        [*command, "--variant", variant, *options, "--json"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("variant", ["float", "bool"])
@pytest.mark.parametrize("name", ["equal-keys-dict", "equal-keys-set"])
def test_equal_keys_of_different_types_are_one_resource_for_the_proof(
    folder: Path, name: str, variant: str, mode: str
) -> None:
    code, body = prove(folder, name, variant, *MODES[mode])
    assert (code, body["verdict"]) == (1, "violated"), body


@pytest.mark.parametrize("name", ["equal-keys-dict", "equal-keys-set"])
def test_distinct_keys_still_commute_so_the_reduction_skips_their_other_order(
    folder: Path, name: str
) -> None:
    code, reduced = prove(folder, name, "distinct")
    assert (code, reduced["verdict"], reduced["complete"]) == (0, "ok", True), reduced
    code, full = prove(folder, name, "distinct", "--no-reduction")
    assert (code, full["verdict"]) == (0, "ok"), full
    assert reduced["schedules"] < full["schedules"], (reduced["schedules"], full["schedules"])


# -- the naming function ------------------------------------------------------------------
NUMBERS = st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.fractions(),
    st.decimals(allow_nan=False),
    st.complex_numbers(allow_nan=False),
)
SCALARS = st.one_of(NUMBERS, st.none(), st.text(max_size=4), st.binary(max_size=4))
KEYS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.tuples(inner), st.tuples(inner, inner), st.frozensets(inner, max_size=3)
    ),
    max_leaves=6,
)


def _equal_forms(x: Any) -> list[Any]:
    """``x`` and the values of other number types equal to it (``1``: ``1.0``, ``True``, ...)."""
    forms = [x]
    for convert in (bool, int, float, Fraction, Decimal, complex):
        try:
            other = convert(x)
        except (TypeError, ValueError, OverflowError, ArithmeticError):
            continue
        if other == x:
            forms.append(other)
    return forms


@settings(max_examples=300, deadline=None)
@given(KEYS, KEYS)
def test_equal_keys_share_a_name_and_unequal_keys_do_not(a: Any, b: Any) -> None:
    same = a == b
    name_a, name_b = key_name(a), key_name(b)
    assert name_a is not None and name_b is not None  # every generated key has a name
    if same:
        assert name_a == name_b, (a, b)
        assert {a: 0, b: 1} == {a: 1}  # the container sees one key too
    else:
        assert name_a != name_b, (a, b)


@settings(max_examples=300, deadline=None)
@given(NUMBERS)
def test_a_number_is_named_alike_as_every_type_equal_to_it(x: Any) -> None:
    forms = _equal_forms(x)
    names = {key_name(form) for form in forms}
    assert len(names) == 1 and None not in names, (forms, names)
    assert len({form: 0 for form in forms}) == 1  # as the dict sees them


def test_the_shape_s_keys_and_the_keys_with_no_name_by_value() -> None:
    assert key_name(1) == key_name(1.0) == key_name(True) == key_name(Fraction(1)) == "1"
    assert key_name(Decimal(1)) == key_name(1 + 0j) == "1"
    assert key_name((1, "a")) == key_name((True, "a")) != key_name(("1", "a"))
    assert key_name(frozenset({1, 2})) == key_name(frozenset({2.0, True}))
    for opaque in (float("nan"), object(), (1, object()), frozenset({float("nan")})):
        assert key_name(opaque) is None


def test_a_key_with_no_name_conflicts_with_every_key_of_its_container_and_no_other() -> None:
    world = TouchLog()
    table = world.shared.dict("t", {1: 0})
    other = world.shared.dict("u", {1: 0})
    mark = object()

    def footprint(action: Any) -> dict[str, bool]:
        start = len(world.touched)
        action()
        found: dict[str, bool] = {}
        for resource, write in world.touched[start:]:
            found[resource] = write or found.get(resource, False)
        return found

    opaque_read = footprint(lambda: mark in table)
    assert ANY_KEY in opaque_read and "shared:t[?]" in opaque_read
    write_1 = footprint(lambda: table.__setitem__(1, 2))
    read_1 = footprint(lambda: table[1])
    assert dependent(opaque_read, write_1) and dependent(write_1, opaque_read)
    assert not dependent(opaque_read, read_1)  # two reads commute
    assert not dependent(opaque_read, footprint(lambda: other.__setitem__(1, 3)))
    assert not dependent(write_1, footprint(lambda: table.__setitem__(2.5, 1)))


NAMES_SCRIPT = """
import json, sys
from decimal import Decimal
from fractions import Fraction
from raceproof.sim.cells import key_name
keys = [1, 1.0, True, "a", b"a", ("a", 1), frozenset({"a", "b", "c", 2.5}), Fraction(1, 3),
        Decimal("0.5"), 2 + 3j, None, frozenset({("x", "y"), ("y", "x")})]
print(json.dumps([key_name(k) for k in keys]))
"""


@pytest.mark.parametrize("seed", ["0", "1", "12345"])
def test_names_are_the_same_under_every_hash_seed(seed: str) -> None:
    def names(hash_seed: str) -> list[str]:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", NAMES_SCRIPT],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout))

    assert names(seed) == names("random")


FROM_STDIN = """
import json, pickle, sys
from raceproof.sim.cells import key_name
print(json.dumps([key_name(k) for k in pickle.loads(sys.stdin.buffer.read())]))
"""


@settings(max_examples=4, deadline=None)
@given(st.lists(KEYS, min_size=1, max_size=40))
def test_generated_keys_are_named_alike_in_processes_of_other_hash_seeds(keys: list[Any]) -> None:
    """A frozenset of strs iterates in another order under another seed: its name does not."""
    here = [key_name(key) for key in keys]
    for seed in ("0", "4242"):
        done = subprocess.run(
            [sys.executable, "-c", FROM_STDIN],
            input=pickle.dumps(keys),
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == here, seed
