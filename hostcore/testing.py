"""Test helpers for plugin authors: the storage and search conformance suites.

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
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .errors import Conflict, NotFound, ValidationError
from .search import SearchBackend, SearchDoc, SearchResults
from .storage import ANY, Change, Delete, Put, Storage, blob_hash

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
        result = storage.apply([Put("other/a.md", b"a", expect=None), Delete("notes/a.md", expect=h)], CHANGE)
        assert result == {"other/a.md": h, "notes/a.md": None}
        assert storage.list() == ["other/a.md"]

    def test_delete(self, storage: Storage) -> None:
        h = storage.apply([Put("notes/a.md", b"a", expect=None)], CHANGE)["notes/a.md"]
        with pytest.raises(Conflict):
            storage.apply([Delete("notes/a.md", expect=blob_hash(b"other"))], CHANGE)
        storage.apply([Delete("notes/a.md", expect=h)], CHANGE)
        assert not storage.exists("notes/a.md")
        with pytest.raises((NotFound, Conflict)):
            storage.apply([Delete("notes/a.md")], CHANGE)

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

    @pytest.mark.parametrize("path", ["../x.md", "/abs.md", "a//b.md", "a/./b.md", "a\\b.md", ""])
    def test_rejects_unsafe_paths(self, storage: Storage, path: str) -> None:
        with pytest.raises(ValidationError):
            storage.apply([Put(path, b"x")], CHANGE)
        with pytest.raises((ValidationError, NotFound)):
            storage.read(path)

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


def _search_writer(factory: Any, root: str, index: int, count: int, barrier: Any) -> None:
    backend = factory(Path(root))
    barrier.wait()
    try:
        for n in range(count):
            slug = f"w{index}/page-{n}"
            backend.update([SearchDoc(slug, f"Writer {index} page {n}", f"written by racer{index} number{n}", (), f"h{index}-{n}")])
    finally:
        backend.close()


def search_doc(slug: str, title: str = "", body: str = "", tags: tuple[str, ...] = (), hash: str = "") -> SearchDoc:
    """A SearchDoc with defaults: the title defaults to the slug's last segment."""
    return SearchDoc(slug, title or slug.rsplit("/", 1)[-1], body, tags, hash or f"hash-of-{slug}")


