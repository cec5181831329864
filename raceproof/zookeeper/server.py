"""A private ZooKeeper server for one test session or one command: 127.0.0.1 only, temporary data.

It runs Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``)
as ``ZooKeeperServerMain`` with a generated ``zoo.cfg``: a free port bound to
127.0.0.1, the data folder in a temporary directory, the admin server off.
``start`` waits until the server answers ``ruok`` and fails with a message
naming what is missing or what the server printed; ``stop`` kills it and
removes its folder. Nothing is mocked and nothing is skipped: if ZooKeeper
cannot start, the caller gets a ``ZooKeeperUnavailable`` error.

Nothing is left behind: the JVM is started through
``raceproof.runs.processes.spawn`` (its own process group, killed by the
kernel if we die), ``start`` stops it and removes its folder when it fails or
is interrupted half-way, and the port is checked to be *ours*: a free port is
picked by binding port 0 and closing it, which leaves a window in which
another process can take it; the server is only used once the socket
listening on the port belongs to our JVM (``/proc/net/tcp``), and a lost race
is retried on another port.

Runs that share one ZooKeeper (``--zk-hosts``) each work in their own chroot
(``run_chroot``): named after the host, the pid and a random token, so two
runs with the same pid (containers, pid namespaces) never collide, and
removed at the end of the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from raceproof.runs import processes

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# A server that lives for one session or one command and answers a few thousand requests: the
# first JIT tier and the serial collector cost less CPU than C2's compiles and G1's threads.
JVM_OPTIONS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
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


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on 127.0.0.1:``port``, IPv4 or IPv4-mapped IPv6 (``/proc/net``).

    Java opens dual-stack sockets by default, so its listener on 127.0.0.1 shows
    in ``/proc/net/tcp6`` as ``::ffff:127.0.0.1``.
    """
    wanted = {f"0100007F:{port:04X}", f"0000000000000000FFFF00000100007F:{port:04X}"}
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[1] in wanted and parts[3] == "0A":  # 0A: LISTEN
                inodes.add(parts[9])
    return inodes


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` owns the socket listening on 127.0.0.1:``port``."""
    inodes = _listening_inodes(port)
    if not inodes:
        return False
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return not Path("/proc/net/tcp").exists()  # no /proc: fall back to trusting ruok
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


def reachable(hosts: str, timeout_s: float = 5.0) -> None:
    """ZooKeeperUnavailable unless some ``HOST:PORT`` of ``hosts`` accepts a connection."""
    errors = []
    for part in hosts.split(","):
        host, _, port = part.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{part.strip()}: {getattr(exc, 'strerror', None) or exc}")
    raise ZooKeeperUnavailable(f"no ZooKeeper reachable at {hosts} ({'; '.join(errors)})")


def run_id() -> str:
    """Unique across hosts, pid namespaces and runs: host name, pid and 48 random bits."""
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())
    return f"{host or 'host'}-{os.getpid()}-{os.urandom(6).hex()}"


@contextlib.contextmanager
def run_chroot(hosts: str, prefix: str = "/raceproof", timeout_s: float = 10.0) -> Iterator[str]:
    """A fresh chroot ``prefix/<run id>`` on the ZooKeeper at ``hosts``, removed at the end."""
    from kazoo.client import KazooClient

    chroot = f"{prefix}/{run_id()}"
    root = KazooClient(hosts=hosts, timeout=timeout_s)
    root.start(timeout=timeout_s)
    try:
        root.create(chroot, makepath=True)  # NodeExistsError here would be a real collision
        try:
            yield chroot
        finally:
            with contextlib.suppress(Exception):
                root.delete(chroot, recursive=True)
    finally:
        root.stop()
        root.close()


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
        try:
            for _attempt in range(5):
                if self._launch(java):
                    return self
                self.stop()  # another process took the port between our probe and the JVM
            raise ZooKeeperUnavailable("no free port on 127.0.0.1 after 5 attempts")
        except BaseException:
            self.stop()  # failed or interrupted half-way: no JVM, no folder left
            raise

    def _launch(self, java: str) -> bool:
        """Start the JVM on a fresh port; False if the port turned out not to be ours."""
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
        with (self.folder / "server.log").open("wb") as log:
            self.process = processes.spawn(
                [
                    java,
                    *JVM_OPTIONS,
                    "-cp",
                    classpath,
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                    str(config),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.folder,
            )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = (self.folder / "server.log").read_text(errors="replace")[-2000:]
                if "Address already in use" in output:
                    return False
                raise ZooKeeperUnavailable(f"ZooKeeper exited at start-up:\n{output}")
            try:
                answered = _four_letter(self.port, "ruok") == "imok"
            except OSError:
                answered = False
            if answered and listens_on(self.process.pid, self.port):
                return True
            time.sleep(0.1)
        raise ZooKeeperUnavailable(
            f"ZooKeeper did not answer on 127.0.0.1:{self.port} within {self.start_timeout_s}s"
        )

    def stop(self) -> None:
        """Stop the JVM and remove the folder, even if a signal's ``Interrupted`` cuts it short.

        The command's first SIGINT/SIGTERM raises wherever the main thread is, and that can
        be inside this clean-up (a run that ends as the signal comes): the JVM is then
        stopped again and the folder removed before the interrupt goes on (only the first
        signal raises, ``raceproof.cli.signals``).
        """
        process, self.process, self.port = self.process, None, 0
        try:
            if process is not None:
                processes.stop(process, timeout_s=10.0)
        finally:
            if process is not None and process.poll() is None:
                processes.stop(process, timeout_s=10.0)  # an interrupt cut the first stop
            self._remove_folder()

    def _remove_folder(self) -> None:
        folder, self.folder = self.folder, None
        if folder is None:
            return
        try:
            for _attempt in range(5):  # a file the stopped JVM's last write made can race the walk
                shutil.rmtree(folder, ignore_errors=True)
                if not folder.exists():
                    break
                time.sleep(0.1)
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # an interrupt cut the loop: once more

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
