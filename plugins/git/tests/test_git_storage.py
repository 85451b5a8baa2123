"""Git-specific behaviour, checked against the real git command: commits, history, crashes."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest

import hostcore_git.storage as storage_module
from hostcore import Change, Conflict, Delete, FileLock, NotFound, Put, ValidationError, blob_hash
from hostcore_git import GitStorage

WRITER = Path(__file__).with_name("writer.py")


def git(root: Path, *args: str) -> str:
    """Run git on the bare repository at ``root``; return its output."""
    return subprocess.run(["git", "--git-dir", str(root), *args], capture_output=True, text=True, check=True).stdout


def log(root: Path, *paths: str) -> list[str]:
    """Commit ids of ``git log`` (for ``paths`` when given), newest first."""
    return git(root, "log", "--format=%H", "main", "--", *paths).split()


def assert_fsck_clean(root: Path) -> None:
    done = subprocess.run(["git", "--git-dir", str(root), "fsck", "--full", "--strict", "--no-dangling"], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def push_from_outside(root: Path, files: dict[str, bytes], message: str = "outside") -> None:
    """Commit ``files`` in a fresh clone with the git command and push it into ``root``."""
    work = root.parent / f"clone-{time.monotonic_ns()}"
    subprocess.run(["git", "clone", "-q", str(root), str(work)], check=True)
    for path, data in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    cli = ["git", "-C", str(work), "-c", "user.name=Cli", "-c", "user.email=cli@example.org"]
    subprocess.run([*cli, "add", "-A"], check=True)
    subprocess.run([*cli, "commit", "-q", "-m", message], check=True)
    subprocess.run([*cli, "push", "-q", "origin", "main"], check=True)


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[GitStorage]:
    store = GitStorage(tmp_path / "repo")
    yield store
    store.close()


def test_one_commit_per_change_and_none_for_no_op(storage: GitStorage) -> None:
    storage.apply([Put("a/x.md", b"x"), Put("a/y.md", b"y")], Change("ann", "two pages"))
    assert len(log(storage.root)) == 1
    moved = storage.apply([Put("b/x.md", b"x", expect=None), Delete("a/x.md")], Change("ann", "move"))
    assert moved == {"b/x.md": blob_hash(b"x"), "a/x.md": None}
    assert len(log(storage.root)) == 2
    assert storage.apply([Put("b/x.md", b"x", expect=blob_hash(b"x"))], Change("ann", "same")) == {"b/x.md": blob_hash(b"x")}
    assert len(log(storage.root)) == 2
    storage.apply([Put("b/x.md", b"x"), Put("a/y.md", b"y2")], Change("ann", "one real change"))
    assert len(log(storage.root)) == 3
    assert git(storage.root, "show", "--format=", "--name-only", "main").split() == ["a/y.md"]
    assert git(storage.root, "ls-tree", "-r", "--name-only", "main").split() == ["a/y.md", "b/x.md"]


def test_author_email_and_message(storage: GitStorage) -> None:
    storage.apply([Put("a/x.md", b"x")], Change("Ada Lovelace", "Fix the typo"))
    storage.apply([Put("a/x.md", b"x2")], Change("Bo", "Second", email="bo@example.org"))
    lines = git(storage.root, "log", "--format=%an|%ae|%cn|%s", "main").splitlines()
    assert lines == ["Bo|bo@example.org|Bo|Second", "Ada Lovelace|ada-lovelace@hostcore|Ada Lovelace|Fix the typo"]
    newest = storage.history()[0]
    assert (newest.author, newest.message, newest.paths) == ("Bo", "Second", ("a/x.md",))
    assert newest.time.tzinfo is UTC and abs(time.time() - newest.time.timestamp()) < 60


def test_history_agrees_with_git_log(storage: GitStorage) -> None:
    change = Change("ann", "edit")
    for n in range(6):
        storage.apply([Put(f"ns/p{n % 3}.md", f"v{n}".encode())], change)
    storage.apply([Put("ns/moved.md", b"v2", expect=None), Delete("ns/p2.md")], Change("ann", "move"))
    storage.apply([Delete("ns/p0.md")], Change("ann", "delete"))
    for path in ["ns/p0.md", "ns/p1.md", "ns/p2.md", "ns/moved.md", "ns/none.md"]:
        assert [r.id for r in storage.history(path, limit=100)] == log(storage.root, path)
    assert [r.id for r in storage.history(limit=100)] == log(storage.root)
    assert [r.id for r in storage.history(offset=2, limit=3)] == log(storage.root)[2:5]
    assert storage.history(limit=1)[0].paths == ("ns/p0.md",)
    with pytest.raises(ValidationError):
        storage.history(limit=-1)


def test_outside_commits_join_history(storage: GitStorage) -> None:
    storage.apply([Put("ns/a.md", b"one")], Change("ann", "first"))
    push_from_outside(storage.root, {"ns/a.md": b"two", "ns/b.md": b"new"}, "by hand")
    assert storage.read("ns/a.md") == b"two"
    assert [r.message for r in storage.history("ns/a.md")] == ["by hand", "first"]
    storage.close()
    reopened = GitStorage(storage.root)
    assert [r.id for r in reopened.history("ns/b.md")] == log(storage.root, "ns/b.md")
    assert reopened.history()[0].paths == ("ns/a.md", "ns/b.md")
    reopened.close()


def test_rewritten_branch_rebuilds_index(storage: GitStorage) -> None:
    for n in range(3):
        storage.apply([Put("ns/a.md", f"v{n}".encode())], Change("ann", f"v{n}"))
    first = log(storage.root)[-1]
    git(storage.root, "update-ref", "refs/heads/main", first)
    storage.apply([Put("ns/a.md", b"other")], Change("ann", "after rewrite"))
    assert [r.message for r in storage.history("ns/a.md")] == ["after rewrite", "v0"]


def test_restore_from_history(storage: GitStorage) -> None:
    storage.apply([Put("ns/a.md", b"one")], Change("ann", "create"))
    storage.apply([Put("ns/a.md", b"two")], Change("ann", "update"))
    storage.apply([Delete("ns/a.md")], Change("ann", "delete"))
    last = storage.last_revision_with("ns/a.md")
    assert last is not None and last.message == "update"
    assert storage.read_at("ns/a.md", last.id) == b"two"
    with pytest.raises(NotFound):
        storage.read_at("ns/a.md", storage.history("ns/a.md")[0].id)
    with pytest.raises(NotFound):
        storage.read_at("ns/a.md", "0" * 40)
    assert storage.last_revision_with("ns/never.md") is None


def test_empty_repository(storage: GitStorage) -> None:
    assert storage.list() == [] and storage.hashes() == {} and storage.history() == []
    with pytest.raises(NotFound):
        storage.read("a.md")
    assert storage.last_revision_with("a.md") is None


def test_file_never_replaces_folder_or_file(storage: GitStorage) -> None:
    storage.apply([Put("ns/a/x.md", b"x")], Change("ann", "x"))
    with pytest.raises(ValidationError):
        storage.apply([Put("ns/a", b"file over folder")], Change("ann", "bad"))
    with pytest.raises(ValidationError):
        storage.apply([Put("ns/a/x.md/y.md", b"folder over file")], Change("ann", "bad"))
    assert storage.list() == ["ns/a/x.md"]


def test_stale_ref_lock_is_removed(storage: GitStorage) -> None:
    storage.apply([Put("ns/a.md", b"one")], Change("ann", "one"))
    lock = storage.root / "refs" / "heads" / "main.lock"
    lock.write_text("left by a killed process\n")
    old = time.time() - 60
    os.utime(lock, (old, old))
    storage.apply([Put("ns/a.md", b"two")], Change("ann", "two"))
    assert storage.read("ns/a.md") == b"two" and not lock.exists()


@pytest.mark.slow
def test_processes_leave_a_clean_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    GitStorage(root).close()
    writers = [subprocess.Popen([sys.executable, str(WRITER), str(root), f"w{n}", "15"], stdout=subprocess.DEVNULL) for n in range(4)]
    assert [writer.wait(timeout=60) for writer in writers] == [0] * 4
    assert len(log(root)) == 60
    assert_fsck_clean(root)
    storage = GitStorage(root)
    assert [r.id for r in storage.history(limit=100)] == log(root)
    storage.close()


@pytest.mark.slow
def test_killed_writers_leave_every_page_whole(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    GitStorage(root).close()
    for round_ in range(3):
        writers = [
            subprocess.Popen([sys.executable, str(WRITER), str(root), f"r{round_}w{n}", "0"], stdout=subprocess.PIPE)
            for n in range(2)
        ]
        for writer in writers:
            writer.stdout.readline()  # it is writing now
        time.sleep(0.3 + 0.2 * round_)
        for writer in writers:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
            writer.stdout.close()
    assert_fsck_clean(root)
    storage = GitStorage(root)
    pages = storage.list()
    assert len(pages) == 5
    for path in pages:
        lines = set(storage.read(path).splitlines())
        assert len(lines) == 1, f"{path} is torn"
    storage.apply([Put(pages[0], b"after the crash")], Change("ann", "after"))
    assert [r.id for r in storage.history(limit=1000)] == log(root)
    storage.close()


@pytest.mark.parametrize("outside_path", ["ns/b.md", "ns/a.md"])
def test_branch_moved_mid_apply(storage: GitStorage, monkeypatch: pytest.MonkeyPatch, outside_path: str) -> None:
    storage.apply([Put("ns/a.md", b"one")], Change("ann", "one"))
    real_apply = storage_module.Line.apply
    pushed: list[str] = []

    def build_after_a_push(*args: object) -> object:
        # A push lands between the expectation check and the branch update.
        if not pushed:
            pushed.append(outside_path)
            push_from_outside(storage.root, {outside_path: b"outside"})
        return real_apply(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(storage_module.Line, "apply", build_after_a_push)
    if outside_path == "ns/a.md":
        with pytest.raises(Conflict) as err:
            storage.apply([Put("ns/a.md", b"mine", expect=blob_hash(b"one"))], Change("ann", "mine"))
        assert err.value.data["hash"] == blob_hash(b"outside")
        assert [r.message for r in storage.history()] == ["outside", "one"]
    else:
        storage.apply([Put("ns/a.md", b"mine", expect=blob_hash(b"one"))], Change("ann", "mine"))
        assert [r.message for r in storage.history()] == ["mine", "outside", "one"]
        assert storage.read("ns/b.md") == b"outside"


def test_version_and_changes_since_agree_with_git_diff(storage: GitStorage) -> None:
    empty = storage.version()
    storage.apply([Put("a/x.md", b"x"), Put("a/y.md", b"y"), Put("b/z.md", b"z")], Change("ann", "first"))
    first = storage.version()
    assert first == log(storage.root)[0] != empty
    assert storage.changed_since(empty, first) == ["a/x.md", "a/y.md", "b/z.md"]
    push_from_outside(storage.root, {"a/y.md": b"y2", "c/new.md": b"new"})
    storage.apply([Delete("b/z.md")], Change("ann", "delete"))
    now = storage.version()
    assert now == log(storage.root)[0]
    expected = git(storage.root, "diff", "--name-only", "--no-renames", first, now).split()
    assert storage.changed_since(first, now) == expected == ["a/y.md", "b/z.md", "c/new.md"]
    assert storage.changed_since(now, now) == []
    assert storage.changed_since("0" * 40, now) is None and storage.changed_since("not a commit", now) is None


def test_changes_since_a_line_of_commits_come_from_the_history_index(storage: GitStorage) -> None:
    storage.apply([Put("a/x.md", b"x"), Put("b/y.md", b"y")], Change("ann", "first"))
    first = storage.version()
    storage.apply([Put("a/x.md", b"x2")], Change("ann", "second"))
    push_from_outside(storage.root, {"c/z.md": b"z"})
    storage.apply([Put("a/x.md", b"x"), Delete("b/y.md")], Change("ann", "x back, y gone"))
    now = storage.version()
    # one indexed query, no tree read: a path changed and changed back is listed too (its page is re-read)
    assert storage._history_index.changes_between(first, now) == ["a/x.md", "b/y.md", "c/z.md"]
    assert storage.changed_since(first, now) == ["a/x.md", "b/y.md", "c/z.md"]
    assert git(storage.root, "diff", "--name-only", first, now).split() == ["b/y.md", "c/z.md"]


def test_changes_since_across_a_merge_are_the_tree_diff(storage: GitStorage, tmp_path: Path) -> None:
    """A pushed merge whose first parent is not the old head: the indexed commits after it do not
    name every difference (here the merge drops hostcore's change), so the trees are compared."""
    storage.apply([Put("a/p.md", b"base"), Put("a/q.md", b"base")], Change("ann", "base"))
    base = storage.version()
    storage.apply([Put("a/p.md", b"mine")], Change("ann", "mine"))
    mine = storage.version()
    work = tmp_path / "side"
    subprocess.run(["git", "clone", "-q", str(storage.root), str(work)], check=True)
    cli = ["git", "-C", str(work), "-c", "user.name=Cli", "-c", "user.email=cli@example.org"]
    subprocess.run([*cli, "checkout", "-q", "-b", "side", base], check=True)
    (work / "a" / "q.md").write_bytes(b"side")
    subprocess.run([*cli, "commit", "-q", "-am", "side"], check=True)
    subprocess.run([*cli, "merge", "-q", "-s", "ours", "-m", "merge keeping side", "origin/main"], check=True)
    subprocess.run([*cli, "push", "-q", "origin", "side:main"], check=True)
    now = storage.version()
    assert storage._history_index.changes_between(mine, now) is None
    assert storage.changed_since(mine, now) == git(storage.root, "diff", "--name-only", mine, now).split() == ["a/p.md", "a/q.md"]


# --- group commit -------------------------------------------------------------------------------

GROUP_WRITER = Path(__file__).with_name("group_writer.py")


def test_writes_queued_behind_the_lock_commit_as_one_group(storage: GitStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    storage.apply([Put("ns/shared.md", b"seed"), Put("ns/stale.md", b"seed")], Change("seed", "seed"))
    seed = storage.version()
    calls = [(f"ns/p{i}.md", None, f"Writer {i}", f"page {i}") for i in range(8)]
    calls += [("ns/shared.md", blob_hash(b"seed"), f"Sharer {i}", f"shared {i}") for i in range(2)]
    calls += [("ns/stale.md", blob_hash(b"not what is there"), "Stale", "stale"), ("ns/p0.md/x.md", None, "Nested", "under a file")]
    outcomes: dict[int, object] = {}
    moves: list[str] = []
    move_branch = storage._move_branch

    def counted_move(*args: object) -> bool:
        moves.append("moved")
        return move_branch(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(storage, "_move_branch", counted_move)

    def write(i: int) -> None:
        path, expect, author, message = calls[i]
        try:
            outcomes[i] = storage.apply([Put(path, f"{author}\n".encode(), expect=expect)], Change(author, message))
        except (Conflict, ValidationError) as exc:
            outcomes[i] = exc

    first = threading.Thread(target=write, args=(0,))
    others = [threading.Thread(target=write, args=(i,)) for i in range(1, len(calls))]
    with FileLock(storage.root / "hostcore.lock"):  # another process is writing: every call queues up
        first.start()
        deadline = time.monotonic() + 30
        while not storage._group._leading and time.monotonic() < deadline:
            time.sleep(0.01)
        for thread in others:
            thread.start()
        while len(storage._group._queue) < len(calls) and time.monotonic() < deadline:
            time.sleep(0.01)
    for thread in [first, *others]:
        thread.join(30)
    assert moves == ["moved"]  # the branch moved once for the whole group
    landed = {i for i, out in outcomes.items() if isinstance(out, dict)}
    assert landed in (set(range(8)) | {8}, set(range(8)) | {9})  # one of two saves on one basehash wins
    assert all(isinstance(outcomes[i], Conflict) for i in {8, 9, 10} - landed)
    assert isinstance(outcomes[11], ValidationError)
    # Each change its own commit with its own author and message, one line of commits on the seed.
    lines = git(storage.root, "log", "--format=%H|%an|%s|%P", "main").splitlines()
    assert len(lines) == len(landed) + 1 and lines[-1].split("|")[0] == seed
    assert all(line.split("|")[3] == below.split("|")[0] for line, below in itertools.pairwise(lines))
    assert {tuple(line.split("|")[1:3]) for line in lines[:-1]} == {calls[i][2:] for i in landed}
    for i in landed:
        assert storage.read(calls[i][0]) == f"{calls[i][2]}\n".encode()
        newest = storage.history(calls[i][0])[0]
        assert newest.message == calls[i][3] and newest.paths == (calls[i][0],)
        assert git(storage.root, "show", "--name-only", "--format=", newest.id).split() == [calls[i][0]]
    assert [r.id for r in storage.history(limit=100)] == log(storage.root)
    assert_fsck_clean(storage.root)


def acknowledged(lines: list[str]) -> dict[str, tuple[int, set[str]]]:
    """path -> (last acknowledged index, messages of every acknowledged save) from group_writer output."""
    acks: dict[str, tuple[int, set[str]]] = {}
    for line in lines:
        path, index, message = line.split(" ", 2)
        last, messages = acks.get(path, (-1, set()))
        acks[path] = (max(last, int(index)), messages | {message})
    return acks


@pytest.mark.slow
def test_concurrent_processes_git_gc_and_a_killed_writer_lose_no_acknowledged_write(tmp_path: Path) -> None:
    """Two writer processes of four threads each save their own pages while an operator runs git
    gc and git repack, and one writer is killed mid-way: every acknowledged save is a commit of
    its own, with its author and message, and the repository stays sound."""
    root = tmp_path / "repo"
    GitStorage(root).close()
    steady = subprocess.Popen([sys.executable, str(GROUP_WRITER), str(root), "steady", "4", "60"], stdout=subprocess.PIPE, text=True)
    killed = subprocess.Popen([sys.executable, str(GROUP_WRITER), str(root), "killed", "4", "0"], stdout=subprocess.PIPE, text=True)
    killed_lines = [killed.stdout.readline().strip()]  # it is writing now
    operator = [["gc", "--quiet"], ["repack", "-A", "-d", "-q"], ["pack-refs", "--all"], ["repack", "-a", "-d", "-q"], ["gc", "--quiet"]]
    for n, command in enumerate(operator):
        done = subprocess.run(["git", "--git-dir", str(root), *command], capture_output=True, text=True)
        assert done.returncode == 0, f"git {' '.join(command)}: {done.stderr}"
        if n == 2:
            killed.send_signal(signal.SIGKILL)
    killed.wait()
    killed_lines += [line.strip() for line in killed.stdout.read().splitlines()]
    killed.stdout.close()
    steady_out, _ = steady.communicate(timeout=120)
    assert steady.returncode == 0
    steady_acks, killed_acks = acknowledged(steady_out.splitlines()), acknowledged([line for line in killed_lines if line.count(" ") >= 2])  # a line the kill cut is no ack
    assert len(steady_acks) == 4 and all(last == 59 for last, _ in steady_acks.values()) and killed_acks
    assert_fsck_clean(root)
    commits = git(root, "log", "--format=%an|%s|%P", "main").splitlines()
    assert all(len(line.split("|")[2].split()) <= 1 for line in commits)  # one line of commits
    messages = [line.split("|")[1] for line in commits]
    assert len(messages) == len(set(messages))  # one commit per change
    for acks, complete in ((steady_acks, True), (killed_acks, False)):
        for path, (last, acked) in acks.items():
            assert acked <= set(messages)  # every acknowledged save is a commit
            mine = [line for line in commits if line.split("|")[1].startswith(path.split("/")[0] + " " + path.split("/")[1][:-3] + " ")]
            assert all(line.split("|")[0] == f"{path.split('/')[0]}-{path.split('/')[1][:-3]}" for line in mine)
            content = git(root, "show", f"main:{path}")
            index = int(content.split()[1])
            # the page holds its last acknowledged save, or (killed mid-save) one the writer never heard of
            assert index == last if complete else index >= last
            assert content == f"{path} {index}\n" * 50
    storage = GitStorage(root)
    assert [r.id for r in storage.history(limit=1000)] == log(root)
    storage.apply([Put("after/x.md", b"after")], Change("ann", "after"))
    storage.close()
    assert_fsck_clean(root)


def _flicker_ref_lock(lock: str) -> None:
    """What ``git pack-refs`` (run by ``git gc``) does to a branch's lock: take it for a moment and
    let it go, over and over, until killed."""
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        time.sleep(0.0005)
        os.unlink(lock)
        time.sleep(0.0005)


def test_saves_survive_a_git_process_taking_the_branch_lock_for_moments(tmp_path: Path) -> None:
    """git gc's pack-refs takes ``refs/heads/main.lock`` for a moment; a save that met the lock but
    found it gone when it looked ("failed to lock file ... for writing" failed a save in a fresh-clone
    run while the operator test ran git gc) tries again instead of failing: every save lands."""
    import multiprocessing

    storage = GitStorage(tmp_path / "repo")
    storage.apply([Put("a/first.md", b"first\n", expect=None)], Change("tester", "first"))
    lock = str(tmp_path / "repo" / "refs" / "heads" / "main.lock")
    flicker = multiprocessing.get_context("fork").Process(target=_flicker_ref_lock, args=(lock,), daemon=True)
    flicker.start()
    try:
        expect = None
        for i in range(100):
            expect = storage.apply([Put("a/page.md", f"version {i}\n".encode(), expect=expect)], Change("tester", f"save {i}"))["a/page.md"]
    finally:
        flicker.kill()
        flicker.join()
        if os.path.exists(lock):
            os.unlink(lock)
    assert storage.read("a/page.md") == b"version 99\n"
    assert len(storage.history("a/page.md", limit=1000)) == 100
    storage.close()
