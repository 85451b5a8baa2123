"""Pushing the branch to a remote from a background thread, so a save never waits on the network.

The ``git`` command does the push, so the operator's SSH keys, ``known_hosts`` and credential
helpers work as they do for their own ``git push``. Each push sends the branch head as it is at
that moment (one push carries every commit since the last), never forced: a remote that has
diverged is reported, not overwritten. One push runs at a time across worker processes (a file
lock), so an older head never races a newer one. A failed push is retried with exponential
backoff (:class:`hostcore.CoalescingWorker`: the commits made meanwhile go with the next push). The outcome is written to a small JSON file next to the repository, so every worker
reports the same status. URLs and messages are logged and reported with credentials masked.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from hostcore import CoalescingWorker, FileLock

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
        self._worker = CoalescingWorker(
            self.push, "hostcore-git-push", what=f"git push to {redact(url)}", retry=RETRY_FIRST, retry_max=RETRY_MAX, logger=log
        )

    def notify(self) -> None:
        """Ask for a push of the current head; returns at once."""
        self._worker.kick()

    def status(self) -> dict[str, Any]:
        """The last push outcome of any process: remote, ok, commit, time, error, failures, pending."""
        try:
            status = json.loads(self._status_file.read_text())
        except (FileNotFoundError, ValueError):
            status = {"ok": None, "commit": None, "time": None, "error": None, "failures": 0}
        status["remote"] = redact(self.url)
        status["pending"] = self._worker.pending
        return status

    def pushed_commit(self) -> str | None:
        """The commit the last successful push sent, or None."""
        try:
            return json.loads(self._status_file.read_text()).get("pushed")
        except (FileNotFoundError, ValueError):
            return None

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread after one last attempt at a pending push, waiting up to ``timeout``."""
        self._worker.stop(timeout=timeout)

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
