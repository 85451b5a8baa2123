"""hostcore: a wiki that people and AI assistants share.

This module is the public surface: plugins import from here and nowhere else in ``hostcore``.
"""

from .auth import SYSTEM, Principal, Unauthorized
from .derived import Rebuild, connect, damaged, file_id, recover_sqlite, set_aside
from .errors import (
    ConfigError,
    Conflict,
    DiskFull,
    Forbidden,
    HostcoreError,
    InsufficientScope,
    NotFound,
    RateLimited,
    StartupError,
    TooLarge,
    Unavailable,
    ValidationError,
)
from .hookspecs import hookimpl
from .locks import FileLock
from .pages import Page, check_namespace, check_slug, wiki_links
from .query import And, Not, Or, Phrase, QueryNode, Tag, Term, parse_query, positive_leaves
from .resources import prompt, resource
from .search import SearchBackend, SearchDoc, SearchHit, SearchResults
from .storage import ANY, Change, Delete, Operation, Put, Revision, Storage, blob_hash, check_path, disk_full, out_of_space
from .tools import Tool, tool

__version__ = "0.1.0"


def create_app(*args, **kwargs):  # noqa: ANN002, ANN003 - thin lazy wrapper keeps Flask off plugin imports
    """Build the Flask application; see :func:`hostcore.app.create_app`."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)


__all__ = [
    "ANY",
    "SYSTEM",
    "And",
    "Change",
    "ConfigError",
    "Conflict",
    "Delete",
    "DiskFull",
    "FileLock",
    "Forbidden",
    "HostcoreError",
    "InsufficientScope",
    "Not",
    "NotFound",
    "Operation",
    "Or",
    "Page",
    "Phrase",
    "Principal",
    "Put",
    "QueryNode",
    "RateLimited",
    "Rebuild",
    "Revision",
    "SearchBackend",
    "SearchDoc",
    "SearchHit",
    "SearchResults",
    "StartupError",
    "Storage",
    "Tag",
    "Term",
    "Tool",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "ValidationError",
    "blob_hash",
    "check_namespace",
    "check_path",
    "check_slug",
    "connect",
    "create_app",
    "damaged",
    "disk_full",
    "file_id",
    "hookimpl",
    "out_of_space",
    "parse_query",
    "positive_leaves",
    "prompt",
    "recover_sqlite",
    "resource",
    "set_aside",
    "tool",
    "wiki_links",
    "__version__",
]
