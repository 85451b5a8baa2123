"""The one meaning of a hash: the git blob id of the stored bytes, whatever the backend."""

from __future__ import annotations

import hashlib


def blob_hash(data: bytes) -> str:
    """The git blob id of ``data``: sha1 over ``b"blob <len>\\0"`` plus the bytes."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()
