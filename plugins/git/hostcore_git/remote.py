"""Pushing the branch to a remote from a background thread, so a save never waits on the network.

The ``git`` command does the push, so the operator's SSH keys, ``known_hosts`` and credential
helpers work as they do for their own ``git push``. Each push sends the branch head as it is at
that moment (one push carries every commit since the last), never forced: a remote that has
diverged is reported, not overwritten. One push runs at a time across worker processes (a file
lock), so an older head never races a newer one. A failed push is retried with exponential
backoff. The outcome is written to a small JSON file next to the repository, so every worker
reports the same status. URLs and messages are logged and reported with credentials masked.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from hostcore import FileLock

log = logging.getLogger(__name__)

RETRY_FIRST = 1.0
RETRY_MAX = 300.0
PUSH_TIMEOUT = 120.0
_USERINFO = re.compile(r"(://)[^/@\s]+@")


def redact(text: str) -> str:
    """``text`` with any ``user:password@`` of a URL replaced by ``***@``."""
    return _USERINFO.sub(r"\1***@", text)


class Pusher:
    """Pushes ``branch`` of the repository at ``gitdir`` to ``url`` after each commit."""

    def __init__(self, gitdir: Path, branch: str, url: str) -> None:
        self.gitdir = Path(gitdir)
        self.branch = branch
        self.url = url
        self._status_file = self.gitdir / "hostcore-push.json"
        self._lock = FileLock(self.gitdir / "hostcore-push.lock")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = False
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()
        self._pid = 0

    def notify(self) -> None:
        """Ask for a push of the current head; returns at once."""
        self._pending = True
        with self._starting:
            # Threads do not survive a fork: a worker process starts its own.
            if self._thread is None or self._pid != os.getpid():
                self._wake, self._stop, self._pid = threading.Event(), threading.Event(), os.getpid()
                self._thread = threading.Thread(target=self._run, name="hostcore-git-push", daemon=True)
                self._thread.start()
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """The last push outcome of any process: remote, ok, commit, time, error, failures, pending."""
        try:
            status = json.loads(self._status_file.read_text())
        except (FileNotFoundError, ValueError):
            status = {"ok": None, "commit": None, "time": None, "error": None, "failures": 0}
        status["remote"] = redact(self.url)
        status["pending"] = self._pending
        return status

    def pushed_commit(self) -> str | None:
        """The commit the last successful push sent, or None."""
        try:
            return json.loads(self._status_file.read_text()).get("pushed")
        except (FileNotFoundError, ValueError):
            return None

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread after one last attempt at a pending push, waiting up to ``timeout``."""
        if self._thread is not None and self._pid == os.getpid():
            self._stop.set()
            self._wake.set()
            self._thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        delay = RETRY_FIRST
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._pending:
                self._pending = False
                if self._attempt():
                    delay = RETRY_FIRST
                else:
                    self._pending = True
                    if not self._stop.wait(delay):
                        delay = min(delay * 2, RETRY_MAX)
                        self._wake.set()
            if self._stop.is_set():
                return

    def _attempt(self) -> bool:
        # The thread must survive anything (a full disk, a broken repository) to retry later.
        try:
            return self.push()
        except Exception:
            log.exception("git push to %s failed", redact(self.url))
            return False

    def push(self) -> bool:
        """Push the branch head now, record the outcome and return whether it succeeded."""
        with self._lock:
            previous = self.status()
            repo = pygit2.Repository(str(self.gitdir))
            try:
                head = repo.references[self.branch].target
            except KeyError:
                return True
            finally:
                repo.free()
            command = ["git", "--git-dir", str(self.gitdir), "push", "--quiet", self.url, f"{head}:{self.branch}"]
            # Never prompt: a push without credentials must fail, not hang the thread.
            env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")}
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=PUSH_TIMEOUT, env=env, check=False)
                error = redact(done.stderr.strip() or f"git push exited with {done.returncode}") if done.returncode else None
            except (OSError, subprocess.TimeoutExpired) as exc:
                error = redact(str(exc))
            failures = 0 if error is None else previous.get("failures", 0) + 1
            status = {
                "ok": error is None,
                "commit": str(head),
                "pushed": str(head) if error is None else previous.get("pushed"),
                "time": datetime.now(UTC).isoformat(timespec="seconds"),
                "error": error,
                "failures": failures,
            }
            self._write_status(status)
        if error is not None:
            log.warning("git push to %s failed (%d in a row): %s", redact(self.url), failures, error)
        return error is None

    def _write_status(self, status: dict[str, Any]) -> None:
        tmp = self._status_file.with_name(f"{self._status_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(status))
        os.replace(tmp, self._status_file)
