"""Each group of commits is one pack; small packs are merged; git reads them all (real git)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import hostcore_git.packs as packs
import hostcore_git.storage as storage_module
from hostcore import Change, DiskFull, Put
from hostcore_git import GitStorage

from .test_git_storage import assert_fsck_clean, git


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[GitStorage]:
    store = GitStorage(tmp_path / "repo")
    yield store
    store.close()


def pack_files(root: Path, suffix: str = ".pack") -> list[str]:
    return sorted(name for name in os.listdir(root / "objects" / "pack") if name.endswith(suffix))


def loose_objects(root: Path) -> list[str]:
    return [f"{d}/{f}" for d in os.listdir(root / "objects") if len(d) == 2 for f in os.listdir(root / "objects" / d)]


def verify_packs(root: Path) -> None:
    for idx in pack_files(root, ".idx"):
        done = subprocess.run(["git", "verify-pack", str(root / "objects" / "pack" / idx)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def pack_objects(root: Path, idx: str) -> list[str]:
    """The object ids an index lists (``git show-index``)."""
    with open(root / "objects" / "pack" / idx, "rb") as source:
        out = subprocess.run(["git", "show-index"], stdin=source, capture_output=True, text=True, check=True).stdout
    return [line.split()[1] for line in out.splitlines()]


def save(storage: GitStorage, path: str, text: str) -> None:
    storage.apply([Put(path, text.encode())], Change("ann", f"save {path}: {text[:20]}"))


def test_a_save_writes_one_pack_and_no_loose_object(storage: GitStorage) -> None:
    for i in range(3):
        save(storage, f"ns/page{i}.md", f"page {i}\n" * 40)
    assert loose_objects(storage.root) == []
    assert len(pack_files(storage.root)) == 3 and pack_files(storage.root, ".keep") == []
    verify_packs(storage.root)
    assert_fsck_clean(storage.root)
    fresh = GitStorage(storage.root)
    assert fresh.read("ns/page2.md") == ("page 2\n" * 40).encode()
    fresh.close()


def test_the_pack_is_kept_until_the_branch_holds_it(storage: GitStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """git repack -a -d drops packed objects nothing references, except in kept packs: while the
    branch moves, the new pack has its .keep, as a pack received by git push has."""
    save(storage, "ns/a.md", "first")
    seen: list[tuple[list[str], list[str], str]] = []
    move_branch = storage._move_branch

    def watched(*args: object) -> bool:
        seen.append((pack_files(storage.root, ".keep"), pack_files(storage.root, ".idx"), git(storage.root, "rev-parse", "main").strip()))
        return move_branch(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(storage, "_move_branch", watched)
    before = storage.version()
    save(storage, "ns/a.md", "second")
    [(keeps, indexes, head)] = seen
    assert head == before  # the branch had not moved yet
    assert len(keeps) == 1 and keeps[0][: -len(".keep")] + ".idx" in indexes
    assert pack_files(storage.root, ".keep") == [] and storage.version() != before


def test_small_packs_are_merged_in_the_background_while_a_reader_opened_before_reads(storage: GitStorage) -> None:
    reader = GitStorage(storage.root)
    for i in range(3 * packs.MERGE_AT):
        save(storage, f"ns/p{i % 5}.md", f"version {i}\n" * 30)
        assert reader.read(f"ns/p{i % 5}.md") == f"version {i}\n".encode() * 30
    storage._merger.wait()
    assert len(pack_files(storage.root)) < packs.MERGE_AT
    assert loose_objects(storage.root) == [] and pack_files(storage.root, ".keep") == []
    verify_packs(storage.root)
    assert_fsck_clean(storage.root)
    assert len(git(storage.root, "log", "--format=%H", "main").split()) == 3 * packs.MERGE_AT
    for i in range(3 * packs.MERGE_AT - 5, 3 * packs.MERGE_AT):  # every last version, through the old reader too
        assert reader.read(f"ns/p{i % 5}.md") == storage.read(f"ns/p{i % 5}.md") == f"version {i}\n".encode() * 30
    listed = [name for idx in pack_files(storage.root, ".idx") for name in pack_objects(storage.root, idx)]
    assert len(listed) == len(set(listed))  # merged, each object once
    reader.close()


def test_two_processes_never_merge_at_once(storage: GitStorage) -> None:
    """The merge lock is taken without waiting: while another process holds it, packs pile up
    unmerged (and saves go on); once it is free, the next save's merge takes them."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR|os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()", str(storage.root / "hostcore-packs.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    for i in range(packs.MERGE_AT + 2):
        save(storage, f"ns/p{i}.md", f"page {i}")
    storage._merger.wait()
    assert len(pack_files(storage.root)) == packs.MERGE_AT + 2
    holder.communicate("")
    save(storage, "ns/after.md", "after")
    storage._merger.wait()
    assert len(pack_files(storage.root)) < packs.MERGE_AT
    assert_fsck_clean(storage.root)


