"""A test-only extractor plugin whose module takes seconds to import, as any module does on a
machine busy enough: the extraction's time limit must not count it (tests/test_attachments.py).

Reads ``application/octet-stream`` at once, as "bytes: N".
"""

from __future__ import annotations

import time

from hostcore import Extractor, hookimpl

IMPORT_SECONDS = 3.0
time.sleep(IMPORT_SECONDS)


class SlowStartExtractor(Extractor):
    name = "slow-start"
    media_types = ("application/octet-stream",)

    def extract(self, data: bytes, media_type: str) -> str:
        return f"bytes: {len(data)}"


@hookimpl
def register_extractors(register):
    register(SlowStartExtractor)
