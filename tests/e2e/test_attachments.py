"""Attachments end to end: the official MCP client and plain HTTP against ``hostcore serve``
(gunicorn, 2 workers) on an instance made by ``hostcore init``: uploads through one-use URLs,
text read in windows, and document search (a generated PDF, DOCX and XLSX found by an exact word
and by a paraphrase, through moves, deletion and restore, within the caller's namespaces).

A server of its own, since it needs short limits (upload URLs expire after 3 s, extraction stops
after 3 s or at 384 MiB, files over 200,000 bytes are refused) and the test extractor plugin
``tests.hostile_extractor`` (a dotted PLUGINS entry, the repository root on PYTHONPATH).
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from hostcore import testing
from hostcore.testing.documents import pdf_document

from .conftest import E2E_ENV, RunningServer, cli, create_token, mcp_session, ok, tool_error

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
TEXT = "# Minutes\n\n" + "".join(f"Item {i}: the committee approved the budget.\n" for i in range(400))
LIMIT = 200_000


@pytest.fixture(scope="module")
def files_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from serve(tmp_path_factory, hostile=True)


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The instance as ``hostcore init`` makes it, limits left alone (3 s of extraction is too
    little for an ordinary PDF on a busy machine)."""
    yield from serve(tmp_path_factory, hostile=False)


def serve(tmp_path_factory: pytest.TempPathFactory, hostile: bool) -> Iterator[RunningServer]:
    instance = tmp_path_factory.mktemp("attachments") / "instance"
    admin = re.findall(r"hc_[A-Za-z0-9_-]+", cli(instance, "init").stdout)[0]
    plugins = json.loads(E2E_ENV["HOSTCORE_PLUGINS"]) if "HOSTCORE_PLUGINS" in E2E_ENV else tomllib.loads((instance / "hostcore.toml").read_text())["PLUGINS"]
    env = {
        **E2E_ENV,
        "PYTHONPATH": str(ROOT),
        "HOSTCORE_PLUGINS": json.dumps([*plugins, "tests.hostile_extractor"]),
        "HOSTCORE_UPLOAD_URL_SECONDS": "3",
        "HOSTCORE_EXTRACT_TIMEOUT_SECONDS": "3",
        "HOSTCORE_MAX_ATTACHMENT_BYTES": str(LIMIT),
        "HOSTCORE_EXTRACT_MEMORY_BYTES": str(384 * 2**20),
    } if hostile else dict(E2E_ENV)
    tokens = {
        "admin": admin,
        "write": create_token(instance, "writer", ["write"]),
        "read": create_token(instance, "reader", ["read"]),
        "team_read": create_token(instance, "team-reader", ["read"], ["team"]),
    }
    proc, base, port, log = testing.start_server(instance, 2, env=env)
    srv = RunningServer(base=base, port=port, instance=instance, tokens=tokens, log=log, proc=proc)
    try:

        async def setup() -> None:
            async with mcp_session(srv, admin) as c:
                ok(await c.call_tool("save_namespace", {"name": "team", "title": "Team"}))

        anyio.run(setup)
        yield srv
    finally:
        testing.stop_process_group(proc)


async def call(srv: RunningServer, token: str, name: str, arguments: dict[str, Any]) -> Any:
    async with mcp_session(srv, srv.tokens[token]) as c:
        return await c.call_tool(name, arguments)


def post_file(url: str, data: bytes, filename: str = "upload.bin") -> httpx.Response:
    with httpx.Client(timeout=60) as http:
        return http.post(url, files={"file": (filename, data)})


def get_file(srv: RunningServer, token: str, attachment_url: str) -> httpx.Response:
    with httpx.Client(timeout=60) as http:
        return http.get(srv.base + attachment_url, headers={"Authorization": f"Bearer {srv.tokens[token]}"})


async def upload(srv: RunningServer, slug: str, filename: str, data: bytes) -> dict[str, Any]:
    ticket = ok(await call(srv, "write", "upload_attachment", {"slug": slug, "filename": filename}))
    answer = post_file(ticket["upload_url"], data, filename)
    assert answer.status_code == 201, answer.text
    return answer.json()


async def test_the_tools_are_listed_on_a_new_instance(files_server):
    async with mcp_session(files_server, files_server.tokens["write"]) as c:
        names = {t.name for t in (await c.list_tools()).tools}
    assert {"upload_attachment", "read_attachment", "search_attachments", "similar_pages"} <= names


