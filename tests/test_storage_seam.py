"""The storage seam checks every path once, before any backend sees it (as fsspec's public methods
do): a backend implements ``_read``, ``_list`` and ``_apply`` and may trust what it is given."""

import pytest

from hostcore import Change, NotFound, Put, Storage, ValidationError, blob_hash

UNSAFE = ["../x.md", "/abs.md", "a//b.md", "a/./b.md", "a\\b.md", ""]


class Files(Storage):
    """The fewest lines a backend can have: files in a dict; it notes every path it is handed."""

    name = "files-test"

    def __init__(self, root, config=None):
        super().__init__(root, config)
        self.files: dict[str, bytes] = {}
        self.seen: list[str] = []

    def _read(self, path):
        self.seen.append(path)
        if path not in self.files:
            raise NotFound(f"{path} does not exist")
        return self.files[path]

    def _list(self, prefix):
        self.seen.append(prefix)
        return sorted(p for p in self.files if not prefix or p.startswith(prefix + "/"))

    def _apply(self, ops, change):
        self.seen.extend(op.path for op in ops)
        for op in ops:
            self.files[op.path] = op.data
        return {op.path: blob_hash(op.data) for op in ops}


def test_a_backend_implements_three_methods_and_gets_the_rest(tmp_path):
    storage = Files(tmp_path)
    assert storage.apply([Put("notes/a.md", b"a")], Change("ann", "add")) == {"notes/a.md": blob_hash(b"a")}
    assert storage.read_with_hash("notes/a.md") == (b"a", blob_hash(b"a"))
    assert storage.hash("notes/a.md") == blob_hash(b"a") and storage.hash("notes/b.md") is None
    assert storage.exists("notes/a.md") and not storage.exists("notes/b.md")
    assert storage.list() == ["notes/a.md"] and storage.folders() == ["notes"] and storage.hashes("notes") == {"notes/a.md": blob_hash(b"a")}
    assert storage.last_changed(["notes/a.md"]) == {}  # no history: nothing to say
    with pytest.raises(Exception, match="keeps no history"):
        storage.history("notes/a.md")


@pytest.mark.parametrize("path", UNSAFE)
def test_an_unsafe_path_never_reaches_the_backend(tmp_path, path):
    storage = Files(tmp_path)
    calls = [
        lambda: storage.apply([Put("notes/a.md", b"a"), Put(path, b"x")], Change("ann", "add")),
        lambda: storage.read(path), lambda: storage.hash(path), lambda: storage.exists(path),
        lambda: storage.read_with_hash(path), lambda: storage.history(path), lambda: storage.last_changed([path]),
        lambda: storage.read_at(path, "r1"), lambda: storage.list_at(path, "r1"),
    ]  # fmt: skip
    if path:
        calls += [lambda: storage.list(path), lambda: storage.folders(path), lambda: storage.hashes(path)]
    for call in calls:
        with pytest.raises(ValidationError, match="invalid storage path"):
            call()
    assert storage.seen == [] and storage.files == {}
