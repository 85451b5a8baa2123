"""Document search: the embedder seam, the passage index (keyword + vectors, fused), and the tools
over it (search_attachments, similar_pages, hybrid search of pages, fetch of attachments).

Real git storage, real SQLite, real extraction subprocesses and the real wordllama model (loaded
once per test process); a small hashing embedder where a test is about the seam, not meaning.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from click.testing import CliRunner

from hostcore import Change, Embedder, Put, StartupError, Vectors, create_app, hookimpl, unit_rows
from hostcore.cli import main
from hostcore.domain.principal import SYSTEM
from hostcore.errors import Forbidden, NotFound, Unavailable, ValidationError
from hostcore.host.host import Host
from hostcore.indexes.passages import CHUNK_CHARS, excerpt, listed_documents, nearest_first, query_words, split_passages
from hostcore.indexes.vectors import HEADER, dot_products, quantise, record_type
from hostcore.seams.search import SearchBackend
from hostcore.service.search import SNIPPET_CHARS

from .conftest import principal

EMBEDDED = {"PLUGINS": ["git", "tokens", "sqlite", "docs", "wordllama"], "STORAGE": "git", "SEARCH": "sqlite",
            "EMBEDDER": "wordllama"}  # fmt: skip
KITCHEN = (
    b"Quarterly revenue grew by four percent, driven by exports.\n\n"
    b"The kitten chased a mouse around the kitchen until both were worn out.\n\n"
    b"Invoices must be paid within thirty days of receipt."
)
TAX = b"Remember the fiscal deadline for submitting income returns to the revenue service."


class HashingEmbedder(Embedder):
    """Words hashed into 32 buckets: deterministic, no model."""

    name = "hashing"
    dimensions = 32

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions))
        for row, text in enumerate(texts):
            for word in query_words(text):
                out[row, sum(map(ord, word)) % self.dimensions] += 1
        return unit_rows(out)


class HashingPlugin:
    __name__ = "hashing_plugin"

    @hookimpl
    def register_embedders(self, register: Callable[[type], None]) -> None:
        register(HashingEmbedder)


def make_host(instance: Path, **config: object) -> Host:
    plugins = [HashingPlugin()] if config.get("EMBEDDER") == "hashing" else []
    return create_app({**EMBEDDED, **config}, instance_path=instance, plugins=plugins).extensions["hostcore"]


def upload(wiki, slug: str, filename: str, data: bytes) -> dict:
    ticket = wiki.upload_attachment(slug, filename)
    return wiki.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], data)


def indexed(host: Host) -> None:
    """Every change so far taken in by the passage index and indexed."""
    host.indexes.wait()


def pending(host: Host) -> int:
    """The documents the passage index still has to index, every change so far taken in."""
    return int(host.indexes.status("passage index")["pending"])


def docs_instance(instance: Path) -> Iterator[Host]:
    """The embedded default: notes/plan with report.txt, team/tax with memo.txt, a few pages."""
    host = make_host(instance)
    admin = host.wiki(SYSTEM)
    for name in ("notes", "team"):
        admin.save_namespace(name, title=name.title())
    admin.save_page("notes/plan", title="Plan", body="Our plan for the garden: tomatoes and beans in raised beds.")
    admin.save_page("notes/cats", title="Cats", body="Felines sleep most of the day and groom their fur.")
    admin.save_page("notes/kittens", title="Kittens", body="A young cat naps often and licks its coat clean.")
    admin.save_page("team/tax", title="Taxes", body="The quarterly filing deadline is in April.")
    upload(admin, "notes/plan", "report.txt", KITCHEN)
    upload(admin, "team/tax", "memo.txt", TAX)
    indexed(host)
    yield host
    host.close()


@pytest.fixture
def doc_host(tmp_path: Path) -> Iterator[Host]:
    """:func:`docs_instance` for a test that changes it."""
    yield from docs_instance(tmp_path / "instance")


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """:func:`docs_instance` shared by the tests that only read."""
    yield from docs_instance(tmp_path_factory.mktemp("docs") / "instance")


# --- the seam -----------------------------------------------------------------------------------


def test_hook_register_embedders(tmp_path):
    host = make_host(tmp_path / "a", EMBEDDER="hashing")
    try:
        assert host.embedders["hashing"] is HashingEmbedder and host.embedders["wordllama"].dimensions == 256
        assert host.passages is not None and isinstance(host.passages.embedder, HashingEmbedder)
        assert host.passages.embedder.folder == tmp_path / "a"  # for files derived from its model
        assert {"search_attachments", "similar_pages"} <= set(host.tools)
    finally:
        host.close()
    with pytest.raises(StartupError, match="EMBEDDER: no embedder named 'nope' is loaded"):
        make_host(tmp_path / "b", EMBEDDER="nope")

    class Twice:
        __name__ = "twice"

        @hookimpl
        def register_embedders(self, register):
            register(HashingEmbedder)

    with pytest.raises(StartupError, match="two plugins register an embedder named 'hashing'"):
        create_app({**EMBEDDED, "EMBEDDER": "hashing"}, instance_path=tmp_path / "c", plugins=[HashingPlugin(), Twice()])

    class NotAnEmbedder:
        __name__ = "wrong"

        @hookimpl
        def register_embedders(self, register):
            register(dict)

    with pytest.raises(StartupError, match="register_embedders: .* must be a subclass of Embedder with a name"):
        create_app(EMBEDDED, instance_path=tmp_path / "d", plugins=[NotAnEmbedder()])


def test_without_an_embedder_attachments_are_found_by_keyword(tmp_path):
    """No EMBEDDER: search_attachments stays, by keyword alone (on the fs storage, which has no
    versions: what a search answers is checked against the files themselves)."""
    host = make_host(tmp_path / "instance", EMBEDDER="", PLUGINS=["fs", "tokens", "sqlite", "docs"], STORAGE="fs")
    try:
        assert "search_attachments" in host.tools and "similar_pages" not in host.tools
        admin, reader = host.wiki(SYSTEM), host.wiki(principal("read"))
        admin.save_namespace("notes", title="Notes")
        admin.save_page("notes/plan", body="The plan.")
        admin.save_page("notes/other", body="Another page.")
        upload(admin, "notes/plan", "report.txt", KITCHEN)
        upload(admin, "notes/other", "memo.txt", TAX)
        indexed(host)
        found = reader.search_attachments("invoices")
        assert [(h["slug"], h["filename"]) for h in found["hits"]] == [("notes/plan", "report.txt")]
        assert "<mark>Invoices</mark>" in found["hits"][0]["excerpt"]
        assert found["indexed"] == 2 and found["pending"] == 0  # attachments only: pages are the search backend's
        assert reader.search_attachments("xylophone")["hits"] == []
        assert reader.search_attachments("small cat hunting a rodent")["hits"] == []  # meaning needs an embedder
        assert "/_/files/notes/plan/report.txt" in [r["id"] for r in reader.search("invoices")["results"]]
        assert host.wiki(SYSTEM).health()["passages"]["embedder"] == ""
        with pytest.raises(Unavailable, match="EMBEDDER is empty"):
            reader.similar_pages("notes/plan")
        admin.delete_page("notes/plan")  # no page event wakes the thread without an embedder: the search checks storage
        assert reader.search_attachments("invoices")["hits"] == []
        assert reader.search("invoices")["results"] == []
    finally:
        host.close()
    instance = tmp_path / "instance"
    (instance / "hostcore.toml").write_text('PLUGINS = ["fs", "tokens", "sqlite", "docs"]\nSTORAGE = "fs"\nSEARCH = "sqlite"\n')
    result = CliRunner().invoke(main, ["reindex", "--instance", str(instance)])
    assert result.exit_code == 0 and "indexed the passages of 1 attachments" in result.stdout, result.output
    result = CliRunner().invoke(main, ["status", "--instance", str(instance)])
    assert "passages: keyword only (EMBEDDER is empty), 1 documents indexed (1 passages), 0 pending" in result.output


def test_wordllama_embeds_offline_from_its_wheel():
    from hostcore_wordllama import WordLlamaEmbedder

    vectors = WordLlamaEmbedder().embed(["a feline rested on a rug", "a cat sat on the mat", "tax filing deadline"])
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_loading_wordllama_leaves_the_root_logger_alone():
    """wordllama's inference module calls logging.basicConfig(level=INFO) when imported: the
    embedder's load does not import it, and loading its own model (``load_model``, which does)
    must not give the root logger a handler at INFO, even for the moment of the import
    (other threads' INFO lines went to the server log unformatted). A fresh interpreter, since the
    import happens once; the probe records whether each basicConfig call would configure."""
    probe = (
        "import logging\n"
        "root, effective, original = logging.getLogger(), [], logging.basicConfig\n"
        "def spy(**kwargs):\n"
        "    effective.append(not root.handlers)\n"
        "    original(**kwargs)\n"
        "logging.basicConfig = spy\n"
        "import sys\n"
        "from hostcore_wordllama import WordLlamaEmbedder, load_model\n"
        "WordLlamaEmbedder().load()\n"
        "imported = 'wordllama' in sys.modules\n"
        "load_model()\n"
        "print(len(effective), any(effective), len(root.handlers), logging.getLevelName(root.level), imported)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    calls, configured, handlers, level, imported = out.stdout.split()
    assert imported == "False", "the embedder's load reads the model's files without importing wordllama's code"
    assert int(calls) >= 1, "wordllama no longer calls basicConfig: the guard may go"
    assert (configured, handlers, level) == ("False", "0", "WARNING"), out.stdout + out.stderr


# --- passages, excerpts -------------------------------------------------------------------------


def test_passages_keep_their_offsets_and_size():
    text = "".join(f"Paragraph {i}. " + "word " * (30 + i * 7) + "\n\n" for i in range(20))
    pieces = split_passages(text)
    assert len(pieces) > 3
    for start, piece in pieces:
        assert len(piece) <= CHUNK_CHARS and text[start:].startswith(piece)
    assert " ".join(p for _, p in pieces).split() == text.split()


def test_excerpts_are_escaped_with_marks_around_the_words():
    text = "Before <script>alert(1)</script> the Invoice & receipt, then more invoices."
    assert excerpt(text, query_words("the invoice")) == (
        "Before &lt;script&gt;alert(1)&lt;/script&gt; the <mark>Invoice</mark> &amp; receipt, then more invoices."
    )
    long = "filler " * 200 + "needle here " + "filler " * 200
    cut = excerpt(long, ["needle"])
    assert cut.startswith("…") and cut.endswith("…") and "<mark>needle</mark>" in cut and len(cut) < 400


# --- search_attachments -------------------------------------------------------------------------


def test_finds_a_passage_by_an_exact_word_and_by_a_paraphrase(docs):
    reader = docs.wiki(principal("read"))
    hit = reader.search_attachments("invoices")["hits"][0]
    assert (hit["slug"], hit["filename"]) == ("notes/plan", "report.txt")
    assert "<mark>Invoices</mark>" in hit["excerpt"]
    window = reader.read_attachment("notes/plan", "report.txt", offset=hit["offset"], limit=200)
    assert "Invoices must be paid" in window["body"]
    # No word in common with the passage (whose three subjects share its one vector, so the
    # paraphrase must be close to clear the floor: "small cat hunting a rodent" is not, at 0.22).
    found = reader.search_attachments("a cat hunting mice at home")
    assert found["hits"][0]["filename"] == "report.txt" and "kitten" in found["hits"][0]["excerpt"]
    assert found["indexed"] == 6 and found["pending"] == 0
    taxes = reader.search_attachments("when must taxes be filed")
    assert taxes["hits"][0]["filename"] == "memo.txt"


def test_a_query_near_nothing_finds_nothing(docs):
    """A word no document holds, on a subject none is about, finds nothing: by keyword it cannot,
    and by meaning no passage clears the embedder's floor (an answer of everything with tiny
    scores would leave no client able to tell a match from noise)."""
    reader = docs.wiki(principal("read"))
    for query in ("xylophone", "zeppelin", "origami cranes"):
        assert reader.search_attachments(query)["hits"] == [], query
        found = reader.search(query)
        assert found["hits"] == [] and found["results"] == [], query
    assert reader.search_attachments("kitten")["hits"][0]["filename"] == "report.txt"


def test_a_deleted_page_or_attachment_is_never_found(doc_host, monkeypatch):
    """Until the background thread drops them the index still holds a deleted document's passages:
    a search leaves out what storage no longer holds."""
    index = doc_host.passages
    monkeypatch.setattr(index, "kick", lambda: None)  # the index stays as it was before the deletes
    admin, reader = doc_host.wiki(SYSTEM), doc_host.wiki(principal("read"))
    assert "report.txt" in [h["filename"] for h in reader.search_attachments("invoices")["hits"]]
    assert "notes/cats" in [r["id"] for r in reader.search("resting feline grooming")["results"]]
    admin.delete_page("notes/plan")  # and its attachment report.txt with it
    admin.delete_page("notes/cats")
    assert pending(doc_host) == 3  # still indexed
    assert "report.txt" not in [h["filename"] for h in reader.search_attachments("invoices kitten")["hits"]]
    results = [r["id"] for r in reader.search("resting feline grooming")["results"]]
    assert "notes/cats" not in results and "/_/files/notes/plan/report.txt" not in results
    assert "notes/cats" not in [p["slug"] for p in reader.similar_pages("notes/kittens")["pages"]]
    # What the index follows along the changes is what a listing of storage finds.
    assert index.stored(doc_host.storage.version()) == listed_documents(doc_host, pages=True)


def test_an_index_that_reflects_storage_finds_without_asking_storage(doc_host, monkeypatch):
    """While the index reflects the storage's version and nothing waits, every document it holds
    is one storage holds: a search by meaning asks storage about none of them (a worker that does
    not follow storage's documents would look each up). Once storage moved on, it asks again."""
    index, storage = doc_host.passages, doc_host.storage
    indexed(doc_host)
    monkeypatch.setattr(index, "kick", lambda: None)
    monkeypatch.setattr(index, "_stored", None)  # as in a worker that does not index
    asked: list[str] = []
    exists = storage.exists
    monkeypatch.setattr(storage, "exists", lambda path: asked.append(path) or exists(path))
    reader = doc_host.wiki(principal("read"))
    assert "notes/cats" in [p["slug"] for p in reader.similar_pages("notes/kittens")["pages"]] and asked == []
    doc_host.wiki(SYSTEM).delete_page("notes/cats")
    assert "notes/cats" not in [p["slug"] for p in reader.similar_pages("notes/kittens")["pages"]]
    assert "notes/cats.md" in asked


def test_only_namespaces_the_caller_may_read(docs):
    team = docs.wiki(principal("read", namespaces=["team"]))
    assert {h["slug"] for h in team.search_attachments("kitten mouse kitchen")["hits"]} <= {"team/tax"}
    assert [h["slug"] for h in docs.wiki(principal("read")).search_attachments("fiscal", namespace="team")["hits"]] == ["team/tax"]
    with pytest.raises(Forbidden):
        team.search_attachments("kitten", namespace="notes")
    with pytest.raises(ValidationError, match="empty"):
        team.search_attachments("   ")


def test_indexing_is_off_the_request_path_in_bounded_steps(tmp_path, monkeypatch):
    host = make_host(tmp_path / "instance", EMBEDDER="hashing")
    index = host.passages
    monkeypatch.setattr(index, "kick", lambda: None)  # the background thread never comes: the test takes the steps
    index.wait()
    try:
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        for i in range(7):
            admin.save_page(f"notes/p{i}", body=f"page number {i}")
        status = host.indexes.status("passage index")
        assert status["pending"] == 7 and status["documents"] == 0
        assert index.step(limit=3) == 4
        assert index.step(limit=3) == 1
        assert index.status()["pending"] == 1
        assert index.step(limit=3) == 0 and index.status()["pending"] == 0
        admin.delete_page("notes/p0")
        assert pending(host) == 1
        index.step()
        assert index.status() == {"embedder": "hashing", "documents": 6, "passages": 6, "pending": 0, "per_second": 0.0}
    finally:
        host.close()


def stepping_hosts(instance: Path, monkeypatch: pytest.MonkeyPatch, pages: int) -> tuple[Host, Host]:
    """Two hosts on one instance, as two workers are, whose passage steps the test takes; ``pages``
    pages saved and handed to the index, none indexed yet."""
    hosts = (make_host(instance, EMBEDDER="hashing"), make_host(instance, EMBEDDER="hashing"))
    for host in hosts:
        monkeypatch.setattr(host.passages, "kick", lambda: None)
        host.passages.wait()
    admin = hosts[0].wiki(SYSTEM)
    admin.save_namespace("notes", title="Notes")
    for i in range(pages):
        admin.save_page(f"notes/p{i:02d}", body=f"page number {i}")
    assert pending(hosts[0]) == pages and pending(hosts[1]) == pages
    return hosts


def during_embedding(host: Host, monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], None]) -> None:
    """Run ``meanwhile`` once, in the middle of ``host``'s next step (its documents taken and read, before its write)."""
    embed, ran = host.passages.embedder.embed, []

    def embed_then(texts):
        if not ran:
            ran.append(meanwhile())
        return embed(texts)

    monkeypatch.setattr(host.passages.embedder, "embed", embed_then)


