"""What a client may register (RFC 7591) or describe in its metadata document: bounded fields and
redirect URIs a browser may safely be sent to.

Every field the server keeps is bounded (a 3 MB ``client_name`` or 5,000 redirect URIs filled the
shared state before). A redirect URI is https, http to a loopback address (a native app's local
server, RFC 8252 section 7.3: Claude Code, VS Code, the MCP Inspector), or an app's own scheme
(RFC 8252 section 7.1: ``cursor://...``); never a scheme that runs or reads something in the
browser (``javascript:``, ``data:``, ``file:`` ...), http to any other host, a fragment, or a
user name before the host (``https://claude.ai@evil.example/`` shows as claude.ai).
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError, InvalidRedirectURIError

MAX_BYTES = 32 * 1024
"""Largest registration request read."""
MAX_REDIRECT_URIS = 10
MAX_URI = 2000
MAX_TEXT = 200
MAX_LIST = 10
MAX_JWKS = 8 * 1024
"""Bounds of each field (characters; list lengths); ``jwks`` as JSON text."""
TEXT_FIELDS = ("client_name", "scope", "software_id", "software_version", "token_endpoint_auth_method")
URI_FIELDS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")
LIST_FIELDS = ("contacts", "grant_types", "response_types")
REFUSED_SCHEMES = frozenset(
    {"javascript", "vbscript", "data", "file", "blob", "filesystem", "about", "view-source", "ftp", "ws", "wss", "http"}
)
"""Schemes a redirect URI may not use (http only to a loopback address)."""
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")


def shown(value: object) -> str:
    """``value`` as an error description may carry it: at most 100 characters, and only those
    OAuth allows there (others percent-encoded: a description with a quote or a backslash is refused)."""
    text = value if isinstance(value, str) else json.dumps(value)
    text = text if len(text) <= 100 else text[:100] + "..."
    return "".join(c if 0x20 <= ord(c) <= 0x7E and c not in '"\\' else f"%{ord(c):02X}" for c in text)


def loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: object) -> str | None:
    """What is wrong with ``uri`` as a redirect URI (see the module), or None."""
    if not isinstance(uri, str) or not uri:
        return "give a URL"
    if len(uri) > MAX_URI:
        return f"is {len(uri)} characters; at most {MAX_URI}"
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in uri):
        return "holds a space or a control character"
    scheme, _, rest = uri.partition(":")
    if not SCHEME.fullmatch(scheme) or not rest:
        return "is not an absolute URL (it starts with scheme:)"
    scheme = scheme.lower()
    if scheme in REFUSED_SCHEMES and scheme != "http":
        return f"uses the {scheme}: scheme, which is no place to send a browser back to"
    if not URI_CHARACTERS.fullmatch(uri):
        return "holds a character a URL carries only percent-encoded (RFC 3986)"
    parts = urlsplit(uri)
    if parts.fragment or uri.endswith("#"):
        return "must not hold a fragment (#...)"
    if "@" in parts.netloc:
        return "must not hold a user name before the host (user@host)"
    if scheme == "https" and not parts.hostname:
        return "names no host"
    if scheme == "http" and not loopback(parts.hostname):
        return "uses http to a host that is not this machine's loopback; use https, or http://127.0.0.1:PORT/... for a native app"
    return None


def check_redirect_uris(uris: object) -> list[str]:
    """The redirect URIs, each checked; raises InvalidRedirectURIError naming the first at fault."""
    if not isinstance(uris, list) or not uris:
        raise InvalidRedirectURIError("redirect_uris: give a list of 1 to 10 redirect URIs")
    if len(uris) > MAX_REDIRECT_URIS:
        raise InvalidRedirectURIError(f"redirect_uris: {len(uris)} given; at most {MAX_REDIRECT_URIS}")
    for number, uri in enumerate(uris):
        problem = redirect_uri_problem(uri)
        if problem:
            raise InvalidRedirectURIError(f"redirect_uris[{number}]: {shown(uri)} {problem}")
    return uris


def check_client_metadata(data: object) -> dict[str, Any]:
    """A registration request's metadata, every field within its bound; raises
    InvalidClientMetadataError (InvalidRedirectURIError for a redirect URI) naming the field."""
    if not isinstance(data, dict):
        raise InvalidClientMetadataError("the registration must be a JSON object of client metadata (RFC 7591)")
    check_redirect_uris(data.get("redirect_uris"))
    for field in TEXT_FIELDS:
        _check_text(field, data.get(field), MAX_TEXT)
    for field in URI_FIELDS:
        _check_text(field, data.get(field), MAX_URI)
    for field in LIST_FIELDS:
        values = data.get(field)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) > MAX_LIST:
            raise InvalidClientMetadataError(f"{field}: give a list of at most {MAX_LIST} strings")
        for number, value in enumerate(values):
            _check_text(f"{field}[{number}]", value, MAX_TEXT)
    if "jwks" in data and len(json.dumps(data["jwks"])) > MAX_JWKS:
        raise InvalidClientMetadataError(f"jwks: at most {MAX_JWKS} characters of JSON (this server takes no client keys anyway)")
    return data


def _check_text(field: str, value: object, limit: int) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidClientMetadataError(f"{field}: give a string, not {shown(value)}")
    if len(value) > limit:
        raise InvalidClientMetadataError(f"{field}: {len(value)} characters; at most {limit}")


def address_key(address: str | None) -> str:
    """Whom a registration counts against: the client's address, an IPv6 one by its /64 (one
    machine or home network usually holds a whole /64)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "unknown"
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)
