"""Real ZooKeeper backends: a private server, kazoo as the store, actors as real threads."""

import logging

from raceproof.zookeeper.server import (
    ZooKeeperServer,
    ZooKeeperUnavailable,
    reachable,
    run_chroot,
    run_id,
)

# kazoo warns on every connection it closes at shutdown; real failures surface as errors.
logging.getLogger("kazoo").setLevel(logging.ERROR)

__all__ = ["ZooKeeperServer", "ZooKeeperUnavailable", "reachable", "run_chroot", "run_id"]