def index_rows(instance: Path) -> tuple[dict[str, str], list[tuple[int, str]], int]:
    """passages.sqlite's documents (path -> hash), passages (id, path) and claims left."""
    db = sqlite3.connect(instance / "passages.sqlite")
    try:
        return (dict(db.execute("SELECT path, hash FROM docs")), db.execute("SELECT id, path FROM chunks").fetchall(),
                db.execute("SELECT count(*) FROM taken").fetchone()[0])  # fmt: skip
    finally:
        db.close()


def test_steps_of_two_processes_take_different_documents(tmp_path, monkeypatch):
    a, b = hosts = stepping_hosts(tmp_path / "instance", monkeypatch, pages=12)
    try:
        seen: list[int] = []
        during_embedding(a, monkeypatch, lambda: seen.append(b.passages.step(limit=100)))  # while a's 5 are taken
        assert a.passages.step(limit=5) == 0
        assert seen == [5]  # b indexed the 7 others and left a's 5 pending
        docs, chunks, claims = index_rows(tmp_path / "instance")
        assert sorted(docs) == [f"notes/p{i:02d}.md" for i in range(12)] and claims == 0
        assert sorted(path for _, path in chunks) == sorted(docs)  # each indexed once: one passage a page
        assert len({slot for slot, _ in chunks}) == 12  # every passage its own vector record
        found = {page["slug"] for page in a.wiki(SYSTEM).similar_pages("notes/p03", limit=11)["pages"]}
        assert found == {f"notes/p{i:02d}" for i in range(12) if i != 3}  # every vector where its passage says
    finally:
        for host in hosts:
            host.close()


