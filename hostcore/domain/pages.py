"""Pages: slugs, the stored form (YAML front matter + Markdown), wiki-links and sections.

This module is pure: no storage, no access rules. The service layer (``hostcore.service``) uses it.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import yaml
from typing_extensions import TypedDict

from hostcore.domain.hashes import blob_hash
from hostcore.errors import NotFound, ValidationError

# libyaml when the wheel has it: C parses front matter far faster at start-up catch-up.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Front matter is parsed and written several times per save (the save, then each index that
# reads the page back) and seldom changes from one save to the next, so the YAML of recent ones
# is kept: up to this many, each at most FRONT_CACHE_CHARS long.
FRONT_CACHE = 4096
FRONT_CACHE_CHARS = 2048

MAX_BODY_BYTES = 1024 * 1024
MAX_TITLE = 256
MAX_TAGS = 32
MAX_TAG = 64
MAX_SLUG = 255
MAX_DEPTH = 8

PAGE_SUFFIX = ".md"
FILES_SUFFIX = ".files"  # a page's attachments folder: notes/plan.files/ beside notes/plan.md
NAMESPACE_FILE = ".namespace.yaml"

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Device names Windows reserves in every folder, whatever the extension or case ("nul.md",
# "Aux.txt"): a clone of the wiki on Windows cannot check out a file or folder so named.
WINDOWS_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))})


def check_segment(value: str, field_name: str, what: str) -> str:
    if not value:
        raise ValidationError(f"{what} is empty", field=field_name)
    if value[0] in "_.":
        raise ValidationError(f"{what} {value!r} starts with {value[0]!r}; no segment may start with _ or .", field=field_name)
    if not _SEGMENT.fullmatch(value):
        raise ValidationError(
            f"{what} {value!r} is not allowed; use letters, digits, '-', '_' and '.' (at most 100 characters)",
            field=field_name,
        )
    return value


def check_portable(name: str, field_name: str = "slug") -> str:
    """Refuse a new slug or namespace name that some clone of the wiki could not hold.

    Every segment is checked: no name Windows reserves (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with
    any extension and in any case) and no trailing dot or space (Windows drops them, so ``x.``
    would become ``x``). For names being created; pages already stored under such names (pushed
    from outside) stay readable. Returns ``name`` or raises ValidationError.
    """
    for part in name.split("/"):
        device = part.split(".", 1)[0].upper()
        if device in WINDOWS_RESERVED:
            raise ValidationError(
                f"{part!r} is a device name on Windows ({device}, with any extension), so a clone there "
                "could not hold it; pick another name",
                field=field_name,
            )
        if part.endswith((".", " ")):
            raise ValidationError(
                f"{part!r} ends with {part[-1]!r}, which Windows drops from names; remove it", field=field_name
            )
    return name


def fold(name: str) -> str:
    """``name`` as a case-insensitive, normalising file system compares it (NFC, then casefold)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def check_namespace(name: Any, field_name: str = "name") -> str:
    """Validate a namespace name (one segment). Returns it or raises ValidationError."""
    if not isinstance(name, str):
        raise ValidationError("must be a string", field=field_name)
    if "/" in name:
        raise ValidationError(f"{name!r} is a page slug; give the namespace name alone, e.g. 'notes'", field=field_name)
    return check_segment(name, field_name, "namespace name")


def check_slug(slug: Any, field_name: str = "slug") -> str:
    """Validate a page slug ``namespace/page`` (folders allowed). Returns it or raises."""
    if not isinstance(slug, str):
        raise ValidationError("must be a string", field=field_name)
    if len(slug) > MAX_SLUG:
        raise ValidationError(f"is {len(slug)} characters; at most {MAX_SLUG}", field=field_name)
    parts = slug.split("/")
    if len(parts) < 2:
        raise ValidationError(f"{slug!r} has no namespace; use namespace/page form, e.g. notes/my-page", field=field_name)
    if len(parts) > MAX_DEPTH:
        raise ValidationError(f"{slug!r} is nested {len(parts)} deep; at most {MAX_DEPTH} segments", field=field_name)
    for part in parts:
        check_segment(part, field_name, "segment")
    if parts[-1].endswith(PAGE_SUFFIX):
        raise ValidationError(f"{slug!r} ends in {PAGE_SUFFIX}; leave the extension off", field=field_name)
    for part in parts[1:]:
        if part.endswith(FILES_SUFFIX):
            raise ValidationError(
                f"segment {part!r} ends in {FILES_SUFFIX}, which names a page's attachments folder; pick another name",
                field=field_name,
            )
    return slug


