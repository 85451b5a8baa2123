"""Trees built in memory (hostcore_git.trees.Line) and written as deltas: checked against git."""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

import hostcore_git.packs as packs
import hostcore_git.storage as storage_module
from hostcore import Change, Delete, FileLock, NotFound, Put
from hostcore_git import GitStorage
from hostcore_git.odb import Objects
from hostcore_git.trees import Line

from .test_git_storage import assert_fsck_clean, git, push_from_outside
from .test_packs import pack_files, verify_packs


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[GitStorage]:
    store = GitStorage(tmp_path / "repo")
    yield store
    store.close()


def index_tree(repo: pygit2.Repository, files: dict[str, pygit2.Oid]) -> pygit2.Oid:
    """The root tree of ``files`` as libgit2's index writes it: the reference."""
    index = pygit2.Index()
    for path, oid in files.items():
        index.add(pygit2.IndexEntry(path, oid, pygit2.enums.FileMode.BLOB))
    return index.write_tree(repo)


def test_a_line_of_trees_is_what_git_writes_and_reads_back_from_one_pack(tmp_path: Path) -> None:
    """Names that sort differently as files and folders ("a", "a.md", "a-b", "a/"), nested
    folders made and emptied, deletes: each root Line makes is the tree git's index writes for the
    same files, and the pack of the whole line (deltas against the line's first trees) reads back
    and passes git fsck."""
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), bare=True)
    objects = Objects()
    repo.odb.add_backend(objects, 1000)
    rng = random.Random(7)
    names = ["a", "a.md", "a-b", "a.b", "b", "z", "page-1.md", "page-10.md", "page-2.md", "é.md"]
    files: dict[str, pygit2.Oid] = {}
    line = Line(lambda oid: repo.odb.read(oid)[1], {}, None, objects.add)
    roots = []
    for step in range(60):
        changes: dict[str, pygit2.Oid | None] = {}
        for _ in range(rng.randint(1, 4)):
            folder = "/".join(rng.sample(["a", "b", "q"], rng.randint(0, 2)))
            path = f"{folder}/{rng.choice(names)}" if folder else rng.choice(names)
            clash = any(p == path or p.startswith(f"{path}/") or path.startswith(f"{p}/") for p in files if p not in changes)
            if path in files and rng.random() < 0.4:
                changes[path] = None
            elif not clash or path in files:
                data = f"{path} at step {step}".encode()
                blob = pygit2.hash(data)
                objects.add(blob, int(pygit2.enums.ObjectType.BLOB), data)
                changes[path] = blob
        for path, new in changes.items():
            if new is None:
                files.pop(path, None)
            else:
                files[path] = new
        roots.append(line.apply(changes))
        assert roots[-1] == index_tree(repo, files), f"step {step}"
    repo.odb.write(pygit2.enums.ObjectType.TREE, b"")  # index_tree wrote git's copies: only the pack's remain
    for loose in (root / "objects").glob("[0-9a-f][0-9a-f]/*"):
        loose.unlink()
    packs.write(root / "objects" / "pack", objects).release()
    verify_packs(root)
    for tree in roots:
        assert git(root, "cat-file", "-t", str(tree)).strip() == "tree"
        git(root, "ls-tree", "-r", str(tree))
    assert_fsck_clean(root)


def queued_group(storage: GitStorage, saves: list[tuple[str, bytes]]) -> None:
    """Have ``saves`` (path, content) wait behind the write lock, so they commit as one group."""
    threads = [threading.Thread(target=storage.apply, args=([Put(path, data)], Change("ann", f"save {path}"))) for path, data in saves]
    deadline = time.monotonic() + 30
    with FileLock(storage.root / "hostcore.lock"):
        threads[0].start()
        while not storage._group._leading and time.monotonic() < deadline:
            time.sleep(0.01)
        for thread in threads[1:]:
            thread.start()
        while len(storage._group._queue) < len(saves) and time.monotonic() < deadline:
            time.sleep(0.01)
    for thread in threads:
        thread.join(30)


