"""The pair-coverage table and the hunts for issue 44's four shapes (issue 44 item 2).

``make soundness`` runs ``python -m property_tests.soundness_coverage``: every
pair of the operation table (``soundness_ops.PAIRS``) is placed from its own
seed (``soundness_pairs.place``) and judged by every claim of
``CLAIMS`` (``soundness_walks.MODES``: the reduced walk against the full walk,
the state cache, ``prove -j 2``, the footprint checkers); a pair counts for a
claim once the claim was judged on it (its full walk completed). It prints, per
claim, pairs judged / pairs in the table and the time taken, then every problem
found, and exits 1 below 100 % or on a problem. ``--slice N`` judges every N-th
pair only (``make test`` judges a slice in
``property_tests/search_and_proof/test_soundness_pairs.py``). Its last row is
issue 45's locality claim (``soundness_locality.py``): the (fault, remote call)
combinations exercised over ``LOCALITY_SEEDS`` random models of nodes.

``SHAPES`` are issue 44's four: the first seed at which the generator
(``soundness_pairs.drawn``, focused on the shape's pairs) finds each with its
fix reverted is ``hunt(shape)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from property_tests.soundness_locality import COMBINATIONS, locality_cover
from property_tests.soundness_ops import FIRING, PAIRS
from property_tests.soundness_pairs import PairSpec, drawn, place
from property_tests.soundness_walks import MODES, WALK_RUNS, TooBig, Walk, full_walk
from raceproof.reports.terminal import columns_text

Pair = tuple[str, str, str]
CLAIMS = ("reduction", "state-cache", "parallel", "checkers")
LOCALITY_SEEDS = 500  # random models of nodes, remote calls and a node fault (issue 45)


@dataclass
class Coverage:
    """Per claim: the pairs judged, the CPU seconds it took, and the problems found."""

    table: int
    judged: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    too_big: list[str] = field(default_factory=list)

    def percent(self, claim: str) -> float:
        return 100.0 * len(self.judged.get(claim, ())) / self.table

    locality: set[tuple[str, str]] = field(default_factory=set)  # (fault, call) exercised

    def complete(self) -> bool:
        """Every pair of the table judged by every claim."""
        return all(len(self.judged.get(c, ())) == self.table for c in CLAIMS)

    def text(self) -> str:
        rows = [["claim", "pairs drawn", "pairs in the table", "coverage", "CPU s"]]
        for claim in CLAIMS:
            rows.append(
                [
                    claim,
                    f"{len(self.judged.get(claim, ())):,}",
                    f"{self.table:,}",
                    f"{self.percent(claim):.1f} %",
                    f"{self.seconds.get(claim, 0.0):.0f}",
                ]
            )
        rows.append(
            [
                "locality (fault x remote call)",
                f"{len(self.locality)}",
                f"{len(COMBINATIONS)}",
                f"{100.0 * len(self.locality) / len(COMBINATIONS):.1f} %",
                f"{self.seconds.get('locality', 0.0):.0f}",
            ]
        )
        return columns_text(rows, right=(1, 2, 3, 4))


def _cpu() -> float:
    """CPU seconds of this process and of its children (``prove -j 2``'s workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


PLACEMENTS = 5  # a pair whose full walk is too big is placed again, from the next seeds


def _placed(pair: Pair, seed: int) -> tuple[PairSpec, Walk] | None:
    """The pair placed from ``seed`` (or the next of ``PLACEMENTS`` seeds) and its full walk."""
    for again in range(PLACEMENTS):
        spec = place(pair, seed + again * len(PAIRS))
        try:
            return spec, full_walk(spec)
        except TooBig:
            continue
    return None


def judge(spec: PairSpec, claims: tuple[str, ...] = CLAIMS) -> dict[str, list[str]]:
    """Every claim's problems on ``spec`` (``TooBig`` when its full walk does not complete)."""
    full = full_walk(spec)
    return {claim: MODES[claim](spec, full) for claim in claims}


def cover(pairs: list[Pair], *, table: int | None = None, progress: bool = False) -> Coverage:
    """Judge each pair, placed from its index in ``PAIRS``, by every claim."""
    coverage = Coverage(table=len(pairs) if table is None else table)
    index = {pair: i for i, pair in enumerate(PAIRS)}
    for done, pair in enumerate(pairs):
        if progress and done % 100 == 0:
            print(f"{done:,} of {len(pairs):,} pairs judged", file=sys.stderr, flush=True)
        started = _cpu()
        placed = _placed(pair, index[pair])
        if placed is None:
            coverage.too_big.append(str(place(pair, index[pair])))
            continue
        spec, full = placed
        for claim in CLAIMS:
            try:
                problems = MODES[claim](spec, full)
            except Exception as error:  # a claim that crashes is a problem, named
                problems = [f"the claim raised {type(error).__name__}: {error}"]
            coverage.judged.setdefault(claim, set()).add(pair)
            coverage.problems += [f"{claim}: {spec}: {p}" for p in problems]
            now = _cpu()
            coverage.seconds[claim] = coverage.seconds.get(claim, 0.0) + now - started
            started = now
    return coverage


# -- issue 44's four shapes ----------------------------------------------------------------
def _ops(first: tuple[str, ...], second: tuple[str, ...]) -> Callable[[Pair], bool]:
    """A focus on the pairs of one operation named in ``first`` and one in ``second``."""

    def named(op: str, names: tuple[str, ...]) -> bool:
        return op.split(".", 1)[1] in names

    def focus(pair: Pair) -> bool:
        _, a, b = pair
        return (named(a, first) and named(b, second)) or (named(b, first) and named(a, second))

    return focus


# Each shape's hunt draws the pairs of its operations (as a slip's hunt draws its families).
SHAPES: dict[str, Callable[[Pair], bool]] = {
    "1 equal keys": lambda pair: pair[0] in ("dict", "set"),
    "2 recursive watch vs a descendant's create": _ops(
        ("add_watch", "remove_watch"), ("create", "ensure_path")
    ),
    "3 session end vs the parent's child list": _ops(
        ("expire", "close", "expire_session", "pause"), ("children",)
    ),
    "4 timer cancel or re-arm vs its own firing": _ops(("cancel", "start", "trigger"), (FIRING,)),
}


def hunt(shape: str, seeds: int, *, claim: str = "reduction") -> tuple[int, PairSpec] | None:
    """The first seed below ``seeds`` whose drawn pair of ``shape`` fails ``claim``."""
    for seed in range(seeds):
        spec = drawn(seed, SHAPES[shape])
        try:
            if judge(spec, (claim,))[claim]:
                return seed, spec
        except TooBig:
            continue
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m property_tests.soundness_coverage")
    parser.add_argument("--slice", type=int, default=1, help="judge every N-th pair only")
    parser.add_argument("--locality", type=int, default=LOCALITY_SEEDS, help="models for locality")
    args = parser.parse_args(argv)
    started = time.monotonic()
    coverage = cover(PAIRS[:: args.slice], table=len(PAIRS), progress=True)
    started_locality = _cpu()
    coverage.locality, found = locality_cover(args.locality)
    coverage.problems += found
    coverage.seconds["locality"] = _cpu() - started_locality
    print(coverage.text())
    print(
        f"{len(PAIRS):,} pairs of {len({op for _, a, b in PAIRS for op in (a, b)})} operations; "
        f"{time.monotonic() - started:.0f} s"
    )
    for spec in coverage.too_big:
        print(
            f"not judged (each of {PLACEMENTS} placements' full walks needs over {WALK_RUNS:,} runs): {spec}"
        )
    for problem in coverage.problems:
        print(f"PROBLEM {problem}")
    full = coverage.complete() and coverage.locality == set(COMBINATIONS)
    return 0 if full and not coverage.problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
