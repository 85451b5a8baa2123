"""Test helpers for moving a wiki between backends (``hostcore export`` / ``hostcore import``).

:func:`fill_wiki` makes a wiki with something of everything through the service layer (pages
with titles and tags, folders, namespace settings, binary attachments, edits, a move, a rename, a
delete and a restore, by several authors, and one change with an old time); :func:`snapshot`
describes a wiki so that two can be compared whole: every file's bytes, every page's title and
tags, every namespace's settings, and the history (each change's author, email, time, message,
moves and files, and each page's history, followed back across moves).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hostcore.domain.principal import Principal
from hostcore.host.host import Host
from hostcore.seams.storage import Change, Put

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4 + b"\x00\xff\r\n"
BINARY = bytes(range(256)) * 64 + b"\r\n\r\x00"
OLD_TIME = datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC)


def author(name: str) -> Principal:
    return Principal(name, frozenset({"admin"}), client="migration-test", rate_limited=False)


def fill_wiki(host: Host) -> None:
    """Pages, namespaces, attachments and a history of edits, moves, a rename, a delete and a restore."""
    ann, bob = host.wiki(author("ann")), host.wiki(author("bob"))
    ann.save_namespace("notes", title="Notes", description="Shared notes", widgets=["pages", "tags"])
    ann.save_namespace("team", title="Team", public=True, tree=["team/plan"])
    plan = ann.save_page("team/plan", body="# Plan\n\nSee [[notes/ideas]].\n", title="The plan", tags=["plan", "q3"])
    ideas = bob.save_page("notes/ideas", body="Ideas: ünïcödé, tabs\tand\r\nCRLF\n", title="Ideas ✓", tags=["ideas"])
    bob.save_page("notes/deep/folder/page", body="deep\n", title="Deep")
    bob.edit_page("notes/ideas", ideas["hash"], [{"oldText": "Ideas:", "newText": "More ideas:"}])
    for filename, data in (("diagram.png", PNG), ("data.bin", BINARY)):
        ticket = ann.upload_attachment("team/plan", filename)
        ann.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], data)
    plan = ann.save_page("team/plan", basehash=ann.read_page("team/plan")["hash"], body="# Plan v2\n\nSee [[notes/ideas]].\n")
    moved = bob.move_page("team/plan", "team/roadmap", plan["hash"])
    bob.rename_page("team/roadmap", "The roadmap", moved["hash"])
    gone = ann.save_page("notes/scratch", body="to delete\n", title="Scratch")
    ann.delete_page("notes/scratch", gone["hash"])
    ann.restore_page("notes/scratch")
    host.storage.apply(
        [Put("notes/old.md", b"---\ntitle: Old\n---\nfrom 2021\n", expect=None)],
        Change("carol", "an old change", "carol@example.org", time=OLD_TIME),
    )


def snapshot(host: Host) -> dict[str, Any]:
    """Everything an export must carry, in a form to compare with ``==``."""
    storage, wiki = host.storage, host.wiki(author("reader"))
    files = {path: storage.read(path) for path in storage.list()}
    pages = {}
    for slug in wiki.iter_pages():
        page = wiki.read_page(slug)
        pages[slug] = (page["title"], page["tags"], page["hash"], wiki.attachment_names(slug))
    namespaces = {ns["name"]: wiki.read_namespace(ns["name"]) for ns in wiki.list_namespaces()["namespaces"]}
    history = []
    if storage.has_history:
        for revision in reversed(storage.history(limit=10_000)):
            change, changed = storage.changes_in(revision.id)
            history.append((revision.author, revision.time, revision.message, revision.paths, change, changed))
    followed = {
        slug: [(c["author"], c["time"], c["message"], c["files"]) for c in wiki.page_history(slug, limit=100)["commits"]]
        for slug in (pages if storage.has_history else ())
    }
    return {"files": files, "pages": pages, "namespaces": namespaces, "history": history, "followed": followed}