async def test_upload_link_read_move_delete_restore(files_server):
    srv = files_server
    page = ok(await call(srv, "write", "save_page", {"slug": "notes/minutes", "body": "# Minutes\n\nFiles: LINKS\n"}))
    text = await upload(srv, "notes/minutes", "minutes.md", TEXT.encode())
    assert text["media_type"] == "text/markdown" and text["text_status"] == "extracted" and text["total_chars"] == len(TEXT)
    image = await upload(srv, "notes/minutes", "chart.png", PNG)
    assert image["media_type"] == "image/png" and image["text_status"] == "unsupported" and image["text_reason"]

    links = f"[minutes]({text['attachment_url']}) ![chart]({image['attachment_url']})"
    edit = {"oldText": "LINKS", "newText": links}
    ok(await call(srv, "write", "edit_page", {"slug": "notes/minutes", "basehash": page["hash"], "edits": [edit]}))

    read, offset = "", 0
    while True:
        window = ok(await call(srv, "read", "read_attachment", {"slug": "notes/minutes", "filename": "minutes.md",
                                                               "offset": offset, "limit": 5000}))  # fmt: skip
        read += window["body"]
        assert window["total_chars"] == len(TEXT)
        if not window["truncated"]:
            break
        offset = window["next_offset"]
    assert read == TEXT
    past = tool_error(await call(srv, "read", "read_attachment",
                                 {"slug": "notes/minutes", "filename": "minutes.md", "offset": len(TEXT) + 1}))  # fmt: skip
    assert past["code"] == "validation_error" and past["field"] == "offset"
    no_text = tool_error(await call(srv, "read", "read_attachment", {"slug": "notes/minutes", "filename": "chart.png"}))
    assert no_text["code"] == "unavailable" and "image/png" in no_text["message"]
    served = get_file(srv, "read", image["attachment_url"])
    assert served.status_code == 200 and served.content == PNG and served.headers["content-type"] == "image/png"
    assert served.headers["x-content-type-options"] == "nosniff"

    current = ok(await call(srv, "read", "read_page", {"slug": "notes/minutes"}))
    ok(await call(srv, "write", "move_page", {"slug": "notes/minutes", "new_slug": "team/minutes", "basehash": current["hash"]}))
    moved = ok(await call(srv, "read", "read_page", {"slug": "team/minutes"}))
    assert "/_/files/team/minutes/minutes.md" in moved["body"] and "/_/files/notes/" not in moved["body"]
    window = ok(await call(srv, "read", "read_attachment", {"slug": "team/minutes", "filename": "minutes.md", "limit": 100}))
    assert window["body"] == TEXT[:100]
    assert get_file(srv, "read", "/_/files/team/minutes/chart.png").content == PNG
    assert get_file(srv, "read", image["attachment_url"]).status_code == 404
    assert "notes/minutes.files/chart.png" not in srv.listing() and "team/minutes.files/chart.png" in srv.listing()

    ok(await call(srv, "write", "delete_page", {"slug": "team/minutes"}))
    gone = tool_error(await call(srv, "read", "read_attachment", {"slug": "team/minutes", "filename": "minutes.md"}))
    assert gone["code"] == "not_found"
    if srv.storage_kind == "git":
        ok(await call(srv, "write", "restore_page", {"slug": "team/minutes"}))
        back = ok(await call(srv, "read", "read_attachment", {"slug": "team/minutes", "filename": "minutes.md", "limit": 100}))
        assert back["body"] == TEXT[:100]
        assert get_file(srv, "read", "/_/files/team/minutes/chart.png").content == PNG


async def test_the_upload_url_works_once_and_expires(files_server):
    srv = files_server
    ok(await call(srv, "write", "save_page", {"slug": "notes/once", "body": "x"}))
    ticket = ok(await call(srv, "write", "upload_attachment", {"slug": "notes/once", "filename": "a.txt"}))
    assert post_file(ticket["upload_url"], b"first\n").status_code == 201
    reused = post_file(ticket["upload_url"], b"second\n")
    assert reused.status_code == 410 and "already used" in reused.json()["error"]["message"]
    ticket = ok(await call(srv, "write", "upload_attachment", {"slug": "notes/once", "filename": "b.txt"}))
    time.sleep(3.5)
    late = post_file(ticket["upload_url"], b"late\n")
    assert late.status_code == 410 and "expired" in late.json()["error"]["message"]
    assert post_file(srv.base + "/_/upload/made-up", b"x").status_code == 404