def test_a_step_leaves_a_document_another_step_indexed_since(tmp_path, monkeypatch):
    """The page is saved again while a's step embeds its old text, and b (whose step took it when
    a's claim lapsed) indexes the new one first: a's write must not put the old text back."""
    a, b = hosts = stepping_hosts(tmp_path / "instance", monkeypatch, pages=1)
    instance = tmp_path / "instance"

    def save_again_and_index_elsewhere() -> int:
        wiki = b.wiki(SYSTEM)
        wiki.save_page("notes/p00", body="felines and kittens, the second text", basehash=wiki.read_page("notes/p00")["hash"])
        assert pending(b) == 1
        with closing(sqlite3.connect(instance / "passages.sqlite")) as db, db:
            db.execute("UPDATE taken SET until = 0")  # a's claim lapsed
        return b.passages.step()

    try:
        during_embedding(a, monkeypatch, save_again_and_index_elsewhere)
        assert a.passages.step() == 0
        docs, chunks, claims = index_rows(instance)
        assert docs == {"notes/p00.md": a.storage.hash("notes/p00.md")} and len(chunks) == 1 and claims == 0
        assert pending(a) == 0
    finally:
        for host in hosts:
            host.close()


def test_a_claim_holds_while_its_process_lives_and_lapses_when_it_dies(tmp_path, monkeypatch):
    a, b = hosts = stepping_hosts(tmp_path / "instance", monkeypatch, pages=3)
    instance = tmp_path / "instance"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def claim(pid: int, until: float) -> None:
        with closing(sqlite3.connect(instance / "passages.sqlite")) as db, db:
            db.execute("DELETE FROM taken")
            db.execute("INSERT INTO taken (path, pid, until) SELECT path, ?, ? FROM pending", (pid, until))

    try:
        claim(alive.pid, time.time() + 60)
        assert a.passages._step() == (0, 3)  # another live process's: not taken
        claim(alive.pid, time.time() - 1)
        assert a.passages._step() == (3, 0)  # its claim lapsed
        wiki = b.wiki(SYSTEM)
        for i in range(3):
            wiki.save_page(f"notes/p{i:02d}", body=f"page {i}, again", basehash=wiki.read_page(f"notes/p{i:02d}")["hash"])
        assert pending(b) == 3
        claim(dead.pid, time.time() + 60)
        assert b.passages._step() == (3, 0)  # a dead process's claims are taken over at once
        assert index_rows(instance)[2] == 0
    finally:
        alive.kill()
        alive.wait()
        for host in hosts:
            host.close()


