"""The group leader's object database: the objects a group writes stay in memory until they are
written as one pack (:mod:`hostcore_git.packs`)."""

from __future__ import annotations

from collections.abc import Iterator

import pygit2


class Objects(pygit2.OdbBackend):
    """An object database in memory: added to the group leader's handle before git's own, it
    receives every object the leader writes (trees, commits), and holds the blobs given to
    :meth:`add`, until they are written as one pack and cleared."""

    def __init__(self) -> None:
        super().__init__()
        self.objects: dict[pygit2.Oid, tuple[int, bytes, bytes | None]] = {}  # id -> type, content, pack entry

    def add(self, oid: pygit2.Oid, kind: int, data: bytes, packed: bytes | None = None) -> None:
        """Hold an object whose pack entry (:func:`entry`) may be made already."""
        self.objects[oid] = (kind, data, packed)

    def clear(self) -> None:
        self.objects.clear()

    # libgit2's calls
    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self.objects[oid] = (int(kind), data, None)

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        kind, data, _ = self.objects[oid]
        return kind, data

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        kind, data, _ = self.objects[oid]
        return kind, len(data)

    def read_prefix_cb(self, oid: pygit2.Oid) -> tuple[int, bytes, pygit2.Oid]:
        # pygit2's Odb.read asks by prefix; the leader names objects by their full id only
        kind, data = self.read_cb(oid)
        return kind, data, oid

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return oid in self.objects

    def exists_prefix_cb(self, oid: pygit2.Oid) -> pygit2.Oid:
        raise KeyError(oid)

    def refresh_cb(self) -> None:
        pass

    def __iter__(self) -> Iterator[pygit2.Oid]:
        return iter(list(self.objects))