def namespace_of(slug: str) -> str:
    return slug.split("/", 1)[0]


def page_path(slug: str) -> str:
    return slug + PAGE_SUFFIX


def namespace_path(name: str) -> str:
    return f"{name}/{NAMESPACE_FILE}"


def hidden_path(path: str) -> bool:
    """Whether the stored file at ``path`` is hidden from tools: a segment starts with ``_`` or
    ``.`` (``.wiki.yaml``, ``notes/_draft.md``, ``_private/x.md``). A namespace's own settings
    file (``notes/.namespace.yaml``) is not: read_namespace shows it."""
    parts = path.split("/")
    if len(parts) == 2 and parts[1] == NAMESPACE_FILE:
        return parts[0][:1] in ("_", ".")
    return any(part[:1] in ("_", ".") for part in parts)


def access_folder(path: str) -> str | None:
    """The namespace the stored file at ``path`` counts against for access: its top folder, ""
    for a visible file at the top, None for a hidden file at the top or anything in a hidden top
    folder (those belong to no namespace, so they make nothing visible and hide nothing)."""
    top, slash, _rest = path.partition("/")
    if top[:1] in ("_", "."):
        return None
    return top if slash else ""


def slug_from_path(path: str) -> str | None:
    """The slug stored at ``path``, or None when it is not a visible page."""
    if not path.endswith(PAGE_SUFFIX):
        return None
    slug = path[: -len(PAGE_SUFFIX)]
    parts = slug.split("/")
    if len(parts) < 2 or any(not p or p[0] in "_." for p in parts):
        return None
    if any(p.endswith(FILES_SUFFIX) for p in parts[1:]):  # a file in a page's attachments folder
        return None
    return slug




def check_title(title: Any, field_name: str = "title") -> str:
    if not isinstance(title, str):
        raise ValidationError("must be a string", field=field_name)
    if len(title) > MAX_TITLE:
        raise ValidationError(f"is {len(title)} characters; at most {MAX_TITLE}", field=field_name)
    if "\n" in title or "\r" in title or _CONTROL.search(title):
        raise ValidationError("must be one line of text without control characters", field=field_name)
    return title


def check_tags(tags: Any, field_name: str = "tags") -> list[str]:
    if not isinstance(tags, list):
        raise ValidationError("must be a list of strings", field=field_name)
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"has {len(tags)} tags; at most {MAX_TAGS}", field=field_name)
    out: list[str] = []
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag.strip():
            raise ValidationError(f"tag {i} is empty or not a string", field=field_name)
        if len(tag) > MAX_TAG:
            raise ValidationError(f"tag {tag[:20]!r}... is {len(tag)} characters; at most {MAX_TAG}", field=field_name)
        if _CONTROL.search(tag) or "\n" in tag:
            raise ValidationError(f"tag {i} contains control characters", field=field_name)
        if tag not in out:
            out.append(tag)
    return out


def check_body(body: Any, field_name: str = "body") -> str:
    if not isinstance(body, str):
        raise ValidationError("must be a string", field=field_name)
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise ValidationError(f"is {size} bytes as UTF-8; at most {MAX_BODY_BYTES} (1 MiB)", field=field_name)
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("is not valid UTF-8 (lone surrogate)", field=field_name) from None
    if "\x00" in body:
        raise ValidationError("contains a NUL character", field=field_name)
    return body


