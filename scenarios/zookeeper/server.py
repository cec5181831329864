"""A private ZooKeeper server for one test session or one command: 127.0.0.1 only, temporary data.

It runs Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``)
as ``ZooKeeperServerMain`` with a generated ``zoo.cfg``: a free port bound to
127.0.0.1, the data folder in a temporary directory, the admin server off.
``start`` waits until the server answers ``ruok`` and fails with a message
naming what is missing or what the server printed; ``stop`` kills it and
removes its folder. Nothing is mocked and nothing is skipped: if ZooKeeper
cannot start, the caller gets a ``ZooKeeperUnavailable`` error.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
CONF_DIRS = (Path("/etc/zookeeper/conf"), Path("/etc/zookeeper/conf_example"))
INSTALL_HINT = "install it with `make zookeeper` (apt-get install zookeeper)"


class ZooKeeperUnavailable(RuntimeError):
    """ZooKeeper could not be started; the message says why and what to do."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _four_letter(port: int, word: str, timeout_s: float = 1.0) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(word.encode())
        chunks = []
        while True:
            data = sock.recv(1024)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """``with ZooKeeperServer() as zk: zk.hosts`` is ``127.0.0.1:PORT``."""

    def __init__(self, start_timeout_s: float = 60.0) -> None:
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.folder: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        assert self.port, "the server is not started"
        return f"127.0.0.1:{self.port}"

    def start(self) -> ZooKeeperServer:
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperUnavailable("no `java` on PATH: ZooKeeper needs a Java runtime")
        if not ZOOKEEPER_JAR.exists():
            raise ZooKeeperUnavailable(
                f"ZooKeeper is not installed ({ZOOKEEPER_JAR} missing): {INSTALL_HINT}"
            )
        self.folder = Path(tempfile.mkdtemp(prefix="raceproof-zk-"))
        (self.folder / "data").mkdir()
        self.port = _free_port()
        config = self.folder / "zoo.cfg"
        config.write_text(
            "tickTime=500\n"
            f"dataDir={self.folder / 'data'}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr\n"
            "maxSessionTimeout=20000\n"
        )
        conf_dir = next((d for d in CONF_DIRS if d.exists()), None)
        classpath = f"{conf_dir}:{ZOOKEEPER_JAR}" if conf_dir else str(ZOOKEEPER_JAR)
        log = (self.folder / "server.log").open("wb")
        self.process = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-cp",
                classpath,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(config),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = (self.folder / "server.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise ZooKeeperUnavailable(f"ZooKeeper exited at start-up:\n{output}")
            try:
                if _four_letter(self.port, "ruok") == "imok":
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperUnavailable(
            f"ZooKeeper did not answer on 127.0.0.1:{self.port} within {self.start_timeout_s}s"
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