class SearchConformance:
    """The contract every search backend passes. Subclass and define ``make_backend``::

        class TestMySearch(SearchConformance):
            @staticmethod
            def make_backend(root):
                return MySearch(root, {})

    ``make_backend`` must be a staticmethod of a module-level class so worker processes can open
    the same index folder.
    """

    @staticmethod
    def make_backend(root: Path) -> SearchBackend:  # pragma: no cover - subclasses define it
        raise NotImplementedError

    @pytest.fixture
    def backend(self, tmp_path: Path):
        engine = self.make_backend(tmp_path / "index")
        yield engine
        engine.close()

    @staticmethod
    def slugs(results: SearchResults) -> list[str]:
        return [hit.slug for hit in results.hits]

    def search(self, backend: SearchBackend, query: str, **kwargs: Any) -> list[str]:
        kwargs.setdefault("namespaces", None)
        return self.slugs(backend.search(query, **kwargs))

    def test_reopens_existing_index(self, tmp_path: Path) -> None:
        first = self.make_backend(tmp_path / "index")
        first.update([SearchDoc("n/a", "T", "kept", (), "h")])
        first.close()
        again = self.make_backend(tmp_path / "index")
        try:
            assert again.hashes() == {"n/a": "h"}
            assert self.search(again, "kept") == ["n/a"]
        finally:
            again.close()

    def test_paging_arguments_checked(self, backend: SearchBackend) -> None:
        with pytest.raises(ValidationError) as err:
            backend.search("x", namespaces=None, offset=-1)
        assert err.value.field == "offset"
        with pytest.raises(ValidationError) as err:
            backend.search("x", namespaces=None, limit=0)
        assert err.value.field == "limit"

    def test_case_and_accents_are_ignored(self, backend: SearchBackend) -> None:
        backend.update([SearchDoc("n/a", "Crème brûlée", "A dessert", (), "h")])
        assert self.search(backend, "creme") == ["n/a"]
        assert self.search(backend, "BRULEE") == ["n/a"]
        assert "<mark>Crème</mark>" in backend.search("creme", namespaces=None).hits[0].snippet

    def test_long_snippet_is_short_with_ellipsis(self, backend: SearchBackend) -> None:
        backend.update([SearchDoc("n/a", "T", "lead " * 200 + "needle " + "tail " * 200, (), "h")])
        snippet = backend.search("needle", namespaces=None).hits[0].snippet
        assert "<mark>needle</mark>" in snippet
        assert snippet.startswith("…") and snippet.endswith("…")
        assert len(snippet) < 300

    def test_empty_index(self, backend: SearchBackend) -> None:
        assert backend.search("anything", namespaces=None) == SearchResults([], False)
        assert backend.hashes() == {}

    def test_title_match_ranks_first(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("a/many", "Animals", "zebra " * 30 + "and more words about zebras and zebra herds"),
                search_doc("a/titled", "Zebra", "A striped animal of the savanna."),
                search_doc("a/once", "Horses", "Unlike the zebra, a horse has no stripes. " * 3),
                search_doc("a/none", "Lions", "Lions hunt on the savanna."),
            ]
        )
        found = self.search(backend, "zebra")
        assert found[0] == "a/titled"
        assert sorted(found) == ["a/many", "a/once", "a/titled"]
        assert found[0] == self.search(backend, "ZEBRA")[0]

    def test_words_must_all_match(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/both", body="backup and restore of the database"),
                search_doc("n/one", body="backup only"),
                search_doc("n/other", body="restore only"),
            ]
        )
        assert self.search(backend, "backup restore") == ["n/both"]
        assert self.search(backend, "backup AND restore") == ["n/both"]

    def test_phrase(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/exact", body="please restore the backup today"),
                search_doc("n/apart", body="the backup will restore everything"),
            ]
        )
        assert self.search(backend, '"restore the backup"') == ["n/exact"]
        assert sorted(self.search(backend, "restore backup")) == ["n/apart", "n/exact"]

    def test_prefix(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/a", body="deployment notes"),
                search_doc("n/b", body="we deploy on fridays"),
                search_doc("n/c", body="a depot of things"),
            ]
        )
        assert sorted(self.search(backend, "deploy*")) == ["n/a", "n/b"]
        assert sorted(self.search(backend, "dep*")) == ["n/a", "n/b", "n/c"]

    def test_or_and_not(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/pg", body="postgres backup"),
                search_doc("n/my", body="mysql backup"),
                search_doc("n/both", body="postgres and mysql backup"),
                search_doc("n/neither", body="sqlite backup"),
            ]
        )
        assert sorted(self.search(backend, "postgres OR mysql")) == ["n/both", "n/my", "n/pg"]
        assert sorted(self.search(backend, "backup -mysql")) == ["n/neither", "n/pg"]
        assert sorted(self.search(backend, "backup NOT mysql")) == ["n/neither", "n/pg"]
        assert sorted(self.search(backend, "(postgres OR sqlite) -mysql")) == ["n/neither", "n/pg"]

    def test_tags_are_searched_and_filter(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/a", body="server setup", tags=("runbook", "Ops")),
                search_doc("n/b", body="server history", tags=("history",)),
                search_doc("n/c", body="client setup", tags=("runbook",)),
            ]
        )
        assert self.search(backend, "server tag:runbook") == ["n/a"]
        assert sorted(self.search(backend, "tag:runbook")) == ["n/a", "n/c"]
        assert self.search(backend, "tag:ops") == ["n/a"]
        assert self.search(backend, "history") == ["n/b"]
        hit = backend.search("server tag:runbook", namespaces=None).hits[0]
        assert hit.tags == ("runbook", "Ops")
        assert hit.title == "a"

    def test_namespaces_and_exact_paging(self, backend: SearchBackend) -> None:
        docs = [search_doc(f"{ns}/p{i}", body=f"common word {i}") for ns in ("a", "b", "c") for i in range(7)]
        backend.update(docs)
        assert backend.search("common", namespaces=[]).hits == []
        pages, offset = [], 0
        while True:
            res = backend.search("common", namespaces={"a", "c"}, offset=offset, limit=3)
            pages.append(self.slugs(res))
            offset += 3
            if not res.more:
                break
        found = [slug for page in pages for slug in page]
        assert [len(page) for page in pages] == [3, 3, 3, 3, 2]
        assert sorted(found) == sorted(d.slug for d in docs if d.namespace in ("a", "c"))
        assert backend.search("common", namespaces=["b"], limit=7).more is False
        assert backend.search("common", namespaces=["b"], limit=6).more is True

    def test_thousands_of_matches(self, backend: SearchBackend) -> None:
        """An engine may rank a capped set of a broad query's matches: titles still first, paging still exact."""
        docs = [
            search_doc(f"{'ab'[i % 2]}/p{i}", "Common notes" if i % 500 == 0 else "Notes", f"common words {i} " + "filler " * (i % 7))
            for i in range(2500)
        ]
        for first in range(0, len(docs), 500):
            backend.update(docs[first : first + 500])
        titled = {"a/p0", "a/p500", "a/p1000", "a/p1500", "a/p2000"}
        assert set(self.search(backend, "common", limit=20)[:5]) == titled
        assert set(self.search(backend, "common notes", limit=20)[:5]) == titled
        assert set(self.search(backend, "comm* -1500", namespaces=["a"], limit=20)[:4]) == titled - {"a/p1500"}
        for namespaces, expected in ((None, {d.slug for d in docs}), (["b"], {d.slug for d in docs if d.namespace == "b"})):
            found, offset, more = [], 0, True
            while more:
                res = backend.search("common", namespaces=namespaces, offset=offset, limit=300)
                found += self.slugs(res)
                offset, more = offset + 300, res.more
            assert len(found) == len(expected) and set(found) == expected
        tail = backend.search("common", namespaces=None, offset=2495, limit=10)
        assert len(tail.hits) == 5 and tail.more is False
        assert backend.search("common", namespaces=None, offset=2490, limit=9).more is True

    def test_snippet_marks_and_escapes(self, backend: SearchBackend) -> None:
        body = "Intro. <script>alert(1)</script> & the needle is <b>here</b>. " + "filler words " * 60
        backend.update([search_doc("n/x", "Unrelated", body), search_doc("n/t", "Needle & <i>thread</i>", "nothing")])
        hits = {hit.slug: hit.snippet for hit in backend.search("needle OR alert", namespaces=None).hits}
        snippet = hits["n/x"]
        assert "<mark>needle</mark>" in snippet and "<mark>alert</mark>" in snippet
        assert "<script>" not in snippet and "&lt;script&gt;" in snippet
        assert "<b>" not in snippet and "&amp;" in snippet
        assert len(snippet) < 600
        assert "<mark>Needle</mark>" in hits["n/t"] and "<i>" not in hits["n/t"]
        without_marks = snippet.replace("<mark>", "").replace("</mark>", "")
        assert "<" not in without_marks

    def test_update_replaces_and_remove(self, backend: SearchBackend) -> None:
        backend.update([search_doc("n/a", body="old words", hash="h1"), search_doc("n/b", body="old words", hash="h2")])
        backend.update([search_doc("n/a", body="new words", hash="h3")])
        assert self.search(backend, "old") == ["n/b"]
        assert self.search(backend, "new") == ["n/a"]
        assert backend.hashes() == {"n/a": "h3", "n/b": "h2"}
        backend.update(removed=["n/b", "n/missing"])
        assert self.search(backend, "words") == ["n/a"]
        assert backend.hashes() == {"n/a": "h3"}
        backend.update([search_doc("n/c", body="words")], removed=["n/a"])
        assert backend.hashes() == {"n/c": "hash-of-n/c"}
        backend.clear()
        assert backend.hashes() == {}
        assert self.search(backend, "words") == []

    def test_write_visible_to_other_instance(self, backend: SearchBackend, tmp_path: Path) -> None:
        other = self.make_backend(tmp_path / "index")
        try:
            assert self.search(other, "fresh") == []
            backend.update([search_doc("n/a", body="fresh words")])
            assert self.search(other, "fresh") == ["n/a"]
            backend.update(removed=["n/a"])
            assert self.search(other, "fresh") == []
        finally:
            other.close()

    @pytest.mark.parametrize(
        "query",
        ["", "   ", "-word", "NOT word", "word OR", "OR word", "a OR OR b", "word NOT", "(-a -b)", "word OR -other"],
    )
    def test_syntax_errors(self, backend: SearchBackend, query: str) -> None:
        backend.update([search_doc("n/a", body="word other")])
        with pytest.raises(ValidationError) as err:
            backend.search(query, namespaces=None)
        assert err.value.field == "query"
        assert err.value.message

    @pytest.mark.parametrize(
        "query",
        ['word"', '"word', "word*", "word:", ":word", "(word", "word)", ")word(", "wo-rd", "word -", "**", "word (",
         'tag:"', "word ! ? ; \\ / ^ ~ [ ] { } < > & |", "tag:", "word AND"],
    )
    def test_odd_characters_degrade(self, backend: SearchBackend, query: str) -> None:
        backend.update([search_doc("n/a", body="word wo rd")])
        try:
            assert self.search(backend, query) in ([], ["n/a"])
        except ValidationError as err:  # nothing left to search for is a fair answer
            assert err.field == "query"
        assert self.search(backend, "word " + query) == ["n/a"]

    def test_concurrent_writer_processes(self, backend: SearchBackend) -> None:
        backend.update([search_doc("base/page", body="racer0 base")])
        assert self.search(backend, "racer0") == ["base/page"]
        ctx = multiprocessing.get_context("spawn")
        writers, count = 4, 5
        barrier = ctx.Barrier(writers)
        procs = [
            ctx.Process(target=_search_writer, args=(type(self).make_backend, str(backend.root), i, count, barrier))
            for i in range(writers)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=120)
        assert [proc.exitcode for proc in procs] == [0] * writers
        expected = {f"w{i}/page-{n}": f"h{i}-{n}" for i in range(writers) for n in range(count)}
        assert backend.hashes() == {**expected, "base/page": "hash-of-base/page"}
        for i in range(writers):
            assert sorted(self.search(backend, f"racer{i}", namespaces=[f"w{i}"])) == sorted(
                f"w{i}/page-{n}" for n in range(count)
            )
        assert len(self.search(backend, "written", limit=100)) == writers * count


