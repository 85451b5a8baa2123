"""Comments per heading as data: where a page's threads are stored, their fields, their limits.
Pure: no I/O.

A page's comments are one JSON record at ``.comments/<slug>.json`` in the wiki's own storage (like
change requests at ``.changes/``), so every backend (git, fs, S3) keeps them and every host sees
them. ``.comments`` starts with a dot: no slug reaches it, and page listings, search, the link
graph and history leave it out. The record moves with its page (a move or rename writes it at the
new slug in the same change) and stays when the page is deleted, so restoring the page brings its
comments back.

The record holds one thread per section, keyed by the section's ``section_id``
(:mod:`hostcore.domain.sections`): a thread keeps to its heading while a heading makes that id.
When the heading is removed or renamed, its thread is kept and reported as orphaned under the
heading's last title, never attached to another heading.

A comment is plain text (no Markdown is rendered from it), at most :data:`MAX_TEXT` characters.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime
from typing import Any

from hostcore.errors import ValidationError

FOLDER = ".comments"
MAX_TEXT = 4000
"""Characters of one comment."""
MAX_PER_PAGE = 2000
"""Comments of one page, all its threads together."""
MAX_THREAD_READ = 100
"""Comments one read of a thread returns at most."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# an @ that starts a word (not the middle of an address like ana@example.org), then a name
_MENTION = re.compile(r"(?<![\w@])@(?=[^\W_])")


def record_path(slug: str) -> str:
    return f"{FOLDER}/{slug}.json"


def new_id(now: datetime) -> str:
    """A new comment id: its time to the microsecond (ids sort oldest first), then random hex."""
    return f"c-{now.astimezone(UTC):%Y%m%d%H%M%S%f}-{secrets.token_hex(3)}"


def check_id(value: Any, field: str = "comment_id") -> str:
    if not (isinstance(value, str) and value.startswith("c-") and len(value) <= 40
            and all(c.isalnum() or c == "-" for c in value)):  # fmt: skip
        raise ValidationError("is not a comment id; read_comment_thread shows them (c-...)", field=field)
    return value


def check_text(value: Any, field: str = "text") -> str:
    """A comment's text: a string, its line ends made ``\\n``, surrounding space stripped, not
    empty, no control characters but line breaks and tabs, at most :data:`MAX_TEXT` characters.
    Raises ValidationError naming ``field``."""
    if not isinstance(value, str):
        raise ValidationError("must be a string", field=field)
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise ValidationError("is empty; write the comment", field=field)
    if _CONTROL.search(text):
        raise ValidationError("has control characters; a comment is plain text (line breaks and tabs allowed)", field=field)
    if len(text) > MAX_TEXT:
        raise ValidationError(f"has {len(text)} characters; at most {MAX_TEXT}: shorten it or split it in two", field=field)
    return text


def strip_mentions(text: str) -> str:
    """``text`` with the ``@`` of each @-mention dropped (``@ana`` -> ``ana``): an assistant's post
    names people without pinging them."""
    return _MENTION.sub("", text)


def empty(slug: str) -> dict[str, Any]:
    return {"slug": slug, "threads": {}}


def count(record: dict[str, Any]) -> int:
    return sum(len(t["comments"]) for t in record["threads"].values())


def find(record: dict[str, Any], comment_id: str) -> tuple[str, int] | None:
    """(section_id, index) of the comment ``comment_id`` in ``record``, or None."""
    for section_id, thread in record["threads"].items():
        for i, comment in enumerate(thread["comments"]):
            if comment["id"] == comment_id:
                return section_id, i
    return None


def to_bytes(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, indent=1).encode()


def from_bytes(data: bytes) -> dict[str, Any]:
    record = json.loads(data)
    if not isinstance(record, dict) or not isinstance(record.get("threads"), dict):
        raise ValueError("not a comments record")
    return record


def moved(data: bytes, there: bytes | None, new_slug: str) -> bytes:
    """The record ``data`` as stored for its page moved to ``new_slug``, merged with ``there`` (a
    record left at ``new_slug`` by a page deleted there), each thread's comments in time order. A
    damaged record moves as it is."""
    try:
        record = from_bytes(data)
        left = from_bytes(there) if there is not None else empty(new_slug)
    except ValueError:
        return data
    for section_id, thread in record["threads"].items():
        into = left["threads"].setdefault(section_id, {"heading": thread["heading"], "comments": []})
        into["comments"] = sorted(into["comments"] + thread["comments"], key=lambda c: c["id"])
    left["slug"] = new_slug
    return to_bytes(left)
