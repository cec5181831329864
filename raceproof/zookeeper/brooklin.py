"""The Brooklin coordinator on a real ZooKeeper, forced onto a schedule found in simulation.

``run_forced`` takes a simulated run (usually a shrunk counterexample), runs
the very same ``models.brooklin`` actors as real threads against a real
ZooKeeper (kazoo, one chroot per run), steers them with the simulated run's
deviations and checkpoint order, and judges the real history with the same
checkers.
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.client import KazooClient

from raceproof.models.brooklin import CHECKERS, BrooklinConfig, Cluster
from raceproof.sim import (
    SCHEDULE_LABEL,
    CheckerResult,
    RunOutcome,
    first_violation,
    keyed_deviations,
    run_checkers,
)
from raceproof.sim.history import History
from raceproof.sim.verdicts import CheckStatus, Verdict
from raceproof.zookeeper.kazoo_store import KazooStore
from raceproof.zookeeper.server import run_chroot
from raceproof.zookeeper.threads import Checkpoint, Sequencer, ThreadRuntime


@dataclass
class RealRun:
    history: History
    verdicts: list[CheckerResult]
    finished: bool
    diverged: str | None
    followed: int  # checkpoints passed in the forced order
    skipped: int  # forced checkpoints the variant never reached (another path)
    forced: int  # checkpoints in the forced order
    chroot: str
    errors: list[str]

    @property
    def status(self) -> Verdict:
        if first_violation(self.verdicts) is not None:
            return Verdict.VIOLATED
        if (
            not self.finished
            or self.diverged
            or any(v.status == CheckStatus.UNKNOWN for v in self.verdicts)
        ):
            return Verdict.INCONCLUSIVE
        return Verdict.OK


def forced_order(simulated: RunOutcome) -> list[Checkpoint]:
    return [
        (op.actor, str(op.get("point")), op.get("entity"))
        for op in simulated.history.of_kind("checkpoint")
    ]


def real_script(simulated: RunOutcome) -> dict[tuple[str, int], int]:
    """The simulated deviations that mean something on real threads (not tie-breaks)."""
    return {
        key: v for key, v in keyed_deviations(simulated.choices).items() if key[0] != SCHEDULE_LABEL
    }


def run_forced(
    hosts: str,
    variant: str,
    config: BrooklinConfig,
    simulated: RunOutcome,
    *,
    scale: float = 0.05,
    timeout_s: float = 120.0,
    wait_s: float = 20.0,
) -> RealRun:
    """Run ``variant`` for real, forced onto ``simulated``'s schedule; judge it."""
    with run_chroot(hosts) as chroot:
        client = KazooClient(hosts=hosts + chroot, timeout=10)
        client.start(timeout=30)
        history = History()
        sequencer = Sequencer(forced_order(simulated), wait_s)
        runtime = ThreadRuntime(
            history, scale=scale, script=real_script(simulated), sequencer=sequencer
        )
        try:
            cluster = Cluster(rt=runtime, zk=KazooStore(client), variant=variant, config=config)
            cluster.install()
            cluster.start()
            finished = runtime.finished.wait(timeout_s)
            runtime.finish()
            runtime.join(5.0)
            runtime.log(
                "kernel",
                "run.end",
                reason="finished" if finished else "timeout",
                backend="zookeeper",
            )
        finally:
            client.stop()
            client.close()
    return RealRun(
        history=history,
        verdicts=run_checkers(history, CHECKERS),
        finished=finished,
        diverged=sequencer.diverged,
        followed=sequencer.passed,
        skipped=sequencer.skipped,
        forced=len(sequencer.order),
        chroot=chroot,
        errors=runtime.errors,
    )
