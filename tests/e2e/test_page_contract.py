"""The page and namespace tool contract, end to end through the official MCP client.

Every test runs in both protocol modes (2026-07-28 and the legacy initialize handshake) against a
real ``hostcore serve`` with two gunicorn workers, so consecutive calls may land on different
processes: nothing here may depend on one worker's memory.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import mcp_session, ok, text_json, tool_error

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024

CONTRACT_TOOLS = {
    # name: (readOnlyHint, destructiveHint)
    "read_page": (True, False),
    "save_page": (False, True),
    "edit_page": (False, True),
    "delete_page": (False, True),
    "list_pages": (True, False),
    "list_namespaces": (True, False),
    "read_namespace": (True, False),
    "save_namespace": (False, True),
}

SKINS = ["", "bare", "phosphor", "newsprint", "journal", "soft"]
PALETTES = ["", "neutral", "phosphor", "dracula", "everforest", "flexoki", "gruvbox", "nord", "rosé pine", "solarized", "tokyo night"]
WIDGETS = ["pages", "namespaces", "pinned", "tags", "log", "health", "calendar", "writing-stats", "page-meta", "backlinks", "prev-entries"]


def find_key(schema: Any, key: str, defs: dict[str, Any] | None = None) -> list[Any]:
    """Every value of ``key`` anywhere inside a JSON schema, following local $refs."""
    found: list[Any] = []
    if isinstance(schema, dict):
        defs = {**(defs or {}), **schema.get("$defs", {})}
        if "$ref" in schema and schema["$ref"].startswith("#/$defs/"):
            found += find_key(defs.get(schema["$ref"].split("/")[-1], {}), key, defs)
        for k, v in schema.items():
            if k == key:
                found.append(v)
            if k != "$defs":
                found += find_key(v, key, defs)
    elif isinstance(schema, list):
        for v in schema:
            found += find_key(v, key, defs)
    return found


def assert_field_error(result: Any, code: str, field: str, *, exact: bool = False) -> dict[str, Any]:
    """A tool error with ``code`` whose field (and message, and text) start with ``field``."""
    err = tool_error(result)
    assert err["code"] == code, err
    got = err.get("field", "")
    assert (got == field) if exact else got.startswith(field), err
    assert err["message"].startswith(f"{got}: "), err
    assert result.content[0].text.startswith(got) or err["code"] == "conflict", result.content[0].text
    return err


async def create(c: Any, slug: str, body: str, **extra: Any) -> str:
    saved = ok(await c.call_tool("save_page", {"slug": slug, "body": body, **extra}))
    assert saved["created"] is True and saved["changed"] is True, saved
    return saved["hash"]


async def read(c: Any, slug: str, **args: Any) -> dict[str, Any]:
    return ok(await c.call_tool("read_page", {"slug": slug, **args}))


def stored(server: Any, slug: str) -> bytes | None:
    """The page's stored bytes as the storage holds them (None when absent), read from outside hostcore."""
    return server.stored(f"{slug}.md")


# --- discovery --------------------------------------------------------------------------------


