"""The service layer's entry point: :class:`Wiki`, the wiki as one principal may see and change it.

A :class:`Wiki` is bound to one principal. MCP tools, web views and CLI commands call its
methods; none of them checks access, validates input or compares hashes on its own. Each family
of operations is a mixin in a module of its own (pages, namespaces, links, history, search,
documents, attachments, sections, changes) over :class:`~hostcore.service.base.WikiBase`. Methods return the TypedDicts of the
tool contract's results, and raise ``hostcore.errors``.
"""

from __future__ import annotations

from hostcore.service.attachments import AttachmentsMixin
from hostcore.service.changes import ChangesMixin
from hostcore.service.documents import DocumentsMixin
from hostcore.service.history import HistoryMixin
from hostcore.service.links import LinksMixin
from hostcore.service.namespaces import NamespacesMixin
from hostcore.service.pages import PagesMixin
from hostcore.service.search import SearchMixin
from hostcore.service.sections import SectionsMixin


class Wiki(
    ChangesMixin, LinksMixin, PagesMixin, SectionsMixin, NamespacesMixin, HistoryMixin, DocumentsMixin, SearchMixin,
    AttachmentsMixin,
):
    """The wiki as one principal may see and change it: every operation of the service layer."""
