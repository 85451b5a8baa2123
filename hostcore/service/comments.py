"""Comments per heading: a thread of plain-text comments per section of a page; mixed into
:class:`~hostcore.service.wiki.Wiki`.

Stored as one record per page (:mod:`hostcore.domain.comments`), written compare-and-set, so two
people posting at once both land (the loser reads the record again and adds to it). Who does what,
whatever the adapter:

- **Read** (list the threads, read one): the ``read`` scope and access to the page's namespace.
- **Post**: the same; a comment changes no page. Its author is the caller, its client the
  caller's declared client. An assistant's post has its @-mentions stripped (``mentions=False``,
  what the MCP tool passes): it names people without pinging them.
- **Edit**: its author only. **Delete**: its author, or a caller with the ``admin`` scope.

A thread is keyed by its heading's ``section_id``: a post names a section the page has now, and
the thread keeps to that heading while the page has it. A thread whose heading went away is kept
and listed as ``orphaned`` under the heading's last title.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from typing_extensions import TypedDict

from hostcore.domain import comments as dom
from hostcore.domain import sections as sec
from hostcore.errors import Conflict, Forbidden, NotFound, TooLarge, ValidationError
from hostcore.seams.storage import Put
from hostcore.service.sections import SectionsMixin

T = TypeVar("T")
_TRIES = 8  # compare-and-set rounds before a post gives up (each lost round means another landed)


class Comment(TypedDict):
    id: str
    author: str
    client: str
    created: str
    edited: str
    text: str


class ThreadSummary(TypedDict):
    section_id: str
    heading: str
    orphaned: bool
    count: int
    last_author: str
    last_at: str


class ThreadList(TypedDict):
    slug: str
    threads: list[ThreadSummary]
    total_comments: int


class Thread(TypedDict):
    slug: str
    section_id: str
    heading: str
    orphaned: bool
    comments: list[Comment]
    total: int
    more: bool
    next_offset: int | None


class Posted(TypedDict):
    slug: str
    section_id: str
    id: str
    created: str
    text: str
    count: int


class CommentChanged(TypedDict):
    slug: str
    section_id: str
    id: str
    deleted: bool


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _heading(outline: sec.Outline, section_id: str) -> str | None:
    """The title of ``section_id``'s heading now ("" for the text before the first one), None when the page has no such section."""
    at = outline.index.get(section_id)
    return None if at is None else outline.sections[at].title


