"""A test-only extractor plugin for files no real extractor reads (``application/octet-stream``):
a NUL byte (so the bytes sniff as binary) then a word say how to misbehave, so tests can show the limits of the extraction runner.

``SLEEP`` sleeps, ``LOOP`` spins the CPU, ``BOMB`` allocates memory without end, ``CORRUPT`` raises
ExtractionFailed, ``CRASH`` raises a bug; anything else extracts as "bytes: N". Loaded by the
dotted PLUGINS entry ``tests.hostile_extractor`` (with the repository root on PYTHONPATH) or
handed to ``create_app(plugins=[...])``.
"""

from __future__ import annotations

import time

from hostcore import ExtractionFailed, Extractor, hookimpl


class HostileExtractor(Extractor):
    name = "hostile"
    media_types = ("application/octet-stream",)

    def extract(self, data: bytes, media_type: str) -> str:
        command = data[1:]
        if command.startswith(b"SLEEP"):
            time.sleep(3600)
        if command.startswith(b"LOOP"):
            while True:
                pass
        if command.startswith(b"BOMB"):
            hoard = []
            while True:
                hoard.append(bytearray(64 * 1024 * 1024))
        if command.startswith(b"CORRUPT"):
            raise ExtractionFailed("the file is corrupt: no trailer")
        if command.startswith(b"CRASH"):
            raise ValueError("an extractor bug")
        return f"bytes: {len(data)}"


@hookimpl
def register_extractors(register):
    register(HostileExtractor)
