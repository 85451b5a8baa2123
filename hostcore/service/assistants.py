"""What the wiki offers assistants besides page tools: each namespace's capture inbox, its
operating guide (the wiki's own instructions to assistants), and its pages as a keyed listing
(MCP resources); mixed into :class:`~hostcore.service.wiki.Wiki`.

Both the inbox and the guide are pages named by namespace settings (``inbox``, default
``inbox``; ``guide``, none by default), so people read and edit them like any page, and every
access rule of pages holds for them.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

from typing_extensions import TypedDict

from hostcore.domain import namespaces as ns_settings
from hostcore.domain import sections as dom
from hostcore.domain.pages import check_body, check_namespace, page_path
from hostcore.errors import Conflict, HostcoreError, NotFound, Unavailable, ValidationError
from hostcore.indexes.link_graph import PageFact
from hostcore.service.pages import PagesMixin
from hostcore.service.sections import SectionsMixin

log = logging.getLogger("hostcore.service")

MAX_CAPTURE = 20_000
"""Characters of one capture's text: a thought, a note or a link with a line about it."""
MAX_CAPTURE_URL = 2000
INBOX_TITLE = "Inbox"
INBOX_HEAD = (
    "Thoughts, notes and links dropped here with the capture tool, oldest first, each under a heading "
    "saying when and by whom. Move each where it belongs, then delete it here.\n"
)
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|~!#])")
_URL = re.compile(r"https?://[^\s<>]+", re.IGNORECASE)


class Captured(TypedDict):
    slug: str
    hash: str
    created: bool
    at: str
    by: str


class Guide(TypedDict):
    namespace: str
    slug: str
    title: str
    hash: str
    body: str
    total_chars: int
    truncated: bool


class GuideList(TypedDict):
    guides: list[Guide]
    without_guide: list[str]


class GuidePointer(TypedDict):
    namespace: str
    slug: str


def _plain(text: str) -> str:
    """``text`` with Markdown's special characters escaped: a name in a heading links nothing."""
    return _MARKDOWN.sub(r"\\\1", text)


