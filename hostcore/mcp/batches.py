"""JSON-RPC batches: MCP 2025-03-26 requires servers to accept them; later revisions removed them.

The SDK takes one message per POST. A batch (a JSON array) sent under 2025-03-26, or with no
``MCP-Protocol-Version`` at all (which means 2025-03-26), is answered here: each message goes
through the SDK as a POST of its own, with the batch's headers, and the answers come back as one
JSON array in the batch's order. Notifications and responses get no entry, and a batch of only
those is 202 with no body, as the revision says. ``initialize`` may not be in a batch, nor
anything but a message object: each gets an error entry. Each message counts as one request
against the caller's ``requests`` rate limit. Under a later revision a batch is 400, naming the
revision and what to send instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from flask import Response
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

BATCH_REVISION = "2025-03-26"
"""The one revision whose clients may POST a JSON-RPC batch."""
MAX_MESSAGES = 100
"""Most messages one batch may hold."""
INVALID_REQUEST = -32600
WHOLE_POST = (406, 415)
"""Answers about the POST itself (its Accept or Content-Type), not about one message: they
answer the whole batch."""

One = Callable[[bytes], tuple[int, list[tuple[str, str]], bytes]]
"""Answers one message through the SDK: (status, headers, body)."""


def error_object(message: str, id: Any = None) -> dict[str, Any]:
    """A JSON-RPC error (code -32600, Invalid Request) saying ``message``."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": INVALID_REQUEST, "message": message}}


def _refused(message: str) -> Response:
    return Response(json.dumps(error_object(message)), 400, mimetype="application/json")


def is_batch(body: bytes) -> bool:
    """Whether a POST's body is a JSON array (told from its first character, without parsing)."""
    return re.match(rb"\s*\[", body) is not None


def answer(environ: dict[str, Any], body: bytes, one: One, spend: Callable[[], Response | None]) -> Response | None:
    """The answer to a batch, or None for what the SDK answers itself (a body that does not parse,
    a protocol revision it does not know). ``spend`` counts one more request against the rate
    limit (the POST itself was counted) and returns the 429 when it is over."""
    version = environ.get("HTTP_MCP_PROTOCOL_VERSION", BATCH_REVISION)
    try:
        messages = json.loads(body)
    except ValueError:
        return None
    if version != BATCH_REVISION:
        if version not in KNOWN_PROTOCOL_VERSIONS:
            return None
        return _refused(f"MCP-Protocol-Version {version} takes one JSON-RPC message per POST (batches were "
                              f"removed after {BATCH_REVISION}): send each request in a POST of its own")  # fmt: skip
    if not messages or len(messages) > MAX_MESSAGES:
        return _refused(f"a batch holds 1 to {MAX_MESSAGES} JSON-RPC messages, not {len(messages)}")
    for _ in messages[1:]:
        refused = spend()
        if refused is not None:
            return refused
    entries = []
    for message in messages:
        if not isinstance(message, dict):
            entries.append(error_object(f"a batch holds JSON-RPC message objects, not {json.dumps(message)[:100]}"))
            continue
        if message.get("method") == "initialize":
            entries.append(error_object("initialize must be sent on its own, not in a batch", message.get("id")))
            continue
        status, headers, content = one(json.dumps(message).encode())
        if status in WHOLE_POST:
            return Response(content, status, headers)
        if content:
            entries.append(json.loads(content))
    if not entries:
        return Response(status=202)
    return Response(json.dumps(entries), 200, mimetype="application/json")
