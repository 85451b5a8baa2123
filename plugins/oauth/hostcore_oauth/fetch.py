"""Fetching a client ID metadata document safely: the client_id is a URL anyone may type, so the
fetch must not become a way into the wiki's own network (SSRF).

- https only (http only to a loopback address, and only when ``metadata_allow_loopback`` is set,
  for tests);
- every address the name resolves to is checked, and the connection goes to a checked address
  (no second lookup a rebinding DNS server could answer differently); a private, loopback,
  link-local, multicast, reserved or unspecified address is refused, also after each redirect;
- at most ``MAX_REDIRECTS`` redirects, ``max_bytes`` of body, ``timeout`` seconds in all.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import time
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore

MAX_REDIRECTS = 3
DEFAULT_CACHE_SECONDS = 300
MAX_CACHE_SECONDS = 24 * 3600


class Refused(Exception):
    """The document cannot be used; the message says why (shown to the person and the client)."""


def address_refused(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_loopback: bool) -> str | None:
    """Why connecting to ``ip`` is refused, or None when it is a public address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if allow_loopback else "a loopback address"
    for kind in ("link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return f"a {kind.replace('_', '-')} address"
    return None


class CheckedBackend(httpcore.SyncBackend):
    """Resolves the name itself, refuses it if any address is not public, connects to a checked one."""

    def __init__(self, allow_loopback: bool) -> None:
        self.allow_loopback = allow_loopback

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:  # fmt: skip
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Refused(f"{host} does not resolve ({exc.strerror or exc})") from None
        addresses = [str(info[4][0]) for info in infos]
        for address in addresses:
            why = address_refused(ipaddress.ip_address(address.split("%")[0]), self.allow_loopback)
            if why:
                raise Refused(f"{host} resolves to {address}, {why}; a metadata document must be on a public address")
        return super().connect_tcp(addresses[0], port, timeout, local_address, socket_options)


def check_url(url: str, allow_loopback: bool) -> None:
    parts = urlsplit(url)
    loopback_http = allow_loopback and parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not loopback_http:
        raise Refused(f"{url!r} is not an https URL")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise Refused(f"{url!r} names no host, or carries a user name")


def cache_seconds(cache_control: str) -> float:
    """How long Cache-Control lets us keep the document (bounded; 0: not at all)."""
    directives = {d.strip().split("=")[0].lower(): d.strip() for d in cache_control.split(",") if d.strip()}
    if "no-store" in directives or "no-cache" in directives:
        return 0
    if "max-age" in directives:
        try:
            return max(0, min(int(directives["max-age"].split("=", 1)[1].strip('"')), MAX_CACHE_SECONDS))
        except (IndexError, ValueError):
            return 0
    return DEFAULT_CACHE_SECONDS


def fetch_json(url: str, *, allow_loopback: bool, max_bytes: int, timeout: float) -> tuple[dict[str, Any], float]:
    """The JSON object at ``url`` and how long it may be cached. Raises Refused."""
    deadline = time.monotonic() + timeout
    context = ssl.create_default_context()
    with httpcore.ConnectionPool(ssl_context=context, network_backend=CheckedBackend(allow_loopback), retries=0) as pool:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(url, allow_loopback)
            left = deadline - time.monotonic()
            if left <= 0:
                raise Refused(f"{url} took longer than {timeout:g} seconds")
            limits = {"connect": left, "read": left, "write": left, "pool": left}
            try:
                with pool.stream("GET", url, headers={"Accept": "application/json", "User-Agent": "hostcore-oauth"},
                                 extensions={"timeout": limits}) as response:  # fmt: skip
                    headers = {k.decode().lower(): v.decode("latin-1") for k, v in response.headers}
                    if response.status in (301, 302, 303, 307, 308) and "location" in headers:
                        url = urljoin(url, headers["location"])
                        continue
                    if response.status != 200:
                        raise Refused(f"{url} answered HTTP {response.status}")
                    if int(headers.get("content-length") or 0) > max_bytes:
                        raise Refused(f"the document at {url} is over the limit of {max_bytes} bytes")
                    body = b""
                    for chunk in response.iter_stream():
                        body += chunk
                        if len(body) > max_bytes:
                            raise Refused(f"the document at {url} is over the limit of {max_bytes} bytes")
                        if time.monotonic() > deadline:
                            raise Refused(f"{url} took longer than {timeout:g} seconds")
            except httpcore.TimeoutException:
                raise Refused(f"{url} took longer than {timeout:g} seconds") from None
            except (httpcore.NetworkError, httpcore.ProtocolError, ssl.SSLError) as exc:
                raise Refused(f"{url} could not be fetched ({exc})") from None
            try:
                document = json.loads(body)
            except ValueError:
                raise Refused(f"the document at {url} is not JSON") from None
            if not isinstance(document, dict):
                raise Refused(f"the document at {url} is not a JSON object")
            return document, cache_seconds(headers.get("cache-control", ""))
    raise Refused(f"{url} redirects more than {MAX_REDIRECTS} times")
