"""Namespace settings: ``<namespace>/.namespace.yaml``, every field and allowed value of the contract.

Every field is bounded (see the ``MAX_*`` limits), so a settings file stays small: at most
:data:`MAX_FILE_BYTES`, which reading enforces too, so a file committed from outside cannot stall
the tools that read it. ``list_namespaces`` and ``health`` need a few fields only: :func:`fields`
reads the YAML events just as far as those go, and save_namespace writes them first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import yaml

from hostcore.domain.pages import MAX_SLUG, MAX_TITLE, NAMESPACE_FILE, check_portable, check_segment, check_slug, slugify
from hostcore.errors import TooLarge, Unavailable, ValidationError

# libyaml when the wheel has it: C parses far faster than the pure-Python parser.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


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
MAX_TREE = 1000
"""Entries of ``tree``; each is a page or folder path checked like a page slug (at most 255 characters with the namespace)."""
MAX_TEMPLATE_BYTES = 64 * 1024
"""``new.template`` as UTF-8: a page skeleton, far smaller than a page may grow (1 MiB)."""
MAX_URL = 2000
MAX_LINKS = 100
MAX_FILE_BYTES = 512 * 1024
"""The settings file as stored, on write and on read: above what the field limits can produce."""
DEFAULT_INBOX = "inbox"
"""The page (in the namespace) where ``capture`` drops thoughts, notes and links, unless ``inbox`` names another."""
NEW_FIELDS = ("template", "slug")
EXPORT_FIELDS = ("base_url", "sitemap", "robots_allow", "links")
DEFAULTS: dict[str, Any] = {
    "title": "",
    "description": "",
    "public": False,
    "review": False,
    "image": "",
    "skin": "",
    "palette": "",
    "index": "index",
    "guide": "",
    "inbox": DEFAULT_INBOX,
    "widgets": [],
    "tree": [],
    "new": {},
    "export": {},
}
NAMESPACE_DEFAULTS = DEFAULTS
"""What an unset setting reads as (public as ``hostcore.NAMESPACE_DEFAULTS``: a settings form starts from it)."""
NAMESPACE_CHOICES: dict[str, tuple[str, ...]] = {"skin": SKINS, "palette": PALETTES, "widgets": WIDGETS}
"""The allowed values of the settings that have a fixed set (public: a settings form offers them)."""
LISTED = ("title", "description", "public")
"""The fields list_namespaces shows; with ``index`` they come first in the stored file."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")  # in new.slug, e.g. journal/{date}
PLACEHOLDERS: dict[str, Callable[[datetime, str], str]] = {
    "date": lambda when, _title: when.strftime("%Y-%m-%d"),
    "year": lambda when, _title: when.strftime("%Y"),
    "month": lambda when, _title: when.strftime("%m"),
    "day": lambda when, _title: when.strftime("%d"),
    "time": lambda when, _title: when.strftime("%H%M"),
    "title": lambda _when, title: slugify(title),
}
"""What each ``{name}`` of ``new.slug`` stands for, from the moment the page is made and its title."""
_IMAGE = re.compile(r"[^/]+/[^/]+\.(png|jpe?g)", re.IGNORECASE)
_CONTROL_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _checked_size(data: bytes, name: str) -> bytes:
    if len(data) > MAX_FILE_BYTES:
        raise TooLarge(
            f"{name}/{NAMESPACE_FILE} is {len(data)} bytes; settings files may have at most {MAX_FILE_BYTES}. "
            "Shrink it (its tree or new.template) in the wiki's repository",
            field="name",
        )
    return data


def _unreadable(name: str, exc: yaml.YAMLError) -> Unavailable:
    where = getattr(exc, "problem_mark", None)
    at = f" at line {where.line + 1}" if where is not None else ""
    return Unavailable(f"{name}/{NAMESPACE_FILE} is not valid YAML{at}; fix it in the wiki's repository", field="name")


def parse(data: bytes, name: str) -> dict[str, Any]:
    """The whole settings mapping of namespace ``name``. Raises TooLarge or Unavailable (not YAML)."""
    _checked_size(data, name)
    try:
        loaded = yaml.load(data, Loader=_Loader) if data.strip() else {}
    except yaml.YAMLError as exc:
        raise _unreadable(name, exc) from None
    return loaded if isinstance(loaded, dict) else {}


