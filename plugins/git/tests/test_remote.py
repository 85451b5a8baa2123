"""Pushing to a remote in the background: it lands, and a broken remote never fails a save."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from hostcore import Change, Put
from hostcore_git import GitStorage
from hostcore_git.remote import redact


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def remote_head(remote: Path) -> str:
    done = subprocess.run(["git", "--git-dir", str(remote), "rev-parse", "--verify", "-q", "refs/heads/main"], capture_output=True, text=True)
    return done.stdout.strip()


def test_pushes_each_commit_to_a_bare_remote(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    storage = GitStorage(tmp_path / "repo", {"remote": str(remote)})
    for n in range(3):
        storage.apply([Put("ns/a.md", f"v{n}".encode())], Change("ann", f"v{n}"))
    head = storage.history(limit=1)[0].id
    # The remote's ref moves before the push status is written: wait for both.
    assert wait_for(lambda: remote_head(remote) == head and storage.push_status()["commit"] == head)
    status = storage.push_status()
    assert status["ok"] is True and status["commit"] == head and status["error"] is None and status["failures"] == 0
    storage.close()


def test_failing_remote_never_fails_a_save(tmp_path: Path) -> None:
    storage = GitStorage(tmp_path / "repo", {"remote": str(tmp_path / "missing.git")})
    start = time.monotonic()
    storage.apply([Put("ns/a.md", b"saved")], Change("ann", "save"))
    assert time.monotonic() - start < 1.0
    assert storage.read("ns/a.md") == b"saved"
    assert wait_for(lambda: storage.push_status()["ok"] is False)
    status = storage.push_status()
    assert status["failures"] >= 1 and "missing.git" in status["error"]
    storage.close()


def test_credentials_never_reach_the_status(tmp_path: Path) -> None:
    url = "http://alice:s3cret@127.0.0.1:9/wiki.git"
    storage = GitStorage(tmp_path / "repo", {"remote": url})
    storage.apply([Put("ns/a.md", b"saved")], Change("ann", "save"))
    assert wait_for(lambda: storage.push_status()["ok"] is False)
    status = storage.push_status()
    assert "s3cret" not in str(status) and status["remote"] == "http://***@127.0.0.1:9/wiki.git"
    storage.close()
    assert redact("fatal: unable to access 'https://bob:tok@host/x.git/'") == "fatal: unable to access 'https://***@host/x.git/'"


def test_no_remote_status(tmp_path: Path) -> None:
    storage = GitStorage(tmp_path / "repo")
    assert storage.push_status()["remote"] is None
    storage.close()
