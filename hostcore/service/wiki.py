"""The service layer's entry point: :class:`Wiki`, the wiki as one principal may see and change it.

A :class:`Wiki` is bound to one principal. MCP tools, web views and CLI commands call its
methods; none of them checks access, validates input or compares hashes on its own (what they
may let through at all, and how often, is :mod:`hostcore.service.policy`'s). Each family of
operations (pages, namespaces, links, history, search, documents, attachments, sections,
changes, assistants, context, comments) is a mixin in a module of its own over :class:`~hostcore.service.base.WikiBase`, and
methods return the TypedDicts of the tool contract's results and raise ``hostcore.errors``.

Every operation and helper is defined in exactly one family: no family overrides another's (no
``super()`` chain), so the order of the bases below changes nothing, and what a method does is
what its own module says (``tests/test_wiki.py`` holds it). A family that uses another's
operations subclasses it (links uses pages' ``save_page``; search composes documents'
contribution; documents read attachments). To add a family: write
``hostcore/service/<family>.py`` with ``class <Family>Mixin(WikiBase)`` (or the family it builds
on) and its result TypedDicts, add it to :class:`Wiki`'s bases, and give it a tools module of the
same name in ``hostcore/tools/`` whose tools each call one of its methods.
"""

from __future__ import annotations

from hostcore.service.activity import ActivityMixin
from hostcore.service.assistants import AssistantsMixin
from hostcore.service.attachments import AttachmentsMixin
from hostcore.service.blame import BlameMixin
from hostcore.service.change_requests import ChangeRequestsMixin
from hostcore.service.change_review import ChangeReviewMixin
from hostcore.service.changes import ChangesMixin
from hostcore.service.comments import CommentsMixin
from hostcore.service.context import ContextMixin
from hostcore.service.documents import DocumentsMixin
from hostcore.service.history import HistoryMixin
from hostcore.service.links import LinksMixin
from hostcore.service.namespace_removal import NamespaceRemovalMixin
from hostcore.service.namespaces import NamespacesMixin
from hostcore.service.packs import PacksMixin
from hostcore.service.pages import PagesMixin
from hostcore.service.search import SearchMixin
from hostcore.service.sections import SectionsMixin
from hostcore.service.undo import UndoMixin


class Wiki(
    UndoMixin, BlameMixin, AssistantsMixin, ChangeReviewMixin, ChangeRequestsMixin, CommentsMixin, ChangesMixin, ContextMixin, PacksMixin,
    LinksMixin, PagesMixin, SectionsMixin, NamespacesMixin, HistoryMixin, SearchMixin, DocumentsMixin, AttachmentsMixin,
    ActivityMixin, NamespaceRemovalMixin,
):
    """The wiki as one principal may see and change it: every operation of the service layer."""