def fields(data: bytes, name: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """The top-level settings in ``wanted`` that hold a plain value, reading the YAML only as far as needed.

    Stops once every wanted field is found, so a large tree or template after them is never parsed.
    Raises TooLarge or Unavailable like :func:`parse`.
    """
    _checked_size(data, name)
    loader = _Loader(data)
    found: dict[str, Any] = {}
    try:
        loader.get_event()  # stream start
        if not loader.check_event(yaml.DocumentStartEvent):
            return found
        loader.get_event()
        if not loader.check_event(yaml.MappingStartEvent):
            return found
        loader.get_event()
        while len(found) < len(wanted) and not loader.check_event(yaml.MappingEndEvent):
            key = loader.get_event()
            if isinstance(key, yaml.ScalarEvent) and key.value in wanted and loader.check_event(yaml.ScalarEvent):
                value = loader.get_event()
                tag = value.tag if value.tag not in (None, "!") else loader.resolve(yaml.ScalarNode, value.value, value.implicit)
                found[key.value] = loader.construct_object(yaml.ScalarNode(tag, value.value))
                continue
            _skip(loader, key)
            _skip(loader, loader.get_event())
    except yaml.YAMLError as exc:
        raise _unreadable(name, exc) from None
    finally:
        loader.dispose()
    return found


def _skip(loader: Any, event: yaml.Event) -> None:
    """Consume the rest of the node ``event`` starts: nothing for a scalar or alias, the whole collection otherwise."""
    depth = 1 if isinstance(event, yaml.CollectionStartEvent) else 0
    while depth:
        event = loader.get_event()
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def dump(settings: dict[str, Any], name: str) -> bytes:
    """The stored form. Raises TooLarge above :data:`MAX_FILE_BYTES` (the field limits keep well below)."""
    data = yaml.dump(settings, Dumper=_Dumper, sort_keys=False, allow_unicode=True).encode("utf-8")
    return _checked_size(data, name)


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
    ordered = {key: out[key] for key in DEFAULTS if key in out}
    ordered.update(out)  # unknown keys kept, after the known ones
    return ordered


def _text(value: Any, key: str, limit: int, *, lines: bool = False) -> str:
    """A string of at most ``limit`` characters without control characters (tab and newlines allowed when ``lines``)."""
    if not isinstance(value, str):
        raise ValidationError("must be a string", field=key)
    if len(value) > limit:
        raise ValidationError(f"is {len(value)} characters; at most {limit}", field=key)
    bad = (_CONTROL_TEXT if lines else _CONTROL_LINE).search(value)
    if bad:
        allowed = "; tabs and line breaks are allowed" if lines else "; it is one line of text"
        raise ValidationError(f"contains the control character U+{ord(bad.group()):04X} at {bad.start()}{allowed}", field=key)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("is not valid UTF-8 (lone surrogate)", field=key) from None
    return value


def _choice(value: Any, key: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValidationError(f"{value!r} is not one of {', '.join(repr(a) for a in allowed)}", field=key)


def _fields(value: Any, key: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, dict):
        raise ValidationError(f"must be an object with fields {', '.join(allowed)}", field=key)
    for name in value:
        if name not in allowed:
            raise ValidationError(f"unknown field {name!r}; allowed: {', '.join(allowed)}", field=key)


def _list(value: Any, key: str, limit: int, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(f"must be a list of {what}", field=key)
    if len(value) > limit:
        raise ValidationError(f"has {len(value)} entries; at most {limit}", field=key)
    return value


def _path(value: Any, key: str, namespace: str) -> None:
    """A page or folder path inside ``namespace``, checked as the page slug ``namespace/path`` would be."""
    _text(value, key, MAX_SLUG)
    check_slug(f"{namespace}/{value}", key)


def _bool(value: Any, key: str) -> None:
    if not isinstance(value, bool):
        raise ValidationError("must be true or false", field=key)


def _image(value: Any, key: str, namespace: str) -> None:
    _text(value, key, MAX_SLUG)
    if value and not _IMAGE.fullmatch(value):
        raise ValidationError("must be page/filename of a PNG or JPEG attachment, e.g. index/hero.png", field=key)
    if value:
        _path(value, key, namespace)


def _index(value: Any, key: str, namespace: str) -> None:
    _text(value, key, MAX_SLUG)
    check_segment(value, key, "index page name")
    check_portable(value, key)  # else the index could never be created as a page
    _path(value, key, namespace)


def _page(value: Any, key: str, namespace: str, *, optional: bool) -> None:
    """A page path in ``namespace`` that a page could be created at (folders allowed); empty when ``optional``."""
    _text(value, key, MAX_SLUG)
    if value == "" and optional:
        return
    if value == "":
        raise ValidationError("is empty; name a page in this namespace, e.g. inbox", field=key)
    _path(value, key, namespace)
    check_portable(f"{namespace}/{value}", key)  # else the page could never be created


def _widgets(value: Any, key: str, _namespace: str) -> None:
    for item in _list(value, key, len(WIDGETS), "widget names"):
        _choice(item, key, WIDGETS)
    if len(set(value)) != len(value):
        raise ValidationError("names a widget twice; list each at most once", field=key)


def _tree(value: Any, key: str, namespace: str) -> None:
    for i, item in enumerate(_list(value, key, MAX_TREE, "page or folder paths in this namespace, e.g. guides/setup")):
        _path(item, f"{key}[{i}]", namespace)


def _new(value: Any, key: str, namespace: str) -> None:
    _fields(value, key, NEW_FIELDS)
    template = _text(value.get("template", ""), "new.template", MAX_TEMPLATE_BYTES, lines=True)
    size = len(template.encode("utf-8"))
    if size > MAX_TEMPLATE_BYTES:
        raise ValidationError(f"is {size} bytes as UTF-8; at most {MAX_TEMPLATE_BYTES} (64 KiB)", field="new.template")
    slug = value.get("slug", "")
    _text(slug, "new.slug", MAX_SLUG)
    if slug != "":
        _check_placeholders(slug)
        _path(_PLACEHOLDER.sub("x", slug), "new.slug", namespace)


def _check_placeholders(pattern: str) -> None:
    for m in _PLACEHOLDER.finditer(pattern):
        if m.group(1) not in PLACEHOLDERS:
            known = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
            raise ValidationError(f"has the unknown placeholder {m.group()}; use {known}", field="new.slug")


def fill_new_slug(pattern: str, when: datetime, title: str) -> str:
    """``new.slug`` with its placeholders filled in: ``journal/{date}`` -> ``journal/2026-11-30``.
    ``{title}`` becomes the title as a slug segment (``untitled`` when that is empty). Raises
    ValidationError for a placeholder it does not know (a file committed from outside)."""
    _check_placeholders(pattern)
    return _PLACEHOLDER.sub(lambda m: PLACEHOLDERS[m.group(1)](when, title) or "untitled", pattern)


def _export(value: Any, key: str, _namespace: str) -> None:
    _fields(value, key, EXPORT_FIELDS)
    if "base_url" in value:
        url = _text(value["base_url"], "export.base_url", MAX_URL)
        try:
            parts = urlsplit(url)
            web = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            web = False
        if url and (not web or " " in url):
            raise ValidationError("must be an http or https URL, e.g. https://example.org/notes/", field="export.base_url")
    for name in ("sitemap", "robots_allow"):
        if name in value:
            _bool(value[name], f"export.{name}")
    if "links" in value:
        _text(value["links"], "export.links", MAX_LINKS)


_CHECKS: dict[str, Callable[[Any, str, str], object]] = {
    "title": lambda value, key, _ns: _text(value, key, MAX_TITLE),
    "description": lambda value, key, _ns: _text(value, key, MAX_DESCRIPTION, lines=True),
    "public": lambda value, key, _ns: _bool(value, key),
    "review": lambda value, key, _ns: _bool(value, key),
    "image": _image,
    "skin": lambda value, key, _ns: _choice(value, key, SKINS),
    "palette": lambda value, key, _ns: _choice(value, key, PALETTES),
    "index": _index,
    "guide": lambda value, key, ns: _page(value, key, ns, optional=True),
    "inbox": lambda value, key, ns: _page(value, key, ns, optional=False),
    "widgets": _widgets,
    "tree": _tree,
    "new": _new,
    "export": _export,
}


def validate(given: dict[str, Any], namespace: str) -> None:
    """Check every given setting of ``namespace`` against its limits. Raises ValidationError naming the field."""
    for key, value in given.items():
        check = _CHECKS.get(key)
        if check is None:
            raise ValidationError(f"unknown setting {key!r}", field=key)
        check(value, key, namespace)
