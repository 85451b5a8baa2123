"""A writer process for test_git_concurrency: its own interpreter, its own official MCP client over HTTP.

    python git_writer.py mix   URL TOKEN MODE NAMESPACE SHARED_SLUG INDEX SECONDS
    python git_writer.py crash URL TOKEN NAMESPACE SECONDS

``mix``: creates its own pages, prints ``ready``, waits for ``go`` on stdin (the barrier), then for
at most SECONDS (and a bounded number of rounds) appends a marker line to the shared page with
edit_page (re-reading and retrying on conflict), creates and updates pages of its own, and renames
one of its pages (whose links a page of its own follows). Prints one JSON line with every
acknowledged write and the number of commits they made.

``crash``: for SECONDS writes big pages (one new page per round, and a save over one shared page),
printing one JSON line before each write (``attempt``) and after each acknowledgement (``ack``),
and reconnecting after any transport failure (the test kills server workers meanwhile).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

END = "<!-- end of markers -->"
MAX_ROUNDS = 40
MAX_RETRIES = 200


@asynccontextmanager
async def session(url: str, token: str, mode: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            yield client


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


class Failed(Exception):
    """A tool error that is not a conflict: the test reports it."""


async def call(c: Client, name: str, args: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(result, None) on success, (None, conflict error) on a conflict; raises Failed on any other error."""
    r = await c.call_tool(name, args)
    if not r.is_error:
        return r.structured_content, None
    err = json.loads(r.content[-1].text)  # a tool error's last text block is its JSON object
    if err.get("code") == "conflict":
        return None, err
    raise Failed(f"{name} {args.get('slug')}: {err}")


# --- mix ----------------------------------------------------------------------------------------


def title_of(index: int, n: int) -> str:
    return f"Writer {index} rename {n}"


async def mix(url: str, token: str, mode: str, namespace: str, shared: str, index: int, seconds: float) -> None:
    out: dict[str, Any] = {"index": index, "commits": 0, "markers": [], "pages": {}, "renamed_from": [], "conflicts": 0, "errors": []}
    async with session(url, token, mode) as c:
        # Before the barrier: a page to rename, and a page linking to it (so renames rewrite links).
        renamed = f"{namespace}/w{index}-start"
        linker = f"{namespace}/w{index}-links"
        res, _ = await call(c, "save_page", {"slug": renamed, "body": f"renamed page of writer {index}\n"})
        renamed_hash = res["hash"]
        await call(c, "save_page", {"slug": linker, "body": f"follows [[{renamed}|writer {index}]]\n"})
        out["commits"] += 2
        print("ready", flush=True)
        if (await anyio.to_thread.run_sync(sys.stdin.readline)).strip() != "go":
            return
        deadline = time.monotonic() + seconds
        try:
            for n in range(MAX_ROUNDS):
                if time.monotonic() > deadline:
                    break
                # 1. append a marker line to the shared page, retrying on conflict
                marker = f"- marker w{index}-{n}"
                for _ in range(MAX_RETRIES):
                    page, _ = await call(c, "read_page", {"slug": shared})
                    res, conflict = await call(
                        c, "edit_page", {"slug": shared, "basehash": page["hash"], "edits": [{"oldText": END, "newText": f"{marker}\n{END}"}]}
                    )
                    if conflict is None:
                        assert res["changed"], res
                        out["commits"] += 1
                        out["markers"].append(marker)
                        break
                    out["conflicts"] += 1
                else:
                    raise Failed(f"{marker}: still conflicting after {MAX_RETRIES} attempts")
                # 2. a page of its own: created, then updated with its hash
                slug = f"{namespace}/w{index}-p{n}"
                res, conflict = await call(c, "save_page", {"slug": slug, "body": f"writer {index} page {n}\n"})
                if conflict is not None:
                    raise Failed(f"creating {slug}: {conflict}")
                out["commits"] += 1
                if n % 2:
                    res, conflict = await call(c, "save_page", {"slug": slug, "basehash": res["hash"], "body": f"writer {index} page {n}, updated\n", "tags": ["updated"]})
                    if conflict is not None:
                        raise Failed(f"updating {slug}: {conflict}")
                    out["commits"] += 1
                out["pages"][slug] = res["hash"]
                # 3. rename its page; the linking page is rewritten in a commit of its own
                res, conflict = await call(c, "rename_page", {"slug": renamed, "title": title_of(index, n), "basehash": renamed_hash})
                if conflict is not None:
                    raise Failed(f"renaming {renamed}: {conflict}")
                if res["failed_links"] or res["rewritten"] != [linker]:
                    raise Failed(f"rename of {renamed}: {res}")
                out["renamed_from"].append(renamed)
                out["commits"] += 1 + len(res["rewritten"])
                renamed, renamed_hash = res["slug"], res["hash"]
        except Failed as exc:
            out["errors"].append(str(exc))
        out["renamed"] = renamed
        out["renamed_hash"] = renamed_hash
        out["linker"] = linker
    emit(out)


# --- crash --------------------------------------------------------------------------------------


def crash_body(key: str) -> str:
    """A body big enough (about 200 kB) that a torn write would show, unique to ``key``."""
    return "".join(f"{key} line {i:05d}\n" for i in range(10_000))


async def crash(url: str, token: str, namespace: str, seconds: float) -> None:
    shared = f"{namespace}/shared"
    shared_hash: str | None = None
    version = 0
    n = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and n < 400:
        try:
            async with session(url, token, "2026-07-28") as c:
                while time.monotonic() < deadline and n < 400:
                    slug = f"{namespace}/p{n}"
                    emit({"attempt": slug, "key": slug})
                    res, conflict = await call(c, "save_page", {"slug": slug, "body": crash_body(slug)})
                    if conflict is not None:  # an attempt that landed although its answer was lost
                        emit({"exists": slug, "hash": conflict["hash"]})
                    else:
                        emit({"ack": slug, "key": slug, "hash": res["hash"]})
                    n += 1
                    if shared_hash is None:
                        current = await c.call_tool("read_page", {"slug": shared, "limit": 1})
                        shared_hash = None if current.is_error else current.structured_content["hash"]
                    version += 1
                    key = f"{shared}@{version}"
                    emit({"attempt": shared, "key": key})
                    args = {"slug": shared, "body": crash_body(key)} | ({"basehash": shared_hash} if shared_hash else {})
                    res, conflict = await call(c, "save_page", args)
                    if conflict is not None:
                        shared_hash = conflict["hash"] or None
                        continue
                    shared_hash = res["hash"]
                    emit({"ack": shared, "key": key, "hash": shared_hash})
        except Failed as exc:
            emit({"error": str(exc), "fatal": True})
            return
        except Exception as exc:
            emit({"error": repr(exc)[:300]})
            shared_hash = None
            n += 1  # the page of a lost attempt may or may not exist; never reuse its slug
            await anyio.sleep(0.05)
    emit({"done": True})


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "mix":
        url, token, mode, namespace, shared, index, seconds = sys.argv[2:9]
        anyio.run(mix, url, token, mode, namespace, shared, int(index), float(seconds))
    else:
        url, token, namespace, seconds = sys.argv[2:6]
        anyio.run(crash, url, token, namespace, float(seconds))
