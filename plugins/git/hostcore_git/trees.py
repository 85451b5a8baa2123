"""Git tree helpers: find a file, walk a folder, and build a new tree from an old one.

Trees are read through pygit2's lazy objects, so looking up or walking entries reads tree
objects only, never blobs. New trees are built by :class:`Line` from raw tree objects along the
changed paths; every other subtree is reused by id.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from itertools import accumulate

import pygit2

from hostcore import ValidationError

from .packs import header


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
    """Write the tree that is ``tree`` with ``changes`` (path -> blob id, None to delete) applied
    into ``repo`` as loose objects (see :class:`Line`).

    Returns the new root tree id; folders left empty are removed, the root may become empty.
    """
    line = Line(lambda oid: repo.odb.read(oid)[1], {}, tree.id if tree is not None else None, lambda _, kind, raw, __: repo.odb.write(kind, raw))
    return line.apply(changes)


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


# --- building a line of trees in memory ------------------------------------------------------

_FILE_MODE = b"100644"
_TREE_KIND = int(pygit2.enums.ObjectType.TREE)
REF_DELTA = 7  # a pack entry stored as a delta against an object named by its id
DELTA_KEYS = 256  # entries changed since a tree's full version above which it is written whole
FOLDERS_KEPT = 32  # parsed folders a Line's cache keeps (the newest)


class Folder:
    """One tree object, parsed: its raw entries (``mode name\\0id``) in git's order, each beside
    its sort key (the name, with a ``/`` after a folder's: git's order). Never changed in place."""

    __slots__ = ("_offsets", "entries", "keys")

    def __init__(self, keys: list[bytes], entries: list[bytes]) -> None:
        self.keys, self.entries = keys, entries
        self._offsets: list[int] | None = None

    @classmethod
    def parse(cls, raw: bytes) -> Folder:
        found = _ENTRY.findall(raw)
        keys = [name + b"/" if mode == _TREE else name for mode, name, _ in found]
        return cls(keys, [b"%s %s\0%s" % entry for entry in found])

    def find(self, name: bytes) -> int | None:
        """The index of the entry called ``name`` (a file's or a folder's), None when absent."""
        for key in (name, name + b"/"):
            i = bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                return i
        return None

    def entry(self, name: bytes) -> tuple[bytes, pygit2.Oid] | None:
        """(mode, id) of the entry ``name``, None when absent."""
        i = self.find(name)
        if i is None:
            return None
        entry = self.entries[i]
        return entry[: entry.index(b" ")], pygit2.Oid(raw=entry[-20:])

    def raw(self) -> bytes:
        return b"".join(self.entries)

    def offsets(self) -> list[int]:
        """Where each entry starts in :meth:`raw`, and its length last (for deltas against it)."""
        if self._offsets is None:
            self._offsets = list(accumulate(map(len, self.entries), initial=0))
        return self._offsets


class Line:
    """The trees of a line of commits, built in memory, each from the one before along the changed
    paths only: a folder of thousands of pages costs a few copies of its entry list per commit,
    not a parse and a sort (libgit2's TreeBuilder). Each new tree goes to ``keep(id, type, raw,
    pack entry)``; one derived from a tree written whole in this line has a delta against it as
    its pack entry, so a group of commits in one big folder writes that folder whole once.

    ``read(id)`` gives a tree object's raw content; ``cache`` (id -> Folder) is kept by the caller
    between lines, so the next group starts from the trees this one made without parsing them.
    Without ``keep`` nothing is written: the line only works out trees (see :func:`follow`).
    """

    def __init__(
        self,
        read: Callable[[pygit2.Oid], bytes],
        cache: dict[pygit2.Oid, Folder],
        root: pygit2.Oid | None,
        keep: Callable[[pygit2.Oid, int, bytes, bytes], object] | None,
    ) -> None:
        self._read, self._cache, self._keep, self.root = read, cache, keep, root
        self._whole: dict[pygit2.Oid, Folder] = {}  # trees of this line written whole
        self._derived: dict[pygit2.Oid, tuple[pygit2.Oid, frozenset[bytes]]] = {}  # the others: whole base, keys changed since

    def folder(self, oid: pygit2.Oid) -> Folder:
        found = self._cache.pop(oid, None)
        if found is None:
            found = Folder.parse(self._read(oid))
        self._cache[oid] = found  # the newest last
        while len(self._cache) > FOLDERS_KEPT:
            del self._cache[next(iter(self._cache))]
        return found

    def entry(self, path: str) -> tuple[bytes, pygit2.Oid] | None:
        """(mode, id) of ``path`` in the current root, None when absent."""
        current: tuple[bytes, pygit2.Oid] | None = (_TREE, self.root) if self.root is not None else None
        for name in path.split("/"):
            if current is None or current[0] != _TREE:
                return None
            current = self.folder(current[1]).entry(name.encode("utf-8", "surrogateescape"))
        return current

    def blob_id(self, path: str) -> pygit2.Oid | None:
        """The id of the file at ``path``, or None when absent or a folder."""
        found = self.entry(path)
        return found[1] if found is not None and found[0] in _BLOBS else None

    def check_writable(self, path: str) -> None:
        """Raise ValidationError when writing a file at ``path`` would replace a folder or a file.

        Git would let a blob replace a whole folder (or a folder replace a file) silently; a wiki
        must never drop pages that way.
        """
        found = self.entry(path)
        if found is not None and found[0] == _TREE:
            raise ValidationError(f"{path} is a folder, so no file can be written there", field="path")
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            above = self.entry(parent)
            if above is not None and above[0] in _BLOBS:
                raise ValidationError(f"{parent} is a file, so {path} cannot be written", field="path")

    def apply(self, changes: Mapping[str, pygit2.Oid | None]) -> pygit2.Oid:
        """Make the root that is the current one with ``changes`` (path -> blob id, None to delete)
        applied, and make it current; returns its id. Folders left empty are removed."""
        root = self._build(self.root, changes)
        if root is None:
            root = self._write(Folder([], []), None, frozenset())
        self.root = root
        return root

    def _build(self, oid: pygit2.Oid | None, changes: Mapping[str, pygit2.Oid | None]) -> pygit2.Oid | None:
        old = self.folder(oid) if oid is not None else Folder([], [])
        keys, entries = old.keys.copy(), old.entries.copy()
        below: dict[bytes, dict[str, pygit2.Oid | None]] = {}
        changed_keys: set[bytes] = set()

        def put(key: bytes, entry: bytes | None) -> None:
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                del keys[i], entries[i]
            if entry is not None:
                keys.insert(i, key)
                entries.insert(i, entry)
            changed_keys.add(key)

        for path, blob in changes.items():
            first, slash, rest = path.partition("/")
            name = first.encode("utf-8", "surrogateescape")
            if slash:
                below.setdefault(name, {})[rest] = blob
            elif blob is None:
                put(name, None)
            else:
                put(name, b"%s %s\0%s" % (_FILE_MODE, name, blob.raw))
        for name, sub in below.items():
            current = old.entry(name)
            new = self._build(current[1] if current is not None and current[0] == _TREE else None, sub)
            put(name + b"/", b"%s %s\0%s" % (_TREE, name, new.raw) if new is not None else None)
        if not entries:
            return None
        return self._write(Folder(keys, entries), oid, frozenset(changed_keys))

    def _write(self, folder: Folder, parent: pygit2.Oid | None, changed_keys: frozenset[bytes]) -> pygit2.Oid:
        """Keep ``folder``, made from the tree ``parent`` by changing ``changed_keys``, with its
        pack entry: a delta against the tree of this line it derives from, or whole."""
        raw = folder.raw()
        digest = hashlib.sha1(b"tree %d\0" % len(raw))
        digest.update(raw)
        oid = pygit2.Oid(raw=digest.digest())
        if oid in self._whole or oid in self._derived:
            return oid
        self._cache[oid] = folder
        if self._keep is None:
            return oid
        base: tuple[pygit2.Oid, frozenset[bytes]] | None = None
        if parent is not None and parent in self._derived:
            above, earlier = self._derived[parent]
            base = above, earlier | changed_keys
        elif parent is not None and parent in self._whole:
            base = parent, changed_keys
        if base is not None and len(base[1]) <= DELTA_KEYS:
            delta = make_delta(self._whole[base[0]], folder, len(raw), base[1])
            packed = header(REF_DELTA, len(delta)) + base[0].raw + zlib.compress(delta)
            self._derived[oid] = base
        else:
            # Stored, not compressed: a tree is mostly ids, which do not compress, and compressing a
            # folder of thousands of pages cost more than the rest of a save (git gc packs it later).
            packed = header(_TREE_KIND, len(raw)) + zlib.compress(raw, 0)
            self._whole[oid] = folder
        self._keep(oid, _TREE_KIND, raw, packed)
        return oid

def parsed_blob(parsed: Mapping[pygit2.Oid, Folder], root: pygit2.Oid, path: str) -> tuple[bool, pygit2.Oid | None]:
    """(known, id) of the file at ``path`` under the tree ``root``, found in ``parsed`` folders
    alone (a :class:`Line`'s cache, only read: any thread may ask while the group leader changes
    it): the id is None when the file is absent or a folder; known is False when a folder on the
    way is not parsed there."""
    current: tuple[bytes, pygit2.Oid] | None = (_TREE, root)
    for name in path.split("/"):
        if current is None or current[0] != _TREE:
            return True, None
        folder = parsed.get(current[1])
        if folder is None:
            return False, None
        current = folder.entry(name.encode("utf-8", "surrogateescape"))
    return True, current[1] if current is not None and current[0] in _BLOBS else None


def follow(read: Callable[[pygit2.Oid], bytes], cache: dict[pygit2.Oid, Folder], old: pygit2.Oid, changes: Mapping[str, pygit2.Oid | None], new: pygit2.Oid) -> bool:
    """Put the folders of the root tree ``new`` in ``cache`` by applying ``changes`` (what changed
    since, path -> blob id or None) to the root ``old``, whose folders it holds: a folder of
    thousands of pages another process changed is then not parsed again. True when the trees
    worked out are ``new``'s (else the cache only holds more trees, each under its own id)."""
    return Line(read, cache, old, None).apply(changes) == new