def pack_listing(root: Path, pack: str) -> list[list[str]]:
    """``git verify-pack -v``: per object id, type, size, size in pack, offset[, depth, base]."""
    out = git(root, "verify-pack", "-v", str(root / "objects" / "pack" / pack))
    return [line.split() for line in out.splitlines() if len(line.split()[0]) == 40 and len(line.split()) >= 5]


def test_a_group_in_a_big_folder_writes_that_folder_once_and_stays_an_ordinary_repository(storage: GitStorage, tmp_path: Path) -> None:
    """Eight saves in a folder of 400 pages commit as one group: one commit each, but the folder's
    tree is written whole once and every later version as a small delta against it (and so is the
    root's); git verifies the pack, fsck is clean, a clone holds every page, a push lands on top."""
    storage.apply([Put(f"ns/page-{i}.md", f"page {i}".encode()) for i in range(400)], Change("ann", "import"))
    folder_size = len(storage._repo().odb.read(storage._repo()[storage.version()].peel(pygit2.Commit).tree["ns"].id)[1])
    before = set(pack_files(storage.root))
    queued_group(storage, [(f"ns/page-{i}.md", f"saved {i}".encode()) for i in range(8)])
    [pack] = set(pack_files(storage.root)) - before
    listing = pack_listing(storage.root, pack)
    trees = [entry for entry in listing if entry[1] == "tree"]
    assert len([e for e in listing if e[1] == "commit"]) == 8 and len(trees) == 16
    whole = [entry for entry in trees if len(entry) == 5]
    assert len(whole) == 2 and max(int(entry[2]) for entry in whole) == folder_size  # the folder and the root, once
    assert all(entry[5] == "1" and int(entry[3]) < folder_size // 20 for entry in trees if len(entry) > 5)  # deltas on them
    assert (storage.root / "objects" / "pack" / pack).stat().st_size < 2 * folder_size
    assert len(git(storage.root, "log", "--format=%H", "main").split()) == 9
    assert_fsck_clean(storage.root)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(storage.root), str(clone)], check=True)
    assert all((clone / "ns" / f"page-{i}.md").read_bytes() == (f"saved {i}" if i < 8 else f"page {i}").encode() for i in range(400))
    push_from_outside(storage.root, {"ns/page-0.md": b"pushed"})
    storage.apply([Put("ns/page-1.md", b"after the push")], Change("ann", "after"))
    assert storage.read("ns/page-0.md") == b"pushed" and storage.read("ns/page-1.md") == b"after the push"
    assert_fsck_clean(storage.root)


def test_packs_holding_tree_deltas_merge_and_read_back(storage: GitStorage) -> None:
    storage.apply([Put(f"ns/page-{i}.md", b"seed") for i in range(50)], Change("ann", "import"))
    for group in range(packs.MERGE_AT):
        queued_group(storage, [(f"ns/page-{i}.md", f"group {group}".encode()) for i in range(3)])
        storage._merger.wait()
    assert len(pack_files(storage.root)) < packs.MERGE_AT  # merged, deltas and all
    verify_packs(storage.root)
    assert_fsck_clean(storage.root)
    assert [storage.read(f"ns/page-{i}.md") for i in range(4)] == [f"group {packs.MERGE_AT - 1}".encode()] * 3 + [b"seed"]


