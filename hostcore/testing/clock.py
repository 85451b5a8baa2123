"""A clock a test moves by hand, for expiry without sleeping.

What expires reads the time from a ``clock`` it was given (``time.time`` by default): shared
state on one machine (``SqliteShared.clock``: every record's ``ttl``, so the OAuth plugin's codes
and tokens too) and upload tickets (``UploadTickets.clock``)::

    clock = FakeClock()
    host.shared.clock = clock
    host.shared.put("codes", "c", {}, ttl=60)
    clock.advance(61)
    assert host.shared.get("codes", "c") is None

Redis keeps its own time (its ``PX`` expiry), so a test of Redis's expiry still waits.
"""

from __future__ import annotations

import time


class FakeClock:
    """Epoch seconds that stand still until :meth:`advance` moves them (now, unless ``start``)."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