def _deleted_pack_fds(root: Path) -> list[str]:
    """The removed pack files of ``root`` this process still holds open."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{root}/objects/pack/") and target.endswith("(deleted)"):
            out.append(target)
    return out


def test_repository_handles_are_renewed_so_merged_packs_are_closed(storage: GitStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A libgit2 handle keeps each pack it read open, removed or not: the storage renews its
    handles, so the space of merged packs is freed."""
    monkeypatch.setattr(storage_module, "HANDLE_SECONDS", 1e9)  # none renewed yet, however slow the machine
    reader = GitStorage(storage.root)
    for i in range(2 * packs.MERGE_AT):
        save(storage, f"ns/p{i}.md", f"page {i}")
        storage._merger.wait()
        assert reader.list("ns")  # reads the newest tree, from the newest pack
        for j in range(i + 1):
            reader.read(f"ns/p{j}.md")
    assert _deleted_pack_fds(storage.root)  # the handles still hold packs merged away
    monkeypatch.setattr(storage_module, "HANDLE_SECONDS", 0.0)
    reader.read("ns/p0.md")
    save(storage, "ns/last.md", "renews the writer's handle too")
    storage._merger.wait()
    monkeypatch.setattr(storage_module, "HANDLE_SECONDS", 1e9)
    assert _deleted_pack_fds(storage.root) == []
    reader.close()


def _delta_packs(root: Path) -> list[str]:
    """Packs holding deltas (git's own, after git gc)."""
    out = []
    for idx in pack_files(root, ".idx"):
        listing = git(root, "verify-pack", "-v", str(root / "objects" / "pack" / idx))
        if any(len(line.split()) >= 7 for line in listing.splitlines() if line[:1].isalnum() and len(line.split()[0]) == 40):
            out.append(idx)
    return out


def test_merging_leaves_git_gc_packs_alone(storage: GitStorage) -> None:
    for i in range(12):  # one page changed a little at a time: git gc stores it as deltas
        save(storage, "ns/long.md", "".join(f"line {n} of a long page\n" for n in range(200)) + f"edit {i}\n")
    git(storage.root, "gc", "--quiet")
    gc_packs = _delta_packs(storage.root)
    assert gc_packs  # git gc made a pack with deltas
    for i in range(packs.MERGE_AT + 2):
        save(storage, f"ns/after{i}.md", f"after {i}")
        storage._merger.wait()
    assert set(gc_packs) <= set(pack_files(storage.root, ".idx"))  # not merged (its deltas refer to offsets)
    assert len(pack_files(storage.root)) < packs.MERGE_AT
    verify_packs(storage.root)
    assert_fsck_clean(storage.root)
    assert storage.read("ns/long.md").endswith(b"edit 11\n")