# --- a real server for end-to-end tests ------------------------------------------------------
#
# The same way an operator runs hostcore: the CLI makes the instance and its tokens, and
# ``hostcore serve`` (gunicorn) answers on a free loopback port in a process group of its own.

STARTUP_TIMEOUT = 30.0


def hostcore_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for hostcore subprocesses: this one without HOSTCORE_* variables, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HOSTCORE_")}, **(extra or {})}


def hostcore_cmd() -> list[str]:
    """The `hostcore` console script of the running interpreter's environment."""
    beside = Path(sys.executable).with_name("hostcore")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("hostcore")
    if found:
        return [found]
    return [sys.executable, "-c", "from hostcore.cli import run; run()"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(instance: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hostcore --instance DIR ARGS`` (``env``: extra variables) and return the completed process."""
    env = hostcore_env(env)
    proc = subprocess.run(
        [*hostcore_cmd(), "--instance", str(instance), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hostcore {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def create_token(
    instance: Path,
    name: str,
    scopes: tuple[str, ...] | list[str],
    namespaces: tuple[str, ...] | list[str] = (),
    env: dict[str, str] | None = None,
) -> str:
    """Create a token with the real CLI and return it."""
    args = ["token", "create", "--name", name]
    for s in scopes:
        args += ["--scope", s]
    for ns in namespaces:
        args += ["--namespace", ns]
    out = cli(instance, *args, env=env).stdout.strip()
    assert re.fullmatch(r"hc_\S+", out), f"token create printed more than the token: {out!r}"
    return out


def _wait_until_up(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"hostcore serve exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(base + "/.well-known/oauth-protected-resource/_/mcp", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"hostcore serve did not answer within {STARTUP_TIMEOUT}s ({last}):\n{log.read_text(errors='replace')}")


def stop_process_group(proc: subprocess.Popen[Any]) -> None:
    """TERM the whole process group (gunicorn arbiter and workers), KILL it if it lingers."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    # The arbiter may be gone while a worker still lingers: sweep the group either way.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)


def start_server(
    instance: Path, workers: int = 2, log: Path | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str, int, Path]:
    """Start ``hostcore serve`` in its own process group on a free loopback port; wait until it answers.

    Returns (process, base URL, port, log file). ``env`` adds environment variables (e.g. PYTHONPATH
    for an unpackaged plugin). Stop it with :func:`stop_process_group`.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = log or instance.parent / f"serve-{port}.log"
    env = hostcore_env({**(env or {}), "HOSTCORE_PUBLIC_URL": base})
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*hostcore_cmd(), "serve", "--instance", str(instance), "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    try:
        _wait_until_up(proc, base, log)
    except BaseException:
        stop_process_group(proc)
        raise
    return proc, base, port, log


