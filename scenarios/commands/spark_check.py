"""``raceproof spark-check``: fault experiments on real local-mode Spark."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from raceproof.scenarios import runner
from raceproof.scenarios.commands.common import (
    UsageError,
    add_command,
)


def cmd_spark_check(args: argparse.Namespace) -> int:
    from raceproof.spark_integration.experiments import EXPERIMENTS, run_experiment
    from raceproof.spark_integration.session import (
        SparkUnavailable,
        session_running,
        spark_session,
        stop_session,
    )

    names = args.experiment or list(EXPERIMENTS)
    unknown_names = [n for n in names if n not in EXPERIMENTS]
    if unknown_names:
        raise UsageError(
            f"unknown experiment {unknown_names[0]!r}; valid: {', '.join(EXPERIMENTS)}"
        )
    say = (
        (lambda line: print(line, file=sys.stderr, flush=True))
        if not args.json
        else (lambda line: None)
    )
    started = time.monotonic()
    owned = not session_running()  # a caller's session (a test's) is left running
    say("starting a local Spark session ...")
    try:
        spark = spark_session()
    except SparkUnavailable as exc:
        raise UsageError(f"cannot run spark-check: {exc}") from None
    session_s = round(time.monotonic() - started, 1)
    rows = []
    try:
        for number, name in enumerate(names, 1):
            guard = EXPERIMENTS[name].guard
            say(
                f"[{number}/{len(names)}] {name}: stock Spark"
                + (f", then with {guard}" if guard else "")
                + " ..."
            )
            rows.append(run_experiment(spark, name))
    finally:
        if owned:
            stop_session()
    stock_violated = any(r["stock"]["verdict"] == "violated" for r in rows)
    result = {"verdict": "violated" if stock_violated else "ok", "experiments": rows,
              "session_s": session_s, "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(spark_table(rows))
        for r in rows:
            print(f"\n{r['experiment']}:\n  stock: {r['stock']['message']}")
            if r["guarded"]:
                print(f"  with {r['guard']}: {r['guarded']['message']}")
        print(f"\nsession start {session_s}s, total {result['seconds']}s")
    return runner.EXIT_FOR_VERDICT[str(result["verdict"])]


def spark_table(rows: list[dict[str, Any]]) -> str:
    """The spark-check table: one line per experiment, outcome cells naming what failed."""

    def cell(trial: dict[str, Any] | None) -> str:
        if trial is None:
            return "-"
        failed = trial["violated"] if trial["verdict"] == "violated" else []
        return trial["verdict"] + (f" ({', '.join(failed)})" if failed else "")

    header = (
        "experiment",
        "fault",
        "stock Spark",
        "guard",
        "with the guard",
        "s",
        "JVM MiB",
        "Py MiB",
    )
    lines = [header] + [
        (r["experiment"], r["fault"], cell(r["stock"]), r["guard"] or "-", cell(r["guarded"]),
         f"{r['seconds']:.1f}", f"{r['jvm_peak_mb']:.0f}", f"{r['python_peak_mb']:.0f}")
        for r in rows
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def add(commands: Any) -> None:
    from raceproof.spark_integration.experiments import EXPERIMENTS

    sub = add_command(
        commands,
        "spark-check",
        "fault experiments on real local-mode Spark, with and without the guards",
        cmd_spark_check,
        epilog="examples:\n  raceproof spark-check\n  raceproof spark-check --experiment drain --json",
    )
    sub.add_argument("--experiment", action="append", metavar="NAME",
                     help="run only this experiment (repeatable); one of: " + ", ".join(EXPERIMENTS))  # fmt: skip
