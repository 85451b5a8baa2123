"""Which client is calling, by the name and version it declares (``clientInfo``), for history.

A 2026-07-28 request carries ``clientInfo`` in its ``_meta`` (the SDK hands it over as the
session's client params). The older revisions send it once, in ``initialize``, and this server
keeps no session between requests. So the answer to an ``initialize`` names the client in its
``Mcp-Session-Id`` (:func:`session_id`): every client of those revisions sends that header back
on each later request (the 2025 specifications require it), and :func:`from_session_id` reads
the client from it. Nothing is stored: the header holds all of it, any worker or host reads it,
and a request without one is served as before (the HTTP ``User-Agent`` names the client then).
The name is the client's own claim, like ``clientInfo`` itself: it says which program wrote,
never who (the principal does).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from typing import Any

SESSION_PREFIX = "hc1."
MAX_NAME = 64
MAX_VERSION = 32
MAX_SESSION_ID = 512
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _clean(value: object, limit: int) -> str:
    """``value`` as one line of at most ``limit`` characters: it goes into commit messages."""
    if not isinstance(value, str):
        return ""
    return " ".join(_UNPRINTABLE.sub(" ", value).split())[:limit].strip()


def label(name: object, version: object = None) -> str | None:
    """``name version`` of a declared client (``clientInfo``), or None when it names nothing."""
    cleaned = _clean(name, MAX_NAME)
    if not cleaned:
        return None
    release = _clean(version, MAX_VERSION)
    return f"{cleaned} {release}" if release else cleaned


def from_user_agent(user_agent: str | None) -> str | None:
    """The fallback when a client declares nothing: the first product of its ``User-Agent``."""
    return _clean((user_agent or "").split(" ")[0], MAX_NAME + MAX_VERSION + 1) or None


def session_id(client_info: object) -> str:
    """The ``Mcp-Session-Id`` of an ``initialize`` answer: random (so unique), then the declared
    name and version (base64url of JSON): visible ASCII only, as the specification asks."""
    info = client_info if isinstance(client_info, dict) else {}
    declared = {"name": _clean(info.get("name"), MAX_NAME), "version": _clean(info.get("version"), MAX_VERSION)}
    packed = base64.urlsafe_b64encode(json.dumps(declared, ensure_ascii=False).encode()).decode().rstrip("=")
    return f"{SESSION_PREFIX}{secrets.token_urlsafe(12)}.{packed}"


def from_session_id(value: str | None) -> str | None:
    """The client an ``Mcp-Session-Id`` of :func:`session_id` names; None for anything else."""
    if not value or len(value) > MAX_SESSION_ID or not value.startswith(SESSION_PREFIX):
        return None
    packed = value.rsplit(".", 1)[-1]
    try:
        declared: Any = json.loads(base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(declared, dict):
        return None
    return label(declared.get("name"), declared.get("version"))


def session_key(value: str | None) -> str:
    """What the activity log keeps of an ``Mcp-Session-Id`` of :func:`session_id`: its random part
    (the client's name is recorded on its own); "" for none or anything else."""
    if not value or len(value) > MAX_SESSION_ID or not value.startswith(SESSION_PREFIX):
        return ""
    return value.split(".", 2)[1]


def initialize_params(body: bytes) -> dict[str, Any] | None:
    """The params of the ``initialize`` request in ``body``, or None when it is none (cheaply:
    most bodies are told apart without parsing)."""
    if b'"initialize"' not in body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    return params if isinstance(params, dict) else {}