def test_a_pack_that_cannot_be_written_leaves_no_file_and_the_branch_as_it_was(storage: GitStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    save(storage, "ns/a.md", "first")
    before, files = storage.version(), sorted(os.listdir(storage.root / "objects" / "pack"))

    def full_disk(paths: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(packs, "flush", full_disk)
    with pytest.raises(DiskFull):
        save(storage, "ns/a.md", "second")
    assert storage.version() == before and sorted(os.listdir(storage.root / "objects" / "pack")) == files
    monkeypatch.undo()
    save(storage, "ns/a.md", "third")
    assert storage.read("ns/a.md") == b"third"
    assert_fsck_clean(storage.root)


def test_saves_during_repeated_git_repack_a_d_all_land(storage: GitStorage) -> None:
    """An operator's ``git repack -a -d`` (which drops packed objects unreferenced when it looked)
    over and over while four threads save: every acknowledged save is on the branch."""
    stop = threading.Event()
    repacks = []

    def repack() -> None:
        while not stop.is_set():
            repacks.append(subprocess.run(["git", "--git-dir", str(storage.root), "repack", "-a", "-d", "-q"], capture_output=True).returncode)

    acked: dict[str, str] = {}

    def writer(w: int) -> None:
        for i in range(40):
            save(storage, f"ns/w{w}.md", f"writer {w} save {i}")
            acked[f"ns/w{w}.md"] = f"writer {w} save {i}"

    operator = threading.Thread(target=repack)
    operator.start()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    stop.set()
    operator.join(60)
    assert len(repacks) >= 2 and set(repacks) == {0}
    assert_fsck_clean(storage.root)
    fresh = GitStorage(storage.root)
    assert {path: fresh.read(path).decode() for path in acked} == acked
    assert len(git(storage.root, "log", "--format=%H", "main").split()) == 160
    fresh.close()


def test_a_keep_left_by_a_killed_writer_is_cleared_when_packs_merge(storage: GitStorage) -> None:
    """A process killed between writing its pack and moving the branch leaves the pack's .keep;
    hostcore's own keeps are cleared at the next merge once they are old (a push's keep, git's,
    is left alone)."""
    save(storage, "ns/a.md", "a")
    [stale] = pack_files(storage.root, ".idx")
    folder = storage.root / "objects" / "pack"
    (folder / stale.replace(".idx", ".keep")).write_bytes(packs.KEEP_TEXT)
    (folder / "pack-0000.keep").write_bytes(b"receive-pack 123 on host\n")
    old = time.time() - packs.STALE_KEEP - 1
    for keep in pack_files(storage.root, ".keep"):
        os.utime(folder / keep, (old, old))
    for i in range(packs.MERGE_AT):
        save(storage, f"ns/p{i}.md", f"page {i}")
        storage._merger.wait()
    assert pack_files(storage.root, ".keep") == ["pack-0000.keep"]
    assert stale not in pack_files(storage.root, ".idx")  # merged with the others
    assert storage.read("ns/a.md") == b"a"
    assert_fsck_clean(storage.root)


def test_no_pack_is_merged_away_while_git_gc_runs(storage: GitStorage) -> None:
    """git gc fails ("unable to add recent objects") when a pack it listed goes away: while its
    gc.pid is there (and fresh), packs pile up; git gc repacks them itself."""
    (storage.root / "gc.pid").write_text("12345 host\n")
    for i in range(packs.MERGE_AT + 2):
        save(storage, f"ns/p{i}.md", f"page {i}")
        storage._merger.wait()
    assert len(pack_files(storage.root)) == packs.MERGE_AT + 2
    old = time.time() - packs.GC_STALE - 1
    os.utime(storage.root / "gc.pid", (old, old))  # one a killed gc left, as git judges it
    save(storage, "ns/after.md", "after")
    storage._merger.wait()
    assert len(pack_files(storage.root)) < packs.MERGE_AT
    assert_fsck_clean(storage.root)


def test_merging_packs_that_share_objects_keeps_each_once_and_every_byte(tmp_path: Path) -> None:
    """Packs may hold the same object (written by handles that had not seen each other's packs):
    the merge copies runs of entries and skips the repeats; git verifies the result and every
    object reads back whole."""
    import pygit2

    from hostcore_git.odb import Objects

    root = tmp_path / "repo"
    pygit2.init_repository(str(root), bare=True)
    folder = root / "objects" / "pack"
    shared = [f"shared {i}\n".encode() * (i + 1) for i in range(5)]
    everything: dict[str, bytes] = {}
    for p in range(packs.MERGE_AT):
        objects = Objects()
        mine = [f"pack {p} object {i}\n".encode() * 20 for i in range(6)]
        # the shared objects sit between a pack's own ones, so skipping them splits its runs
        for data in [mine[0], shared[p % 5], mine[1], mine[2], shared[(p + 1) % 5], *mine[3:]]:
            objects.add(pygit2.hash(data), 3, data)
            everything[str(pygit2.hash(data))] = data
        packs.write(folder, objects).release()
    assert packs.merge(folder) == packs.MERGE_AT
    [idx] = pack_files(root, ".idx")
    listed = pack_objects(root, idx)
    assert sorted(listed) == sorted(everything)  # each object once
    verify_packs(root)
    repo = pygit2.Repository(str(root))
    assert all(repo[oid].data == data for oid, data in everything.items())


def test_a_page_saved_back_to_an_older_version_reads_and_verifies(storage: GitStorage) -> None:
    """A blob the repository already has (an older version saved again) goes into the new pack
    once more: git holds an object in two packs without complaint, and merging keeps it once."""
    save(storage, "ns/a.md", "first")
    save(storage, "ns/a.md", "second")
    save(storage, "ns/a.md", "first")
    assert storage.read("ns/a.md") == b"first"
    verify_packs(storage.root)
    assert_fsck_clean(storage.root)
    for i in range(packs.MERGE_AT):
        save(storage, "ns/a.md", "second" if i % 2 else "first")
        storage._merger.wait()
    assert len(pack_files(storage.root)) < packs.MERGE_AT  # merged, the repeats with the rest
    verify_packs(storage.root)
    assert storage.read("ns/a.md") == b"second"
    assert_fsck_clean(storage.root)