class CommentsMixin(SectionsMixin):
    """list_comment_threads, comment_threads, read_comment_thread, post_comment, edit_comment, delete_comment."""

    def _comments(self, slug: str) -> tuple[dict[str, Any], str | None]:
        """The page's comments record and its hash (None: no record yet)."""
        try:
            data, digest = self.storage.read_with_hash(dom.record_path(slug))
        except NotFound:
            return dom.empty(slug), None
        try:
            return dom.from_bytes(data), digest
        except ValueError:
            return dom.empty(slug), digest  # a damaged record reads as none; the next post writes over it

    def list_comment_threads(self, slug: str) -> ThreadList:
        """Every thread of the page with comments, in the page's order, orphaned ones (their heading
        gone) last. Raises NotFound when the page does not exist."""
        self._access("read", slug)
        _digest, outline = self._outlined(slug)
        record, _h = self._comments(slug)
        order = {s.id: i for i, s in enumerate(outline.sections)}
        threads: list[ThreadSummary] = []
        for section_id, thread in record["threads"].items():
            if not thread["comments"]:
                continue
            now = _heading(outline, section_id)
            last = thread["comments"][-1]
            threads.append({
                "section_id": section_id, "heading": thread["heading"] if now is None else now, "orphaned": now is None,
                "count": len(thread["comments"]), "last_author": last["author"], "last_at": last["created"],
            })  # fmt: skip
        threads.sort(key=lambda t: (t["orphaned"], order.get(t["section_id"], 0), t["section_id"]))
        return {"slug": slug, "threads": threads, "total_comments": sum(t["count"] for t in threads)}

    def comment_threads(self, slug: str, newest: int = dom.MAX_THREAD_READ) -> list[Thread]:
        """Every thread of the page with comments, as :meth:`list_comment_threads` orders them, each
        with its ``newest`` comments (oldest of those first): one read of the page's record, for a
        page showing them all."""
        listed = self.list_comment_threads(slug)["threads"]
        record, _h = self._comments(slug)
        out: list[Thread] = []
        for t in listed:
            comments = record["threads"][t["section_id"]]["comments"]
            shown = comments[max(0, len(comments) - newest) :]
            out.append({"slug": slug, "section_id": t["section_id"], "heading": t["heading"], "orphaned": t["orphaned"],
                        "comments": [_view(c) for c in shown], "total": len(comments), "more": len(shown) < len(comments),
                        "next_offset": None})  # fmt: skip
        return out

    def read_comment_thread(self, slug: str, section_id: str, offset: int = 0, limit: int = 50) -> Thread:
        """One section's comments, oldest first (newest last), ``limit`` from ``offset``. A section
        with no comments answers an empty thread; one the page neither has nor had comments on
        raises NotFound naming section_id."""
        self._access("read", slug)
        if not 1 <= limit <= dom.MAX_THREAD_READ:
            raise ValidationError(f"must be between 1 and {dom.MAX_THREAD_READ}", field="limit")
        if offset < 0:
            raise ValidationError("must not be negative", field="offset")
        _digest, outline = self._outlined(slug)
        record, _h = self._comments(slug)
        now = _heading(outline, section_id)
        thread = record["threads"].get(section_id)
        if now is None and thread is None:
            outline.find(section_id)  # raises NotFound naming section_id
        comments = thread["comments"] if thread else []
        window = comments[offset : offset + limit]
        more = offset + limit < len(comments)
        return {
            "slug": slug, "section_id": section_id, "heading": now if now is not None else thread["heading"],
            "orphaned": now is None, "comments": [_view(c) for c in window], "total": len(comments), "more": more,
            "next_offset": offset + limit if more else None,
        }  # fmt: skip

    def post_comment(self, slug: str, section_id: str, text: str, *, mentions: bool = True) -> Posted:
        """Add a comment at the end of ``section_id``'s thread. ``mentions`` False strips the @ of
        each @-mention. Raises NotFound (slug, section_id), ValidationError (text), TooLarge when
        the page holds :data:`~hostcore.domain.comments.MAX_PER_PAGE` comments already."""
        self._access("read", slug)
        text = dom.check_text(text)
        if not mentions:
            text = dom.strip_mentions(text)
        _digest, outline = self._outlined(slug)
        heading = outline.sections[outline.find(section_id)].title
        created = datetime.now(UTC)
        comment = {"id": dom.new_id(created), "author": self.principal.name, "client": self.principal.client or "",
                   "created": created.isoformat(timespec="seconds"), "edited": "", "text": text}  # fmt: skip

        def add(record: dict[str, Any]) -> int:
            if dom.count(record) >= dom.MAX_PER_PAGE:
                raise TooLarge(f"{slug} holds {dom.MAX_PER_PAGE} comments already, the most a page keeps; delete "
                               "old ones or comment on another page", field="slug")  # fmt: skip
            thread = record["threads"].setdefault(section_id, {"heading": heading, "comments": []})
            thread["heading"] = heading
            thread["comments"].append(comment)
            return len(thread["comments"])

        count = self._update(slug, "post_comment", f"{slug}#{section_id}", add)
        return {"slug": slug, "section_id": section_id, "id": comment["id"], "created": comment["created"], "text": text,
                "count": count}  # fmt: skip

    def edit_comment(self, slug: str, comment_id: str, text: str) -> CommentChanged:
        """Replace the text of the caller's own comment. Raises NotFound (comment_id), Forbidden
        when it is someone else's, ValidationError (text)."""
        self._access("read", slug)
        dom.check_id(comment_id)
        text = dom.check_text(text)

        def change(record: dict[str, Any]) -> str:
            section_id, i = self._own(record, slug, comment_id, "edit")
            record["threads"][section_id]["comments"][i].update(text=text, edited=_now())
            return section_id

        section_id = self._update(slug, "edit_comment", f"{slug} {comment_id}", change)
        return {"slug": slug, "section_id": section_id, "id": comment_id, "deleted": False}

    def delete_comment(self, slug: str, comment_id: str) -> CommentChanged:
        """Remove a comment: the caller's own, or anyone's for an admin. Raises NotFound
        (comment_id) or Forbidden; the history keeps it."""
        self._access("read", slug)
        dom.check_id(comment_id)

        def remove(record: dict[str, Any]) -> str:
            section_id, i = self._own(record, slug, comment_id, "delete", admin_may=True)
            thread = record["threads"][section_id]
            del thread["comments"][i]
            if not thread["comments"]:
                del record["threads"][section_id]
            return section_id

        section_id = self._update(slug, "delete_comment", f"{slug} {comment_id}", remove)
        return {"slug": slug, "section_id": section_id, "id": comment_id, "deleted": True}

    def _own(self, record: dict[str, Any], slug: str, comment_id: str, verb: str, *, admin_may: bool = False) -> tuple[str, int]:
        found = dom.find(record, comment_id)
        if found is None:
            raise NotFound(f"no comment {comment_id!r} on {slug}; read_comment_thread lists them", field="comment_id")
        section_id, i = found
        author = record["threads"][section_id]["comments"][i]["author"]
        if author != self.principal.name and not (admin_may and self.principal.has_scope("admin")):
            who = "its author or an admin" if admin_may else "its author"
            raise Forbidden(f"comment {comment_id} is {author}'s; only {who} may {verb} it", field="comment_id")
        return section_id, i

    def _update(self, slug: str, tool: str, subject: str, change: Callable[[dict[str, Any]], T]) -> T:
        """Apply ``change`` (which edits the record in place, or raises) to the page's record and
        store it compare-and-set; a lost race reads it again and applies ``change`` again. Returns
        what ``change`` returned on the record stored."""
        made = self._change(tool, subject)
        for _round in range(_TRIES):
            record, digest = self._comments(slug)
            result = change(record)
            try:
                self._store([Put(dom.record_path(slug), dom.to_bytes(record), expect=digest)], made)
            except Conflict:
                continue
            return result
        raise Conflict("the page's comments kept changing while this was written; nothing was changed. Try again",
                       field="slug", hash="")  # fmt: skip


def _view(comment: dict[str, Any]) -> Comment:
    return {k: comment.get(k, "") for k in ("id", "author", "client", "created", "edited", "text")}  # type: ignore[return-value]
