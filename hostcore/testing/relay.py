"""A TCP relay on loopback in front of a server (S3, Redis): the network failing on demand.

``stop()`` refuses new connections and cuts every open one (the server unreachable), ``start()``
serves again on the same port. ``limit`` (bytes) cuts each connection once the server has sent
that much through it: an answer broken halfway, headers given and the body cut::

    relay = Relay(s3_server.url)       # point the client at relay.url
    relay.limit = 4096                 # every answer longer than 4 KiB is cut there
"""

from __future__ import annotations

import socket
import threading


class Relay:
    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.listener: socket.socket | None = None
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.port = 0
        self.limit: int | None = None
        self.start()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        assert self.listener is not None
        self.listener.close()
        self.listener = None
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            _shut(s)
            s.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, self.limit), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while data := src.recv(65536):
                if limit is not None and sent + len(data) >= limit:
                    dst.sendall(data[: limit - sent])
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in (src, dst):
            _shut(s)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
