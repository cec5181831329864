"""No footprint placed by hand in the kernel: ``touch`` is called only by the recording mechanism.

DESIGN.md principle 15: what a step read and wrote is recorded by the state it
touched (``raceproof.sim.cells``), never placed beside the access. A hand-placed
``world.touch`` (or a wrapper such as a primitive's own ``_touch``) is a read
its author had to remember; this test counts them in ``sim/`` and fails on a
new one. ``cells.py`` is the mechanism (its ``record`` is the one caller) and
``world.py`` defines ``touch`` and records the World's own state (a process's
end, the history, the op order). ``ALLOWED`` holds the modules still moving
onto cells (issue 44): it only shrinks, and the count must match it exactly, so
a module that drops its touches drops its entry in the same commit.
"""

from __future__ import annotations

import re
from pathlib import Path

import raceproof.sim

SIM = Path(raceproof.sim.__file__).parent
MECHANISM = {"cells.py", "world.py"}
# Module -> hand-placed touches left in it. Only shrinks; it is empty: no module has one.
ALLOWED: dict[str, int] = {}
# A call of ``touch`` or of a wrapper named after it (``_touch``, ``touch_path``), not its definition.
CALL = re.compile(r"(?<!def )\b_?touch(?:_[a-z]+)?\(")
NOT_A_FOOTPRINT = ("touch_all(",)  # "dependent on every step": no resource to forget


def hand_placed(text: str) -> int:
    """Calls of ``touch`` (or a ``_touch`` wrapper) in ``text``, comments and docstrings aside."""
    count = 0
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if code.lstrip().startswith(("def ", '"', "``")):
            continue
        count += sum(
            1 for m in CALL.finditer(code) if not code.startswith(NOT_A_FOOTPRINT, m.start())
        )
    return count


def test_hand_placed_touches_in_sim_are_only_the_ones_still_moving_onto_cells() -> None:
    counts = {
        path.name: n
        for path in sorted(SIM.glob("*.py"))
        if path.name not in MECHANISM and (n := hand_placed(path.read_text())) > 0
    }
    assert counts == ALLOWED, "a module's hand-placed touches moved: update ALLOWED (only down)"


def test_the_count_sees_a_hand_placed_touch_and_leaves_definitions_and_comments() -> None:
    assert hand_placed("    self.world.touch(self.name)\n") == 1
    assert hand_placed("    world.touch(f'x', write=False)  # reads x\n") == 1
    assert hand_placed("    self._touch('read', path)\n") == 1
    assert hand_placed("    def touch(self, resource: str) -> None:\n") == 0
    assert hand_placed("    self.world.touch_all()\n") == 0
    assert hand_placed("    x = 1  # world.touch(y) would be wrong here\n") == 0
    assert hand_placed("    record(world, resource, write=True)\n") == 0
