"""Which local variables a suspended generator can still read: the fingerprint leaves out the rest.

The kernel's state fingerprint (``raceproof.sim.fingerprint``) names a process by
every value its frame holds. A frame keeps a local bound after its last read:
a client that read ``value, version`` from the store, wrote ``value + 1`` and is
now thinking still holds both, though its next loop turn binds them again before
reading them. Two states that differ only in such a dead value have the same
future, yet their texts differ, so the state cache never merges them (measured on
``lost-update``: the clients' ``value``, ``version`` and ``new_version`` after the
acknowledgement, and the ``for`` loop's variable, which the body never reads).

``live_locals(code, offset)`` is the classic backward data-flow analysis of the
code object's bytecode: a local is live at an instruction when some path from
there reads it (``LOAD_FAST``, ``DELETE_FAST``) before writing it
(``STORE_FAST``). Paths follow every jump, the fall-through and every exception
handler covering an instruction (the code's exception table: a value read in an
``except`` block is live across the ``try`` body). A suspended generator resumes
at the instruction after its ``YIELD_VALUE`` (``gi_frame.f_lasti``), so its live
locals are the live-in set of that instruction.

Soundness: a dead local is never read again by its frame's code, so leaving its
value out loses nothing the frame's future depends on. Values reach the future
by other paths only through other references (another local, an attribute, a
cell), which the fingerprint still walks. The analysis answers None -- every
local counts as live, the fingerprint is as before -- wherever it could be
wrong: code with cell or free variables (a closure reads them through cells the
frame does not own), code that names ``locals``, ``vars``, ``exec``, ``eval`` or
``sys._getframe`` (it may read its frame as a dict), an opcode it does not know
that touches a fast local, and a generator that has not started or is running.

The walk's soundness claims check it with the rest of the fingerprint: the
cached walk must reach the plain walk's endings (``soundness_walks``), and
``prove --check-state-cache`` compares the subtrees of merged states.
"""

from __future__ import annotations

import dis
import itertools
import types
from functools import lru_cache

# Opcodes that read a fast local (``argval`` its name); DELETE_FAST reads (unbound raises).
READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "DELETE_FAST"})
# Opcodes that bind or unbind it, after the read above (DELETE_FAST reads, then unbinds).
WRITES = frozenset({"STORE_FAST", "DELETE_FAST"})
# No fall-through to the next instruction.
ENDS = frozenset(
    {
        "RETURN_VALUE",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "RERAISE",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP_ABSOLUTE",
        "JUMP",
        "JUMP_NO_INTERRUPT",
    }
)
# Names through which code can read its own frame as a whole: no analysis for such code.
INTROSPECTION = frozenset({"locals", "vars", "exec", "eval", "_getframe", "currentframe"})
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def live_locals(code: types.CodeType, offset: int) -> frozenset[str] | None:
    """The locals some path from the instruction after ``offset`` reads before writing.

    ``offset``: a suspended generator's ``gi_frame.f_lasti`` (its ``YIELD_VALUE``).
    None: no answer (every local counts as live; see the module docstring).
    """
    table = _live_in(code)
    if table is None or offset < 0:
        return None
    return table.get(_after(code).get(offset, -1))


@lru_cache(maxsize=512)
def _after(code: types.CodeType) -> dict[int, int]:
    """Offset -> the offset of the instruction after it."""
    instructions = _instructions(code)
    return {a.offset: b.offset for a, b in itertools.pairwise(instructions)}


@lru_cache(maxsize=512)
def _instructions(code: types.CodeType) -> tuple[dis.Instruction, ...]:
    return tuple(dis.get_instructions(code))


@lru_cache(maxsize=512)
def _live_in(code: types.CodeType) -> dict[int, frozenset[str]] | None:
    """Offset -> the locals live on entry to that instruction; None when not analysable."""
    if code.co_cellvars or code.co_freevars or INTROSPECTION & set(code.co_names):
        return None
    instructions = _instructions(code)
    handlers = _handlers(code)
    if handlers is None or any(_unknown(i) for i in instructions):
        return None
    successors = _successors(instructions, handlers)
    live: dict[int, frozenset[str]] = {i.offset: frozenset() for i in instructions}
    changed = True
    while changed:  # to the fixed point, backwards (few rounds: loops are shallow)
        changed = False
        for instruction in reversed(instructions):
            out: set[str] = set()
            for target in successors[instruction.offset]:
                out |= live.get(target, frozenset())
            entry = frozenset(_transfer(instruction, out))
            if entry != live[instruction.offset]:
                live[instruction.offset], changed = entry, True
    return live


def _unknown(instruction: dis.Instruction) -> bool:
    """An opcode touching a fast local that this analysis does not model."""
    name = instruction.opname
    return "FAST" in name and name not in READS | WRITES


def _transfer(instruction: dis.Instruction, out: set[str]) -> set[str]:
    """Live-in from live-out: a write kills its local, a read makes it live."""
    name = instruction.opname
    if name in WRITES:
        out.discard(instruction.argval)
    if name in READS:
        out.add(instruction.argval)
    return out


def _successors(
    instructions: tuple[dis.Instruction, ...], handlers: list[tuple[int, int, int]]
) -> dict[int, list[int]]:
    """Offset -> the offsets control may pass to: fall-through, jump target, handlers."""
    following: dict[int, list[int]] = {}
    for index, instruction in enumerate(instructions):
        targets = []
        if instruction.opname not in ENDS and index + 1 < len(instructions):
            targets.append(instructions[index + 1].offset)
        if instruction.opcode in _JUMPS and isinstance(instruction.argval, int):
            targets.append(instruction.argval)
        targets.extend(
            target for start, end, target in handlers if start <= instruction.offset < end
        )
        following[instruction.offset] = targets
    return following


def _handlers(code: types.CodeType) -> list[tuple[int, int, int]] | None:
    """The exception table's (start, end, handler) entries; None where it cannot be read."""
    parse = getattr(dis, "_parse_exception_table", None)  # CPython 3.11+
    if parse is None:
        return None
    return [(entry.start, entry.end, entry.target) for entry in parse(code)]