async def test_tools_list_describes_every_tool(server, mode):
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        listed = await c.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(CONTRACT_TOOLS) <= set(tools), sorted(tools)
    for name, t in tools.items():
        assert t.title, name
        assert t.description, name
        assert t.input_schema.get("type") == "object", name
        assert t.output_schema and t.output_schema.get("type") == "object", name
        a = t.annotations
        assert a is not None, name
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert isinstance(getattr(a, hint), bool), (name, hint)
        for arg in t.input_schema.get("properties", {}):
            assert arg in t.description, f"{name}: description does not name argument {arg!r}"
        if name in CONTRACT_TOOLS:
            assert (a.read_only_hint, a.destructive_hint) == CONTRACT_TOOLS[name], name
            assert a.open_world_hint is False, name

    props = {name: t.input_schema["properties"] for name, t in tools.items()}
    required = {name: set(t.input_schema.get("required", [])) for name, t in tools.items()}
    # Limits and allowed values travel in the schemas.
    assert required["save_page"] == {"slug"}
    assert required["edit_page"] == {"slug", "basehash", "edits"}
    assert required["read_page"] == {"slug"}
    assert required["save_namespace"] == {"name"}
    assert 1048576 in find_key(props["save_page"]["body"], "maxLength")
    assert 256 in find_key(props["save_page"]["title"], "maxLength")
    assert 32 in find_key(props["save_page"]["tags"], "maxItems")
    assert 64 in find_key(props["save_page"]["tags"], "maxLength")
    edits_schema = {"$defs": tools["edit_page"].input_schema.get("$defs", {}), **props["edit_page"]["edits"]}
    assert find_key(edits_schema, "minItems") == [1] and find_key(edits_schema, "maxItems") == [128]
    assert 1 in find_key(edits_schema, "minLength")  # oldText
    assert props["read_page"]["limit"].get("maximum") == 100000 and props["read_page"]["limit"].get("default") == 40000
    assert props["read_page"]["offset"].get("minimum") == 0
    assert props["list_pages"]["limit"].get("maximum") == 500 and props["list_pages"]["limit"].get("default") == 100
    assert tools["list_namespaces"].input_schema.get("properties", {}) == {}
    assert sorted(find_key(props["save_namespace"]["skin"], "enum")[0]) == sorted(SKINS)
    assert sorted(find_key(props["save_namespace"]["palette"], "enum")[0]) == sorted(PALETTES)
    assert sorted(find_key(props["save_namespace"]["widgets"], "enum")[0]) == sorted(WIDGETS)
    assert 255 in find_key(props["save_namespace"]["description"], "maxLength")


async def test_server_info_and_instructions(server, mode):
    # A pinned 2026-07-28 client adopts without a probe; "auto" runs server/discover at 2026-07-28.
    client_mode = "auto" if mode == "2026-07-28" else mode
    async with mcp_session(server, server.tokens["read"], client_mode) as c:
        info, instructions, version = c.server_info, c.instructions, c.protocol_version
    assert version == "2026-07-28" if mode == "2026-07-28" else version.startswith("2025-")
    assert info is not None
    assert info.name == "hostcore"
    assert info.title and info.version and info.description
    assert instructions and "basehash" in instructions and "hash" in instructions and "edit_page" in instructions


# --- create and read --------------------------------------------------------------------------


