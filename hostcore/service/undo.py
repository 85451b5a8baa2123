"""Undo a session: what one principal (a token, a person), one agent session or one OAuth grant
changed since a time, reverted as one change request for a person to apply; mixed into
:class:`~hostcore.service.wiki.Wiki`.

From the history (each recorded change names its author) and, for a session or a grant, the
activity log (the pages its calls touched). Per page the principal changed since then:

- **reverts cleanly** when nobody else changed the page from the principal's first change since
  then to now: the change request saves the page as it was before that first change over its
  current hash (a page the principal made is deleted; one it deleted is made again);
- **conflicts** when someone else changed it in between (reverting would undo their change too),
  or the principal moved or renamed it (move it back with move_page): left out, and listed with
  who changed it after.

Nothing is written by a dry run; otherwise the clean reverts become one change request (the
``propose`` scope makes it, applying it takes what its risk asks: a save over a page, the
``review`` scope). Only pages in namespaces the caller may use are looked at. Needs a storage that
keeps history (git, S3).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from typing_extensions import TypedDict

from hostcore.domain.pages import Page, namespace_of, page_path, slug_from_path
from hostcore.errors import NotFound, ValidationError
from hostcore.seams.storage import Revision
from hostcore.service.activity import ActivityMixin
from hostcore.service.change_requests import ChangeRequestsMixin
from hostcore.service.history import RECENT_SCAN_LIMIT, HistoryMixin

MAX_PAGES = 100  # pages one undo reverts at most (a change request's operations)
MOVES = ("move_page:", "rename_page:")


class Revert(TypedDict):
    slug: str
    op: str  # save (back to ``revision``), delete (the principal made it) or create (it deleted it)
    hash: str  # the page's hash now ("" when it is absent)
    revision: str  # the change whose text it goes back to ("" when the page did not exist)
    changes: int  # the principal's changes of the page since then


class UndoConflict(TypedDict):
    slug: str
    reason: str
    by: list[str]  # who changed it after the principal's first change
    hash: str


class Undone(TypedDict):
    principal: str
    since: str
    dry_run: bool
    reverts: list[Revert]
    conflicts: list[UndoConflict]
    proposed: str
    review_url: str


def _since(value: str) -> datetime:
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(f"{value[:40]!r} is no ISO 8601 time; give one like 2026-01-31T09:00:00Z", field="since") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class UndoMixin(ChangeRequestsMixin, HistoryMixin, ActivityMixin):
    """undo_session."""

    def undo_session(
        self, since: str, principal: str | None = None, session: str | None = None, grant: str | None = None, dry_run: bool = True
    ) -> Undone:
        """What reverting the changes of ``principal`` (or of the agent ``session``, or the OAuth
        ``grant``) since ``since`` would do, page by page; unless ``dry_run``, the clean reverts
        made one change request (``proposed``). Raises ValidationError when nothing is named, no
        call of the session or grant is found, or (not a dry run) nothing reverts cleanly;
        Unavailable on a storage that keeps no history."""
        self.principal.require("propose")
        when = _since(since)
        if not (principal or session or grant):
            raise ValidationError("name whose changes to undo: principal, session or grant", field="principal")
        name, only = self._undo_scope(principal, session, grant, since)
        mine = self._changed_pages(name, when, only)
        reverts: list[Revert] = []
        conflicts: list[UndoConflict] = []
        ops: list[dict[str, Any]] = []
        for slug in mine:
            found = self._undo_page(slug, name, when)
            if isinstance(found, tuple):
                reverts.append(found[0])
                ops.append(found[1])
            elif found is not None:
                conflicts.append(found)
        result: Undone = {"principal": name, "since": when.isoformat(timespec="seconds"), "dry_run": dry_run, "reverts": reverts,
                          "conflicts": conflicts, "proposed": "", "review_url": ""}  # fmt: skip
        if dry_run:
            return result
        if not ops:
            raise ValidationError(
                f"nothing of {name}'s changes since {result['since']} reverts cleanly ({len(conflicts)} page(s) conflict "
                "with later changes by others, listed by a dry run); nothing was proposed",
                field="since",
            )
        listed = "\n".join(f"- {c['slug']}: {c['reason']}" for c in conflicts)
        made = self.create_change_request(
            ops, f"Undo {name}'s changes since {result['since']}"[:200],
            f"undo_session by {self.principal.name}: revert what {name}"
            + (f" (session {session})" if session else "") + (f" (grant {grant})" if grant else "")
            + f" changed since {result['since']}",
            description=f"Not reverted (changed by others since, or moved):\n\n{listed}" if conflicts else "",
        )  # fmt: skip
        result["proposed"] = made["id"]
        result["review_url"] = self._review_url(made["id"])
        return result

    def _undo_scope(self, principal: str | None, session: str | None, grant: str | None, since: str) -> tuple[str, set[str] | None]:
        """(the principal whose changes are undone, the slugs its session's or grant's calls touched,
        or None for all): from the activity log, which the caller reads as read_activity lets it."""
        if not (session or grant):
            assert principal is not None
            return principal, None
        slugs: set[str] = set()
        names: set[str] = set()
        cursor = None
        while True:
            page = self.read_activity(principal, None, None, since, cursor, 200)
            for r in page["records"]:
                if r["outcome"] == "ok" and (session is None or r["session"] == session) and (grant is None or r["grant"] == grant):
                    slugs.update(r["slugs"])
                    names.add(r["principal"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        field = "session" if session else "grant"
        if not names:
            raise ValidationError(f"no call of that {field} since {since} in the activity log you may read; "
                                  "list_agent_sessions and read_activity show them", field=field)  # fmt: skip
        if len(names) > 1:
            raise ValidationError(f"calls of several principals ({', '.join(sorted(names))}) match; name the principal too", field="principal")
        return names.pop(), slugs

    def _changed_pages(self, name: str, when: datetime, only: set[str] | None) -> list[str]:
        """The pages (slugs, oldest change first) ``name`` changed since ``when`` that the caller may use."""
        found: list[str] = []
        offset = 0
        while offset < RECENT_SCAN_LIMIT:
            batch = self.storage.history(None, offset=offset, limit=100)
            if not batch:
                break
            offset += len(batch)
            for rev in batch:
                if rev.time < when:
                    offset = RECENT_SCAN_LIMIT
                    break
                if rev.author != name:
                    continue
                for path in rev.paths:
                    slug = slug_from_path(path)
                    if slug and slug not in found and (only is None or slug in only) and self.principal.can_access(namespace_of(slug)):
                        found.append(slug)
        if len(found) > MAX_PAGES:
            raise ValidationError(f"{name} changed {len(found)} pages since then; at most {MAX_PAGES} are undone at once: "
                                  "give a later since", field="since")  # fmt: skip
        return list(reversed(found))

    def _undo_page(self, slug: str, name: str, when: datetime) -> tuple[Revert, dict[str, Any]] | UndoConflict | None:
        """The revert of one page (what the summary shows, the change request's operation), why it
        conflicts, or None when it is as it was already."""
        revs: list[Revision] = []
        offset = 0
        while offset < RECENT_SCAN_LIMIT:
            batch = self.storage.history(page_path(slug), offset=offset, limit=100)
            revs += batch
            offset += len(batch)
            if not batch or batch[-1].time < when:
                break
        ours = [i for i, r in enumerate(revs) if r.author == name and r.time >= when]
        current = self.storage.hash(page_path(slug)) or ""
        if not ours:
            return None
        first = ours[-1]  # newest first: the principal's oldest change since then
        others = sorted({r.author for r in revs[:first] if r.author != name})
        if others:
            return {"slug": slug, "reason": f"changed since by {', '.join(others)}", "by": others, "hash": current}
        if any(revs[i].message.startswith(MOVES) for i in ours):
            return {"slug": slug, "reason": "moved or renamed by it: move it back with move_page", "by": [], "hash": current}
        before = revs[first + 1] if first + 1 < len(revs) else None
        old = self._page_at(slug, before) if before is not None else None
        count = len(ours)
        if old is None and not current:
            return None
        if old is None:
            return ({"slug": slug, "op": "delete", "hash": current, "revision": "", "changes": count},
                    {"op": "delete", "slug": slug, "basehash": current})  # fmt: skip
        assert before is not None
        fields = {"body": old.body, "title": old.title, "tags": list(old.tags), "pin": old.pin}
        if not current:
            return ({"slug": slug, "op": "create", "hash": "", "revision": before.id, "changes": count},
                    {"op": "save", "slug": slug, **fields})  # fmt: skip
        if current == old.hash:
            return None
        return ({"slug": slug, "op": "save", "hash": current, "revision": before.id, "changes": count},
                {"op": "save", "slug": slug, "basehash": current, **fields})  # fmt: skip

    def _page_at(self, slug: str, rev: Revision) -> Page | None:
        try:
            return self._read_revision(slug, rev.id)[0]
        except NotFound:
            return None  # deleted in that change
