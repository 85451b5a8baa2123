"""Git tree helpers: find a file, walk a folder, and build a new tree from an old one.

Trees are read through pygit2's lazy objects, so looking up or walking entries reads tree
objects only, never blobs. A new tree is built with one TreeBuilder per folder along the changed
paths; every other subtree is reused by id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

import pygit2
from pygit2.enums import FileMode

from hostcore import ValidationError


def entry_at(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    """The blob or tree at ``path`` in ``tree``, or None when absent (or ``tree`` is None)."""
    if tree is None:
        return None
    try:
        return tree[path]
    except KeyError:
        return None


def blob_id(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    """The id of the file at ``path``, or None when absent or a folder."""
    entry = entry_at(tree, path)
    return entry.id if isinstance(entry, pygit2.Blob) else None


def check_writable(tree: pygit2.Tree | None, path: str) -> None:
    """Raise ValidationError when writing a file at ``path`` would replace a folder or a file.

    Git would let a blob replace a whole folder (or a folder replace a file) silently; a wiki
    must never drop pages that way.
    """
    if isinstance(entry_at(tree, path), pygit2.Tree):
        raise ValidationError(f"{path} is a folder, so no file can be written there", field="path")
    parts = path.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        if isinstance(entry_at(tree, parent), pygit2.Blob):
            raise ValidationError(f"{parent} is a file, so {path} cannot be written", field="path")


def walk(tree: pygit2.Tree | None, prefix: str = "") -> Iterator[tuple[str, pygit2.Oid]]:
    """Yield (path, blob id) of every file under the folder ``prefix`` ("" for all), sorted."""
    folder = tree if not prefix else entry_at(tree, prefix)
    if not isinstance(folder, pygit2.Tree):
        return
    yield from _walk(folder, f"{prefix}/" if prefix else "")


def _walk(tree: pygit2.Tree, base: str) -> Iterator[tuple[str, pygit2.Oid]]:
    # Git orders a folder "a" as "a/", so tree order is already the sorted order of full paths.
    for entry in tree:
        if isinstance(entry, pygit2.Tree):
            yield from _walk(entry, f"{base}{entry.name}/")
        elif isinstance(entry, pygit2.Blob):
            yield f"{base}{entry.name}", entry.id


def build(repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Mapping[str, pygit2.Oid | None]) -> pygit2.Oid:
    """Write the tree that is ``tree`` with ``changes`` (path -> blob id, None to delete) applied.

    Returns the new root tree id; folders left empty are removed, the root may become empty.
    """
    root = _build(repo, tree, changes)
    return root if root is not None else repo.TreeBuilder().write()


def _build(repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Mapping[str, pygit2.Oid | None]) -> pygit2.Oid | None:
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    below: dict[str, dict[str, pygit2.Oid | None]] = {}
    for path, oid in changes.items():
        name, slash, rest = path.partition("/")
        if slash:
            below.setdefault(name, {})[rest] = oid
        elif oid is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, oid, FileMode.BLOB)
    for name, sub in below.items():
        current = builder.get(name)
        found = repo[current.id] if current is not None and current.filemode == FileMode.TREE else None
        subtree = found if isinstance(found, pygit2.Tree) else None
        new = _build(repo, subtree, sub)
        if new is not None:
            builder.insert(name, new, FileMode.TREE)
        elif current is not None:
            builder.remove(name)
    return builder.write() if len(builder) else None


def changed(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None, base: str = "") -> Iterator[str]:
    """Yield the path of every file that differs between the trees ``old`` and ``new`` (ids;
    either may be None).

    Subtrees with the same id are skipped, and each tree is read as raw bytes: a pygit2 object
    per entry made a diff of two big folders several times dearer than the raw entries, and
    libgit2's tree diff is slower still (it builds a delta per entry it compares).
    """
    if old == new:
        return
    before = _entries(repo, old)
    after = _entries(repo, new)
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        a_tree = a[1] if a is not None and a[0] == _TREE else None
        b_tree = b[1] if b is not None and b[0] == _TREE else None
        path = f"{base}{name.decode('utf-8', 'surrogateescape')}"
        if a_tree is not None or b_tree is not None:
            yield from changed(
                repo,
                pygit2.Oid(raw=a_tree) if a_tree is not None else None,
                pygit2.Oid(raw=b_tree) if b_tree is not None else None,
                f"{path}/",
            )
        if (a is not None and a[0] in _BLOBS) or (b is not None and b[0] in _BLOBS):
            yield path


_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.DOTALL)  # one raw tree entry: mode, name, binary id
_TREE = b"40000"
_BLOBS = frozenset({b"100644", b"100755", b"100664", b"120000"})  # files and symlinks (not submodules)


def _entries(repo: pygit2.Repository, tree: pygit2.Oid | None) -> dict[bytes, tuple[bytes, bytes]]:
    """name -> (mode, binary id) of each entry of the tree ``tree`` (empty for None)."""
    if tree is None:
        return {}
    return {name: (mode, oid) for mode, name, oid in _ENTRY.findall(repo.odb.read(tree)[1])}