@dataclass(frozen=True)
class Page:
    """One page as stored: front matter fields, body, and the blob id of its stored bytes."""

    slug: str
    title: str
    body: str
    tags: tuple[str, ...] = ()
    pin: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    hash: str = ""

    @property
    def namespace(self) -> str:
        return namespace_of(self.slug)

    def to_bytes(self) -> bytes:
        """The stored form: YAML front matter written by a real emitter, then the body."""
        if self.extra:
            front = _dump_front(self.title, self.tags, self.pin, self.extra)
        else:
            front = _cached_front(self.title, tuple(self.tags), self.pin)
        return f"---\n{front}---\n{self.body}".encode()

    def stored(self) -> Page:
        """This page with ``hash`` set to the blob id of its stored bytes."""
        return replace(self, hash=blob_hash(self.to_bytes()))

    @classmethod
    def from_bytes(cls, slug: str, data: bytes) -> Page:
        """Parse stored bytes. Front matter that is absent or unreadable leaves the text as body."""
        text = data.decode("utf-8", "replace")
        meta: dict[str, Any] = {}
        body = text
        if text.startswith("---\n"):
            end = text.find("\n---\n", 3)
            if end == -1 and text.endswith("\n---"):
                end = len(text) - 4
            if end != -1:
                loaded = _load_front(text[4 : end + 1])
                if isinstance(loaded, dict):
                    meta = loaded
                    body = text[end + 5 :]
        title = meta.pop("title", None)
        tags = meta.pop("tags", None) or []
        pin = meta.pop("pin", False)
        return cls(
            slug=slug,
            title=str(title) if title is not None else slug,
            body=body,
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (str(tags),),
            pin=bool(pin),
            extra=meta,
            hash=blob_hash(data),
        )


def _dump_front(title: str, tags: tuple[str, ...], pin: bool, extra: dict[str, Any]) -> str:
    meta: dict[str, Any] = {"title": title}
    if tags:
        meta["tags"] = list(tags)
    if pin:
        meta["pin"] = True
    for key, value in extra.items():
        meta.setdefault(key, value)
    return str(yaml.dump(meta, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000))


@lru_cache(maxsize=FRONT_CACHE)
def _cached_front(title: str, tags: tuple[str, ...], pin: bool) -> str:
    return _dump_front(title, tags, pin, {})