async def test_bad_filenames_and_files_over_the_limit_are_refused(files_server):
    srv = files_server
    ok(await call(srv, "write", "save_page", {"slug": "notes/limits", "body": "x"}))
    for name in ("../../etc/passwd", "..", ".env", "a/b.txt", "CON.txt"):
        err = tool_error(await call(srv, "write", "upload_attachment", {"slug": "notes/limits", "filename": name}))
        assert err["code"] == "validation_error" and err["field"] == "filename", (name, err)
    ticket = ok(await call(srv, "write", "upload_attachment", {"slug": "notes/limits", "filename": "big.bin"}))
    big = post_file(ticket["upload_url"], b"\x01" * (LIMIT + 1))
    assert big.status_code == 413 and "MAX_ATTACHMENT_BYTES" in big.json()["error"]["message"]
    assert post_file(ticket["upload_url"], b"\x01" * LIMIT).status_code == 201


async def test_a_reader_limited_to_another_namespace_cannot_fetch_the_file(files_server):
    srv = files_server
    ok(await call(srv, "write", "save_page", {"slug": "notes/private", "body": "x"}))
    done = await upload(srv, "notes/private", "secret.txt", b"secret\n")
    err = tool_error(await call(srv, "team_read", "read_attachment", {"slug": "notes/private", "filename": "secret.txt"}))
    assert err["code"] == "forbidden"
    assert get_file(srv, "team_read", done["attachment_url"]).status_code == 403
    with httpx.Client(timeout=30) as http:
        assert http.get(srv.base + done["attachment_url"]).status_code == 401
    assert get_file(srv, "read", done["attachment_url"]).content == b"secret\n"


@pytest.mark.parametrize(("command", "reason"), [(b"SLEEP", "took longer than 3 s"), (b"BOMB", "MiB of memory")])
async def test_workers_keep_serving_while_a_hostile_extraction_is_stopped(files_server, command, reason):
    srv = files_server
    slug = f"notes/hostile-{command.decode().lower()}"
    ok(await call(srv, "write", "save_page", {"slug": slug, "body": "x"}))
    ticket = ok(await call(srv, "write", "upload_attachment", {"slug": slug, "filename": "evil.bin"}))
    answer: dict[str, httpx.Response] = {}
    uploading = threading.Thread(target=lambda: answer.setdefault("r", post_file(ticket["upload_url"], b"\x00" + command)))
    uploading.start()
    served_meanwhile = 0
    while uploading.is_alive():
        ok(await call(srv, "read", "read_page", {"slug": slug}))
        served_meanwhile += uploading.is_alive()
    uploading.join()
    assert served_meanwhile >= 1, "no read was answered while the extraction ran"
    result = answer["r"].json()
    assert answer["r"].status_code == 201 and result["text_status"] == "failed" and reason in result["text_reason"], result
    err = tool_error(await call(srv, "read", "read_attachment", {"slug": slug, "filename": "evil.bin"}))
    assert err["code"] == "unavailable" and reason in err["message"]
    assert get_file(srv, "read", result["attachment_url"]).content == b"\x00" + command


