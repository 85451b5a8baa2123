"""A small WSGI-to-ASGI bridge for the MCP endpoint: the SDK runs on the request's own thread.

The SDK's Streamable HTTP transport is an ASGI app. Each gunicorn thread keeps an event loop of its
own, stopped between requests, with its own instance of the transport, and runs one request on it
to the end. Nothing crosses threads, so a call costs no wake-ups: a shared loop thread with a
queue between threads spent about as long handing a read_page over as running it, and a2wsgi,
which synchronises every ASGI message across threads, more still.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import Any

ASGIApp = Callable[..., Any]


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


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class ThreadLoopBridge:
    """Serve an ASGI app on an event loop owned by the calling thread: no hand-off between threads.

    Each WSGI thread keeps its own loop (stopped between requests) and its own instance of the app,
    made by ``make_app(loop)``, which returns the app and an async context to hold open for its life.
    The answer is sent once the app has finished, so notifications a tool streams arrive together,
    in order, in the same response.
    """

    def __init__(self, make_app: Callable[[], tuple[ASGIApp, Any]]) -> None:
        self.make_app = make_app
        self._local = threading.local()

    def _runner(self) -> tuple[asyncio.AbstractEventLoop, ASGIApp]:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            loop = asyncio.new_event_loop()
            app, context = self.make_app()
            ready = loop.create_future()

            async def hold() -> None:
                async with context:
                    ready.set_result(None)
                    await asyncio.Event().wait()

            local.holder = loop.create_task(hold())
            loop.run_until_complete(ready)
            local.loop, local.app, local.pid = loop, app, os.getpid()
        return local.loop, local.app

    def warm(self) -> None:
        """Make the calling thread's loop and app now, not at its first request (a few ms each)."""
        self._runner()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        loop, app = self._runner()
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        messages: list[dict[str, Any]] = []
        scope = build_scope(environ, len(body))
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)

        loop.run_until_complete(app(scope, receive, send))
        start = messages[0]
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start.get("headers", [])]
        start_response(f"{start['status']} {_reason(start['status'])}", headers)
        return [m["body"] for m in messages[1:] if m.get("body")]
