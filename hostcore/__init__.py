"""hostcore: a wiki that people and AI assistants share.

This module is the public surface: plugins import from here and nowhere else in ``hostcore``.

A name is imported when it is first asked for (PEP 562 ``__getattr__``), so ``import hostcore``
costs almost nothing, and a process that needs a few names (the CLI before it builds a host, the
extraction subprocess, a plugin's module) does not load Flask, pydantic, the MCP types or numpy
for names that do not need them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers (tests/test_public_api.py keeps the two alike)
    from hostcore.browser.sessions import (
        CSP,
        LOGIN_PATH,
        LOGOUT_PATH,
        admit_page,
        check_csrf,
        csrf_token,
        current_session,
        end_session,
        end_sessions,
        login_redirect,
        person,
        safe_next,
        sessions_of,
        sign_in,
        sign_out,
    )
    from hostcore.domain.attachments import attachment_url, serving_headers, split_attachment_url
    from hostcore.domain.namespaces import NAMESPACE_CHOICES, NAMESPACE_DEFAULTS
    from hostcore.domain.pages import Page, check_namespace, check_slug, wiki_links
    from hostcore.domain.principal import SCOPES, SYSTEM, Principal
    from hostcore.domain.query import (
        And,
        Not,
        Or,
        Phrase,
        QueryNode,
        Tag,
        Term,
        parse_query,
        positive_leaves,
    )
    from hostcore.domain.stemming import stem
    from hostcore.errors import (
        HTTP_STATUS,
        ConfigError,
        Conflict,
        DiskFull,
        ExtractionFailed,
        Forbidden,
        HostcoreError,
        InsufficientScope,
        NoHistory,
        NotFound,
        RateLimited,
        StartupError,
        TooLarge,
        Unauthorized,
        Unavailable,
        ValidationError,
    )
    from hostcore.seams.derived import (
        Rebuild,
        connect,
        damaged,
        drop_older_formats,
        file_id,
        generation,
        new_generation,
        recover_sqlite,
        set_aside,
        wal,
    )
    from hostcore.seams.embed import Embedder, Vectors, unit_rows
    from hostcore.seams.extract import Extractor
    from hostcore.seams.hookspecs import hookimpl
    from hostcore.seams.host import DerivedIndexes, PluginHost, RateLimits, ServiceKey, Slot
    from hostcore.seams.index import Changes, DerivedIndex
    from hostcore.seams.locks import FileLock
    from hostcore.seams.resources import ResourceEntry, ResourceText, prompt, resource
    from hostcore.seams.search import NO_FILTERS, SearchBackend, SearchDoc, SearchFilters, SearchHit, SearchResults
    from hostcore.seams.settings import Setting
    from hostcore.seams.shared import SharedState
    from hostcore.seams.sqlite import DerivedDB, rows_in
    from hostcore.seams.storage import (
        ANY,
        BlameHunk,
        Change,
        Delete,
        Operation,
        Put,
        Revision,
        Storage,
        blob_hash,
        check_path,
        disk_full,
        out_of_space,
    )
    from hostcore.seams.tool import Tool, tool
    from hostcore.seams.worker import CoalescingWorker

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "hostcore.domain.attachments": ("attachment_url", "serving_headers", "split_attachment_url"),
    "hostcore.domain.namespaces": ("NAMESPACE_CHOICES", "NAMESPACE_DEFAULTS"),
    "hostcore.domain.pages": ("Page", "check_namespace", "check_slug", "wiki_links"),
    "hostcore.domain.principal": ("SCOPES", "SYSTEM", "Principal"),
    "hostcore.domain.query": (
        "And", "Not", "Or", "Phrase", "QueryNode", "Tag", "Term", "parse_query", "positive_leaves",
    ),
    "hostcore.errors": (
        "HTTP_STATUS", "ConfigError", "Conflict", "DiskFull", "ExtractionFailed", "Forbidden", "HostcoreError", "InsufficientScope",
        "NoHistory", "NotFound", "RateLimited", "StartupError", "TooLarge", "Unauthorized", "Unavailable", "ValidationError",
    ),
    "hostcore.seams.derived": (
        "Rebuild", "connect", "damaged", "drop_older_formats", "file_id", "generation", "new_generation", "recover_sqlite",
        "set_aside", "wal",
    ),
    "hostcore.seams.embed": ("Embedder", "Vectors", "unit_rows"),
    "hostcore.seams.extract": ("Extractor",),
    "hostcore.seams.hookspecs": ("hookimpl",),
    "hostcore.seams.host": ("DerivedIndexes", "PluginHost", "RateLimits", "ServiceKey", "Slot"),
    "hostcore.seams.index": ("Changes", "DerivedIndex"),
    "hostcore.seams.locks": ("FileLock",),
    "hostcore.seams.resources": ("ResourceEntry", "ResourceText", "prompt", "resource"),
    "hostcore.domain.stemming": ("stem",),
    "hostcore.seams.search": ("NO_FILTERS", "SearchBackend", "SearchDoc", "SearchFilters", "SearchHit", "SearchResults"),
    "hostcore.seams.settings": ("Setting",),
    "hostcore.seams.shared": ("SharedState",),
    "hostcore.seams.sqlite": ("DerivedDB", "rows_in"),
    "hostcore.seams.storage": (
        "ANY", "BlameHunk", "Change", "Delete", "Operation", "Put", "Revision", "Storage", "blob_hash", "check_path",
        "disk_full", "out_of_space",
    ),
    "hostcore.seams.tool": ("Tool", "tool"),
    "hostcore.seams.worker": ("CoalescingWorker",),
    "hostcore.browser.sessions": (
        "CSP", "LOGIN_PATH", "LOGOUT_PATH", "admit_page", "check_csrf", "csrf_token", "current_session", "end_session",
        "end_sessions", "login_redirect", "person", "safe_next", "sessions_of", "sign_in", "sign_out",
    ),
}
"""Module -> the public names it defines."""
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'hostcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def create_app(*args, **kwargs):
    """Build the Flask application; see :func:`hostcore.app.create_app`."""
    from hostcore.app import create_app as _create_app

    return _create_app(*args, **kwargs)


__all__ = [
    "ANY",
    "CSP",
    "HTTP_STATUS",
    "LOGIN_PATH",
    "LOGOUT_PATH",
    "NAMESPACE_CHOICES",
    "NAMESPACE_DEFAULTS",
    "NO_FILTERS",
    "SCOPES",
    "SYSTEM",
    "And",
    "BlameHunk",
    "Change",
    "Changes",
    "CoalescingWorker",
    "ConfigError",
    "Conflict",
    "Delete",
    "DerivedDB",
    "DerivedIndex",
    "DerivedIndexes",
    "DiskFull",
    "Embedder",
    "ExtractionFailed",
    "Extractor",
    "FileLock",
    "Forbidden",
    "HostcoreError",
    "InsufficientScope",
    "NoHistory",
    "Not",
    "NotFound",
    "Operation",
    "Or",
    "Page",
    "Phrase",
    "PluginHost",
    "Principal",
    "Put",
    "QueryNode",
    "RateLimited",
    "RateLimits",
    "Rebuild",
    "ResourceEntry",
    "ResourceText",
    "Revision",
    "SearchBackend",
    "SearchDoc",
    "SearchFilters",
    "SearchHit",
    "SearchResults",
    "ServiceKey",
    "Setting",
    "SharedState",
    "Slot",
    "StartupError",
    "Storage",
    "Tag",
    "Term",
    "TooLarge",
    "Tool",
    "Unauthorized",
    "Unavailable",
    "ValidationError",
    "Vectors",
    "__version__",
    "admit_page",
    "attachment_url",
    "blob_hash",
    "check_csrf",
    "check_namespace",
    "check_path",
    "check_slug",
    "connect",
    "create_app",
    "csrf_token",
    "current_session",
    "damaged",
    "disk_full",
    "drop_older_formats",
    "end_session",
    "end_sessions",
    "file_id",
    "generation",
    "hookimpl",
    "login_redirect",
    "new_generation",
    "out_of_space",
    "parse_query",
    "person",
    "positive_leaves",
    "prompt",
    "recover_sqlite",
    "resource",
    "rows_in",
    "safe_next",
    "serving_headers",
    "sessions_of",
    "set_aside",
    "sign_in",
    "sign_out",
    "split_attachment_url",
    "stem",
    "tool",
    "unit_rows",
    "wal",
    "wiki_links",
]
