"""S3 storage for hostcore: the wiki kept in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2, ...).

Enable it with ``PLUGINS = ["s3", ...]`` and ``STORAGE = "s3"``; its settings
(``PLUGIN_CONFIG.s3``: ``bucket``, ``prefix``, ``endpoint_url``, ``region``, ``repair_after``) are
declared in :class:`S3Storage`, which also says what is atomic and what it relies on.
"""

from __future__ import annotations

from collections.abc import Callable

from hostcore import hookimpl

from .storage import S3Storage

__all__ = ["S3Storage"]


@hookimpl
def register_storage_backends(register: Callable[[type], None]) -> None:
    register(S3Storage)