CATCH_UP_PROCESS = """
import json, sys
from hostcore.app import create_app
from hostcore.indexes.passages import PassageIndex
written = []
write = PassageIndex._write
def counted(self, made, vectors, held):
    with self.db.guard() as db:
        now = self._lookup(db, "SELECT path, hash FROM docs WHERE path IN", [m[0] for m in made])
    write(self, made, vectors, held)
    with self.db.guard() as db:
        after = self._lookup(db, "SELECT path, hash FROM docs WHERE path IN", [m[0] for m in made])
    written.extend(path for path, *_ in made if after.get(path) != now.get(path))
PassageIndex._write = counted
PassageIndex.kick = lambda self: None
host = create_app(json.loads(sys.argv[1]), instance_path=sys.argv[2]).extensions["hostcore"]
print("ready", flush=True)
sys.stdin.readline()
host.passages.catch_up()
print(json.dumps(written), flush=True)
host.close()
"""


ROUND_PROCESS = """
import json, sys, time
from hostcore.app import create_app
from hostcore.indexes.passages import PassageIndex
spans = []
step = PassageIndex._step
def timed(self, limit=256):
    start = time.monotonic()
    out = step(self, limit)
    spans.append((start, time.monotonic(), out[0]))
    return out
PassageIndex._step = timed
host = create_app(json.loads(sys.argv[1]), instance_path=sys.argv[2]).extensions["hostcore"]
print("ready", flush=True)
sys.stdin.readline()
host.passages.kick()
host.passages.wait()
print(json.dumps(spans), flush=True)
host.close()
"""


def imported(tmp_path: Path, pages: int) -> Path:
    """An instance whose ``pages`` pages came in one commit, none indexed yet."""
    instance = tmp_path / "instance"
    host = make_host(instance)
    host.passages.kick = lambda: None
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", title="Notes")
    host.storage.apply(
        [Put(f"notes/p{i:03d}.md", f"# Page {i}\n\n".encode() + b"Gardens, rivers and ledgers. " * (20 + i % 40))
         for i in range(pages)],
        Change("operator", "import"),
    )  # fmt: skip
    assert pending(host) == pages
    host.close()
    return instance


