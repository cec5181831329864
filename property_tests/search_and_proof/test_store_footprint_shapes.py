"""Issue 44's store shapes, as a new user writes them: ``prove`` must find both races.

Both models are built only from the kernel's primitives and tracked state,
in a scenario file of their own, and proved through the command line as a
user does: by default, with ``--state-cache`` (each model declares its state)
and with ``-j 2``. Before the store kept its state in cells
(``raceproof.sim.cells``), each was ``PROVEN`` (exit 0, complete) in all
three modes although ``--no-reduction`` finds the violation:

2. **A recursive watch and a create below it.** ``add_watch("/a", cb,
   recursive=True)`` (or ``remove_watch``), on the store or through a
   ``ZkClient``, at the instant another actor creates ``/a/b/c``: the create's
   footprint left out the ancestors' watch tables it reads to decide what
   fires, so the reduction took the two steps as commuting.
3. **A session's end and a parent's child list.** ``store.children("/election")``
   at the instant the session owning the ephemeral ``/election/x`` ends
   (``expire()``): the removal wrote the child and the session table, not the
   parent's child list that ``children`` reads.

Each fix variant (the same steps one virtual ms apart) is proven, complete,
in the same three modes: the checkers see the difference only when the two
steps share an instant.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raceproof.cli.main import main

MODELS = '''
"""Issue 44's store shapes: a watch beside a create below it, children beside a session's end."""
import raceproof
from raceproof.sim import VersionedStore, ZkClient, checker, ok, violated


def fingerprint(world):
    return repr([(op.time_ms, op.actor, op.kind, sorted(op.fields.items())) for op in world.history])


def build_watch(world, variant, config):
    """The watcher sets (or removes) a recursive watch on /a as the creator creates /a/b/c."""
    world.declare_footprints()
    world.declare_state(lambda: fingerprint(world))
    store = VersionedStore(world)
    store.ensure_path("/a/b")
    client = ZkClient(world, store, "c1")
    heard = world.shared.set("heard")
    removing = variant.startswith("remove")

    def on_event(event):
        heard.add(event.path)
        world.log("watcher", "heard", path=event.path)

    if removing:
        store.add_watch("/a", on_event, recursive=True)

    def watcher():
        yield world.sleep(0)
        if removing:
            store.remove_watch("/a", on_event)
        elif variant.startswith("client"):
            client.add_watch("/a", on_event, recursive=True)
        else:
            store.add_watch("/a", on_event, recursive=True)
        world.log("watcher", "removed" if removing else "watching")

    def creator():
        yield world.sleep(1 if variant.endswith("fixed") else 0)
        store.create("/a/b/c", 1)
        world.log("creator", "created", path="/a/b/c")

    world.spawn("watcher", watcher())
    world.spawn("creator", creator())


@checker("heard-while-watching")
def heard_while_watching(history):
    """A watch set before the create hears it; a removed one hears nothing after it."""
    heard = [op.index for op in history.of_kind("heard") if op.get("path") == "/a/b/c"]
    if history.of_kind("watching") and not heard:
        return violated("the recursive watch missed /a/b/c", len(history) - 1)
    removed = history.of_kind("removed")
    if removed and any(index > removed[0].index for index in heard):
        return violated("heard /a/b/c after removing the watch", max(heard))
    return ok()


def build_election(world, variant, config):
    """A reader lists /election as the session owning its one candidate ends."""
    world.declare_footprints()
    world.declare_state(lambda: fingerprint(world))
    store = VersionedStore(world)
    store.ensure_path("/election")
    client = ZkClient(world, store, "candidate")
    client.create("/election/x", "me", ephemeral=True)

    def reader():
        yield world.sleep(4 if variant == "fixed" else 5)
        world.log("reader", "candidates", names=store.children("/election"))

    def ender():
        yield world.sleep(5)
        client.expire()

    world.spawn("reader", reader())
    world.spawn("ender", ender())


@checker("a-candidate-seen")
def a_candidate_seen(history):
    """The reader sees a candidate (it believes the election never empties)."""
    for op in history.of_kind("candidates"):
        if not op.get("names"):
            return violated("the reader found no candidate", op.index)
    return ok()


raceproof.register(
    raceproof.Scenario(
        name="shape-recursive-watch",
        summary="a recursive watch set or removed as a create below it happens",
        variants={
            "add": "the store's add_watch at the create's instant",
            "client-add": "a ZkClient's add_watch at the create's instant",
            "remove": "remove_watch at the create's instant",
            "add-fixed": "the create one ms after add_watch",
            "remove-fixed": "the create one ms after remove_watch",
        },
        expect_violation=frozenset({"add", "client-add", "remove"}),
        checkers=(heard_while_watching,),
        build=build_watch,
        default_examples=50,
    )
)
raceproof.register(
    raceproof.Scenario(
        name="shape-children-at-expiry",
        summary="children of a parent listed as the session owning its ephemeral child ends",
        variants={"buggy": "listed at the expiry's instant", "fixed": "listed one ms before"},
        expect_violation=frozenset({"buggy"}),
        checkers=(a_candidate_seen,),
        build=build_election,
        default_examples=50,
    )
)
'''

MODES = {"default": (), "state-cache": ("--state-cache",), "-j 2": ("-j", "2")}
CASES = [
    ("shape-recursive-watch", "add", True),
    ("shape-recursive-watch", "client-add", True),
    ("shape-recursive-watch", "remove", True),
    ("shape-recursive-watch", "add-fixed", False),
    ("shape-recursive-watch", "remove-fixed", False),
    ("shape-children-at-expiry", "buggy", True),
    ("shape-children-at-expiry", "fixed", False),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shapes") / "store_shapes.py"
    path.write_text(MODELS)
    return path


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize(("name", "variant", "races"), CASES)
def test_prove_finds_the_race_at_the_shared_instant_and_proves_the_fix(
    models: Path,
    name: str,
    variant: str,
    races: bool,
    mode: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["prove", name, "--variant", variant, "--scenarios", str(models), "--json"]
    code = main([*argv, "--out", str(models.parent / "cx"), *MODES[mode]])
    report = json.loads(capsys.readouterr().out)
    if races:
        assert (code, report["verdict"]) == (1, "violated"), report
    else:
        assert (code, report["verdict"], report["complete"]) == (0, "ok", True), report


@pytest.mark.parametrize(("name", "variant", "races"), CASES)
def test_the_full_walk_agrees(
    models: Path, name: str, variant: str, races: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ground truth the reduced proofs must match: every schedule walked."""
    argv = ["prove", name, "--variant", variant, "--scenarios", str(models), "--json"]
    code = main([*argv, "--no-reduction", "--out", str(models.parent / "cx")])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == ("violated" if races else "ok") and code == (1 if races else 0)
