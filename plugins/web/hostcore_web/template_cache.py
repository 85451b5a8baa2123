"""Compiled templates kept in the instance folder, so a restarted worker's first page is not slower."""

from __future__ import annotations

import logging

from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import Bucket

log = logging.getLogger("hostcore_web")


class TemplateCache(FileSystemBytecodeCache):
    """Only a cache: one that cannot be written (a full disk) is skipped and said once in the log,
    and the page is served all the same."""

    _warned = False

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("compiled templates not kept in %s (%s); pages are served all the same", self.directory, exc)
