"""Change requests as data: where they are stored, their fields and their risk. Pure: no I/O.

A change request is one JSON record at ``.changes/<id>.json`` in the wiki's own storage, so
every backend (git, fs, S3) keeps it and every host sees it. ``.changes`` starts with a dot: no
slug can reach it (:func:`~hostcore.domain.pages.check_slug` refuses such segments), and page
listings, search, the link graph and history leave hidden paths out.

Its risk is the highest of its operations': **additive** (a new page, an append), **structural**
(a save over a page, an edit, a section edit, a move of a page nothing else links to),
**destructive** (a delete; a rename, which rewrites the links to the page; a move of a page other
pages link to, whose links then point to nothing).
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any, Literal

from hostcore.domain.pages import namespace_of
from hostcore.errors import ValidationError

FOLDER = ".changes"
STATES = ("open", "applied", "rejected")
State = Literal["open", "applied", "rejected"]
RISKS = ("additive", "structural", "destructive")
Risk = Literal["additive", "structural", "destructive"]
MAX_TITLE = 200
MAX_DESCRIPTION = 10_000
MAX_REASON = 2_000
MAX_SOURCE = 2_000
MAX_NOTE = 2_000
MAX_RECORD_BYTES = 8 * 1024 * 1024
"""A stored change request, with the base text of the pages it saves or edits."""


def record_path(request_id: str) -> str:
    return f"{FOLDER}/{request_id}.json"


def id_of(path: str) -> str | None:
    """The id of the record stored at ``path``, or None when it is not one."""
    if not path.startswith(FOLDER + "/") or not path.endswith(".json") or path.count("/") != 1:
        return None
    return path[len(FOLDER) + 1 : -len(".json")]


def new_id(now: datetime) -> str:
    """A new id: its time to the microsecond first (so ids sort oldest first), then random hex."""
    return f"cr-{now.astimezone(UTC):%Y%m%d-%H%M%S%f}-{secrets.token_hex(4)}"


def check_id(value: str, field: str = "id") -> str:
    if not (value.startswith("cr-") and len(value) <= 40 and all(c.isalnum() or c == "-" for c in value)):
        raise ValidationError("is not a change request id; list_change_requests shows them (cr-...)", field=field)
    return value


def op_risk(change: dict[str, Any], linked_from: int) -> Risk:
    """The risk of one operation; ``linked_from``: how many other pages link to its page."""
    op = change.get("op")
    if op in ("delete", "rename") or (op == "move" and linked_from):
        return "destructive"
    if op == "append" or (op == "save" and not change.get("basehash")):
        return "additive"
    return "structural"


def highest(risks: list[Risk]) -> Risk:
    return max(risks, key=RISKS.index, default="additive")


def slugs_of(changes: list[dict[str, Any]]) -> list[str]:
    """Every page slug the operations name (a move's destination too), in order, once each."""
    out: list[str] = []
    for change in changes:
        for name in ("slug", "new_slug"):
            slug = change.get(name)
            if isinstance(slug, str) and slug not in out:
                out.append(slug)
    return out


def namespaces_of(changes: list[dict[str, Any]]) -> list[str]:
    return sorted({namespace_of(slug) for slug in slugs_of(changes)})


def check_text(value: Any, field: str, limit: int, *, required: bool) -> str:
    """``value`` stripped of surrounding space, at most ``limit`` characters; raises ValidationError."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValidationError("must be a string", field=field)
    value = value.strip()
    if required and not value:
        raise ValidationError("is empty; say it in a few words", field=field)
    if len(value) > limit:
        raise ValidationError(f"has {len(value)} characters; at most {limit}", field=field)
    return value


def to_bytes(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, indent=1).encode()


def from_bytes(data: bytes) -> dict[str, Any]:
    record = json.loads(data)
    if not isinstance(record, dict) or record.get("state") not in STATES:
        raise ValueError("not a change request record")
    return record
