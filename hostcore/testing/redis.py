"""A real Redis for tests: Debian's ``redis-server`` on a free loopback port, keeping its data in a
temporary folder (append-only file), as a production Redis should, or nothing (``persistent=False``).

    with redis_server() as srv:          # srv.url: redis://127.0.0.1:PORT/0
        ...
        srv.stop()                       # Redis down mid-run
        srv.start()                      # back on the same port, with its data (empty if not persistent)

``make test`` installs ``redis-server`` (as root) or names the package to install.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hostcore.testing.servers import free_port, start_process_group, stop_process_group

STARTUP_TIMEOUT = 10.0


class RedisServer:
    """One ``redis-server --bind 127.0.0.1 --save '' --appendonly yes`` on ``port`` (free if 0);
    ``--appendonly no`` unless ``persistent``: a restart then loses everything."""

    def __init__(self, port: int = 0, persistent: bool = True) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed; install Debian's redis-server package (apt-get install redis-server)")
        self.binary = binary
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.appendonly = "yes" if persistent else "no"
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="hostcore-redis-")
        self.log = str(Path(self._dir.name) / "redis.log")

    def start(self) -> None:
        """Start it (with the data it kept, if persistent) and wait until it answers PING."""
        self.proc = start_process_group(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", self.appendonly,
             "--dir", self._dir.name, "--logfile", self.log],
            marker="redis", what="redis-server", stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on port {self.port}: {Path(self.log).read_text(errors='replace')}")
            time.sleep(0.02)

    def answers(self) -> bool:
        """True when it answers PING (a raw RESP exchange, so no client library is needed)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop it (TERM, KILL if it lingers); the port is then refused."""
        if self.proc is None:
            return
        stop_process_group(self.proc)
        self.proc = None

    def close(self) -> None:
        self.stop()
        self._dir.cleanup()


@contextmanager
def redis_server(persistent: bool = True) -> Iterator[RedisServer]:
    """A started :class:`RedisServer`, stopped and cleaned up afterwards."""
    server = RedisServer(persistent=persistent)
    try:
        server.start()
        yield server
    finally:
        server.close()
