"""``make demo``: explore and prove the whole catalogue and print one summary table.

For every scenario and variant it runs each search strategy once (default
seed and budget) and the bounded proof, and says whether the outcome is the
one the catalogue expects: violations found in the buggy variants, proofs
for the fixes. Exit 0 when every expectation holds, 1 otherwise.
"""

from __future__ import annotations

import sys
import time

from raceproof.scenarios.catalogue import all_scenarios
from raceproof.sim import STRATEGIES, Budget, explore


def main() -> int:
    rows = []
    all_as_expected = True
    for scenario in all_scenarios():
        for variant in scenario.variants:
            expect = "violated" if variant in scenario.expect_violation else "ok"
            cells = []
            run = scenario.runner(variant, scenario.config)
            for strategy in STRATEGIES:
                started = time.monotonic()
                budget = Budget(
                    scenario.default_examples, scenario.default_budget_s, time.monotonic
                )
                report = explore(run, strategy, 0, budget)
                seconds = time.monotonic() - started
                devs = ""
                if report.shrunk is not None:
                    devs = f"/{sum(1 for v in report.shrunk.values if v)}dev"
                cells.append(f"{report.verdict}@{report.examples}{devs} {seconds:.1f}s")
                all_as_expected &= report.verdict == expect
            started = time.monotonic()
            proof = scenario.prove(variant, Budget(1_000_000, 600.0, time.monotonic))
            seconds = time.monotonic() - started
            cells.append(f"{proof.verdict} {proof.schedules} sched {seconds:.1f}s")
            all_as_expected &= proof.verdict == expect
            rows.append((scenario.name, variant, expect, *cells))
            print(f"  {scenario.name} / {variant}: done", file=sys.stderr)
    header = ("scenario", "variant", "expected", *STRATEGIES, "prove")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))
    print("\nevery outcome as expected" if all_as_expected else "\nSOME OUTCOMES NOT AS EXPECTED")
    return 0 if all_as_expected else 1


if __name__ == "__main__":
    sys.exit(main())
