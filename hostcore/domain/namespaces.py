"""Namespace settings: ``<namespace>/.namespace.yaml``, every field and allowed value of the contract."""

from __future__ import annotations

import re
from typing import Any

import yaml

from hostcore.domain.pages import MAX_TITLE, check_segment
from hostcore.errors import ValidationError

SKINS = ("", "bare", "phosphor", "newsprint", "journal", "soft")
PALETTES = (
    "", "neutral", "phosphor", "dracula", "everforest", "flexoki", "gruvbox", "nord", "rosé pine", "solarized",
    "tokyo night",
)  # fmt: skip
WIDGETS = (
    "pages", "namespaces", "pinned", "tags", "log", "health", "calendar", "writing-stats", "page-meta", "backlinks",
    "prev-entries",
)  # fmt: skip
MAX_DESCRIPTION = 255
NEW_FIELDS = ("template", "slug")
EXPORT_FIELDS = ("base_url", "sitemap", "robots_allow", "links")
DEFAULTS: dict[str, Any] = {
    "title": "",
    "description": "",
    "public": False,
    "image": "",
    "skin": "",
    "palette": "",
    "index": "index",
    "widgets": [],
    "tree": [],
    "new": {},
    "export": {},
}
_IMAGE = re.compile(r"[^/]+/[^/]+\.(png|jpe?g)", re.IGNORECASE)


def parse(data: bytes) -> dict[str, Any]:
    loaded = yaml.safe_load(data.decode("utf-8")) if data.strip() else {}
    return loaded if isinstance(loaded, dict) else {}


def dump(settings: dict[str, Any]) -> bytes:
    return yaml.safe_dump(settings, sort_keys=False, allow_unicode=True).encode("utf-8")


def complete(settings: dict[str, Any]) -> dict[str, Any]:
    """Every known setting, defaults filled in; unknown keys kept."""
    return {**DEFAULTS, **settings}


def merge(current: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Apply an update: given fields replace stored ones whole; empty new/export objects remove them."""
    out = dict(current)
    for key, value in given.items():
        if key == "new" and not any(value.get(f) for f in NEW_FIELDS):
            out.pop("new", None)
        elif key == "export" and not value:
            out.pop("export", None)
        else:
            out[key] = value
    return out


def _string(value: Any, key: str, limit: int | None = None) -> None:
    if not isinstance(value, str):
        raise ValidationError("must be a string", field=key)
    if limit is not None and len(value) > limit:
        raise ValidationError(f"is {len(value)} characters; at most {limit}", field=key)


def _choice(value: Any, key: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValidationError(f"{value!r} is not one of {', '.join(repr(a) for a in allowed)}", field=key)


def _fields(value: Any, key: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, dict):
        raise ValidationError(f"must be an object with fields {', '.join(allowed)}", field=key)
    for name in value:
        if name not in allowed:
            raise ValidationError(f"unknown field {name!r}; allowed: {', '.join(allowed)}", field=key)


def validate(given: dict[str, Any]) -> None:
    """Check every given setting against the contract. Raises ValidationError naming the field."""
    for key, value in given.items():
        if key == "title":
            _string(value, key, MAX_TITLE)
        elif key == "description":
            _string(value, key, MAX_DESCRIPTION)
        elif key == "public":
            if not isinstance(value, bool):
                raise ValidationError("must be true or false", field=key)
        elif key == "image":
            _string(value, key)
            if value and not _IMAGE.fullmatch(value):
                raise ValidationError("must be page/filename of a PNG or JPEG attachment, e.g. index/hero.png", field=key)
        elif key == "skin":
            _choice(value, key, SKINS)
        elif key == "palette":
            _choice(value, key, PALETTES)
        elif key == "index":
            _string(value, key)
            check_segment(value, key, "index page name")
        elif key == "widgets":
            if not isinstance(value, list):
                raise ValidationError("must be a list of widget names", field=key)
            for item in value:
                _choice(item, key, WIDGETS)
        elif key == "tree":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ValidationError("must be a list of page or folder paths", field=key)
        elif key == "new":
            _fields(value, key, NEW_FIELDS)
            for name in NEW_FIELDS:
                _string(value.get(name, ""), f"new.{name}")
        elif key == "export":
            _fields(value, key, EXPORT_FIELDS)
        else:
            raise ValidationError(f"unknown setting {key!r}", field=key)