@lru_cache(maxsize=FRONT_CACHE)
def _parsed_front(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return None


def _load_front(text: str) -> Any:
    """The YAML of front matter ``text`` (None when it does not parse); a copy of the cached
    value, which the caller may change."""
    if len(text) > FRONT_CACHE_CHARS:
        return _parsed_front.__wrapped__(text)
    return copy.deepcopy(_parsed_front(text))


# --- wiki-links ---------------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~)")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?: +|$)")
_ITEM_STARTS = frozenset("-*+0123456789")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")  # a run of backticks to the next run of the same length
_LINK = re.compile(r"\[\[([^\[\]|#\n]+?)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")


def _code_lines(body: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``body`` and whether it is code as CommonMark reads it: in a fenced block
    (closed by a fence of the same character, at least as long) or an indented one (four spaces
    past the margin, or past a list item's text, after a blank line)."""
    if "`" not in body and "~" not in body and "\n " not in body and "\n\t" not in body and body[:1] not in (" ", "\t"):
        yield from ((line, False) for line in body.split("\n"))  # no fence, no indented line: no code
        return
    fence = None  # the opening fence while inside a fenced block
    blank, indented = True, False
    margin = 0  # where text starts: 0, or the column of the list item's text while in a list
    for line in body.split("\n"):
        if fence is not None:
            closing = line.lstrip(" ")
            if len(line) - len(closing) <= 3 + margin and closing.startswith(fence) and not closing.rstrip().strip(fence[0]):
                fence = None
            yield line, True
            continue
        if not line or line.isspace():
            blank = True
            yield line, indented
            continue
        text, indent = line, 0
        if line[0] in " \t":
            text = line.expandtabs(4)
            indent = len(text) - len(text.lstrip(" "))
            if indent >= margin + 4 and (blank or indented):
                indented, blank = True, False
                yield line, True
                continue
        first = text[indent]
        if first in "`~" and indent - min(indent, margin) <= 3:
            m = _FENCE_OPEN.match(text, indent)
            if m is not None and not (first == "`" and "`" in m.group(2)):
                fence, blank, indented = m.group(1), False, False
                yield line, True
                continue
        item = _LIST_ITEM.match(text, indent) if first in _ITEM_STARTS else None
        if item is not None:
            margin = item.end() if item.end() < len(text) else indent + 2
        elif blank and indent < margin:
            margin = 0  # a paragraph left of the list's text after a blank line ends the list
        blank, indented = False, False
        yield line, False


def _spans(line: str) -> list[str]:
    """``line`` cut into text and code spans, alternately: even items are text, odd ones code."""
    if "`" not in line:
        return [line]
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(line):
        out += [line[pos : m.start()], m.group(0)]
        pos = m.end()
    return [*out, line[pos:]]


def outside_code(body: str) -> list[str]:
    """The lines of ``body`` outside code blocks, each without its code spans: where links are links."""
    return [line if "`" not in line else "".join(_spans(line)[::2]) for line, code in _code_lines(body) if not code]


def resolve_link(target: str, from_slug: str) -> str:
    """A link target without a namespace points into the linking page's namespace."""
    target = target.strip().strip("/")
    return target if "/" in target else f"{namespace_of(from_slug)}/{target}"


def wiki_links(body: str, from_slug: str) -> list[str]:
    """Targets of the ``[[slug]]``, ``[[slug|label]]`` and ``[[slug#heading]]`` links, in order, once each."""
    seen: dict[str, None] = {}  # in order, and a lookup that stays cheap for a page of many links
    for line, code in _code_lines(body):
        if code or "[[" not in line:
            continue
        for m in _LINK.finditer(line if "`" not in line else "".join(_spans(line)[::2])):
            seen.setdefault(resolve_link(m.group(1), from_slug))
    return list(seen)


def rewrite_links(body: str, from_slug: str, old: str, new: str) -> str:
    """``body`` with every wiki-link to ``old`` pointing at ``new``; labels and headings kept, code untouched."""

    def swap(m: re.Match[str]) -> str:
        if resolve_link(m.group(1), from_slug) != old:
            return m.group(0)
        heading = f"#{m.group(2)}" if m.group(2) is not None else ""
        label = f"|{m.group(3)}" if m.group(3) is not None else ""
        return f"[[{new}{heading}{label}]]"

    out = []
    for line, code in _code_lines(body):
        if not code and "[[" in line:
            parts = _spans(line)
            line = "".join(part if i % 2 else _LINK.sub(swap, part) for i, part in enumerate(parts))
        out.append(line)
    return "\n".join(out)


def slugify(title: str) -> str:
    """A slug segment from a title: ASCII letters and digits joined by '-', at most 100 characters."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")[:100].strip("-")


# --- sections and windows -----------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")


def headings(body: str) -> list[tuple[int, str, int]]:
    """(level, text, character offset) of every ATX heading outside fenced code."""
    out, fenced, pos = [], False, 0
    for line in body.split("\n"):
        first = line.lstrip()[:1]
        if first in ("`", "~") and _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif first == "#" and not fenced:
            m = _HEADING.match(line)
            if m:
                out.append((len(m.group(1)), m.group(2).strip(), pos))
        pos += len(line) + 1
    return out


def section(body: str, name: str) -> str:
    """The heading named ``name`` (case ignored) and everything under it. Raises NotFound."""
    found = headings(body)
    wanted = name.strip().lstrip("#").strip().casefold()
    for i, (level, text, start) in enumerate(found):
        if text.casefold() == wanted:
            end = next((s for lvl, _t, s in found[i + 1 :] if lvl <= level), len(body))
            return body[start:end]
    names = ", ".join(repr(t) for _l, t, _s in found) or "none"
    raise NotFound(f"no heading {name!r} in this page; its headings are: {names}", field="section")


class Window(TypedDict):
    """A window of a long text (read_page, read_attachment): the contract's paging fields."""

    body: str
    offset: int
    total_chars: int
    truncated: bool
    next_offset: int | None


def window(text: str, offset: int, limit: int) -> Window:
    """A window of ``text``: body, total_chars, truncated, next_offset. Raises for an offset past the end."""
    total = len(text)
    if offset > 0 and offset >= total:
        raise ValidationError(f"{offset} is past the end; the text has {total} characters", field="offset")
    end = min(total, offset + limit)
    truncated = end < total
    return {
        "body": text[offset:end],
        "offset": offset,
        "total_chars": total,
        "truncated": truncated,
        "next_offset": end if truncated else None,
    }
