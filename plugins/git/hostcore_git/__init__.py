"""Git storage for hostcore, the embedded default: one commit per change, history, remote push.

Enable it with ``PLUGINS = ["git"]`` and ``STORAGE = "git"``; see :class:`GitStorage` for its
config keys.
"""

from __future__ import annotations

from collections.abc import Callable

from hostcore import hookimpl

from .storage import GitStorage

__all__ = ["GitStorage"]


@hookimpl
def register_storage_backends(register: Callable[[type], None]) -> None:
    register(GitStorage)