async def test_create_page(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        # body is required to create; nothing is written without it
        assert_field_error(await c.call_tool("save_page", {"slug": slug, "title": "x"}), "validation_error", "body", exact=True)
        assert stored(server, slug) is None
        # the namespace must exist
        assert_field_error(
            await c.call_tool("save_page", {"slug": f"no-such-ns/{uid}", "body": "x"}), "validation_error", "slug", exact=True
        )
        assert not [p for p in server.listing() if p.startswith("no-such-ns/")]

        h = await create(c, slug, "# Hello\n")
        page = await read(c, slug)
        assert page["hash"] == h
        assert page["title"] == slug  # defaults to the slug
        assert page["tags"] == [] and page["pin"] is False
        assert page["body"] == "# Hello\n"

        # creating something that exists fails with the current hash and body
        r = await c.call_tool("save_page", {"slug": slug, "body": "other"})
        err = tool_error(r)
        assert err["code"] == "conflict" and err["hash"] == h and err["body"] == "# Hello\n"
        assert (await read(c, slug))["body"] == "# Hello\n"

        # full create with every field
        h2 = await create(c, f"{slug}-full", "body\n", title="Full page", tags=["a", "b"], pin=True)
        full = await read(c, f"{slug}-full")
        assert (full["title"], full["tags"], full["pin"], full["hash"]) == ("Full page", ["a", "b"], True, h2)

        # pages may sit in folders
        await create(c, f"notes/{uid}-dir/sub/page", "deep\n")
        assert (await read(c, f"notes/{uid}-dir/sub/page"))["body"] == "deep\n"

        assert_field_error(await c.call_tool("read_page", {"slug": f"notes/{uid}-missing"}), "not_found", "slug")


async def test_read_windows(server, mode, uid):
    slug = f"notes/{uid}"
    body = "".join(f"{i:04d}-line\n" for i in range(25))  # 250 characters
    assert len(body) == 250
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = await create(c, slug, body)
        whole = await read(c, slug)
        assert whole["body"] == body and whole["truncated"] is False and whole["next_offset"] is None
        assert whole["total_chars"] == 250 and whole["offset"] == 0

        got, offset, windows = "", 0, []
        while True:
            w = await read(c, slug, offset=offset, limit=100)
            assert w["hash"] == h and w["total_chars"] == 250 and w["offset"] == offset
            windows.append((w["offset"], len(w["body"]), w["truncated"], w["next_offset"]))
            got += w["body"]
            if not w["truncated"]:
                break
            offset = w["next_offset"]
        assert got == body
        assert windows == [(0, 100, True, 100), (100, 100, True, 200), (200, 50, False, None)]

        # an offset past the end is an error naming offset
        for past in (250, 1000):
            assert_field_error(await c.call_tool("read_page", {"slug": slug, "offset": past}), "validation_error", "offset")
        # schema limits
        assert_field_error(await c.call_tool("read_page", {"slug": slug, "limit": 0}), "validation_error", "limit")
        assert_field_error(await c.call_tool("read_page", {"slug": slug, "limit": 100001}), "validation_error", "limit")
        assert_field_error(await c.call_tool("read_page", {"slug": slug, "offset": -1}), "validation_error", "offset")


async def test_read_sections(server, mode, uid):
    slug = f"notes/{uid}"
    body = (
        "# Top\nintro\n"
        "## Alpha\nalpha text\n### Alpha Sub\nsub text\n"
        "```\n# not a heading\n```\n"
        "## Beta\nbeta text\n"
        "# Second\nlast\n"
    )
    alpha = "## Alpha\nalpha text\n### Alpha Sub\nsub text\n```\n# not a heading\n```\n"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = await create(c, slug, body)
        s = await read(c, slug, section="alpha")  # case ignored
        assert s["body"] == alpha and s["hash"] == h and s["total_chars"] == len(alpha) and s["truncated"] is False
        assert (await read(c, slug, section="ALPHA SUB"))["body"] == "### Alpha Sub\nsub text\n```\n# not a heading\n```\n"
        assert (await read(c, slug, section="Beta"))["body"] == "## Beta\nbeta text\n"
        assert (await read(c, slug, section="top"))["body"] == body[: body.index("# Second")]
        assert (await read(c, slug, section="second"))["body"] == "# Second\nlast\n"

        # offset and limit count within the section
        w = await read(c, slug, section="Alpha", offset=3, limit=5)
        assert w["body"] == alpha[3:8] and w["truncated"] is True and w["next_offset"] == 8
        assert w["total_chars"] == len(alpha) and w["hash"] == h
        assert_field_error(
            await c.call_tool("read_page", {"slug": slug, "section": "Alpha", "offset": len(alpha)}), "validation_error", "offset"
        )

        # an unknown section fails with the list of headings
        err = tool_error(await c.call_tool("read_page", {"slug": slug, "section": "Gamma"}))
        assert err.get("field") == "section", err
        for heading in ("Top", "Alpha", "Alpha Sub", "Beta", "Second"):
            assert heading in err["message"], err
        assert "not a heading" not in err["message"]


# --- basehash ---------------------------------------------------------------------------------


async def test_stale_basehash(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h1 = await create(c, slug, "first\n")
        h2 = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h1, "body": "second\n"}))["hash"]
        assert h2 != h1

        # save_page: conflict with the current hash AND body, as a JSON object in the text
        r = await c.call_tool("save_page", {"slug": slug, "basehash": h1, "body": "lost update\n"})
        err = tool_error(r)
        assert err["code"] == "conflict" and err["hash"] == h2 and err["body"] == "second\n"
        as_text = text_json(r)
        assert as_text["hash"] == h2 and as_text["body"] == "second\n"

        # edit_page: conflict with the hash only
        r = await c.call_tool("edit_page", {"slug": slug, "basehash": h1, "edits": [{"oldText": "second", "newText": "x"}]})
        err = tool_error(r)
        assert err["code"] == "conflict" and err["hash"] == h2 and "body" not in err
        assert text_json(r)["hash"] == h2

        # delete_page: conflict with the hash; the page stays
        r = await c.call_tool("delete_page", {"slug": slug, "basehash": h1})
        err = tool_error(r)
        assert err["code"] == "conflict" and err["hash"] == h2
        assert text_json(r)["hash"] == h2
        page = await read(c, slug)
        assert page["body"] == "second\n" and page["hash"] == h2

        # the right hash deletes; afterwards a write with a hash conflicts with an empty hash
        gone = ok(await c.call_tool("delete_page", {"slug": slug, "basehash": h2}))
        assert gone["deleted"] is True and gone["hash"] == h2
        assert stored(server, slug) is None
        err = tool_error(await c.call_tool("save_page", {"slug": slug, "basehash": h2, "body": "again"}))
        assert err["code"] == "conflict" and err["hash"] == ""
        err = tool_error(await c.call_tool("delete_page", {"slug": slug, "basehash": h2}))
        assert err["code"] == "conflict" and err["hash"] == ""
        err = tool_error(await c.call_tool("delete_page", {"slug": slug}))
        assert err["code"] in ("not_found", "conflict"), err

        # delete without basehash deletes the current revision
        await create(c, slug, "third\n")
        assert ok(await c.call_tool("delete_page", {"slug": slug}))["deleted"] is True
        assert_field_error(await c.call_tool("read_page", {"slug": slug}), "not_found", "slug")


