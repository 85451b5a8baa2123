"""Files the wiki makes are its user's alone.

The instance folder holds the session signing key, password hashes and token digests
(``shared.sqlite``), the pages and their history, and indexes of every namespace: another user of
the machine must read none of it. So every process that touches an instance (the CLI, ``hostcore
serve``'s workers, ``wsgi.py``) first sets a umask of 077 (:func:`private_umask`), whatever the
umask it was started with: files are made 0600 and folders 0700, including those that libraries
(SQLite, libgit2, tantivy) create. An instance made before, or files put there by other programs
(a ``git push`` over ssh with a umask of 022), are made private at start-up (:func:`make_private`,
one walk of the folders, changing only what is exposed), and ``hostcore check`` lists what is not
(:func:`exposed`).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger("hostcore")

PRIVATE_UMASK = 0o077
"""Group and others get no access to anything this process creates."""


def private_umask() -> None:
    """From now on this process creates files 0600 and folders 0700 (at most)."""
    os.umask(PRIVATE_UMASK)


def _roots(folders: Iterable[Path]) -> list[Path]:
    """``folders`` made absolute, without those inside another one (walked once)."""
    unique = sorted({Path(os.path.abspath(f)) for f in folders}, key=lambda p: len(p.parts))
    roots: list[Path] = []
    for folder in unique:
        if not any(folder.is_relative_to(root) for root in roots):
            roots.append(folder)
    return roots


def _walk(folders: Iterable[Path]) -> Iterator[tuple[Path, int]]:
    """(path, mode) of every folder in ``folders`` and everything under them; symbolic links are
    neither reported nor followed, and what vanishes meanwhile is skipped."""
    for root in _roots(folders):
        try:
            mode = os.lstat(root).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            continue
        yield root, mode
        stack = [root] if stat.S_ISDIR(mode) else []
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except FileNotFoundError:
                    continue
                if stat.S_ISLNK(mode):
                    continue
                yield Path(entry.path), mode
                if stat.S_ISDIR(mode):
                    stack.append(Path(entry.path))


def exposed(folders: Iterable[Path]) -> list[tuple[Path, int]]:
    """Every file and folder under ``folders`` (them included) that users other than its owner may
    read, write or enter: (path, permission bits)."""
    return [(path, stat.S_IMODE(mode)) for path, mode in _walk(folders) if mode & 0o077]


def listing(found: list[tuple[Path, int]], limit: int = 5) -> str:
    """``found`` (from :func:`exposed`) in a sentence: the first few with their modes, and how many more."""
    shown = ", ".join(f"{path} ({mode:04o})" for path, mode in found[:limit])
    return shown + (f" and {len(found) - limit} more" if len(found) > limit else "")


def make_private(folders: Iterable[Path]) -> list[tuple[Path, int]]:
    """Take every access of group and others away under ``folders`` (them included); the owner's
    own bits stay as they were (git's read-only objects stay read-only). Returns what was changed,
    with its mode before; logs one warning when anything was. A file that cannot be changed
    (another user's) is logged and left."""
    changed = []
    for path, mode in exposed(folders):
        try:
            os.chmod(path, mode & ~0o077)
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("%s is readable by other users (%04o) and cannot be made private: %s", path, mode, exc)
            continue
        changed.append((path, mode))
    if changed:
        log.warning(
            "made %d files and folders private to their user (other users could read or enter them): %s",
            len(changed),
            listing(changed),
        )
    return changed
