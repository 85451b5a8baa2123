"""A real full disk for tests: a small tmpfs mounted for the test, filled until ENOSPC."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(folder: Path, megabytes: int) -> Iterator[Path]:
    """Mount a fresh tmpfs of ``megabytes`` at ``folder`` for the block: a real filesystem to fill.

    Needs root (CI runs as root). Where mounting is refused the test fails rather than skips, so
    full-disk behaviour never goes untested unseen: run such tests as root or with CAP_SYS_ADMIN.
    """
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(
            f"cannot mount a {megabytes} MB tmpfs at {folder} ({done.stderr.strip()}): full-disk tests need a real "
            "filesystem to fill; run them as root (CI does) or in a container with CAP_SYS_ADMIN"
        )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


def fill_disk(folder: Path) -> None:
    """Write ``folder/filler`` until the kernel answers ENOSPC; delete it to free the space."""
    with open(folder / "filler", "ab", buffering=0) as out:
        for chunk in (b"\0" * 65536, b"\0" * 4096, b"\0"):
            try:
                while True:
                    out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    assert os.statvfs(folder).f_bavail == 0
