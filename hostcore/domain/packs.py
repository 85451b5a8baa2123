"""Context packs: a named set of pages for a task, kept as an ordinary page at
``<namespace>/packs/<name>``, so people read, edit, review, blame and restore a pack like any page,
and an assistant proposes one as a change request that creates that page. Pure: no I/O.

A pack page's body: an ``Aliases:`` line (names separated by commas) and a ``Tasks:`` line (the
tasks it serves, separated by semicolons), either may be absent, then the pack's pages as
wiki-links, in order; any other text is the pack's notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hostcore.domain.pages import Page, check_segment, wiki_links
from hostcore.errors import ValidationError

FOLDER = "packs"
MAX_PAGES = 50
MAX_ALIASES = 10
MAX_TASKS = 10
MAX_ITEM = 200  # characters of an alias or a task
_LINE = re.compile(r"^(Aliases|Tasks):[ \t]*(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Pack:
    slug: str
    name: str
    title: str
    aliases: tuple[str, ...]
    tasks: tuple[str, ...]
    pages: tuple[str, ...]
    notes: str


def pack_slug(namespace: str, name: str) -> str:
    return f"{namespace}/{FOLDER}/{name}"


def is_pack(slug: str) -> bool:
    """Whether ``slug`` names a pack page (``<namespace>/packs/<name>``)."""
    parts = slug.split("/")
    return len(parts) == 3 and parts[1] == FOLDER


def parse(page: Page) -> Pack:
    """The pack a pack page holds (what its body does not say is empty)."""
    found = dict(_LINE.findall(page.body))
    aliases = tuple(a.strip() for a in found.get("Aliases", "").split(",") if a.strip())
    tasks = tuple(t.strip() for t in found.get("Tasks", "").split(";") if t.strip())
    notes = _LINE.sub("", page.body)
    notes = "\n".join(line for line in notes.splitlines() if "[[" not in line).strip()
    return Pack(page.slug, page.slug.rsplit("/", 1)[1], page.title, aliases, tasks,
                tuple(wiki_links(page.body, page.slug)[:MAX_PAGES]), notes)  # fmt: skip


def check_items(values: list[str] | None, field: str, most: int, separator: str) -> list[str]:
    """Aliases or tasks, checked: each named ``field[i]`` when empty, too long or holding the separator."""
    out: list[str] = []
    for i, value in enumerate(values or []):
        value = " ".join(value.split())
        if not value:
            raise ValidationError("is empty; give a few words, or leave it out", field=f"{field}[{i}]")
        if len(value) > MAX_ITEM or separator in value:
            raise ValidationError(f"must be at most {MAX_ITEM} characters without {separator!r}", field=f"{field}[{i}]")
        out.append(value)
    if len(out) > most:
        raise ValidationError(f"holds {len(out)}; give at most {most}", field=field)
    return list(dict.fromkeys(out))


def check_name(name: str, field: str = "name") -> str:
    """A pack's name: one slug segment (it ends its page's slug)."""
    return check_segment(name, field, "a pack name")


def render(aliases: list[str], tasks: list[str], pages: list[str], notes: str = "") -> str:
    """The body of a pack page."""
    lines = []
    if aliases:
        lines.append(f"Aliases: {', '.join(aliases)}")
    if tasks:
        lines.append(f"Tasks: {'; '.join(tasks)}")
    body = "\n".join(lines) + ("\n\n" if lines else "")
    if notes.strip():
        body += notes.strip() + "\n\n"
    return body + "".join(f"- [[{slug}]]\n" for slug in pages)
