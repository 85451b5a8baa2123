"""The service layer's entry point: :class:`Wiki`, the wiki as one principal may see and change it.

A :class:`Wiki` is bound to one principal. MCP tools, web views and CLI commands call its
methods; none of them checks access, validates input or compares hashes on its own. Each family
of operations is a mixin in a module of its own (pages, namespaces, links, history, search);
this module holds what they share. Methods return plain dicts shaped as the tool contract's
results, and raise ``hostcore.errors``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from hostcore.domain.pages import (
    Page,
    check_slug,
    namespace_of,
    namespace_path,
    page_path,
)
from hostcore.domain.principal import Principal
from hostcore.errors import NotFound, ValidationError
from hostcore.seams.storage import Change
from hostcore.service.history import HistoryMixin
from hostcore.service.links import LinksMixin
from hostcore.service.namespaces import NamespacesMixin
from hostcore.service.pages import PagesMixin
from hostcore.service.search import SearchMixin

if TYPE_CHECKING:
    from hostcore.host.host import Host


class Wiki(PagesMixin, NamespacesMixin, LinksMixin, HistoryMixin, SearchMixin):
    """The wiki as one principal may see and change it."""

    def __init__(self, host: Host, principal: Principal) -> None:
        self.host = host
        self.storage = host.storage
        self.principal = principal

    def _change(self, tool: str, subject: str) -> Change:
        client = f" via {self.principal.client}" if self.principal.client else ""
        return Change(author=self.principal.name, message=f"{tool}: {subject}{client}")

    def _access(self, scope: str, slug: str, field: str = "slug") -> str:
        self.principal.require(scope)
        check_slug(slug, field)
        self.principal.require_namespace(namespace_of(slug), field)
        return slug

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

