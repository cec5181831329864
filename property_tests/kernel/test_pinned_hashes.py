"""Pinned trace hashes of every built-in scenario and variant: the guard on the kernel's speed work.

Each row is the trace hash (its first 16 hex digits) of three runs: the FIFO run
on the search configuration (every choice 0, as ``raceproof repro S --variant V``
runs without a seed), the FIFO run on the proof configuration, and one seeded
random run (``RandomSource(7)``) on the search configuration. A change to the
kernel's hot path (choice draws, history ops, footprints, hashing) must leave
every row as it is; a change that must move a row (a model change an issue
asks for) updates the row in the same commit and says why.

Moved so far: the seeded Brooklin rows, when issue 22 put Brooklin's GC pause and
connection loss on the leader's whole JVM and its one ZooKeeper client (the faults
are drawn at other points, so a seeded run takes other paths); every FIFO row stayed.
Issue 33 moved every Samza row but ``kill``'s: the RunLoop enters drain mode when a
current-run DrainMessage reaches the head of its queue (a ``drain.mode`` op), not
``process_ms`` later when it is processed. Later in issue 33 every Brooklin row moved:
each token poll costs a ``countChildren`` round trip per stream (every stop task's
timing shifts), a connection loss fails the stop task's cut call instead of retrying it,
and the proof configuration has stops 10 s apart and 1 s pauses. Issue 45 moved every
Brooklin row again: each ZooKeeper call is a request applied at the server half a round
trip after it leaves (a write lands 1 ms earlier and its op is logged then), the assignment's
calls are one request, the REST status poll and the followers' reads are requests too, and
the faults are also drawn before each setData of ``updateDataSerialized``.
"""

from __future__ import annotations

import pytest

from raceproof.scenarios.catalogue import CATALOGUE, ORIGINS, all_scenarios
from raceproof.sim import RandomSource, ReplaySource

# (scenario, variant) -> (FIFO search config, FIFO proof config, RandomSource(7) search config)
PINNED: dict[tuple[str, str], tuple[str, str, str]] = {
    ("brooklin-double-stop", "buggy"): ("b9cc245c714a307d", "b9cc245c714a307d", "2e557b205841e584"),
    ("brooklin-double-stop", "fix-zk-lookup"): (
        "d8b69c533dbca840",
        "d8b69c533dbca840",
        "8368c27f64670a0f",
    ),
    ("brooklin-double-stop", "fix-conditional-write"): (
        "e3e99d2fd0d89a61",
        "e3e99d2fd0d89a61",
        "2b5a70bd4acd9cb7",
    ),
    ("brooklin-double-stop", "fix-stop-dedupe"): (
        "53d94d72de1865bc",
        "53d94d72de1865bc",
        "e8995da34c21f85a",
    ),
    ("brooklin-redundant-stop", "buggy"): (
        "b9cc245c714a307d",
        "b9cc245c714a307d",
        "2e557b205841e584",
    ),
    ("brooklin-redundant-stop", "fix-zk-lookup"): (
        "d8b69c533dbca840",
        "d8b69c533dbca840",
        "8368c27f64670a0f",
    ),
    ("brooklin-redundant-stop", "fix-conditional-write"): (
        "e3e99d2fd0d89a61",
        "e3e99d2fd0d89a61",
        "2b5a70bd4acd9cb7",
    ),
    ("brooklin-redundant-stop", "fix-stop-dedupe"): (
        "53d94d72de1865bc",
        "53d94d72de1865bc",
        "e8995da34c21f85a",
    ),
    ("coordinator-async-append", "sync-assumption"): (
        "e5ada81a1c87ddb6",
        "e22550f4bc224f12",
        "1d7b3a62a90fd884",
    ),
    ("coordinator-async-append", "block-event-loop"): (
        "e5ada81a1c87ddb6",
        "e22550f4bc224f12",
        "b51fedf53b6dbba7",
    ),
    ("coordinator-async-append", "verify-then-write"): (
        "e5ada81a1c87ddb6",
        "e22550f4bc224f12",
        "5b7db25a2de82a42",
    ),
    ("lost-update", "buggy"): ("5176ad830f826ae9", "5176ad830f826ae9", "26061c10eaff4a37"),
    ("lost-update", "fix-cas"): ("5176ad830f826ae9", "5176ad830f826ae9", "89797b722d235178"),
    ("samza-drain", "kill"): ("5d64c39420e3a70d", "106395844d6eaf26", "64c77f4ea6387c7b"),
    ("samza-drain", "drain"): ("b1bb3d772d65aa1a", "f1df017c4649973a", "9f5b04ec318415c9"),
    ("samza-drain", "drain-1.8"): ("a03f288f161ab294", "12c8686fd8ab55cb", "9ac5236edd16e820"),
    ("samza-drain", "no-shuffle-aggregation"): (
        "a7bba3a7041b6b85",
        "5caa04a79e1d502e",
        "02beb2bbca073634",
    ),
    ("samza-drain", "accept-stale-run-id"): (
        "c3291b3970614cda",
        "6ba291d91bc1b769",
        "8058b585816b5adf",
    ),
    ("samza-drain", "async-commit-during-drain"): (
        "ab3b6f5fb81dbdb5",
        "9067cad6ddb6595c",
        "39c15dba36defe45",
    ),
    ("samza-drain", "stop-intermediate-consumers"): (
        "d1f59bd4b0662d35",
        "b315756ab482c1fb",
        "fe58a8af7b242239",
    ),
    ("samza-drain", "drain-before-consumers-start-stuck"): (
        "b1bb3d772d65aa1a",
        "f1df017c4649973a",
        "b6de12199e3a5c81",
    ),
    ("streams-checkpoint-resurrection", "buggy"): (
        "3282d42ea147a034",
        "3282d42ea147a034",
        "d36bfb301eb0b924",
    ),
    ("streams-checkpoint-resurrection", "fix-standby-running"): (
        "3282d42ea147a034",
        "3282d42ea147a034",
        "3514e6aab3b368db",
    ),
    ("streams-checkpoint-resurrection", "fix-checkpoint-under-lock"): (
        "3282d42ea147a034",
        "3282d42ea147a034",
        "d36bfb301eb0b924",
    ),
    ("streams-checkpoint-resurrection", "fix-load-after-lock"): (
        "158890731c250ca6",
        "158890731c250ca6",
        "e67f629c94bc583d",
    ),
}


def _builtin() -> list[tuple[str, str]]:
    all_scenarios()  # loads the catalogue
    return [
        (name, variant)
        for name in sorted(CATALOGUE)
        if ORIGINS.get(name) == "builtin"
        for variant in CATALOGUE[name].variants
    ]


def test_every_builtin_scenario_and_variant_has_a_pinned_row() -> None:
    assert sorted(PINNED) == sorted(_builtin())


@pytest.mark.parametrize(("name", "variant"), sorted(PINNED))
def test_trace_hashes_are_pinned(name: str, variant: str) -> None:
    all_scenarios()  # loads the catalogue
    scenario = CATALOGUE[name]
    fifo_search = scenario.runner(variant, scenario.config)(ReplaySource([], strict=False))
    fifo_prove = scenario.runner(variant, scenario.prove_config)(ReplaySource([], strict=False))
    seeded = scenario.runner(variant, scenario.config)(RandomSource(7))
    got = tuple(o.history.trace_hash()[:16] for o in (fifo_search, fifo_prove, seeded))
    assert got == PINNED[(name, variant)]
    assert all(value == 0 for value in fifo_search.values)  # the FIFO run deviates nowhere
