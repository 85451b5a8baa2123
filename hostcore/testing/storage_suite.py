"""The storage conformance suite: the contract every storage backend passes.

Every storage backend subclasses :class:`StorageConformance` in its own tests and provides
``make_storage(root)``; the inherited tests then check the whole storage contract, including a
compare-and-set race between real processes::

    from hostcore.testing import StorageConformance

    class TestMyStorage(StorageConformance):
        @staticmethod
        def make_storage(root):
            return MyStorage(root, {})

``make_storage`` must be a staticmethod of a module-level class so worker processes can rebuild
the backend from the same folder.
"""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hostcore.errors import Conflict, NoHistory, NotFound, Unavailable, ValidationError
from hostcore.seams.storage import ANY, Change, Delete, Operation, Put, Storage, blob_hash

CHANGE = Change(author="tester", message="test change")


def _race_writer(factory: Any, root: str, expect: str, index: int, barrier: Any, out: Any) -> None:
    storage = factory(Path(root))
    payload = f"writer {index}\n".encode() * 1000
    barrier.wait()
    try:
        storage.apply([Put("race/page.md", payload, expect=expect)], Change(f"w{index}", "race"))
        out.put((index, "won"))
    except Conflict as exc:
        out.put((index, f"conflict:{exc.data.get('hash')}"))
    finally:
        storage.close()