def make_delta(base: Folder, target: Folder, size: int, changed_keys: frozenset[bytes]) -> bytes:
    """Git's delta from ``base`` to ``target`` (``size`` bytes), which differ only in the entries ``changed_keys``:
    the runs of ``base`` between them copied, the changed entries of ``target`` inserted."""
    offsets = base.offsets()
    out = bytearray(_varint(offsets[-1]) + _varint(size))
    at = 0
    for key in sorted(changed_keys):
        i = bisect_left(base.keys, key)
        _copy(out, at, offsets[i] - at)
        at = offsets[i + 1] if i < len(base.keys) and base.keys[i] == key else offsets[i]
        j = bisect_left(target.keys, key)
        if j < len(target.keys) and target.keys[j] == key:
            entry = target.entries[j]
            for start in range(0, len(entry), 127):
                piece = entry[start : start + 127]
                out.append(len(piece))
                out += piece
    _copy(out, at, offsets[-1] - at)
    return bytes(out)


def _copy(out: bytearray, offset: int, size: int) -> None:
    """Append the delta instructions copying ``size`` bytes of the base from ``offset``."""
    while size > 0:
        step = min(size, 0xFFFFFF)  # three bytes of size at most
        command, args = 0x80, bytearray()
        for n in range(4):
            byte = (offset >> (8 * n)) & 0xFF
            if byte:
                command |= 1 << n
                args.append(byte)
        for n in range(3):
            byte = (step >> (8 * n)) & 0xFF
            if byte:
                command |= 0x10 << n
                args.append(byte)
        out.append(command)
        out += args
        offset += step
        size -= step


def _varint(value: int) -> bytes:
    """A delta header's size: 7 bits a byte, low bits first."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)

