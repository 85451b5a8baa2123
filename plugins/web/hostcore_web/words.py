"""History and activity lines in words: "claude-code (OAuth, ana) edited section Install of
Deployment guide", built from what a change records (its author, and its message: the tool, the
subject with the section, and the client after "via") and what an activity record holds (the
principal, how it signed in, the client, the tool or web page, the pages).

A line is a list of parts (text, link or None), so the template links the pages and escapes the
rest. A change whose message was not written by a tool (a push from outside) reads as its author
and its message. The history pages filter changes by person and client here too (a page of
changes at a time: the filters narrow what the page holds).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hostcore import HostcoreError

Part = tuple[str, str | None]

AUTH = {"oauth": "OAuth", "token": "token", "session": "browser", "none": "signed out"}
VERBS = {
    "save_page": "saved", "edit_page": "edited", "append_to_page": "added to", "edit_blocks": "edited",
    "replace_text": "edited", "save_section": "edited", "move_page": "moved", "rename_page": "renamed",
    "delete_page": "deleted", "restore_page": "restored", "upload_attachment": "attached a file to",
    "complete_upload": "attached a file to", "replace_attachment": "replaced a file of",
    "delete_attachment": "removed a file from", "apply_changes": "changed", "capture": "captured a note in",
    "apply_change_request": "applied a change request to", "create_change_request": "proposed a change request",
    "reject_change_request": "rejected a change request", "save_namespace": "changed the settings of",
    "delete_namespace": "deleted the namespace", "post_comment": "commented on", "edit_comment": "edited a comment on",
    "delete_comment": "deleted a comment on", "read_page": "read", "read_section": "read", "outline": "outlined",
    "list_pages": "listed the pages of", "search": "searched", "fetch": "fetched", "page_history": "read the history of",
    "blame_page": "read who wrote", "read_attachment": "read a file of", "list_comment_threads": "read the comments of",
    "read_comment_thread": "read comments on", "web:read": "opened", "web:edit": "opened the editor of",
    "web:history": "opened the history of", "web:diff": "compared versions of", "web:search": "searched",
    "web:change_comments": "changed the comments of", "web:change_attachments": "changed the files of",
    "web:edit_section": "opened a section of", "web:blame": "read who wrote", "web:restore": "restored",
    "web:move": "opened the move of", "web:delete": "opened the delete of", "web:namespace_index": "opened",
    "web:changes": "read the recent changes", "web:activity": "read the activity", "web:home": "opened the home page",
}  # fmt: skip
FILE_TOOLS = {"upload_attachment": ("attached", "to"), "complete_upload": ("attached", "to"),
              "replace_attachment": ("replaced", "of"), "delete_attachment": ("removed", "from")}  # fmt: skip
"""A change's words for a file: the verb, then the filename and the preposition before the page."""
SECTION_TOOLS = frozenset({"edit_blocks", "replace_text", "save_section", "append_to_page", "post_comment"})
_MESSAGE = re.compile(r"^(?P<tool>[a-z_]+): (?P<subject>.*?)(?: via (?P<client>.+))?$")
_VERSION = re.compile(r"\s+v?\d[\w.+-]*$")


def person_of(principal: str) -> str:
    """A principal's name as people read it: ``person:ana`` -> ``ana``."""
    return principal.split(":", 1)[-1]


def client_of(client: str) -> str:
    """A declared client without its version: ``claude-code 2.1.3`` -> ``claude-code``."""
    return _VERSION.sub("", client.strip()) or client


def who(principal: str, client: str | None, auth: str | None = None) -> str:
    """"claude-code (OAuth, ana)", "ana in the browser" or "ana"."""
    person = person_of(principal)
    if not client or client == "web" or auth == "session":
        return f"{person} in the browser" if client == "web" or auth == "session" else person
    inside = ", ".join([*([AUTH.get(auth, auth)] if auth else []), person])
    return f"{client_of(client)} ({inside})"


def parse_message(message: str) -> tuple[str, str, str | None] | None:
    """(tool, subject, client) of a message a tool wrote (``edit_blocks: notes/a#install via bot 1``), else None."""
    found = _MESSAGE.match(message.partition("\n")[0])
    if found is None or found["tool"] not in VERBS:
        return None
    return found["tool"], found["subject"], found["client"]