class StorageConformance:
    """The contract every storage backend passes. Subclass and define ``make_storage``."""

    @staticmethod
    def make_storage(root: Path) -> Storage:  # pragma: no cover - subclasses define it
        raise NotImplementedError

    @pytest.fixture
    def storage(self, tmp_path: Path):
        store = self.make_storage(tmp_path / "store")
        yield store
        store.close()

    def test_create_read_hash(self, storage: Storage) -> None:
        result = storage.apply([Put("notes/a.md", b"hello\n", expect=None)], CHANGE)
        assert result == {"notes/a.md": blob_hash(b"hello\n")}
        assert blob_hash(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
        assert storage.read("notes/a.md") == b"hello\n"
        assert storage.hash("notes/a.md") == blob_hash(b"hello\n")
        assert storage.read_with_hash("notes/a.md") == (b"hello\n", blob_hash(b"hello\n"))

    def test_missing(self, storage: Storage) -> None:
        with pytest.raises(NotFound):
            storage.read("notes/none.md")
        assert storage.hash("notes/none.md") is None
        assert not storage.exists("notes/none.md")

    def test_create_existing_conflicts(self, storage: Storage) -> None:
        storage.apply([Put("notes/a.md", b"one", expect=None)], CHANGE)
        with pytest.raises(Conflict) as err:
            storage.apply([Put("notes/a.md", b"two", expect=None)], CHANGE)
        assert err.value.data["hash"] == blob_hash(b"one")
        assert storage.read("notes/a.md") == b"one"

    def test_update_with_hash(self, storage: Storage) -> None:
        first = storage.apply([Put("notes/a.md", b"one", expect=None)], CHANGE)["notes/a.md"]
        second = storage.apply([Put("notes/a.md", b"two", expect=first)], CHANGE)["notes/a.md"]
        assert second == blob_hash(b"two")
        with pytest.raises(Conflict) as err:
            storage.apply([Put("notes/a.md", b"three", expect=first)], CHANGE)
        assert err.value.data["hash"] == second
        assert storage.read("notes/a.md") == b"two"

    def test_update_missing_conflicts_with_empty_hash(self, storage: Storage) -> None:
        with pytest.raises(Conflict) as err:
            storage.apply([Put("notes/a.md", b"x", expect=blob_hash(b"y"))], CHANGE)
        assert err.value.data["hash"] == ""

    def test_atomic_batch(self, storage: Storage) -> None:
        storage.apply([Put("notes/a.md", b"a", expect=None), Put("notes/b.md", b"b", expect=None)], CHANGE)
        with pytest.raises(Conflict):
            storage.apply(
                [Put("notes/c.md", b"c", expect=None), Put("notes/a.md", b"a2", expect=blob_hash(b"stale"))],
                CHANGE,
            )
        assert not storage.exists("notes/c.md")
        assert storage.read("notes/a.md") == b"a"

    def test_move_as_batch(self, storage: Storage) -> None:
        h = storage.apply([Put("notes/a.md", b"a", expect=None)], CHANGE)["notes/a.md"]
        assert h is not None
        result = storage.apply([Put("other/a.md", b"a", expect=None), Delete("notes/a.md", expect=h)], CHANGE)
        assert result == {"other/a.md": h, "notes/a.md": None}
        assert storage.list() == ["other/a.md"]

    def test_delete(self, storage: Storage) -> None:
        h = storage.apply([Put("notes/a.md", b"a", expect=None)], CHANGE)["notes/a.md"]
        assert h is not None
        with pytest.raises(Conflict):
            storage.apply([Delete("notes/a.md", expect=blob_hash(b"other"))], CHANGE)
        storage.apply([Delete("notes/a.md", expect=h)], CHANGE)
        assert not storage.exists("notes/a.md")
        with pytest.raises(NotFound):  # nothing to delete, and nothing was expected of it
            storage.apply([Delete("notes/a.md")], CHANGE)
        with pytest.raises(Conflict) as err:  # it was expected to hold h
            storage.apply([Delete("notes/a.md", expect=h)], CHANGE)
        assert err.value.data["hash"] == ""

    def test_list_sorted_and_nested(self, storage: Storage) -> None:
        storage.apply(
            [
                Put("b/z.md", b"1", expect=None),
                Put("a/deep/er/x.md", b"2", expect=None),
                Put("a/.namespace.yaml", b"3", expect=None),
                Put("a/y.md", b"4", expect=None),
            ],
            CHANGE,
        )
        assert storage.list() == ["a/.namespace.yaml", "a/deep/er/x.md", "a/y.md", "b/z.md"]
        assert storage.list("a/deep") == ["a/deep/er/x.md"]
        assert storage.list("missing") == []
        assert storage.folders() == ["a", "b"]
        assert storage.folders("a") == ["deep"]
        assert storage.folders("a/deep/er") == [] and storage.folders("missing") == []

    def test_delete_last_file_prunes_folder(self, storage: Storage) -> None:
        storage.apply([Put("a/deep/x.md", b"1", expect=None)], CHANGE)
        storage.apply([Delete("a/deep/x.md")], CHANGE)
        assert storage.list() == []
        storage.apply([Put("a/deep", b"now a file", expect=None)], CHANGE)
        assert storage.read("a/deep") == b"now a file"

    def test_binary_and_large(self, storage: Storage) -> None:
        data = bytes(range(256)) * 8192
        storage.apply([Put("a/blob.bin", data, expect=ANY)], CHANGE)
        assert storage.read("a/blob.bin") == data

    def test_attachments_in_a_page_folder(self, storage: Storage) -> None:
        """A page's attachments: binary files in its ``.files`` folder, listed by prefix, with
        their blob ids, and moved with the page as one batch."""
        blob = bytes(range(256)) * 64 + b"\x00\xff"
        storage.apply(
            [Put("notes/p.md", b"page", expect=None), Put("notes/p.files/a.bin", blob, expect=None),
             Put("notes/p.files/b.png", b"\x89PNG\r\n\x1a\n", expect=None)],
            CHANGE,
        )  # fmt: skip
        assert storage.list("notes/p.files") == ["notes/p.files/a.bin", "notes/p.files/b.png"]
        assert storage.hashes("notes/p.files") == {
            "notes/p.files/a.bin": blob_hash(blob), "notes/p.files/b.png": blob_hash(b"\x89PNG\r\n\x1a\n")
        }  # fmt: skip
        assert storage.read("notes/p.files/a.bin") == blob
        assert storage.hashes("notes/none.files") == {} and storage.list("notes/none.files") == []
        moves: list[Operation] = [Put("team/q.md", b"page", expect=None), Delete("notes/p.md", expect=blob_hash(b"page"))]
        for path, digest in storage.hashes("notes/p.files").items():
            moves += [Put("team/q.files/" + path.rsplit("/", 1)[1], storage.read(path), expect=None), Delete(path, expect=digest)]
        storage.apply(moves, CHANGE)
        assert storage.list() == ["team/q.files/a.bin", "team/q.files/b.png", "team/q.md"]
        assert storage.read("team/q.files/a.bin") == blob

    def test_list_at_a_revision(self, storage: Storage) -> None:
        """Backends with history list a folder as it was (restore_page brings attachments back)."""
        storage.apply([Put("notes/p.md", b"page", expect=None), Put("notes/p.files/a.bin", b"\x00a", expect=None)], CHANGE)
        if not storage.has_history:
            with pytest.raises(Unavailable):
                storage.list_at("notes/p.files", "anything")
            return
        revision = storage.history(limit=1)[0].id
        storage.apply([Delete("notes/p.md"), Delete("notes/p.files/a.bin")], CHANGE)
        assert storage.list_at("notes/p.files", revision) == ["notes/p.files/a.bin"]
        assert storage.read_at("notes/p.files/a.bin", revision) == b"\x00a"
        assert storage.list_at("notes/none.files", revision) == []
        with pytest.raises(NotFound):
            storage.list_at("notes/p.files", "0" * 40)

    def test_last_authors(self, storage: Storage) -> None:
        """Who changed each page last (search's author filter), for a few paths and for many."""
        storage.apply([Put(f"notes/p{i}.md", b"one", expect=None) for i in range(25)], Change("ann", "first"))
        storage.apply([Put("notes/p3.md", b"two", expect=storage.hash("notes/p3.md"))], Change("bob", "second"))
        if not storage.has_history:
            assert storage.last_authors(["notes/p3.md"]) == {}
            return
        assert storage.last_authors(["notes/p3.md", "notes/p4.md", "notes/none.md"]) == {"notes/p3.md": "bob", "notes/p4.md": "ann"}
        many = storage.last_authors([f"notes/p{i}.md" for i in range(25)] + ["notes/none.md"])
        assert many == {f"notes/p{i}.md": "bob" if i == 3 else "ann" for i in range(25)}
        with pytest.raises(ValidationError):
            storage.last_authors(["../x.md"])

    def test_changes_in_a_revision(self, storage: Storage) -> None:
        """Backends with history say exactly what a revision did (``hostcore export`` replays it
        elsewhere), keep the time a replayed change carries, and read any version by its hash."""
        when = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
        first_ops = [Put("notes/a.md", b"a", expect=None), Put("notes/b.md", b"b", expect=None)]
        storage.apply(first_ops, Change("ann", "first", "ann@example.org", time=when))
        if not storage.has_history:
            with pytest.raises(Unavailable):
                storage.changes_in("anything")
            with pytest.raises(Unavailable):
                storage.read_blob(blob_hash(b"a"))
            return
        first = storage.history(limit=1)[0]
        assert (first.author, first.message, first.time) == ("ann", "first", when)
        moved: list[Operation] = [Put("team/a.md", b"a", expect=None), Delete("notes/a.md"), Put("notes/b.md", b"b2")]
        storage.apply(moved, Change("bob", "move", moves=(("notes/a.md", "team/a.md"),)))
        change, files = storage.changes_in(storage.history(limit=1)[0].id)
        assert files == {"team/a.md": blob_hash(b"a"), "notes/a.md": None, "notes/b.md": blob_hash(b"b2")}
        assert (change.author, change.message, change.moves) == ("bob", "move", (("notes/a.md", "team/a.md"),))
        assert change.time is not None and change.time > when
        change, files = storage.changes_in(first.id)
        assert (change.author, change.email, change.message, change.time, change.moves) == ("ann", "ann@example.org", "first", when, ())
        assert files == {"notes/a.md": blob_hash(b"a"), "notes/b.md": blob_hash(b"b")}
        assert storage.read_blob(blob_hash(b"b")) == b"b"  # a version no file holds now
        for unknown in ("0" * 40, "notes/b.md"):
            with pytest.raises(NotFound):
                storage.read_blob(unknown)
        with pytest.raises(NotFound):
            storage.changes_in("0" * 40)

    def test_blame_names_the_change_that_last_wrote_each_line(self, storage: Storage) -> None:
        """Each line of a file as it is now, with the change that last wrote it, followed back
        across a move; a backend without history says it keeps none."""
        storage.apply([Put("notes/a.md", b"one\ntwo\nthree\n", expect=None)], Change("ann", "first"))
        if not storage.has_history:
            with pytest.raises(NoHistory, match="keeps no line history"):
                storage.blame("notes/a.md")
            return
        first = storage.hash("notes/a.md")
        storage.apply([Put("notes/a.md", b"one\n2\nthree\nfour\n", expect=first)], Change("bob", "second"))
        second = storage.read("notes/a.md")
        storage.apply([Put("team/a.md", second, expect=None), Delete("notes/a.md")],
                      Change("cat", "move", moves=(("notes/a.md", "team/a.md"),)))  # fmt: skip
        storage.apply([Put("team/a.md", b"zero\none\n2\nthree\nfour", expect=blob_hash(second))], Change("dan", "third"))
        hunks = storage.blame("team/a.md")
        assert [(h.start, h.count, h.revision.author, h.boundary) for h in hunks] == [
            (1, 1, "dan", False), (2, 1, "ann", False), (3, 1, "bob", False), (4, 1, "ann", False), (5, 1, "bob", False)
        ]  # fmt: skip
        assert hunks[0].revision.message == "third" and hunks[1].revision.id == storage.history("team/a.md")[-1].id
        with pytest.raises(NotFound):
            storage.blame("team/missing.md")

    @pytest.mark.parametrize("path", ["../x.md", "/abs.md", "a//b.md", "a/./b.md", "a\\b.md", ""])
    def test_rejects_unsafe_paths(self, storage: Storage, path: str) -> None:
        """Every method that takes a path refuses an unsafe one (the seam checks it before the
        backend sees it) and changes nothing."""
        storage.apply([Put("notes/a.md", b"a", expect=None)], CHANGE)
        before = storage.hashes()
        revision = "0" * 40
        calls: list[Any] = [
            lambda: storage.apply([Put("notes/b.md", b"b"), Put(path, b"x")], CHANGE),
            lambda: storage.read(path), lambda: storage.hash(path), lambda: storage.exists(path),
            lambda: storage.read_with_hash(path), lambda: storage.history(path), lambda: storage.last_changed([path]),
            lambda: storage.read_at(path, revision), lambda: storage.list_at(path, revision),
        ]  # fmt: skip
        if path:  # "" is the top folder, where listing starts
            calls += [lambda: storage.list(path), lambda: storage.folders(path), lambda: storage.hashes(path)]
        for call in calls:
            with pytest.raises(ValidationError, match="invalid storage path"):
                call()
        assert storage.hashes() == before

    @pytest.mark.slow  # eight interpreters started and racing
    def test_processes_race_one_winner(self, storage: Storage, tmp_path: Path) -> None:
        base = storage.apply([Put("race/page.md", b"base\n", expect=None)], CHANGE)["race/page.md"]
        ctx = multiprocessing.get_context("spawn")
        barrier, out = ctx.Barrier(8), ctx.Queue()
        procs = [
            ctx.Process(target=_race_writer, args=(type(self).make_storage, str(storage.root), base, i, barrier, out))
            for i in range(8)
        ]
        for proc in procs:
            proc.start()
        results = dict(out.get(timeout=120) for _ in procs)
        for proc in procs:
            proc.join(timeout=60)
        winners = [i for i, r in results.items() if r == "won"]
        assert len(winners) == 1, results
        stored = storage.read("race/page.md")
        assert stored == f"writer {winners[0]}\n".encode() * 1000
        losers = [r for r in results.values() if r != "won"]
        assert losers == [f"conflict:{blob_hash(stored)}"] * 7, results
