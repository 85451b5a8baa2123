"""Personal access tokens: ``Authorization: Bearer hc_...``.

A token has a name, scopes (read, write, admin; each implies the ones before it) and optionally a
list of namespaces it is limited to. Only its SHA-256 is stored, in ``<instance>/auth.sqlite``; the
token itself is shown once, when created. Tokens are high-entropy random strings, so a fast hash
is the right one (a slow password hash would only slow every request).
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import click

from hostcore import (
    SCOPES,
    NotFound,
    Principal,
    Unauthorized,
    ValidationError,
    check_namespace,
    connect,
    file_id,
    hookimpl,
)

PREFIX = "hc_"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    scopes TEXT NOT NULL,
    namespaces TEXT,
    created REAL NOT NULL,
    last_used REAL,
    revoked REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS tokens_active_name ON tokens(name) WHERE revoked IS NULL;
"""
_OWNER = "ALTER TABLE tokens ADD COLUMN owner TEXT"  # a person's own token (web account page); NULL: made on the command line


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """Tokens in SQLite; one connection per thread, safe across processes (WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        with self._db() as db:
            db.executescript(_SCHEMA)
            if "owner" not in {row[1] for row in db.execute("PRAGMA table_info(tokens)")}:
                db.execute(_OWNER)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is not None and self._local.opened is None and file_id(self.path) is not None:
            db.close()  # a read-only snapshot taken on a full disk: try a normal connection again
            db = None
        if db is None:
            db, self._local.opened = connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=30000")
            self._local.db = db
        return db

    def create(self, name: str, scopes: list[str], namespaces: list[str] | None = None, owner: str | None = None) -> str:
        """Create a token and return it; it cannot be shown again. ``owner``: the person it acts for
        (its principal's name; their current access bounds it). Raises ValidationError."""
        if not name.strip():
            raise ValidationError("give the token a name, e.g. --name claude-laptop", field="name")
        bad = [s for s in scopes if s not in SCOPES]
        if not scopes or bad:
            raise ValidationError(f"use one or more of {', '.join(SCOPES)} (got {', '.join(bad) or 'none'})", field="scope")
        for ns in namespaces or []:
            check_namespace(ns, "namespace")
        token = PREFIX + secrets.token_urlsafe(32)
        try:
            self._db().execute(
                "INSERT INTO tokens (name, digest, scopes, namespaces, created, owner) VALUES (?, ?, ?, ?, ?, ?)",
                (name, digest(token), " ".join(sorted(set(scopes))), " ".join(namespaces or []) or None, time.time(), owner),
            )
        except sqlite3.IntegrityError:
            raise ValidationError(f"an active token named {name!r} exists; pick another name or revoke it", field="name") from None
        return token

    def list(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Active tokens (of ``owner`` only, when given)."""
        mine = "AND owner = ?" if owner is not None else ""
        rows = self._db().execute(
            f"SELECT id, name, scopes, namespaces, created, last_used, owner FROM tokens WHERE revoked IS NULL {mine} ORDER BY id",
            (owner,) if owner is not None else (),
        )
        return [
            {"id": r[0], "name": r[1], "scopes": r[2].split(), "namespaces": r[3].split() if r[3] else None,
             "created": r[4], "last_used": r[5], "owner": r[6]}
            for r in rows
        ]  # fmt: skip

    def revoke(self, name_or_id: str, owner: str | None = None) -> None:
        """Revoke the active token with this name or id (of ``owner`` only, when given). Raises NotFound."""
        mine = "AND owner = ?" if owner is not None else ""
        cur = self._db().execute(
            f"UPDATE tokens SET revoked = ? WHERE revoked IS NULL AND (name = ? OR CAST(id AS TEXT) = ?) {mine}",
            (time.time(), name_or_id, name_or_id, *((owner,) if owner is not None else ())),
        )
        if cur.rowcount == 0:
            raise NotFound(f"no active token named {name_or_id!r}; `hostcore token list` shows them", field="token")

    def verify(self, token: str) -> Principal | None:
        """The token's principal: its name, or its owner's for a person's token. None if unknown or revoked."""
        row = self._db().execute(
            "SELECT id, name, scopes, namespaces, last_used, owner FROM tokens WHERE digest = ? AND revoked IS NULL",
            (digest(token),),
        ).fetchone()
        if row is None:
            return None
        now = time.time()
        if row[4] is None or now - row[4] > 60:
            try:
                self._db().execute("UPDATE tokens SET last_used = ? WHERE id = ?", (now, row[0]))
            except sqlite3.OperationalError as exc:  # a full disk: the token still works, last_used waits
                if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR):
                    raise
        return Principal(
            name=row[5] or row[1], scopes=frozenset(row[2].split()), namespaces=frozenset(row[3].split()) if row[3] else None
        )

    def owned(self, token: str) -> bool:
        """Whether the token is a person's (made on the web account page)."""
        row = self._db().execute("SELECT owner FROM tokens WHERE digest = ?", (digest(token),)).fetchone()
        return bool(row and row[0])

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def store(host: Any) -> TokenStore:
    if "tokens" not in host.state:
        host.state["tokens"] = TokenStore(host.instance_path / "auth.sqlite")
    return host.state["tokens"]


@hookimpl
def startup(host: Any) -> None:
    store(host)


def bounded(principal: Principal, person: Principal | None) -> Principal | None:
    """A person's token acts as the person (``find_person``'s answer) and can do no more than they
    can now: None once they may not sign in."""
    if person is None:
        return None
    scopes = frozenset(s for s in SCOPES if principal.has_scope(s) and person.has_scope(s))
    if principal.namespaces is None:
        namespaces = person.namespaces
    else:
        namespaces = principal.namespaces if person.namespaces is None else principal.namespaces & person.namespaces
    return Principal(person.name, scopes, namespaces)


@hookimpl
def authenticate(request: Any, host: Any) -> Principal | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.startswith(PREFIX):
        return None
    tokens = store(host)
    principal = tokens.verify(token.strip())
    if principal is not None and tokens.owned(token.strip()):
        principal = bounded(principal, host.pm.hook.find_person(name=principal.name, host=host))
    if principal is None:
        raise Unauthorized("the token is unknown or revoked; create one with `hostcore token create`")
    return principal


@hookimpl
def instance_created(host: Any) -> str | None:
    token = store(host).create("admin", ["admin"])
    return f"First admin token (shown once; keep it safe): {token}"


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.group("token")
    def token_group() -> None:
        """Create, list and revoke personal access tokens."""

    @token_group.command("create")
    @click.option("--name", required=True, help="a name you will recognise, e.g. claude-laptop")
    @click.option("--scope", "scopes", multiple=True, required=True, type=click.Choice(SCOPES), help="repeat for several")
    @click.option("--namespace", "namespaces", multiple=True, help="limit the token to this namespace; repeat")
    @click.pass_obj
    def create(obj: Any, name: str, scopes: tuple[str, ...], namespaces: tuple[str, ...]) -> None:
        """Create a token and print it (only the token, on stdout)."""
        click.echo(store(obj.host()).create(name, list(scopes), list(namespaces) or None))

    @token_group.command("list")
    @click.pass_obj
    def list_(obj: Any) -> None:
        """List active tokens (never the tokens themselves)."""
        for t in store(obj.host()).list():
            limit = ",".join(t["namespaces"]) if t["namespaces"] else "all namespaces"
            used = time.strftime("%Y-%m-%d %H:%M", time.gmtime(t["last_used"])) if t["last_used"] else "never"
            click.echo(f"{t['id']}\t{t['name']}\t{' '.join(t['scopes'])}\t{limit}\tlast used {used}")

    @token_group.command("revoke")
    @click.argument("token")
    @click.pass_obj
    def revoke(obj: Any, token: str) -> None:
        """Revoke the token with this name or id."""
        store(obj.host()).revoke(token)
        click.echo(f"revoked {token}")

