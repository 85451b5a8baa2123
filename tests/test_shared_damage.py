"""A damaged ``shared.sqlite`` (accounts, tokens, OAuth grants: not derived, so never rebuilt on its
own): every call that meets the damage says so, naming the file; the health check and ``hostcore
check`` say so; public pages are still served; ``hostcore doctor`` salvages what SQLite can still
read, and ``hostcore backup`` / ``restore`` bring back the rest. Real SQLite files damaged the way
a failing disk damages them, the real CLI in subprocesses, the app in-process."""

from __future__ import annotations

import gc
import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from hostcore_accounts import accounts

from hostcore import SYSTEM, create_app, testing
from hostcore_tokens import digest, store

CONFIG_FILE = """\
PLUGINS = ["git", "tokens", "sqlite", "accounts", "web"]
STORAGE = "git"
SEARCH = "sqlite"
"""
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
PASSWORD = "correct horse battery"


def make_wiki(instance: Path, tokens: int) -> tuple[list[str], set[tuple[str, str]]]:
    """A wiki with a public and a private namespace, ``tokens`` tokens and an account; returns the
    tokens and every (kind, key) of the shared state, whose file is left whole on disk (no -wal)."""
    instance.mkdir()
    (instance / "hostcore.toml").write_text(CONFIG_FILE)
    app = create_app(instance_path=instance)
    host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("pub", title="Public", public=True)
    wiki.save_namespace("team", title="Team")
    wiki.save_page("pub/home", title="Home", body="Everyone may read this.\n")
    wiki.save_page("team/plans", title="Plans", body="Only the team.\n")
    made = [store(host).create(f"token-{i:03}", ["read"]) for i in range(tokens)]
    accounts(host).create("ann", PASSWORD, ["write"])
    host.close()
    gc.collect()  # connections other threads opened go with them: the file is then closed, as after a server stops
    with closing(sqlite3.connect(instance / "shared.sqlite")) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return made, set(db.execute("SELECT kind, key FROM records"))


