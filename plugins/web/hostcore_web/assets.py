"""The web plugin's static files (``static/``): a content hash in their URL, so a browser keeps
them for a year and fetches a new version the moment it changes, and gzip for the clients that
accept it, compressed once per process (mermaid above all: the largest by far).

``url_for("web.static", filename=...)`` adds the hash (``?v=...``) by itself; a URL without it,
or with an older one, is answered too, but must be checked again (``no-cache`` and an ETag).
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import threading
from dataclasses import dataclass
from pathlib import Path

from flask import Request, Response
from werkzeug.security import safe_join

FOLDER = Path(__file__).parent / "static"
FOREVER = "public, max-age=31536000, immutable"
COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml")
MIN_COMPRESSED_BYTES = 1024  # below a packet, gzip saves nothing worth a header


@dataclass(frozen=True)
class Asset:
    data: bytes
    digest: str
    mimetype: str
    gzipped: bytes | None  # None: not worth compressing


class Assets:
    """The files of ``folder`` by their path in it, read (and compressed) on first use, kept while
    the process runs: they change only with the installed package, which a restart picks up."""

    def __init__(self, folder: Path = FOLDER) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._kept: dict[str, Asset] = {}

    def get(self, name: str) -> Asset | None:
        """The file at ``name`` (a relative path) in the folder, or None when there is none."""
        with self._lock:
            kept = self._kept.get(name)
        if kept is not None:
            return kept
        joined = safe_join(str(self.folder), name)
        path = Path(joined) if joined is not None else None
        if path is None or not path.is_file():
            return None  # not kept: a name that is not there costs a stat, never memory
        data = path.read_bytes()
        mimetype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        gzipped = None
        if len(data) >= MIN_COMPRESSED_BYTES and mimetype.startswith(COMPRESSED_TYPES):
            gzipped = gzip.compress(data, compresslevel=6, mtime=0)
        asset = Asset(data, hashlib.blake2b(data, digest_size=8).hexdigest(), mimetype, gzipped)
        with self._lock:
            return self._kept.setdefault(name, asset)

    def version(self, name: str) -> str | None:
        """What ``url_for`` puts in the file's URL: its content hash."""
        asset = self.get(name)
        return asset.digest if asset is not None else None


def respond(asset: Asset, request: Request, cache: str | None = None) -> Response:
    """``asset`` for ``request``: gzipped when the client accepts it; kept for a year when the URL
    names its current hash (else ``cache``, or checked again each time)."""
    zipped = asset.gzipped is not None and request.accept_encodings["gzip"] > 0
    response = Response(asset.gzipped if zipped else asset.data, mimetype=asset.mimetype)
    if zipped:
        response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    response.set_etag(asset.digest + ("-gzip" if zipped else ""))
    response.headers["Cache-Control"] = FOREVER if request.args.get("v") == asset.digest else cache or "no-cache"
    response.make_conditional(request)
    return response