def run_side_by_side(script: str, instance: Path) -> list[Any]:
    """What ``script`` prints last in each of two real processes started on ``instance``, both told
    to go once both are ready."""
    command = [sys.executable, "-c", script, json.dumps(EMBEDDED), str(instance)]
    procs = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        return [json.loads(proc.stdout.readline()) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()  # closes its pipes


def test_two_processes_catch_up_side_by_side(tmp_path):
    """Two real processes (as ``hostcore reindex`` beside a server) embed one instance's pages at
    once with the real model: each indexes its own share, every page exactly once."""
    instance = imported(tmp_path, 1200)
    shares = run_side_by_side(CATCH_UP_PROCESS, instance)
    assert all(len(share) >= 256 for share in shares), [len(share) for share in shares]  # a step each at least
    assert sorted(shares[0] + shares[1]) == sorted(f"notes/p{i:03d}.md" for i in range(1200))  # each once
    docs, chunks, claims = index_rows(instance)
    assert len(docs) == 1200 and claims == 0 and len({slot for slot, _ in chunks}) == len(chunks)


def test_background_rounds_of_two_processes_take_turns(tmp_path):
    """The background threads of two real processes (hostcore serve's workers) embed one at a
    time: no step of one runs while a step of the other does, so the embedding takes one core of
    the machine and the other is left to the requests; every page is indexed."""
    instance = imported(tmp_path, 1200)
    spans = run_side_by_side(ROUND_PROCESS, instance)
    working = [[(start, end) for start, end, took in mine if took] for mine in spans]
    assert sum(len(mine) for mine in working) >= 5, spans  # 1,200 pages: five steps of 256
    for start, end in working[0]:
        for other_start, other_end in working[1]:
            assert end <= other_start or other_end <= start, (start, end, other_start, other_end)
    docs, chunks, claims = index_rows(instance)
    assert len(docs) == 1200 and claims == 0 and len({slot for slot, _ in chunks}) == len(chunks)


class LoadingEmbedder(HashingEmbedder):
    """Records which thread loads its model, and whether anything was embedded before."""

    name = "loading"
    loads: ClassVar[list[tuple[str, int]]] = []
    embedded = 0

    def load(self) -> None:
        type(self).loads.append((threading.current_thread().name, self.embedded))

    def embed(self, texts: list[str]) -> Vectors:
        type(self).embedded += len(texts)
        return super().embed(texts)


def test_a_starting_wiki_loads_the_model_in_the_background_before_any_save(tmp_path):
    """Loading a model holds the interpreter for a while (WordLlama's ~0.4 s): left to the first
    save's indexing, it stalled every request of a worker under load; done as the worker starts,
    it slowed the start. With nothing to embed, a thread of the passage index loads it
    PRELOAD_SECONDS after the wiki starts, once, and a command that never embeds (start=False)
    never loads it."""

    class Plugin:
        __name__ = "loading_plugin"

        @hookimpl
        def register_embedders(self, register: Callable[[type], None]) -> None:
            register(LoadingEmbedder)

    LoadingEmbedder.loads.clear()
    instance = tmp_path / "instance"
    quiet = create_app({**EMBEDDED, "EMBEDDER": "loading"}, instance_path=instance, plugins=[Plugin()])
    host = quiet.extensions["hostcore"]
    try:
        deadline = time.monotonic() + 10
        while not LoadingEmbedder.loads and time.monotonic() < deadline:
            time.sleep(0.01)
        assert LoadingEmbedder.loads == [("passage index: model", 0)]  # its thread, before any embedding
        host.wiki(SYSTEM).save_namespace("notes", title="Notes")
        host.wiki(SYSTEM).save_page("notes/a", body="a page")
        indexed(host)
        assert LoadingEmbedder.embedded > 0 and len(LoadingEmbedder.loads) == 1
    finally:
        host.close()
    LoadingEmbedder.loads.clear()
    from hostcore.app import build_host

    build_host(instance, {**EMBEDDED, "EMBEDDER": "loading"}, [Plugin()], start=False).close()
    assert LoadingEmbedder.loads == []


def test_a_stream_of_saves_is_indexed_once_per_round(tmp_path):
    """While changes keep coming, a round of indexing starts at most every round_seconds: a page
    saved again and again meanwhile is embedded once for the round, in its last version."""
    host = make_host(tmp_path / "instance", EMBEDDER="hashing")
    passages = host.passages
    assert passages is not None
    embedded: list[str] = []  # every text the embedder was given
    embed = passages.embedder.embed

    def recording(texts: list[str]) -> Vectors:
        embedded.extend(texts)
        return embed(texts)

    passages.embedder.embed = recording  # type: ignore[method-assign]
    try:
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        page = admin.save_page("notes/p", body="version zero")
        indexed(host)
        passages.round_seconds = 60.0
        page = admin.save_page("notes/p", body="version one", basehash=page["hash"])  # after a quiet spell: at once
        for _ in range(100):
            if pending(host) == 0:
                break
            time.sleep(0.05)
        assert pending(host) == 0 and embedded[-1].endswith("version one")
        for n in ("two", "three", "four"):
            page = admin.save_page("notes/p", body=f"version {n}", basehash=page["hash"])
        host.indexes.follower.wait()  # the background catch-up handed the changes over and asked for a round
        time.sleep(0.3)
        assert pending(host) == 1  # the next round is due a minute after the last one started
        before = len(embedded)
        passages.wait()  # takes the due round now
        assert pending(host) == 0 and [t.rsplit(" ", 1)[1] for t in embedded[before:]] == ["four"]
    finally:
        host.close()


def test_moves_deletes_and_restores_follow_storage(doc_host):
    admin = doc_host.wiki(SYSTEM)
    plan = admin.read_page("notes/plan")
    admin.move_page("notes/plan", "team/plan", plan["hash"])
    indexed(doc_host)
    hit = doc_host.wiki(principal("read")).search_attachments("invoices")["hits"][0]
    assert hit["slug"] == "team/plan" and hit["attachment_url"] == "/_/files/team/plan/report.txt"
    admin.delete_page("team/plan")
    indexed(doc_host)
    assert all(h["filename"] != "report.txt" for h in admin.search_attachments("invoices")["hits"])
    admin.restore_page("team/plan")
    indexed(doc_host)
    assert admin.search_attachments("invoices")["hits"][0]["slug"] == "team/plan"



def test_pending_zero_means_the_results_saw_every_document(doc_host, monkeypatch):
    """Indexing runs beside a search: when it finishes during the search, the answer must not say
    nothing is pending while its hits predate the new document (a client waits for pending 0 and
    then trusts the hits; an e2e run found the zebrafish sheet missing that way)."""
    index = doc_host.passages
    assert index is not None
    monkeypatch.setattr(index, "kick", lambda: None)  # this test decides when indexing runs
    searching, nearest = index.search, index.nearest

    def indexed_during(found):
        index.catch_up()
        return found

    monkeypatch.setattr(index, "search", lambda *a, **k: indexed_during(searching(*a, **k)))
    monkeypatch.setattr(index, "nearest", lambda *a, **k: indexed_during(nearest(*a, **k)))
    admin, reader = doc_host.wiki(SYSTEM), doc_host.wiki(principal("read"))
    upload(admin, "notes/plan", "fish.txt", b"Zebrafish larvae were counted in the northern tanks.")
    first = reader.search_attachments("zebrafish")
    assert first["pending"] == 1 and "fish.txt" not in [h["filename"] for h in first["hits"]]  # searched before it was indexed
    again = reader.search_attachments("zebrafish")
    assert again["pending"] == 0 and again["hits"][0]["filename"] == "fish.txt"

    admin.save_page("notes/tabby", title="Tabby", body="A young cat naps often and licks its coat clean, striped.")
    near = reader.similar_pages("notes/cats", limit=5)
    assert near["pending"] == 1 and "notes/tabby" not in [p["slug"] for p in near["pages"]]
    assert "notes/tabby" in [p["slug"] for p in reader.similar_pages("notes/cats", limit=5)["pages"]]


# --- derived state --------------------------------------------------------------------------------


def test_a_deleted_or_damaged_index_refills_from_storage(tmp_path):
    instance = tmp_path / "instance"
    host = make_host(instance, EMBEDDER="hashing")
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", title="Notes")
    admin.save_page("notes/plan", body="x")
    upload(admin, "notes/plan", "report.txt", KITCHEN)
    indexed(host)
    host.close()
    path = instance / "passages.sqlite"
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    host = make_host(instance, EMBEDDER="hashing")
    try:
        indexed(host)
        assert host.passages.status()["documents"] == 2
        assert admin.search_attachments  # the same tool on the refilled file
        assert host.wiki(SYSTEM).search_attachments("invoices")["hits"][0]["filename"] == "report.txt"
    finally:
        host.close()
    path.write_bytes(b"this is not a database" * 100)
    host = make_host(instance, EMBEDDER="hashing")
    try:
        indexed(host)
        assert host.wiki(SYSTEM).search_attachments("invoices")["hits"][0]["filename"] == "report.txt"
    finally:
        host.close()
    assert len(list(instance.glob("passages.sqlite.damaged-*"))) == 1


def test_changing_the_embedder_embeds_everything_again(tmp_path):
    instance = tmp_path / "instance"
    host = make_host(instance, EMBEDDER="hashing")
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_page("notes/cats", body="Felines sleep most of the day.")
    indexed(host)
    host.close()
    host = make_host(instance)
    try:
        indexed(host)
        db = sqlite3.connect(instance / "passages.sqlite")
        assert db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone() == ("wordllama/256",)
        ids = [i for (i,) in db.execute("SELECT id FROM chunks")]
        db.close()
        records = np.fromfile(instance / "passages.vectors", dtype=record_type(256), offset=HEADER)
        assert ids and all(records[ids]["kind"] == 1)  # wordllama's 256 numbers a passage, pages
    finally:
        host.close()


def test_health_status_and_reindex_show_and_rebuild_it(doc_host):
    shown = doc_host.wiki(SYSTEM).health()["passages"]
    assert shown["per_second"] > 0  # the pace of the rounds that indexed them
    assert shown == {"embedder": "wordllama", "documents": 6, "passages": 6, "pending": 0, "per_second": shown["per_second"]}
    assert "passages" not in doc_host.wiki(principal("read", namespaces=["team"])).health()
    instance = doc_host.instance_path
    doc_host.close()
    (instance / "hostcore.toml").write_text(
        'PLUGINS = ["git", "tokens", "sqlite", "docs", "wordllama"]\nSTORAGE = "git"\nSEARCH = "sqlite"\nEMBEDDER = "wordllama"\n'
    )
    runner = CliRunner()
    result = runner.invoke(main, ["status", "--instance", str(instance)])
    assert result.exit_code == 0, result.output
    assert "passages: embedder wordllama, 6 documents indexed (6 passages), 0 pending" in result.output
    (instance / "passages.sqlite").write_bytes(b"garbage" * 1000)
    result = runner.invoke(main, ["reindex", "--instance", str(instance)])
    assert result.exit_code == 0, result.output
    assert "embedding passages" in result.stderr and "embedded the passages of 6 pages and attachments" in result.stdout
    result = runner.invoke(main, ["status", "--instance", str(instance)])
    assert "6 documents indexed (6 passages), 0 pending" in result.output


# --- pages by meaning -----------------------------------------------------------------------------


def test_similar_pages_are_the_nearest_in_meaning(docs):
    reader = docs.wiki(principal("read"))
    near = reader.similar_pages("notes/cats", limit=3)
    assert near["pages"][0]["slug"] == "notes/kittens" and "notes/cats" not in [p["slug"] for p in near["pages"]]
    team = docs.wiki(principal("read", namespaces=["notes"]))
    assert all(p["slug"].startswith("notes/") for p in team.similar_pages("notes/cats")["pages"])
    with pytest.raises(NotFound):
        reader.similar_pages("notes/nothing")
    with pytest.raises(Forbidden):
        docs.wiki(principal("read", namespaces=["team"])).similar_pages("notes/cats")


def test_search_ranks_words_and_meaning_together_for_plain_words(docs):
    reader = docs.wiki(principal("read"))
    beans = reader.search("beans")["hits"]
    assert beans[0]["slug"] == "notes/plan" and beans[0]["found_by"] in ("words", "words and meaning")
    found = reader.search("resting feline grooming")  # no page holds all three words: meaning finds them
    assert found["hits"][0]["slug"] in ("notes/cats", "notes/kittens")
    assert {h["found_by"] for h in found["hits"]} == {"meaning"}
    assert [r["id"] for r in found["results"][: len(found["hits"])]] == [h["slug"] for h in found["hits"]]
    assert found["hits"][0]["snippet"].startswith(("Felines", "A young cat"))  # no word to mark: the page's start
    assert reader.search("beans NOT tomatoes")["results"] == []  # operators: words only, meaning cannot honour them
    team = docs.wiki(principal("read", namespaces=["team"]))
    assert {r["id"] for r in team.search("resting feline grooming")["results"]} <= {"team/tax", "/_/files/team/tax/memo.txt"}
    later = reader.search("resting feline grooming", offset=1)
    assert [h["slug"] for h in later["hits"]] == [h["slug"] for h in found["hits"][1:]]  # paging through the fused order
    assert len(later["results"]) == len(later["hits"])  # only the first page adds attachments to results


def test_a_page_found_by_meaning_alone_is_shown_as_the_search_index_holds_it_else_as_storage_does(doc_host, monkeypatch):
    admin, reader = doc_host.wiki(SYSTEM), doc_host.wiki(principal("read"))
    body = "Felines   sleep\n\nmost of the day and groom their fur. " + "Felines sleep most of the day and groom their fur. " * 4
    admin.save_page("notes/cats", admin.read_page("notes/cats")["hash"], body=body, title="Cats", tags=["pets"])
    indexed(doc_host)  # the same words: as near in meaning as before
    reads: list[str] = []
    read = doc_host.storage.read_with_hash
    me = threading.get_ident()

    def counted(path: str) -> tuple[bytes, str]:
        if threading.get_ident() == me:  # not the passage index's thread, which reads the page saved to embed it again
            reads.append(path)
        return read(path)

    monkeypatch.setattr(doc_host.storage, "read_with_hash", counted)
    found = {h["slug"]: h for h in reader.search("resting feline grooming")["hits"]}
    assert reads == []  # one look-up in the search index for them all
    cats = found["notes/cats"]
    assert cats["found_by"] == "meaning" and cats["tags"] == ["pets"]
    assert cats["snippet"].startswith("Felines sleep most of the day and groom their fur. Felines sleep") and cats["snippet"].endswith("…")
    assert len(cats["snippet"]) == SNIPPET_CHARS + 1
    backend = doc_host.indexes.search_backend()
    assert backend is not None and set(backend.documents(["notes/cats", "notes/kittens", "notes/none"]) or {}) == {"notes/cats", "notes/kittens"}
    monkeypatch.setattr(type(backend), "documents", SearchBackend.documents)  # an engine that keeps no text: storage is read
    assert {h["slug"]: h for h in reader.search("resting feline grooming")["hits"]} == found
    assert set(reads) == {f"{slug}.md" for slug in found}


def test_the_words_hits_a_fused_page_shows_carry_the_engines_snippets_however_deep_they_ranked(doc_host):
    admin, reader = doc_host.wiki(SYSTEM), doc_host.wiki(principal("read"))
    topics = ["roses", "kittens", "taxes", "bread", "rockets", "rivers", "chess", "violins"]
    for i in range(24):
        body = f"Note {i}. " + "Filler text. " * (i % 5) + f"The garden tomatoes need watering on a schedule, like {topics[i % 8]}."
        admin.save_page(f"notes/t{i:02}", body=body, title=f"Note {i}")
    indexed(doc_host)
    backend = doc_host.indexes.search_backend()
    assert backend is not None
    query, lifted, shown = "garden tomatoes watering schedule", 0, 0
    engine = {h.slug: (rank, h.snippet) for rank, h in enumerate(backend.search(query, namespaces=None, limit=50).hits)}
    for offset in range(4):
        for limit in (1, 2, 3, 5):
            hits = reader.search(query, offset=offset, limit=limit)["hits"]
            worded = [h for h in hits if h["found_by"] != "meaning"]
            assert all(h["snippet"] == engine[h["slug"]][1] and "<mark>" in h["snippet"] for h in worded)
            lifted += any(engine[h["slug"]][0] >= offset + limit for h in worded)  # past what the engine marked at first
            shown += len(worded)
    assert lifted and shown > 20


def test_a_title_match_ranks_above_what_meaning_adds(docs):
    docs.wiki(SYSTEM).save_page("notes/play", title="Kittens at play indoors", body="Yarn, boxes and a sunny window.")
    indexed(docs)
    hits = docs.wiki(principal("read")).search("kittens play indoors")["hits"]  # a description: fused
    assert hits[0]["slug"] == "notes/play" and hits[0]["score"] == 1.0 and hits[0]["found_by"] != "meaning"


def test_a_look_up_of_a_word_or_two_ranks_by_words_and_meaning_only_finds_what_words_miss(docs):
    wiki = docs.wiki(principal("read"))
    hits = wiki.search("kittens")["hits"]
    assert hits[0]["slug"] == "notes/kittens" and {h["found_by"] for h in hits} == {"words"}
    assert hits[0]["score"] != 1.0  # the engine's score: not fused
    near = wiki.search("drowsy kitty")["hits"]  # no page holds both words: pages near in meaning
    assert {"notes/cats", "notes/kittens"} <= {h["slug"] for h in near} and {h["found_by"] for h in near} == {"meaning"}
    assert wiki.search("drowsy kitty", offset=1, limit=1)["hits"] == near[1:2]  # the next page goes on alike


def test_codes_and_operators_rank_by_words_alone(docs, monkeypatch):
    from hostcore.service import search as search_service

    assert not search_service.fuses("QX1234") and not search_service.fuses("error E_42 in build") and not search_service.fuses("a OR b")
    assert search_service.fuses("resting feline grooming") and search_service.fuses("how do I bake bread?")
    assert docs.wiki(principal("read")).search("QX1234")["hits"] == []  # no page holds it: nothing near in meaning either


def test_fused_paging_is_the_same_in_another_process(doc_host, tmp_path):
    """A worker that remembers nothing pages through the same fused order."""
    admin = doc_host.wiki(SYSTEM)
    for i in range(12):
        admin.save_page(f"notes/cat-{i}", title=f"Cat {i}", body=f"Felines number {i} sleep and groom; cats nap.")
    indexed(doc_host)
    whole = [h["slug"] for h in doc_host.wiki(principal("read")).search("sleepy felines", limit=50)["hits"]]
    other = make_host(doc_host.instance_path)
    try:
        other.indexes.wait()
        pages, offset = [], 0
        while offset is not None:
            got = other.wiki(principal("read")).search("sleepy felines", offset=offset, limit=3)
            pages += [h["slug"] for h in got["hits"]]
            offset = got["next_offset"]
        assert pages == whole and len(set(pages)) == len(pages)
    finally:
        other.close()


def test_paging_past_the_fused_places_goes_on_in_the_engines_order(doc_host):
    admin = doc_host.wiki(SYSTEM)
    admin.apply_changes([{"op": "save", "slug": f"notes/n{i:02d}", "title": f"N{i}", "body": f"zebra number {i}"} for i in range(60)])
    indexed(doc_host)
    reader = doc_host.wiki(principal("read"))
    pages, offset, scores = [], 0, []
    while offset is not None:
        got = reader.search("zebra", offset=offset, limit=7)
        pages += [h["slug"] for h in got["hits"]]
        scores += [h["score"] for h in got["hits"]]
        offset = got["next_offset"]
    words = [p for p in pages if p.startswith("notes/n")]
    assert sorted(words) == [f"notes/n{i:02d}" for i in range(60)] and len(set(pages)) == len(pages)
    assert scores == sorted(scores, reverse=True)


def test_meaning_hits_pass_the_filters_too(doc_host):
    admin = doc_host.wiki(SYSTEM)
    admin.save_page("notes/cats", admin.read_page("notes/cats")["hash"], title="Cats",
                    body="Felines sleep most of the day and groom their fur.", tags=["pets"])  # fmt: skip
    indexed(doc_host)
    reader = doc_host.wiki(principal("read"))
    assert [h["slug"] for h in reader.search("resting feline grooming", tags=["pets"])["hits"]] == ["notes/cats"]
    assert reader.search("resting feline grooming", before="2000-01-01")["hits"] == []
    assert reader.search("resting feline grooming", author="nobody")["hits"] == []


def test_chatgpt_search_and_fetch_reach_attachments(docs):
    reader = docs.wiki(principal("read"))
    results = reader.search("invoices")["results"]
    assert "/_/files/notes/plan/report.txt" in [r["id"] for r in results]
    fetched = reader.fetch("/_/files/notes/plan/report.txt")
    assert fetched["text"] == KITCHEN.decode() and fetched["metadata"]["slug"] == "notes/plan"
    assert fetched["url"].endswith("/_/files/notes/plan/report.txt")
    with pytest.raises(Forbidden):
        docs.wiki(principal("read", namespaces=["team"])).fetch("/_/files/notes/plan/report.txt")
    with pytest.raises(NotFound, match="no attachment"):
        reader.fetch("/_/files/notes/plan/missing.txt")


# --- at scale: cost follows the change, vectors shared, progress shown ------------------------------


def passage_statements(host: Host) -> list[str]:
    """The SQL this thread sends to the passage index's file from now on."""
    sent: list[str] = []
    host.passages.db.connection().set_trace_callback(sent.append)
    return sent


class CountingEmbedder(HashingEmbedder):
    """Counts its calls: embedding passages, and embedding queries."""

    name = "counting"
    calls: ClassVar[list[int]] = []
    queries: ClassVar[list[str]] = []

    def embed(self, texts: list[str]) -> Vectors:
        type(self).calls.append(len(texts))
        return super().embed(texts)

    def embed_query(self, text: str) -> Vectors:
        type(self).queries.append(text)
        return super().embed([text])[0]


class CountingPlugin:
    __name__ = "counting_plugin"

    @hookimpl
    def register_embedders(self, register: Callable[[type], None]) -> None:
        register(CountingEmbedder)


def counting_host(instance: Path) -> Host:
    config = {**EMBEDDED, "EMBEDDER": "counting"}
    return create_app(config, instance_path=instance, plugins=[CountingPlugin()]).extensions["hostcore"]


def test_a_wiki_without_attachments_never_searches_their_passages(tmp_path, monkeypatch):
    from hostcore.service import search as search_service

    monkeypatch.setattr(search_service, "fuses", lambda query: False)  # pages by words: meaning is asked for attachments only
    host = counting_host(tmp_path / "instance")
    try:
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        admin.save_page("notes/cats", title="Cats", body="Felines sleep most of the day.")
        indexed(host)
        CountingEmbedder.queries.clear()
        sent = passage_statements(host)
        assert [h["slug"] for h in admin.search("felines")["hits"]] == ["notes/cats"]
        assert admin.search_attachments("felines")["hits"] == []
        assert not [s for s in sent if "chunks" in s and "count(*)" not in s] and CountingEmbedder.queries == []
        upload(admin, "notes/cats", "vet.txt", b"The vet checks the felines every spring.")
        indexed(host)
        assert "/_/files/notes/cats/vet.txt" in [r["id"] for r in admin.search("felines")["results"]]
    finally:
        host.close()


def fruit_pages(host: Host, count: int):
    """``count`` pages notes/p0... alike in meaning, indexed; the admin's wiki."""
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", title="Notes")
    for i in range(count):
        admin.save_page(f"notes/p{i}", body=f"apples and pears number {i}")
    indexed(host)
    return admin


def test_a_record_freed_and_taken_again_is_searched_as_what_it_holds_now(tmp_path):
    """A scan reads each record's kind, namespace and scale from a copy made once per commit of
    the index (``PassageIndex._columns``), not once per size of the vectors file: a record freed,
    then taken again by another page while the file stays the same size, is found."""
    instance = tmp_path / "instance"
    host = make_host(instance, EMBEDDER="hashing")
    try:
        admin = fruit_pages(host, 3)
        size = (instance / "passages.vectors").stat().st_size
        admin.delete_page("notes/p2")
        indexed(host)
        assert [p["slug"] for p in admin.similar_pages("notes/p0")["pages"]] == ["notes/p1"]  # the copy: p2's record free
        admin.save_page("notes/p9", body="apples and pears number 9")
        indexed(host)
        assert (instance / "passages.vectors").stat().st_size == size  # p9 took p2's record
        assert sorted(p["slug"] for p in admin.similar_pages("notes/p0")["pages"]) == ["notes/p1", "notes/p9"]
    finally:
        host.close()


def test_searches_read_the_vectors_from_the_shared_file_not_the_index(tmp_path):
    """Another process indexes; this one searches by meaning without loading every vector (it
    reads passages.vectors through a memory map: one copy per machine, however many workers)."""
    instance = tmp_path / "instance"
    writer = make_host(instance, EMBEDDER="hashing")
    reader = make_host(instance, EMBEDDER="hashing")
    try:
        admin = fruit_pages(writer, 5)
        wiki = reader.wiki(SYSTEM)
        assert len(wiki.similar_pages("notes/p0")["pages"]) == 4
        admin.save_page("notes/p9", body="apples and pears, the ninth")
        indexed(writer)
        sent = passage_statements(reader)
        assert "notes/p9" in [p["slug"] for p in wiki.similar_pages("notes/p0")["pages"]]
        assert "notes/p9" in [r["id"] for r in wiki.search("pears apples orchard")["results"]]
        assert not [s for s in sent if "FROM chunks" in s and "WHERE" not in s]  # no passage read whole
        assert isinstance(reader.passages.vectors.records(reader.passages.db.meta("vectors")), np.memmap)
    finally:
        reader.close()
        writer.close()


def test_a_step_is_one_embedding_call_one_transaction_and_reads_only_what_changed(tmp_path, monkeypatch):
    host = counting_host(tmp_path / "instance")
    index = host.passages
    try:
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        for i in range(6):
            admin.save_page(f"notes/p{i}", body=f"page number {i}")
        indexed(host)
        monkeypatch.setattr(index, "kick", lambda: None)  # the test takes the steps
        for i in range(3):
            slug = f"notes/p{i}"
            admin.save_page(slug, body=f"page number {i}, changed", basehash=admin.read_page(slug)["hash"])
        host.indexes.catch_up()
        listed, reads = [], []
        monkeypatch.setattr(host.storage, "hashes", lambda prefix="": listed.append(prefix) or {})
        monkeypatch.setattr(host.storage, "list", lambda prefix="": listed.append(prefix) or [])
        read = host.storage.read_with_hash
        monkeypatch.setattr(host.storage, "read_with_hash", lambda path: reads.append(path) or read(path))
        CountingEmbedder.calls.clear()
        generation = index.db.generation()
        index._work()  # a round of the background thread
        assert CountingEmbedder.calls == [3] and listed == []
        assert sorted(reads) == [f"notes/p{i}.md" for i in range(3)]
        assert index.db.generation() != generation and index.pending() == 0
    finally:
        host.close()


def test_vectors_are_quantised_within_their_recall():
    vectors = unit_rows(np.random.default_rng(7).standard_normal((50, 256)))
    rows, scale = quantise(vectors)
    assert rows.dtype == np.int8 and scale.dtype == np.float32
    back = rows.astype(np.float32) * scale[:, None]
    cosine = np.sum(back * vectors, axis=1) / np.linalg.norm(back, axis=1)
    assert np.all(cosine > 0.9999)
    assert record_type(256).itemsize == 256 + 9  # a quarter of the float32 vector, and its tags
    zero = quantise(np.zeros((1, 4), dtype=np.float32))
    assert not zero[0].any() and zero[1][0] == 0


def test_int8_dot_products_are_exact_on_strided_records():
    rng = np.random.default_rng(11)
    records = np.zeros(1000, dtype=record_type(256))
    records["vector"] = rng.integers(-127, 128, size=(1000, 256), dtype=np.int8)
    records["vector"][0], records["vector"][1] = 127, -127
    query = np.full(256, 127, dtype=np.int8)
    # the records' vectors (a strided view), every third record (a copy), a few rows made contiguous
    for rows in (records["vector"], records[::3]["vector"], np.ascontiguousarray(records["vector"][5:9])):
        got = dot_products(rows, query)
        assert got.shape == (len(rows),) and np.array_equal(got, rows.astype(np.int64) @ query.astype(np.int64))
    assert dot_products(records["vector"], query)[:2].tolist() == [127 * 127 * 256, -127 * 127 * 256]  # the largest sums
    assert dot_products(records["vector"][:0], query).shape == (0,)
    many = np.random.default_rng(3).integers(-127, 128, (40_000, 256), dtype=np.int8)  # shared among the scan's threads
    assert np.array_equal(dot_products(many, query), many.astype(np.int64) @ query.astype(np.int64))


@pytest.mark.parametrize("group", [1, 7, 1024])
def test_passages_come_nearest_first_a_group_at_a_time_in_a_stable_order(group):
    similarities = np.round(np.random.default_rng(5).uniform(-1, 1, 500), 1).astype(np.float32)  # many equal
    close = np.flatnonzero(similarities >= 0.2)
    expected = close[np.argsort(-similarities[close], kind="stable")].tolist()
    assert list(nearest_first(similarities, 0.2, group)) == expected and len(expected) > 100
    assert list(nearest_first(similarities, 2.0, group)) == [] and list(nearest_first(similarities[:0], -1.0, group)) == []


@pytest.mark.parametrize("least", [-1.0, 0.0, 0.9])
def test_among_many_passages_the_first_go_by_a_guessed_bound_and_the_order_stays_stable(least):
    rng = np.random.default_rng(7)
    similarities = np.round(rng.uniform(-1, 1, 300_000), 3).astype(np.float32)
    similarities[rng.choice(300_000, 50_000, replace=False)] = -np.inf  # records of another kind or namespace
    close = np.flatnonzero(similarities >= least)
    expected = close[np.argsort(-similarities[close], kind="stable")].tolist()
    assert list(islice(nearest_first(similarities, least), 300)) == expected[:300]  # what a search takes: past the bound's few
    assert list(nearest_first(similarities, least, 64)) == expected  # and on past it, to the floor


def test_a_lost_vectors_file_is_made_anew_and_filled(tmp_path):
    instance = tmp_path / "instance"
    host = make_host(instance, EMBEDDER="hashing")
    try:
        admin = fruit_pages(host, 3)
        (instance / "passages.vectors").unlink()
        admin.save_page("notes/p3", body="apples and pears number 3")  # the thread finds it gone
        indexed(host)
        host.indexes.wait()
        assert len(admin.similar_pages("notes/p0")["pages"]) == 3
    finally:
        host.close()
    (instance / "passages.vectors").write_bytes(b"not vectors")
    host = make_host(instance, EMBEDDER="hashing")
    try:
        indexed(host)
        assert len(host.wiki(SYSTEM).similar_pages("notes/p0")["pages"]) == 3
        assert (instance / "passages.vectors").stat().st_mode & 0o777 == 0o600
    finally:
        host.close()


def test_health_and_status_show_the_embedding_progress(tmp_path, monkeypatch):
    app = create_app({**EMBEDDED, "EMBEDDER": "hashing"}, instance_path=tmp_path / "instance", plugins=[HashingPlugin()])
    host: Host = app.extensions["hostcore"]
    try:
        monkeypatch.setattr(host.passages, "kick", lambda: None)  # nothing is indexed until the test says so
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        for i in range(3):
            admin.save_page(f"notes/p{i}", body=f"page number {i}")
        host.indexes.catch_up()
        body = app.test_client().get("/_/health").get_json()
        assert body["status"] == "ok" and body["passages"] == {"documents": 0, "pending": 3, "per_second": 0.0}
        assert [h["slug"] for h in admin.search("number")["hits"]]  # keyword search does not wait
        host.passages._work()
        assert "passages" not in app.test_client().get("/_/health").get_json()
        assert admin.health()["passages"]["per_second"] > 0
    finally:
        host.close()
