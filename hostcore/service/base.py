"""What every family of service operations shares: the host, the principal and the helpers.

Each mixin (pages, namespaces, links, history, search) subclasses :class:`WikiBase`, so what it
calls on ``self`` is typed; :class:`hostcore.service.wiki.Wiki` puts them together.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self, cast
from urllib.parse import quote

from typing_extensions import TypedDict

from hostcore.domain import namespaces as ns_settings
from hostcore.domain.attachments import files_folder
from hostcore.domain.pages import (
    Page,
    access_folder,
    check_namespace,
    check_portable,
    check_slug,
    namespace_of,
    namespace_path,
    page_path,
)
from hostcore.domain.principal import Principal
from hostcore.errors import Conflict, Forbidden, NotFound, TooLarge, Unavailable, ValidationError
from hostcore.seams.storage import Change, Operation
from hostcore.service import policy

if TYPE_CHECKING:
    from hostcore.host.host import Host
    from hostcore.service.change_requests import ChangeRequestsMixin

log = logging.getLogger("hostcore.service")

# What a conflict tells the caller of each page tool to do. Only save_page's carries the current
# body (the contract's rule); the others say how to get it.
_STALE = {
    "save_page": "merge your change into the current body (in this error) and retry with the current hash (in this error)",
    "edit_page": "read_page it again, check that each oldText still matches the current body, and retry with its hash",
    "move_page": "read_page it again to see what changed, then retry with its hash",
    "rename_page": "read_page it again to see what changed, then retry with its hash",
    "delete_page": "read_page it again to check that it is still the revision to delete, then retry with its hash",
    "restore_page": "read_page it again, then pass its hash as basehash to restore over it",
}
_GONE = {
    "save_page": "omit basehash to create it again, or pick another slug",
    "edit_page": "edit_page cannot create a page: save_page without basehash creates it again",
    "move_page": "there is nothing to move (recent_changes shows whether it was moved or deleted)",
    "rename_page": "there is nothing to rename (recent_changes shows whether it was moved or deleted)",
    "delete_page": "there is nothing to delete (recent_changes shows whether it was moved or deleted)",
    "restore_page": "omit basehash to restore it",
}
_reported: set[str] = set()  # settings problems already logged by this process


REVIEW_PATH = "/_/review/"
"""Where a person reviews a change request in the browser (the web plugin's page), before its id."""


class Proposal(TypedDict):
    """What a write answers when it became a change request instead of landing."""

    proposed: str
    review: str
    review_url: str


class WikiBase:
    """The wiki as one principal may see it, without any operations yet."""

    proposes_only = False
    """True on the twin :meth:`_proposer` makes: each write of it becomes a change request."""

    def __init__(self, host: Host, principal: Principal) -> None:
        self.host = host
        self.storage = host.storage
        self.principal = principal

    def _proposer(self) -> Self | None:
        """For a caller who may propose but not write: the wiki as a writer of the caller's own
        namespaces whose writes all become change requests by the caller (:meth:`_proposal`); its
        storage refuses any page write (:meth:`_store`). None for anyone else: they write, or are
        refused, as themselves. The write tools that propose call their own method on it."""
        if self.proposes_only or self.principal.has_scope("write") or not self.principal.has_scope("propose"):
            return None
        twin = type(self)(self.host, replace(self.principal, scopes=frozenset({"write"})))
        twin.proposes_only = True
        return twin

    def _review_url(self, request_id: str) -> str:
        """Where a person reviews the change request ``request_id`` in the browser."""
        return f"{self.host.config['PUBLIC_URL'].rstrip('/')}{REVIEW_PATH}{request_id}"

    def _change(self, tool: str, subject: str, *, counted: bool = True) -> Change:
        """The Change a write records, made on the one change path (:func:`hostcore.service.policy.change`:
        the writes limit, room on the disk). Raises RateLimited or DiskFull before anything is written."""
        return policy.change(self.host, self.principal, tool, subject, counted=counted)

    def _store(self, ops: Sequence[Operation], change: Change) -> dict[str, str | None]:
        """Apply ``ops`` as one ``change`` (each checked against its expected hash: all or
        nothing), then tell every plugin which paths it changed (``storage_changed``: the derived
        indexes take them in). Returns what :meth:`hostcore.Storage.apply` does."""
        for namespace in sorted({ns for op in ops if (ns := access_folder(op.path))}):
            if self._reviewed(namespace):
                raise Forbidden(
                    f"namespace {namespace!r} takes changes by review and your token lacks the 'review' scope; nothing "
                    "was written. Propose it with create_change_request: someone with the review scope applies it",
                    namespace=namespace,
                )
        stored = self.storage.apply(ops, change)
        self.host.notify("storage_changed", paths=sorted({op.path for op in ops}), change=change)
        return stored

    def _reviewed(self, namespace: str) -> bool:
        """Whether a write of the caller in ``namespace`` must be a change request: the namespace's
        ``review`` setting is on and the caller lacks the ``review`` scope."""
        if self.proposes_only:
            return True
        return not self.principal.has_scope("review") and self._namespace_fields(namespace, ("review",)).get("review") is True

    def _proposal(self, tool: str, changes: list[dict[str, Any]]) -> Proposal | None:
        """When a namespace ``changes`` (checked by their tool already) touch takes changes by review
        and the caller may not review: the change request made of them instead, which ``tool``
        answers with; else None, and the write goes on."""
        slugs = [s for c in changes for k in ("slug", "new_slug") if isinstance(s := c.get(k), str)]
        try:
            reviewed = any(self._reviewed(namespace_of(check_slug(s))) for s in slugs)
        except ValidationError:
            return None
        if not reviewed:
            return None
        client = f" via {self.principal.client}" if self.principal.client else ""
        why = "a token that may only propose" if self.proposes_only else "a namespace that takes changes by review"
        made = cast("ChangeRequestsMixin", self).create_change_request(
            [{k: v for k, v in c.items() if v is not None} for c in changes],
            f"{tool}: {', '.join(slugs)}"[:200],
            f"{tool} by {self.principal.name}{client}, {'with' if self.proposes_only else 'in'} {why}",
        )
        url = self._review_url(made["id"])
        return {
            "proposed": made["id"],
            "review": f"not written yet ({why}): change request {made['id']} waits for someone with the review scope "
            f"(read_change_request shows it, apply_change_request applies it; a person reviews it at {url}); tell the person",
            "review_url": url,
        }

    def _access(self, scope: str, slug: str, field: str = "slug") -> str:
        return policy.require_page(self.principal, scope, slug, field)

    def _scope(self, query: str, namespace: str | None, limit: int, max_limit: int) -> frozenset[str] | None:
        """The namespaces a search of the caller covers (None: all); checks query, namespace and limit."""
        if not query.strip():
            raise ValidationError("is empty; give words to search for", field="query")
        if not 1 <= limit <= max_limit:
            raise ValidationError(f"must be between 1 and {max_limit}", field="limit")
        if namespace is None:
            return self.principal.namespaces
        check_namespace(namespace, "namespace")
        self.principal.require_namespace(namespace, "namespace")
        return frozenset({namespace})

    def may(self, scope: str, namespace: str | None = None) -> bool:
        """Whether the caller holds ``scope`` (in ``namespace``, when given); see :func:`hostcore.service.policy.may`."""
        return policy.may(self.principal, scope, namespace)

    def require_in(self, scope: str, namespace: str, field: str = "namespace") -> None:
        """Raise Forbidden unless the caller may use ``namespace``, then InsufficientScope unless it holds ``scope``."""
        policy.require_in(self.principal, scope, namespace, field)

    def browsing(self, client: str | None = None) -> Principal:
        """The principal the caller reads as where public namespaces are open to anyone (the web
        pages): its own namespaces and every public one, read only; a caller without the read
        scope (a visitor) reads the public ones alone (:func:`hostcore.service.policy.browsing`)."""
        public = frozenset(
            name for name in self._namespace_names() if self._namespace_fields(name, ("public",)).get("public") is True
        )
        return policy.browsing(self.principal, public, client)

    def page_url(self, slug: str) -> str:
        return f"{self.host.config['PUBLIC_URL'].rstrip('/')}/{quote(slug)}"

    def _load(self, slug: str) -> Page:
        try:
            data, digest = self.storage.read_with_hash(page_path(slug))
        except NotFound:
            raise NotFound(f"no page {slug!r}; list_pages or search shows the pages that exist", field="slug") from None
        return replace(Page.from_bytes(slug, data), hash=digest)

    def _require_namespace_exists(self, name: str, field: str = "slug") -> None:
        if not self.storage.exists(namespace_path(name)):
            raise ValidationError(
                f"namespace {name!r} does not exist; pick one from list_namespaces or create it with save_namespace",
                field=field,
            )

    def page(self, slug: str) -> Page:
        """The whole page (for plugins). Needs read scope and access to its namespace."""
        return self._load(self._access("read", slug))

    def _current_or_conflict(self, slug: str, basehash: str, *, tool: str) -> Page:
        """The page, if it is still the revision ``basehash``; else a Conflict with its current hash
        (and, for save_page, its body) that tells the caller of ``tool`` what to do next."""
        try:
            current = self._load(slug)
        except NotFound:
            raise Conflict(f"page {slug!r} no longer exists; {_GONE[tool]}", field="basehash", hash="") from None
        if current.hash != basehash:
            data: dict[str, Any] = {"hash": current.hash}
            if tool == "save_page":
                data["body"] = current.body
            raise Conflict(f"is stale: the page changed since you read it; {_STALE[tool]}", field="basehash", **data)
        return current

    def _page_conflict(self, slug: str, exc: Exception, *, tool: str) -> Conflict:
        """A storage-level race lost after our own check passed: report the page's state now."""
        try:
            self._current_or_conflict(slug, "", tool=tool)
        except Conflict as conflict:
            return conflict
        raise AssertionError("unreachable: an empty basehash never matches") from exc

    def _attachments_of(self, slug: str) -> dict[str, str]:
        """Storage path -> blob id of every attachment of ``slug`` (the files in its ``.files`` folder)."""
        return self.storage.hashes(files_folder(slug))

    def _namespace_names(self) -> list[str]:
        return [name for name in self.storage.folders() if self.storage.exists(namespace_path(name))]

    def _check_new_slug(self, slug: str, field: str = "slug", moving: str = "") -> None:
        """Refuse a slug for a new page that a clone of the wiki elsewhere could not hold: a device
        name or trailing dot (see check_portable), or a page or folder name that differs only by
        case from one that exists, which a case-insensitive file system (Windows, macOS) would
        merge. ``moving``: the page being moved there, which does not count.
        """
        check_portable(slug, field)
        # the graph knows every page saved before this one, in any process (without the search
        # index's commit in this request); while it is rebuilt, the check goes on with what it holds
        clash = self.host.indexes.link_graph(while_rebuilt=True).case_variant(slug, ignore=moving)
        if clash is not None:
            given, existing = clash
            what = "page" if given == slug else "folder"
            raise ValidationError(
                f"{given} differs only by case from the existing {existing}; use that {what} or pick another name",
                field=field,
            )

    def _namespace_fields(self, name: str, wanted: tuple[str, ...]) -> dict[str, Any]:
        """The ``wanted`` plain settings of ``name``; none (and a log line) when its file is missing, too large or broken."""
        try:
            return ns_settings.fields(self.storage.read(namespace_path(name)), name, wanted)
        except NotFound:
            return {}
        except (TooLarge, Unavailable) as exc:
            if exc.message not in _reported:
                _reported.add(exc.message)
                log.warning("namespace settings skipped, defaults used: %s", exc.message)
            return {}