def test_a_process_works_out_the_trees_another_one_committed_from_the_history_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two storages on one repository (two processes' worth) take turns: each starts its group from
    the trees of its own last commit and the paths the other changed since (new pages, deletes, a
    new folder), and gets the other's trees exactly; every page reads back, fsck is clean."""
    first, second = GitStorage(tmp_path / "repo"), GitStorage(tmp_path / "repo")
    first.apply([Put(f"ns/page-{i}.md", f"page {i}".encode()) for i in range(300)], Change("ann", "import"))
    followed: list[bool] = []
    real_follow = storage_module.follow

    def watched(*args: object) -> bool:
        followed.append(real_follow(*args))  # type: ignore[arg-type]
        return followed[-1]

    monkeypatch.setattr(storage_module, "follow", watched)
    expected = {f"ns/page-{i}.md": f"page {i}".encode() for i in range(300)}
    for turn in range(6):
        storage = second if turn % 2 == 0 else first
        ops: list[Put | Delete] = [Put(f"ns/page-{turn}.md", f"turn {turn}".encode()), Put(f"new/{turn}/page.md", b"new")]
        ops.append(Delete(f"ns/page-{100 + turn}.md"))
        storage.apply(ops, Change("ann", f"turn {turn}"))
        expected |= {f"ns/page-{turn}.md": f"turn {turn}".encode(), f"new/{turn}/page.md": b"new"}
        expected.pop(f"ns/page-{100 + turn}.md")
    assert followed == [True] * 5  # every turn after the second storage's first
    for storage in (first, second):
        assert {path: storage.read(path) for path in storage.list()} == expected
    assert_fsck_clean(tmp_path / "repo")
    first.close()
    second.close()


def test_versions_of_a_big_folder_do_not_fill_the_memory_of_a_worker(storage: GitStorage) -> None:
    """Each save in a folder of thousands of pages makes a new version of its tree, which reads
    parse and libgit2 caches: its cache is bounded so that old versions go, not the memory."""
    storage.apply([Put(f"ns/page-{n:05}.md", b"x") for n in range(3000)], Change("ann", "import"))
    for n in range(160):
        storage.apply([Put(f"ns/page-{n:05}.md", f"v{n}".encode())], Change("ann", f"save {n}"))
        assert storage.read(f"ns/page-{n:05}.md") == f"v{n}".encode()
        storage.read(f"ns/page-{(n * 7) % 3000:05}.md")
    held, bound = pygit2.settings.cached_memory
    assert bound == storage_module.CACHE_MAX_SIZE and held <= bound


def test_after_its_own_commit_a_process_reads_pages_from_its_parsed_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read after this process's commit finds the page in the folders the commit made (no
    libgit2 lookup through the big folder's new version); after another process's commit, or for
    a folder never parsed, it asks libgit2. Either way: the bytes and hash git has, NotFound for a
    missing page or a folder."""
    first, second = GitStorage(tmp_path / "repo"), GitStorage(tmp_path / "repo")
    first.apply([Put(f"ns/page-{i:04}.md", f"page {i}".encode()) for i in range(2000)], Change("ann", "import"))
    looked_up: list[str] = []
    real_entry_at = storage_module.entry_at
    monkeypatch.setattr(storage_module, "entry_at", lambda tree, path: looked_up.append(path) or real_entry_at(tree, path))
    first.apply([Put("ns/page-0007.md", b"seven, changed")], Change("ann", "save"))
    repo = pygit2.Repository(str(tmp_path / "repo"))
    head_tree = repo[repo.head.target].peel(pygit2.Tree)
    assert first.read_with_hash("ns/page-0007.md") == (b"seven, changed", str(head_tree["ns/page-0007.md"].id))
    assert first.read("ns/page-1999.md") == b"page 1999"
    assert first.hash("ns/page-0008.md") == str(head_tree["ns/page-0008.md"].id)
    for missing in ("ns/page-9999.md", "ns", "ns/page-0007.md/deeper", "elsewhere/page.md"):
        with pytest.raises(NotFound):
            first.read(missing)
        assert first.hash(missing) is None
    assert looked_up == []  # every answer from the parsed folders
    second.apply([Put("ns/page-0009.md", b"nine, by the other")], Change("bob", "save"))
    assert first.read("ns/page-0009.md") == b"nine, by the other"  # the other's commit: libgit2 answers
    assert looked_up == ["ns/page-0009.md"]
    first.close()
    second.close()