class AssistantsMixin(PagesMixin, SectionsMixin):
    """capture, read_guide, guides, page_listing, complete_slug, complete_namespace."""

    def _page_setting(self, namespace: str, key: str) -> str:
        """The ``inbox`` or ``guide`` setting of ``namespace`` (its default when unset); Unavailable
        when the stored value is not one save_namespace would accept (a file edited from outside)."""
        value = self._namespace_fields(namespace, (key,)).get(key, ns_settings.DEFAULTS[key])
        try:
            ns_settings.validate({key: value}, namespace)
        except ValidationError as exc:
            raise Unavailable(
                f"the {key} setting of namespace {namespace!r} is not usable ({exc.message}); an admin fixes it with save_namespace",
                field="namespace",
            ) from None
        return str(value)

    def capture(self, namespace: str, text: str, url: str | None = None) -> Captured:
        """Add ``text`` (and ``url``) under a heading naming when and by whom to the end of the
        namespace's inbox page, creating the page when it is missing. Never conflicts: concurrent
        captures all land, in the order they arrive."""
        check_namespace(namespace, "namespace")
        self.require_in("write", namespace)
        check_body(text, "text")
        if not text.strip():
            raise ValidationError("is empty; give the thought, note or link to capture", field="text")
        if len(text) > MAX_CAPTURE:
            raise ValidationError(f"is {len(text)} characters; at most {MAX_CAPTURE}: save a page for longer text", field="text")
        if url is not None and not _URL.fullmatch(url):
            raise ValidationError("must be one http or https URL without spaces, e.g. https://example.org/a", field="url")
        self._require_namespace_exists(namespace, "namespace")
        slug = f"{namespace}/{self._page_setting(namespace, 'inbox')}"
        now = datetime.now(UTC)
        by = self.principal.name + (f" via {self.principal.client}" if self.principal.client else "")
        entry = f"## {now:%Y-%m-%d %H:%M} UTC by {_plain(by)}\n\n{text.strip(chr(10))}\n"
        if url is not None:
            entry += f"\n<{url}>\n"
        done: Captured = {"slug": slug, "hash": "", "created": False, "at": f"{now:%Y-%m-%dT%H:%M:%SZ}", "by": by}
        if not self.storage.exists(page_path(slug)):
            created = self._create_inbox(slug, entry)
            if created is not None:
                return {**done, "hash": created, "created": True}
        try:
            landed = self._land(slug, "capture", slug, lambda o: dom.insert(o, entry, None, "end"), "text")
        except ValidationError as exc:
            raise ValidationError(exc.message, field="text" if exc.field == "markdown" else exc.field) from None
        return {**done, "hash": landed.page.hash}

    def _create_inbox(self, slug: str, entry: str) -> str | None:
        """Create the inbox page holding ``entry``: its hash, or None when another writer created it first."""
        plan = self._plan_save(slug, None, f"# {INBOX_TITLE}\n\n{INBOX_HEAD}\n{entry}", INBOX_TITLE, None, None)
        change = self._change("capture", slug)
        try:
            self._store(plan.ops, change)
        except Conflict:
            return None
        self._announce(plan, change)
        return plan.page.hash

    def guides(self) -> list[GuidePointer]:
        """The operating guide of each namespace the caller may read that names one (no page is
        read): what the server's instructions point to. Never raises: a namespace whose settings
        cannot be read is left out (and logged)."""
        if not self.principal.has_scope("read"):
            return []
        found: list[GuidePointer] = []
        for name in self._namespace_names():
            if not self.principal.can_access(name):
                continue
            try:
                guide = self._page_setting(name, "guide")
            except HostcoreError as exc:
                log.warning("guide of %s left out of the instructions: %s", name, exc.message)
                continue
            if guide:
                found.append({"namespace": name, "slug": f"{name}/{guide}"})
        return found

    def read_guide(self, namespace: str | None = None, limit: int = 20_000) -> GuideList:
        """The operating guide of ``namespace`` (None: of every namespace the caller may read that
        has one), each body cut at ``limit`` characters. A named namespace without a guide, or
        whose guide page does not exist, is NotFound."""
        self.principal.require("read")
        if not 1 <= limit <= 100_000:
            raise ValidationError("must be between 1 and 100000", field="limit")
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.require_in("read", namespace)
            self._require_namespace_exists(namespace, "namespace")
            guide = self._page_setting(namespace, "guide")
            if not guide:
                raise NotFound(
                    f"namespace {namespace!r} has no operating guide; an admin names one with save_namespace (guide)",
                    field="namespace",
                )
            pointers: list[GuidePointer] = [{"namespace": namespace, "slug": f"{namespace}/{guide}"}]
            names = [namespace]
        else:
            pointers = self.guides()
            names = [n for n in self._namespace_names() if self.principal.can_access(n)]
        guides: list[Guide] = []
        for pointer in pointers:
            try:
                page = self._load(pointer["slug"])
            except NotFound:
                if namespace is not None:
                    raise NotFound(
                        f"namespace {namespace!r} names {pointer['slug']} as its operating guide, which does not exist; "
                        "save that page, or name another with save_namespace (guide)",
                        field="namespace",
                    ) from None
                continue
            guides.append({
                "namespace": pointer["namespace"], "slug": page.slug, "title": page.title, "hash": page.hash,
                "body": page.body[:limit], "total_chars": len(page.body), "truncated": len(page.body) > limit,
            })  # fmt: skip
        having = {g["namespace"] for g in guides}
        return {"guides": guides, "without_guide": [n for n in names if n not in having]}

    def page_listing(self, after: str = "", limit: int = 100) -> list[PageFact]:
        """Up to ``limit`` pages the caller may read whose slug sorts after ``after``, by slug, with
        title, hash and last change: a listing keyed by slug, so a page of it stays in place while
        pages come and go (MCP's ``resources/list``)."""
        self.principal.require("read")
        return self.host.indexes.link_graph().pages_after(self.principal.namespaces, after, limit)

    def attachment_listing(self, after: str = "", limit: int = 100) -> list[tuple[str, str, str]]:
        """Up to ``limit`` attachments whose text the passage index holds, in namespaces the caller
        may read, whose ``slug/filename`` sorts after ``after``, in that order: (slug, filename,
        hash), for ``resources/list`` as :meth:`page_listing` lists pages."""
        self.principal.require("read")
        return self.host.indexes.passage_index().attachments_after(self.principal.namespaces, after, limit)

    def complete_slug(self, prefix: str, limit: int = 100) -> list[str]:
        """Slugs of pages the caller may read that start with ``prefix`` (completions of a page argument)."""
        self.principal.require("read")
        return self.host.indexes.link_graph().slugs_starting(self.principal.namespaces, prefix, limit)

    def complete_namespace(self, prefix: str) -> list[str]:
        """Names of the namespaces the caller may use that start with ``prefix``."""
        self.principal.require("read")
        return [n for n in self._namespace_names() if n.startswith(prefix) and self.principal.can_access(n)]
