"""A real PostgreSQL server for the tests: Debian's binaries, a throw-away cluster, 127.0.0.1, a free port.

``make postgres`` installs Debian's ``postgresql`` package when its ``initdb``
is missing, and its JDBC driver (``libpostgresql-jdbc-java``, for the
JDBC sink test; ``jdbc_jar``). ``running_postgres()`` runs ``initdb`` into a temporary folder and
starts ``postgres`` on 127.0.0.1 on a free port (trust authentication, no
Unix socket outside that folder), waits until it accepts a connection, yields
its connection string, and stops it (a fast shutdown) and removes the folder
afterwards. PostgreSQL refuses to run as root: as root the cluster belongs to
``nobody`` and both programs run as ``nobody`` (the process started switches user
itself, so the process signalled is ``postgres``: through ``runuser -u nobody``, the
SIGINT of the fast shutdown reached ``runuser`` alone, and every stop waited out its
30 s bound and killed the server; ``stopped`` collects the server's exit code, 0 for
a fast shutdown). A test that needs the server fails, never skips, when it cannot start.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 60.0
INITDB_OPTIONS = ("-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")


def bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: run `make postgres`")
    return Path(found[-1]).parent


def jdbc_jar() -> Path:
    """PostgreSQL's JDBC driver: Debian's (``make postgres`` installs it), else a Maven cache's."""
    debian = Path("/usr/share/java/postgresql.jar")
    if debian.is_file():
        return debian
    cached = sorted(
        Path.home().glob(".m2/repository/org/postgresql/postgresql/*/postgresql-*.jar"),
        key=lambda p: [int(n) if n.isdigit() else 0 for n in p.parent.name.split(".")],
    )
    if not cached:
        raise RuntimeError("PostgreSQL's JDBC driver is not installed: run `make postgres`")
    return cached[-1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> dict[str, Any]:
    """``subprocess`` arguments that run a program as ``nobody`` when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": "nobody", "group": "nogroup", "extra_groups": []}


@contextmanager
def running_postgres(stopped: list[int] | None = None) -> Iterator[str]:
    """A started PostgreSQL server's connection string; stopped and removed on exit.

    ``stopped``, when given, gets the server's exit code (0: it shut down when asked;
    -9: it did not within the bound and was killed)."""
    import psycopg

    binaries = bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="raceproof-postgres-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "nobody", "nogroup")
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [str(binaries / "initdb"), "-D", str(data), *INITDB_OPTIONS],
            check=True,
            capture_output=True,
            cwd=folder,
            **_as_server_user(),
        )
        port = _free_port()
        server = subprocess.Popen(
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-k",
                str(folder),
                "-c",
                "fsync=off",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=folder,
            **_as_server_user(),
        )
        conninfo = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                psycopg.connect(conninfo).close()
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not start on 127.0.0.1:{port}") from None
                time.sleep(0.2)
        yield conninfo
    finally:
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGINT)  # fast shutdown
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            if stopped is not None:
                stopped.append(server.returncode)
        shutil.rmtree(folder, ignore_errors=True)
