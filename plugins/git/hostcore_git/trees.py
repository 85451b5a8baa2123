"""Git tree helpers: find a file, walk a folder, and build a new tree from an old one.

Trees are read through pygit2's lazy objects, so looking up or walking entries reads tree
objects only, never blobs. A new tree is built with one TreeBuilder per folder along the changed
paths; every other subtree is reused by id.
"""

from __future__ import annotations

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
    return _build(repo, tree, changes) or repo.TreeBuilder().write()


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


def changed(old: pygit2.Tree | None, new: pygit2.Tree | None, base: str = "") -> Iterator[str]:
    """Yield the path of every file that differs between ``old`` and ``new`` (either may be None).

    Subtrees with the same id are skipped; libgit2's tree diff visits every entry instead, which
    is twenty times slower on a wiki-sized tree.
    """
    if old is not None and new is not None and old.id == new.id:
        return
    before = {str(entry.name): entry for entry in old} if old is not None else {}
    after = {str(entry.name): entry for entry in new} if new is not None else {}
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a is not None and b is not None and a.id == b.id and a.filemode == b.filemode:
            continue
        a_tree = a if isinstance(a, pygit2.Tree) else None
        b_tree = b if isinstance(b, pygit2.Tree) else None
        if a_tree is not None or b_tree is not None:
            yield from changed(a_tree, b_tree, f"{base}{name}/")
        if isinstance(a, pygit2.Blob) or isinstance(b, pygit2.Blob):
            yield f"{base}{name}"
