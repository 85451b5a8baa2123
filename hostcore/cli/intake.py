"""Requests read whole before a thread takes them: a slow client costs a socket, not a thread.

gunicorn's gthread worker gives each new connection to a thread of its pool at once. The thread
waits for the first byte, reads the head, and the application reads the body, each read waiting
as long as the client likes; an answered request whose body was not read is drained for up to
5 s. So connections that send a head and part of a body, with no token, held every thread of the
worker: as many of them as the workers have threads made everyone else wait for the drains (the
401 was answered at once, the drain held the thread), and a body that never finished held its
thread for as long as the client kept the connection open.

Here the worker's own event loop reads each request, without blocking, into the request parser's
buffer: the head, and the body when it is at most :data:`BUFFER_BYTES` (a sign-in, a registration,
almost every MCP call). A thread takes the request only once that much has arrived. A larger body,
a chunked one or one behind ``Expect: 100-continue`` is left for the application to read in the
thread, so that it can refuse a caller first (the MCP endpoint answers 401 before reading a
body); those reads wait within the same time, and at most half the pool's threads wait for body
bytes at once (a read that would make one more wait is answered 503). A body the application
left unread is not drained: the connection closes after the answer.

Time: a request must arrive at an average of at least :data:`MIN_RATE` bytes a second after its
first :data:`GRACE` seconds, counted from the connection's opening or, on a kept-alive
connection, from the request's first byte. One that falls behind is answered 408 and closed.

Plain HTTP/1.1 only: with TLS or HTTP/2 cleartext configured in gunicorn, the worker reads
requests in its threads as gthread does (put a proxy in front; see docs/operators.md).
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from functools import partial
from typing import Any

from gunicorn import util
from gunicorn.http.body import LengthReader
from gunicorn.workers.gthread import ThreadWorker
from werkzeug.exceptions import RequestTimeout, ServiceUnavailable

GRACE = 10.0
"""Seconds a request may take before :data:`MIN_RATE` counts."""
MIN_RATE = 16 * 1024
"""Bytes a second a request must average after :data:`GRACE` (16 KiB/s: 128 kbit/s)."""
BUFFER_BYTES = 64 * 1024
"""Largest body read before a thread takes the request; a head that has not ended within this
many bytes is handed over too (gunicorn's parser refuses an oversized one)."""
READ_BYTES = 64 * 1024
LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024
"""A closing connection is read until the client closes too, for at most this long and this much
(gunicorn's own bounds)."""
SWEEP_SECONDS = 0.25
"""How often the event loop looks for requests that fell behind."""
TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


class RequestTooSlow(RequestTimeout):
    """The request did not arrive in its time (see the module): 408, then the connection closes."""

    description = f"The request did not arrive in time: after {GRACE:g} s it must come at {MIN_RATE // 1024} KiB/s or faster."


class TooManyWaits(ServiceUnavailable):
    """Half the worker's threads already wait for request bodies: 503, try again shortly."""

    description = "Too many requests are sending their bodies slowly right now; try again shortly."

    def __init__(self) -> None:
        super().__init__(retry_after=int(GRACE))


def request_arrived(data: bytes) -> bool:
    """Whether ``data``, the start of a connection's next request, holds what a thread needs: the
    head and, unless the application is to read it (see the module), the whole body."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return len(data) > BUFFER_BYTES
    length = 0
    for line in data[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name in (b"transfer-encoding", b"expect"):
            return True
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return True  # gunicorn's parser answers 400
    return length > BUFFER_BYTES or len(data) >= end + 4 + length


def _read_now(sock: socket.socket) -> bytes | None:
    """What a non-blocking socket holds: None when nothing yet, b"" when the client closed it (or
    it failed)."""
    try:
        return sock.recv(READ_BYTES)
    except BlockingIOError:
        return None
    except OSError:
        return b""


class Arrival:
    """A connection's current request on its way in: when it began and how many bytes came.

    It is also the socket gunicorn's request parser reads from in the thread: a read that finds
    no data waits only until the request's deadline, and only while fewer than half the threads
    wait (``waits``)."""

    def __init__(self, sock: socket.socket, waits: threading.BoundedSemaphore) -> None:
        self.sock = sock
        self.waits = waits
        self.begin()

    def begin(self) -> None:
        self.start = time.monotonic()
        self.received = 0

    def deadline(self) -> float:
        return self.start + GRACE + self.received / MIN_RATE

    def recv(self, size: int) -> bytes:
        prior = self.sock.gettimeout()  # gunicorn's drain sets one of its own
        try:
            self.sock.settimeout(0.0)
            try:
                data = self.sock.recv(size)
            except BlockingIOError:
                data = self._wait(size, prior)
        finally:
            self.sock.settimeout(prior)
        self.received += len(data)
        return data

    def _wait(self, size: int, prior: float | None) -> bytes:
        remaining = self.deadline() - time.monotonic()
        bound = remaining if prior is None else min(prior, remaining)
        if bound <= 0:
            if prior is not None:
                raise TimeoutError("the drain's time is up")
            raise RequestTooSlow()
        if not self.waits.acquire(blocking=False):
            raise TooManyWaits()
        try:
            self.sock.settimeout(bound)
            return self.sock.recv(size)
        except TimeoutError:
            if prior is not None and prior <= remaining:
                raise
            raise RequestTooSlow() from None
        finally:
            self.waits.release()

    def settimeout(self, value: float | None) -> None:
        self.sock.settimeout(value)

    def gettimeout(self) -> float | None:
        return self.sock.gettimeout()


class IntakeWorker(ThreadWorker):
    """gthread with requests read by the event loop before a thread takes them (see the module)."""

    wsgi: Any  # gunicorn's: the application
    served: Any  # the application itself, before closing_unread wraps it

    def init_process(self) -> None:
        self._arrivals: dict[Any, Arrival] = {}  # connections whose request is still coming, by TConn
        self._lingering: dict[Any, list[float]] = {}  # closing connections: [until, bytes drained]
        self._waits = threading.BoundedSemaphore(max(1, self.cfg.threads // 2))
        self._serving = threading.local()  # the request each thread serves
        self._next_sweep = 0.0
        self._reads_ahead = not self.cfg.is_ssl and getattr(self.cfg, "http2_cleartext", "off") in ("off", "upgrade")
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app = self.served = self.wsgi  # ``served``: the app itself, for what the worker does as it stops

        def closing_unread(environ: dict[str, Any], start_response: Any) -> Any:
            """The app's answer; the connection closes after it when the app left part of the
            body unread that is not in memory yet (it is not waited for to drain it)."""
            answer = app(environ, start_response)
            req, conn = getattr(self._serving, "request", (None, None))
            if req is not None and not self._body_in_memory(req, conn):
                req.must_close = True
            return answer

        self.wsgi = closing_unread

    @staticmethod
    def _body_in_memory(req: Any, conn: Any) -> bool:
        reader = getattr(req.body, "reader", None)
        if not isinstance(reader, LengthReader):
            return False  # chunked: how much is left is unknown
        return reader.length <= len(conn.parser.unreader.buf.getvalue())

    def handle_request(self, req: Any, conn: Any) -> Any:
        self._serving.request = (req, conn)
        try:
            return super().handle_request(req, conn)
        finally:
            self._serving.request = (None, None)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """A request that fell behind while its head was read in a thread: 408 (or 503), no traceback."""
        if isinstance(exc, (RequestTooSlow, TooManyWaits)):
            self.log.debug("request from %s: %s", addr, exc.description)
            try:
                util.write_error(client, exc.code, exc.name, exc.description or "")
            except OSError:
                pass
            return
        super().handle_error(req, client, addr, exc)

    # --- the event loop's side -------------------------------------------------------------

    def enqueue_req(self, conn: Any) -> None:
        """Every way a request starts (a new connection, a kept-alive one that became readable,
        one pipelined behind the last) comes here: read it in the event loop until it arrived."""
        if not self._reads_ahead:
            return super().enqueue_req(conn)
        if not conn.initialized:
            conn.init()  # plain HTTP/1: makes the parser, reads nothing
            conn.parser.unreader.sock = Arrival(conn.sock, self._waits)
        arrival = conn.parser.unreader.sock
        arrival.begin()
        buffered = conn.parser.unreader.buf.getvalue()
        arrival.received = len(buffered)
        if request_arrived(buffered):
            return self._hand_over(conn)
        conn.sock.setblocking(False)
        self._arrivals[conn] = arrival
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        return None

    def _on_readable(self, conn: Any, _sock: Any) -> None:
        arrival = self._arrivals[conn]
        data = _read_now(conn.sock)
        if data is None:
            return
        if not data:  # the client went away
            self._drop(conn)
            return
        arrival.received += len(data)
        buffer = conn.parser.unreader.buf
        buffer.seek(0, 2)
        buffer.write(data)
        if request_arrived(buffer.getvalue()):
            self.poller.unregister(conn.sock)
            del self._arrivals[conn]
            self._hand_over(conn)

    def _hand_over(self, conn: Any) -> None:
        conn.data_ready = True  # gthread's handle() must not wait for a first byte again
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        """gthread's, but a connection to close lingers in the event loop (:meth:`_linger`)
        instead of making it wait."""
        if self._reads_ahead and not fs.cancelled() and fs.exception() is None and not fs.result():
            self.nr_conns -= 1
            self._linger(conn)
            return
        super().finish_request(conn, fs)

    def _linger(self, conn: Any) -> None:
        """Close as gunicorn's ``close_graceful`` does (FIN first, then read what the client still
        sends until it closes too, so that the kernel does not reset the connection and cut the
        answer short), but in the event loop: gthread lingered up to 2 s per connection in the
        loop itself, so 64 clients that never close stopped the worker for two minutes."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
        except OSError:
            conn.close()
            return
        self._lingering[conn] = [time.monotonic() + LINGER_SECONDS, 0]
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_lingering, conn))

    def _on_lingering(self, conn: Any, _sock: Any) -> None:
        data = _read_now(conn.sock)
        if data is None:
            return
        self._lingering[conn][1] += len(data)
        if not data or self._lingering[conn][1] >= LINGER_BYTES:
            self._closed(conn)

    def _closed(self, conn: Any) -> None:
        self.poller.unregister(conn.sock)
        del self._lingering[conn]
        conn.close()

    def _drop(self, conn: Any, answer: bytes = b"") -> None:
        self.poller.unregister(conn.sock)
        del self._arrivals[conn]
        if answer:
            try:
                conn.sock.send(answer)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self) -> None:
        """gthread's sweep after each wait for events; also closes requests that fell behind
        (408 once a byte of theirs came; an idle connection is just closed, at once when this
        worker stops)."""
        super().murder_pending()
        now = time.monotonic()
        if now < self._next_sweep and self.alive:
            return
        self._next_sweep = now + SWEEP_SECONDS
        for conn, arrival in list(self._arrivals.items()):
            if arrival.deadline() <= now or not (self.alive or arrival.received):
                self.log.debug("request from %s did not arrive in time: closed", conn.client)
                self._drop(conn, TIMED_OUT if arrival.received else b"")
        for conn, (until, _drained) in list(self._lingering.items()):
            if until <= now:
                self._closed(conn)