def mcp(client: Any, token: str) -> tuple[int, dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_namespaces", "arguments": {}}}
    answer = client.post("/_/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    text = answer.get_data(as_text=True)
    return answer.status_code, json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)


def sign_in(client: Any) -> Any:
    form = client.get("/_/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert csrf, form
    return client.post("/_/login", data={"name": "ann", "password": PASSWORD, "csrf_token": csrf.group(1)},
                       headers={"Accept": "text/html"})  # fmt: skip


def serving(instance: Path) -> tuple[Flask, Any]:
    app = create_app(instance_path=instance)
    return app, app.test_client()


@pytest.mark.serve
def test_a_damaged_shared_state_is_named_everywhere_and_public_pages_are_still_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    instance, saved = tmp_path / "instance", tmp_path / "shared-backup.sqlite"
    tokens, _records = make_wiki(instance, tokens=3)
    copied = testing.cli(instance, "backup", str(saved)).stdout
    assert copied.startswith(f"copied 8 records (accounts 1, token 3, token-name 3, web 1) of {instance / 'shared.sqlite'} to {saved}")
    assert saved.stat().st_mode & 0o777 == 0o600
    with open(instance / "shared.sqlite", "r+b") as f:  # its first page overwritten, as a failing disk would
        f.write(b"\xa5" * 4096)

    app, client = serving(instance)
    try:
        assert "shared.sqlite is damaged (file is not a database)" in caplog.text
        health = client.get("/_/health")
        assert health.status_code == 503 and health.get_json()["status"] == "damaged"
        assert "shared.sqlite in its instance folder (file is not a database)" in health.get_json()["problems"][0]

        status, answer = mcp(client, tokens[0])
        assert status == 503, answer  # not an HTML 500
        assert answer["error"]["code"] == "unavailable"
        assert answer["error"]["message"].startswith(
            "the wiki's shared state is damaged: shared.sqlite in its instance folder (file is not a database). "
            "Signing in, tokens and OAuth do not work until the wiki's operator repairs it (`hostcore doctor`)"
        )
        signing_in = sign_in(client)
        assert signing_in.status_code == 503 and "shared.sqlite in its instance folder" in signing_in.get_data(as_text=True)

        assert "Everyone may read this." in client.get("/pub/home").get_data(as_text=True)
        with_token = client.get("/pub/home", headers={"Authorization": f"Bearer {tokens[0]}"})
        assert with_token.status_code == 200 and "Everyone may read this." in with_token.get_data(as_text=True)
        assert client.get("/team/plans").status_code == 302  # to sign in, which says what is wrong

        checked = testing.cli(instance, "check", check=False)
        assert checked.returncode == 1
        assert f"problem: {instance / 'shared.sqlite'} is damaged (file is not a database)" in checked.stdout

        repaired = testing.cli(instance, "doctor").stdout
        assert f"{instance / 'shared.sqlite'} was damaged (file is not a database)" in repaired
        assert "kept 0 records in a new shared.sqlite" in repaired and "restore them from a backup" in repaired
        aside = next(instance.glob("shared.sqlite.damaged-*"))
        assert aside.read_bytes()[:4096] == b"\xa5" * 4096  # kept as it was

        restored = testing.cli(instance, "restore", str(saved)).stdout
        assert restored.startswith("restored 8 records (accounts 1, token 3, token-name 3, web 1)")
        # The running app follows: the new file is opened, the damage is gone, and everyone is back.
        assert client.get("/_/health").status_code == 200
        assert all(mcp(client, token)[0] == 200 for token in tokens)
        assert sign_in(client).status_code == 303
        assert "Only the team." in client.get("/team/plans").get_data(as_text=True)
        assert testing.cli(instance, "check").stdout.endswith("config OK\n")
    finally:
        app.extensions["hostcore"].close()


def damage_a_leaf(path: Path) -> int:
    """Overwrite one leaf page in the middle of the records table with garbage; the records it held."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    leaves = [n for n in range(1, len(data) // size) if data[n * size] == 0x0A]  # WITHOUT ROWID: index b-tree leaves
    assert len(leaves) > 4, "the records should span several pages"
    victim = leaves[len(leaves) // 2]
    cells = int.from_bytes(data[victim * size + 3 : victim * size + 5], "big")  # the b-tree page header's count
    data[victim * size : (victim + 1) * size] = b"\xa5" * size
    path.write_bytes(data)
    return cells


@pytest.mark.serve
def test_doctor_salvages_every_record_sqlite_can_still_read(tmp_path: Path) -> None:
    instance = tmp_path / "instance"
    tokens, records = make_wiki(instance, tokens=150)
    lost = damage_a_leaf(instance / "shared.sqlite")

    with closing(sqlite3.connect(instance / "shared.sqlite")) as db:  # open in another process: doctor waits for it to stop
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        refused = testing.cli(instance, "doctor", check=False)
        assert refused.returncode == 1
        assert f"{instance / 'shared.sqlite'} is open in another process (a running `hostcore serve`?)" in refused.stderr
        assert not list(instance.glob("shared.sqlite.damaged-*"))

    repaired = testing.cli(instance, "doctor").stdout
    kept = int(re.search(r"kept (\d+) records", repaired).group(1))  # type: ignore[union-attr]
    assert "database disk image is malformed" in repaired and "are lost" in repaired
    with sqlite3.connect(instance / "shared.sqlite") as db:
        assert db.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        salvaged = set(db.execute("SELECT kind, key FROM records"))
    assert len(salvaged) == kept and salvaged < records
    assert len(records) - kept <= lost, "only the records of the damaged page are lost"

    app, client = serving(instance)
    try:
        assert client.get("/_/health").status_code == 200
        for token in tokens:
            status, _answer = mcp(client, token)
            assert status == (200 if ("token", digest(token)) in salvaged else 401)
    finally:
        app.extensions["hostcore"].close()