async def test_update_keeps_omitted_fields(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = await create(c, slug, "# Body\n\nkept\n", title="Original", tags=["one", "two"], pin=True)

        # retag only: body, title and pin stay
        r = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h, "tags": ["three"]}))
        assert r["changed"] is True and r["created"] is False
        p = await read(c, slug)
        assert (p["body"], p["title"], p["tags"], p["pin"]) == ("# Body\n\nkept\n", "Original", ["three"], True)
        assert p["hash"] == r["hash"]

        # unpin only
        r = ok(await c.call_tool("save_page", {"slug": slug, "basehash": p["hash"], "pin": False}))
        p = await read(c, slug)
        assert (p["body"], p["title"], p["tags"], p["pin"]) == ("# Body\n\nkept\n", "Original", ["three"], False)

        # an empty title clears it; empty tags clear them
        r = ok(await c.call_tool("save_page", {"slug": slug, "basehash": p["hash"], "title": "", "tags": []}))
        p = await read(c, slug)
        assert (p["title"], p["tags"], p["body"]) == ("", [], "# Body\n\nkept\n")

        # saving identical content changes nothing and keeps the hash
        before = server.revision()
        same = ok(await c.call_tool("save_page", {"slug": slug, "basehash": p["hash"], "body": p["body"]}))
        assert same["changed"] is False and same["hash"] == p["hash"]
        assert server.revision() == before  # no write, no commit


# --- limits -----------------------------------------------------------------------------------