def commit_line(commit: Mapping[str, Any], title_of: Callable[[str], str], heading_of: Callable[[str, str], str]) -> list[Part]:
    """The change ``commit`` in words. ``title_of(slug)``: a page's title; ``heading_of(slug,
    section_id)``: a section's heading as the page has it now (its id when it has no such one)."""
    parsed = parse_message(str(commit.get("message", "")))
    if parsed is None:
        return [(f"{person_of(str(commit.get('author', '')))}: {str(commit.get('message', '')).partition(chr(10))[0]}", None)]
    tool, subject, client = parsed
    parts: list[Part] = [(f"{who(str(commit.get('author', '')), client)} {VERBS[tool]} ", None)]
    if " -> " in subject and tool in ("move_page", "rename_page"):
        old, _arrow, new = subject.partition(" -> ")
        return [*parts, (old, None), (" to ", None), (title_of(new), "/" + new)]
    target, _space, rest = subject.partition(" ")  # restore_page: "<slug> from <revision>"
    slug, _hash, section = target.partition("#")
    if tool in FILE_TOOLS and slug.count("/") >= 2:
        slug, filename = slug.rsplit("/", 1)
        verb, before = FILE_TOOLS[tool]
        parts = [(f"{who(str(commit.get('author', '')), client)} {verb} {filename} {before} ", None)]
    if slug.count("/") < 1 or tool in ("save_namespace", "apply_changes", "apply_change_request"):
        return [*parts, (subject, None)] if subject else parts
    if section and tool in SECTION_TOOLS and section != "_top":
        parts.append((f"section {heading_of(slug, section)} of ", None))
    parts.append((title_of(slug), "/" + slug))
    return [*parts, (" " + rest, None)] if rest else parts


def activity_line(record: Mapping[str, Any], title_of: Callable[[str], str]) -> list[Part]:
    """The activity record in words: who, what they did, on which pages, and how it ended when not ok."""
    action = str(record.get("tool", ""))
    slugs: list[str] = list(record.get("slugs") or ())
    verb = VERBS.get(action)
    if verb is None and action.startswith("web:"):
        verb = f"opened {action.removeprefix('web:').replace('_', ' ')}" + (" of" if slugs else "")
    elif verb is None:
        verb = f"called {action}" + (" on" if slugs else "")
    parts: list[Part] = [(f"{who(str(record.get('principal', '')), str(record.get('client') or ''), str(record.get('auth') or ''))} {verb}", None)]
    for i, slug in enumerate(slugs):
        parts += [(", " if i else " ", None), (title_of(slug), "/" + slug)]
    if record.get("outcome") not in (None, "ok"):
        parts.append((f" (refused: {record['outcome']})", None))
    return parts


def matches(commit: Mapping[str, Any], person: str, client: str) -> bool:
    """Whether ``commit`` was made by ``person`` (its author, as people read it) through ``client``
    (its client's name contains it, case aside; "web" for the browser); an empty filter matches all."""
    if person and person_of(str(commit.get("author", ""))) != person_of(person):
        return False
    if client:
        parsed = parse_message(str(commit.get("message", "")))
        made_with = (parsed[2] or "") if parsed else ""
        return client.casefold() in made_with.casefold()
    return True


def choices(commits: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The people and clients (without versions) of ``commits``, sorted, for the filters' lists."""
    people, clients = set(), set()
    for c in commits:
        people.add(person_of(str(c.get("author", ""))))
        parsed = parse_message(str(c.get("message", "")))
        if parsed and parsed[2]:
            clients.add(client_of(parsed[2]))
    return sorted(people), sorted(clients)


def lookups(wiki: Any, slugs: Iterable[str]) -> tuple[Callable[[str], str], Callable[[str, str], str]]:
    """(title_of, heading_of) for :func:`commit_line` as ``wiki``'s caller reads pages: the titles of
    ``slugs`` from the link graph in one query (another slug reads as itself); headings from each
    page's outline, once per page."""
    try:
        titles = wiki.page_titles(sorted(set(slugs)))
    except HostcoreError:
        titles = {}
    headings: dict[str, dict[str, str]] = {}

    def title_of(slug: str) -> str:
        return str(titles.get(slug) or slug)

    def heading_of(slug: str, section_id: str) -> str:
        if slug not in headings:
            try:
                headings[slug] = {s["section_id"]: s["title"] for s in wiki.outline(slug, 0, 5000)["sections"]}
            except HostcoreError:
                headings[slug] = {}
        return headings[slug].get(section_id) or section_id

    return title_of, heading_of


def slugs_named(message: str) -> list[str]:
    """The page slugs a tool's message names (a move's two), for :func:`lookups`."""
    parsed = parse_message(message)
    if parsed is None:
        return []
    subject = parsed[1]
    names = subject.split(" -> ") if " -> " in subject else [subject.partition(" ")[0].partition("#")[0]]
    if parsed[0] in FILE_TOOLS:
        names = [n.rsplit("/", 1)[0] for n in names]
    return [n for n in names if "/" in n]


def described(wiki: Any, commits: list[dict[str, Any]], args: Mapping[str, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``commits`` kept by the ``person`` and ``client`` filters of ``args``, each with its ``words``;
    and the filters as the form shows them (what was asked, the people and clients to pick from)."""
    person, client = (args.get("person") or "").strip(), (args.get("client") or "").strip()
    people, clients = choices(commits)
    title_of, heading_of = lookups(wiki, [s for c in commits for s in slugs_named(str(c.get("message", "")))])
    kept = [{**c, "words": commit_line(c, title_of, heading_of)} for c in commits if matches(c, person, client)]
    return kept, {"person": person, "client": client, "people": people, "clients": clients}
