"""Benchmark of ``hostcore export`` / ``hostcore import`` git -> S3 -> git: prints figures, never passes or fails.

Builds a git wiki of ``--pages`` pages (created in commits of 100, as a bulk import would) with
``--attachments`` binary attachments of 64 KiB, then ``--edits`` one-page edits, and moves it:
export from git, import into git (the baseline, in the same run), import into S3 (moto's server
on loopback, as the tests use), export from S3, import back into git. Prints each step's time,
files and revisions per second, and its ratio to the git baseline of the same kind. moto answers
one request at a time, so the S3 figures are request counts times a loopback round trip, not what
a real bucket costs.

Usage: ``python bench/migration.py [--pages 5000] [--edits 500] [--attachments 50]`` (needs the
s3 plugin's test extra).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hostcore import Change, Put, Storage
from hostcore.service.migration import export_wiki, import_wiki
from hostcore.testing import stop_process_group
from hostcore.testing.s3 import BUCKET, CREDENTIALS, make_bucket, start_moto
from hostcore_git import GitStorage
from hostcore_s3 import S3Storage


def page(n: int, version: int) -> bytes:
    return f"---\ntitle: Page {n}\ntags: [bench]\n---\n\nVersion {version} of page {n}, see [[ns/p{n + 1}]].\n".encode() * 10


def build(storage: Storage, pages: int, edits: int, attachments: int) -> None:
    for start in range(0, pages, 100):
        ops = [Put(f"ns{n % 10}/p{n}.md", page(n, 0), expect=None) for n in range(start, min(start + 100, pages))]
        storage.apply(ops, Change("bench", f"bulk: pages {start}-{start + len(ops) - 1}"))
    for n in range(attachments):
        blob = os.urandom(64 * 1024)
        storage.apply([Put(f"ns{n % 10}/p{n}.files/a{n}.bin", blob, expect=None)], Change("bench", "upload_attachment"))
    for n in range(edits):
        path = f"ns{n % 10}/p{n}.md"
        storage.apply([Put(path, page(n, 1))], Change(f"editor{n % 7}", f"save_page: {path}"))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--edits", type=int, default=500)
    parser.add_argument("--attachments", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-migration-") as folder:
        tmp = Path(folder)
        os.environ.update(CREDENTIALS)
        proc, url = start_moto(tmp / "moto.log")
        try:
            make_bucket(url, BUCKET)
            source = GitStorage(tmp / "source", {})
            seconds, _ = timed(lambda: build(source, args.pages, args.edits, args.attachments))
            revisions = len(source.history(limit=1_000_000))
            files = len(source.list())
            print(f"source: {files} files, {revisions} revisions on git (built in {seconds:.1f} s)")
            s3 = S3Storage(tmp / "s3", {"bucket": BUCKET, "endpoint_url": url, "prefix": "bench"})
            steps: list[tuple[str, str, float]] = []
            steps.append(("export", "git", timed(lambda: export_wiki(source, tmp / "from-git"))[0]))
            baseline = GitStorage(tmp / "baseline", {})
            steps.append(("import", "git", timed(lambda: import_wiki(baseline, tmp / "from-git", tmp / "state-1.json"))[0]))
            steps.append(("import", "s3", timed(lambda: import_wiki(s3, tmp / "from-git", tmp / "state-2.json"))[0]))
            steps.append(("export", "s3", timed(lambda: export_wiki(s3, tmp / "from-s3"))[0]))
            back = GitStorage(tmp / "back", {})
            steps.append(("import", "git (from s3)", timed(lambda: import_wiki(back, tmp / "from-s3", tmp / "state-3.json"))[0]))
            assert back.hashes() == source.hashes(), "the round trip lost something"
            git_time = {kind: seconds for kind, backend, seconds in steps if backend == "git"}
            print(f"{'step':<26}{'seconds':>9}{'files/s':>10}{'revisions/s':>13}{'vs git':>8}")
            for kind, backend, seconds in steps:
                ratio = seconds / git_time[kind]
                print(f"{kind + ' ' + backend:<26}{seconds:>9.2f}{files / seconds:>10.0f}{revisions / seconds:>13.0f}{ratio:>7.1f}x")
            for storage in (source, s3, baseline, back):
                storage.close()
        finally:
            stop_process_group(proc)


if __name__ == "__main__":
    main()