async def test_limits(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = await create(c, slug, "small\n", title="T", tags=["t"])
        kept, rev = stored(server, slug), server.revision()

        cases = [
            ({"body": "a" * (MIB + 1)}, "body"),  # over 1 MiB and over the schema's maxLength
            ({"body": "é" * (MIB // 2 + 1)}, "body"),  # under maxLength in characters, over 1 MiB as UTF-8
            ({"title": "t" * 257}, "title"),
            ({"title": "two\nlines"}, "title"),
            ({"tags": [f"t{i}" for i in range(33)]}, "tags"),
            ({"tags": ["x" * 65]}, "tags"),
        ]
        for args, field in cases:
            # on update ...
            assert_field_error(
                await c.call_tool("save_page", {"slug": slug, "basehash": h, **args}), "validation_error", field
            )
            # ... and on create
            create_args = {"body": "x", **args}
            assert_field_error(
                await c.call_tool("save_page", {"slug": f"{slug}-new", **create_args}), "validation_error", field
            )
        assert stored(server, slug) == kept and server.revision() == rev
        assert stored(server, f"{slug}-new") is None

        # exactly at the limits is fine
        at_limit = {"title": "t" * 256, "tags": [f"{i:02d}" + "x" * 62 for i in range(32)]}
        ok(await c.call_tool("save_page", {"slug": slug, "basehash": h, **at_limit}))
        p = await read(c, slug)
        assert p["title"] == "t" * 256 and len(p["tags"]) == 32 and p["body"] == "small\n"
        h = p["hash"]
        kept, rev = stored(server, slug), server.revision()

        # edit_page: more than 128 edits, and an edit growing the body past 1 MiB
        edits = [{"oldText": "small", "newText": "small"}] * 129
        assert_field_error(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": edits}), "validation_error", "edits")
        assert_field_error(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": []}), "validation_error", "edits")
        grow = [{"oldText": "small", "newText": "é" * (MIB // 2)}]
        err = tool_error(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": grow}))
        assert err["code"] == "validation_error" and err.get("field", "").startswith("body"), err
        assert stored(server, slug) == kept and server.revision() == rev


async def test_full_mib_page_round_trips(server, mode, uid):
    slug = f"notes/{uid}"
    # Exactly 1 MiB as UTF-8, mixing 1-, 2-, 3- and 4-byte characters and JSON escapes.
    unit = 'a"\\\né€😀<>&\t'
    unit_bytes = len(unit.encode())
    body = unit * (MIB // unit_bytes)
    body += "z" * (MIB - len(body.encode()))
    assert len(body.encode()) == MIB
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = await create(c, slug, body)
        got, offset = [], 0
        while True:
            w = await read(c, slug, offset=offset, limit=100000)
            assert w["hash"] == h and w["total_chars"] == len(body)
            got.append(w["body"])
            if not w["truncated"]:
                break
            offset = w["next_offset"]
        assert "".join(got) == body
        # one more character (a byte over) is refused, and the page keeps the 1 MiB body
        assert_field_error(
            await c.call_tool("save_page", {"slug": slug, "basehash": h, "body": body + "z"}), "validation_error", "body"
        )
        # an edit on the full 1 MiB page works too (it keeps the size)
        e = ok(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": [{"oldText": "😀<>&\tz", "newText": "😀<>&\tZ"}]}))
        assert e["changed"] is True
    assert stored(server, slug).endswith(body.replace("😀<>&\tz", "😀<>&\tZ", 1).encode())


def test_http_body_over_limit_gets_413(server):
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_page","arguments":{"slug":"notes/index","x":"' + b"a" * (9 * 1000 * 1000) + b'"}}}'
    headers = {
        "Authorization": f"Bearer {server.tokens['write']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
    }
    with httpx.Client(timeout=60) as http:
        r = http.post(server.url, content=big, headers=headers)
    assert r.status_code == 413, r.text[:300]
    message = r.json()["error"]["message"]
    assert "limit" in message and "bytes" in message


# --- edit_page --------------------------------------------------------------------------------


async def test_edit_page_rules(server, mode, uid):
    slug = f"notes/{uid}"
    body = "alpha beta\ngamma gamma\ndelta\n"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = await create(c, slug, body, title="Kept", tags=["k"], pin=True)
        before, rev = stored(server, slug), server.revision()

        async def edit(*edits: tuple[str, str], dry: bool | None = None, base: str | None = None) -> Any:
            args: dict[str, Any] = {"slug": slug, "basehash": base or h, "edits": [{"oldText": o, "newText": n} for o, n in edits]}
            if dry is not None:
                args["dryRun"] = dry
            return await c.call_tool("edit_page", args)

        # 0 matches and 2 matches fail naming the edit
        err = assert_field_error(await edit(("omega", "x")), "validation_error", "edits")
        assert "0" in err["field"]
        err = assert_field_error(await edit(("gamma", "x")), "validation_error", "edits")
        assert "2" in err["message"]
        # one failing edit cancels all: the first (valid) edit is not applied
        err = assert_field_error(await edit(("alpha", "ALPHA"), ("omega", "x")), "validation_error", "edits")
        assert "1" in err["field"]
        # oldText must be non-empty
        assert_field_error(await edit(("", "x")), "validation_error", "edits")
        assert stored(server, slug) == before and server.revision() == rev

        # dryRun returns the diff, keeps the hash and writes nothing
        dry = ok(await edit(("delta", "DELTA"), dry=True))
        assert dry["dryRun"] is True and dry["changed"] is True and dry["hash"] == h
        assert "-delta" in dry["diff"] and "+DELTA" in dry["diff"]
        assert stored(server, slug) == before and server.revision() == rev

        # a no-op writes nothing and keeps the hash
        noop = ok(await edit(("delta", "delta")))
        assert noop["changed"] is False and noop["hash"] == h
        assert stored(server, slug) == before and server.revision() == rev

        # ordered edits: edit 2 matches text that only exists after edit 1
        r = ok(await edit(("alpha beta", "one two"), ("one two\ngamma", "three"), ("delta\n", "")))
        assert r["changed"] is True and r["dryRun"] is False and r["hash"] != h and r["slug"] == slug
        assert r["diff"].startswith("---") and "+three gamma" in r["diff"] and "-delta" in r["diff"]
        p = await read(c, slug)
        assert p["body"] == "three gamma\n"  # empty newText deleted "delta\n"
        assert p["hash"] == r["hash"]
        assert (p["title"], p["tags"], p["pin"]) == ("Kept", ["k"], True)

        # edit_page never creates a page
        err = tool_error(
            await c.call_tool("edit_page", {"slug": f"{slug}-none", "basehash": h, "edits": [{"oldText": "a", "newText": "b"}]})
        )
        assert err["code"] == "conflict" and err["hash"] == ""
        assert stored(server, f"{slug}-none") is None
        # basehash is required
        assert_field_error(
            await c.call_tool("edit_page", {"slug": slug, "edits": [{"oldText": "a", "newText": "b"}]}),
            "validation_error",
            "basehash",
        )


# --- slugs and hidden files -------------------------------------------------------------------

INVALID_SLUGS = ["_x/y", "notes/.hidden", "notes", "../etc/passwd", "notes/a.md", "notes/_private/x", "notes//x", "/notes/x", ""]


async def test_invalid_slugs_fail_naming_slug(server, mode):
    before, rev = server.listing(), server.revision()
    async with mcp_session(server, server.tokens["write"], mode) as c:
        for slug in INVALID_SLUGS:
            for tool, args in (
                ("read_page", {}),
                ("save_page", {"body": "x"}),
                ("edit_page", {"basehash": "0" * 40, "edits": [{"oldText": "a", "newText": "b"}]}),
                ("delete_page", {}),
            ):
                r = await c.call_tool(tool, {"slug": slug, **args})
                assert_field_error(r, "validation_error", "slug", exact=True)
    assert server.listing() == before and server.revision() == rev  # nothing written anywhere
    assert not (server.instance.parent / "etc").exists()


async def test_hidden_files_are_invisible(server, mode, uid):
    ns = f"hid-{mode.replace('-', '')}"
    secrets = [f"{ns}/.secret.md", f"{ns}/_private/x.md", f"{ns}/sub/.hidden/y.md", f"{ns}/_draft.md", f"_{ns}/z.md", ".wiki.yaml"]
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        ok(await c.call_tool("save_namespace", {"name": ns}))
        await create(c, f"{ns}/visible", "hello\n")
        server.plant(dict.fromkeys(secrets, "---\ntitle: secret\n---\nTOP SECRET\n"))
        assert all(server.stored(rel) for rel in secrets)  # they are really in storage
        listed = ok(await c.call_tool("list_pages", {"namespace": ns}))
        assert [p["slug"] for p in listed["pages"]] == [f"{ns}/visible"] and listed["total"] == 1
        everything = ok(await c.call_tool("list_pages", {"limit": 500}))
        offset = 0
        slugs: list[str] = []
        while True:
            page = ok(await c.call_tool("list_pages", {"limit": 500, "offset": offset}))
            slugs += [p["slug"] for p in page["pages"]]
            if not page["more"]:
                break
            offset = page["next_offset"]
        assert everything["total"] == len(slugs)
        assert not [s for s in slugs if any(part.startswith(("_", ".")) for part in s.split("/"))], slugs
        assert f"{ns}/visible" in slugs
        for slug in (f"{ns}/.secret", f"{ns}/_private/x", f"{ns}/sub/.hidden/y", f"{ns}/_draft", f"_{ns}/z"):
            r = await c.call_tool("read_page", {"slug": slug})
            err = tool_error(r)
            assert err["code"] == "validation_error" and err["field"] == "slug", err
            assert "TOP SECRET" not in r.content[0].text
        names = [n["name"] for n in ok(await c.call_tool("list_namespaces", {}))["namespaces"]]
        assert f"_{ns}" not in names and ns in names
        counts = {n["name"]: n["pages"] for n in ok(await c.call_tool("list_namespaces", {}))["namespaces"]}
        assert counts[ns] == 1


# --- listing ----------------------------------------------------------------------------------


async def test_list_pages_paging_and_filter(server, mode):
    ns = f"pg-{mode.replace('-', '')}"
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        ok(await c.call_tool("save_namespace", {"name": ns, "title": "Paging"}))
        names = ["e", "a", "c", "b", "d", "f/g"]
        for n in names:
            await create(c, f"{ns}/{n}", f"page {n}\n", title=f"Title {n}", tags=[n[0]])
        seen, offset, calls = [], 0, 0
        while True:
            r = ok(await c.call_tool("list_pages", {"namespace": ns, "limit": 4, "offset": offset}))
            calls += 1
            assert r["total"] == 6
            seen += r["pages"]
            if not r["more"]:
                assert r["next_offset"] is None
                break
            assert r["next_offset"] == offset + 4
            offset = r["next_offset"]
        assert calls == 2
        assert [p["slug"] for p in seen] == sorted(f"{ns}/{n}" for n in names)
        assert seen[0] == {"slug": f"{ns}/a", "title": "Title a", "tags": ["a"]}
        # an offset past the end is an empty page, not an error
        r = ok(await c.call_tool("list_pages", {"namespace": ns, "offset": 100}))
        assert r["pages"] == [] and r["more"] is False
        # the filter keeps other namespaces out; no filter shows them all
        everything = ok(await c.call_tool("list_pages", {"limit": 500}))
        assert {p["slug"].split("/")[0] for p in everything["pages"]} >= {"notes", "team", ns}
        assert_field_error(await c.call_tool("list_pages", {"limit": 501}), "validation_error", "limit")
        assert_field_error(await c.call_tool("list_pages", {"namespace": "_x"}), "validation_error", "namespace")
        r = ok(await c.call_tool("list_pages", {"namespace": "empty"}))
        assert r == {"pages": [], "total": 0, "more": False, "next_offset": None}


# --- namespaces -------------------------------------------------------------------------------


async def test_list_namespaces(server, mode):
    async with mcp_session(server, server.tokens["read"], mode) as c:
        r = ok(await c.call_tool("list_namespaces", {}))
    by_name = {n["name"]: n for n in r["namespaces"]}
    assert {"notes", "team", "ops", "empty"} <= set(by_name)
    notes = by_name["notes"]
    assert notes["title"] == "Notes" and notes["description"] and notes["public"] is False and notes["pages"] >= 1
    assert by_name["empty"]["pages"] == 0
    assert set(notes) == {"name", "title", "description", "pages", "public"}


async def test_namespace_settings(server, mode):
    name = f"ns-{mode.replace('-', '')}"
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        created = ok(await c.call_tool("save_namespace", {"name": name, "title": "First", "description": "desc", "skin": "journal"}))
        assert created["created"] is True and created["name"] == name
        h = created["hash"]

        # creating one that exists fails with a conflict carrying the current hash
        err = tool_error(await c.call_tool("save_namespace", {"name": name, "title": "Again"}))
        assert err["code"] == "conflict" and err["hash"] == h

        settings = ok(await c.call_tool("read_namespace", {"name": name}))
        assert settings["hash"] == h and settings["name"] == name
        assert (settings["title"], settings["description"], settings["skin"]) == ("First", "desc", "journal")
        for key in ("public", "image", "palette", "index", "widgets", "tree", "new", "export"):
            assert key in settings, key

        # update with basehash keeps omitted fields; lists replace whole
        r = ok(
            await c.call_tool(
                "save_namespace",
                {"name": name, "basehash": h, "title": "Second", "palette": "rosé pine", "widgets": ["tags", "pages"],
                 "new": {"template": "# New\n", "slug": "{date}"}, "export": {"base_url": "https://x.example", "sitemap": True}},
            )
        )  # fmt: skip
        assert r["created"] is False and r["hash"] != h
        s = ok(await c.call_tool("read_namespace", {"name": name}))
        assert (s["title"], s["description"], s["skin"], s["palette"]) == ("Second", "desc", "journal", "rosé pine")
        assert s["widgets"] == ["tags", "pages"]
        assert s["new"] == {"template": "# New\n", "slug": "{date}"}
        assert s["export"] == {"base_url": "https://x.example", "sitemap": True}
        assert s["hash"] == r["hash"]

        # a stale basehash conflicts with the current hash
        err = tool_error(await c.call_tool("save_namespace", {"name": name, "basehash": h, "title": "Lost"}))
        assert err["code"] == "conflict" and err["hash"] == s["hash"]

        # enum validation names the field and writes nothing
        ns_path = f"{name}/.namespace.yaml"
        kept, rev = server.stored(ns_path), server.revision()
        for args, field in (
            ({"skin": "neon"}, "skin"),
            ({"palette": "rose pine"}, "palette"),
            ({"widgets": ["pages", "clock"]}, "widgets"),
            ({"title": "t" * 257}, "title"),
            ({"description": "d" * 256}, "description"),
            ({"new": {"template": "x", "other": "y"}}, "new"),
            ({"export": {"color": "red"}}, "export"),
            ({"image": "hero.gif"}, "image"),
            ({"index": "_hidden"}, "index"),
            ({"title": "nul\x00"}, "title"),
            ({"tree": ["ok", "../../x"]}, "tree[1]"),
            ({"tree": ["p"] * 1001}, "tree"),
            ({"new": {"template": "t" * 65537}}, "new.template"),
            ({"new": {"template": "t", "slug": "../../x"}}, "new.slug"),
            ({"export": {"base_url": "javascript:alert(1)"}}, "export.base_url"),
        ):
            assert_field_error(
                await c.call_tool("save_namespace", {"name": name, "basehash": s["hash"], **args}), "validation_error", field
            )
        assert server.stored(ns_path) == kept and server.revision() == rev

        # `new` with both fields empty, and `export` as {}, remove them
        r = ok(await c.call_tool("save_namespace", {"name": name, "basehash": s["hash"], "new": {"template": "", "slug": ""}, "export": {}}))
        s = ok(await c.call_tool("read_namespace", {"name": name}))
        assert s["new"] == {} and s["export"] == {}
        assert s["title"] == "Second" and s["widgets"] == ["tags", "pages"]
        text = server.stored(ns_path).decode()
        assert "new" not in text and "export" not in text

        # an empty string clears a text field; an empty list restores the default widgets
        r = ok(await c.call_tool("save_namespace", {"name": name, "basehash": s["hash"], "description": "", "widgets": []}))
        s = ok(await c.call_tool("read_namespace", {"name": name}))
        assert s["description"] == "" and s["widgets"] == [] and s["title"] == "Second"

        # names are validated too
        for bad in ("_x", ".x", "a/b", ""):
            assert_field_error(await c.call_tool("read_namespace", {"name": bad}), "validation_error", "name", exact=True)
            assert_field_error(await c.call_tool("save_namespace", {"name": bad}), "validation_error", "name", exact=True)
        assert_field_error(await c.call_tool("read_namespace", {"name": "no-such-namespace"}), "not_found", "name")
        err = tool_error(await c.call_tool("save_namespace", {"name": "no-such-namespace", "basehash": s["hash"]}))
        assert err["code"] == "conflict" and err["hash"] == ""

        # saving namespace settings never changes pages
        assert ok(await c.call_tool("list_pages", {"namespace": name}))["total"] == 0
