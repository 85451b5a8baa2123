"""A small WSGI-to-ASGI bridge for the MCP endpoint: one hand-off to the event loop per request.

The SDK's transport is an ASGI app running on an asyncio loop thread of the worker. A request
arrives on a gunicorn thread: its body is read whole (the endpoint bounds it), the app runs on the
loop, and its messages come back through a thread-safe queue. JSON answers cost one wake-up each
way; an SSE answer streams as the app sends it. (a2wsgi, the general tool, synchronises every
ASGI message across threads and cost about 1 ms more per call in our measurements.)
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Callable, Iterator
from typing import Any

ASGIApp = Callable[..., Any]
_DONE = object()


def build_scope(environ: dict[str, Any], body_length: int) -> dict[str, Any]:
    headers = [
        (key[5:].lower().replace("_", "-").encode("latin-1"), value.encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_") and key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH")
    ]
    if environ.get("CONTENT_TYPE"):
        headers.append((b"content-type", environ["CONTENT_TYPE"].encode("latin-1")))
    headers.append((b"content-length", str(body_length).encode()))
    client = (environ.get("REMOTE_ADDR", ""), int(environ.get("REMOTE_PORT") or 0))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").split("/")[-1],
        "method": environ["REQUEST_METHOD"],
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""),
        "raw_path": None,
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": client,
        "server": (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0)),
        "wsgi_environ": environ,
    }


class WsgiToAsgi:
    """Serve ``app`` (ASGI) to WSGI callers, running it on ``loop`` (another thread's)."""

    def __init__(self, app: ASGIApp, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        future = asyncio.run_coroutine_threadsafe(self._run(build_scope(environ, len(body)), body, messages), self.loop)
        start = messages.get()
        if start is _DONE or isinstance(start, BaseException):
            future.result()  # re-raise what the app raised before answering
            raise RuntimeError("the MCP transport ended without answering")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start.get("headers", [])]
        start_response(f"{start['status']} {_reason(start['status'])}", headers)
        return self._body(messages, future)

    @staticmethod
    def _body(messages: queue.SimpleQueue[Any], future: Any) -> Iterator[bytes]:
        try:
            while True:
                message = messages.get()
                if message is _DONE or isinstance(message, BaseException):
                    return
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body", False):
                    return
        finally:
            if not future.done():
                future.cancel()  # the client went away mid-stream, or the answer is complete

    async def _run(self, scope: dict[str, Any], body: bytes, messages: queue.SimpleQueue[Any]) -> None:
        delivered = False
        finished = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()  # nothing more will come; wake when the response is done
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            messages.put(message)

        try:
            await self.app(scope, receive, send)
        except BaseException as exc:
            messages.put(exc)
            raise
        finally:
            finished.set()
            messages.put(_DONE)


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