def docx_bytes(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes(rows: list[list[object]]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    for row in rows:
        workbook.active.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


FILLER = "The committee reviewed the minutes of the previous meeting and approved them without change. "
# A page on its own subject among pages of minutes: its passage is about the kitten, so a paraphrase
# clears the similarity floor (one sentence in a passage of minutes would not).
KITTEN = (
    "The kitten chased a mouse around the kitchen until both were worn out. "
    "It crouched behind the bread bin, wiggled, pounced and missed; the mouse darted under the stove. "
    "For an hour the kitten sat by the stove, tail twitching, ears turned to every scratch. "
    "When the mouse finally ran for the pantry the kitten caught it by the door and carried it proudly to the rug."
)
PDF_PAGES = [FILLER * 6, KITTEN, FILLER * 6]
DOCX_PARAGRAPHS = [FILLER * 3, "Invoices must be paid within thirty days of receipt by the treasurer.", FILLER * 3]
XLSX_ROWS: list[list[object]] = [["region", "zebrafish", "count"], ["north", "larvae", 120], ["south", "adults", 45]]


async def searched(srv: RunningServer, token: str, query: str) -> dict[str, Any]:
    """search_attachments once nothing is pending (indexing runs in the background of each worker)."""
    for _ in range(300):
        found = ok(await call(srv, token, "search_attachments", {"query": query}))
        if found["pending"] == 0:
            return found
        await anyio.sleep(0.1)
    raise AssertionError(f"still {found['pending']} documents pending after 30 s")


async def test_documents_are_read_in_windows_and_found_by_word_and_by_meaning(docs_server):
    srv = docs_server
    page = ok(await call(srv, "write", "save_page", {"slug": "notes/sources", "body": "# Sources\n\nLINKS\n"}))
    pdf = await upload(srv, "notes/sources", "paper.pdf", pdf_document(PDF_PAGES))
    doc = await upload(srv, "notes/sources", "letter.docx", docx_bytes(DOCX_PARAGRAPHS))
    sheet = await upload(srv, "notes/sources", "counts.xlsx", xlsx_bytes(XLSX_ROWS))
    assert [f["text_status"] for f in (pdf, doc, sheet)] == ["extracted"] * 3, (pdf, doc, sheet)
    links = " ".join(f"[{f['filename']}]({f['attachment_url']})" for f in (pdf, doc, sheet))
    ok(await call(srv, "write", "edit_page", {"slug": "notes/sources", "basehash": page["hash"],
                                             "edits": [{"oldText": "LINKS", "newText": links}]}))  # fmt: skip

    read, offset = "", 0
    while True:
        window = ok(await call(srv, "read", "read_attachment", {"slug": "notes/sources", "filename": "paper.pdf",
                                                               "offset": offset, "limit": 300}))  # fmt: skip
        read += window["body"]
        if not window["truncated"]:
            break
        offset = window["next_offset"]
    assert len(read) == pdf["total_chars"] and "kitten chased a mouse" in read

    exact = await searched(srv, "read", "zebrafish")
    assert (exact["hits"][0]["filename"], exact["hits"][0]["slug"]) == ("counts.xlsx", "notes/sources")
    assert "<mark>zebrafish</mark>" in exact["hits"][0]["excerpt"]
    meaning = await searched(srv, "read", "small pet hunting a rodent indoors")  # no word in common with the passage
    best = meaning["hits"][0]
    assert best["filename"] == "paper.pdf" and "kitten" in best["excerpt"]
    window = ok(await call(srv, "read", "read_attachment", {"slug": "notes/sources", "filename": "paper.pdf",
                                                           "offset": best["offset"], "limit": 200}))  # fmt: skip
    assert "kitten chased a mouse" in window["body"]
    bills = await searched(srv, "read", "invoices")
    assert bills["hits"][0]["filename"] == "letter.docx"
    assert ok(await call(srv, "team_read", "search_attachments", {"query": "zebrafish"}))["hits"] == []
    assert ok(await call(srv, "team_read", "search_attachments", {"query": "small pet hunting a rodent indoors"}))["hits"] == []

    current = ok(await call(srv, "read", "read_page", {"slug": "notes/sources"}))
    ok(await call(srv, "write", "move_page", {"slug": "notes/sources", "new_slug": "notes/archive", "basehash": current["hash"]}))
    moved = ok(await call(srv, "read", "read_attachment", {"slug": "notes/archive", "filename": "letter.docx"}))
    assert "Invoices must be paid" in moved["body"]
    assert (await searched(srv, "read", "zebrafish"))["hits"][0]["slug"] == "notes/archive"
    ok(await call(srv, "write", "delete_page", {"slug": "notes/archive"}))
    assert all(h["filename"] != "counts.xlsx" for h in (await searched(srv, "read", "zebrafish"))["hits"])
    if srv.storage_kind == "git":
        ok(await call(srv, "write", "restore_page", {"slug": "notes/archive"}))
        back = ok(await call(srv, "read", "read_attachment", {"slug": "notes/archive", "filename": "counts.xlsx"}))
        assert "zebrafish" in back["body"]
        assert (await searched(srv, "read", "zebrafish"))["hits"][0]["slug"] == "notes/archive"
