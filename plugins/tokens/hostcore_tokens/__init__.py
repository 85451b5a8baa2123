"""Personal access tokens: ``Authorization: Bearer hc_...``.

A token has a name, scopes (read, propose, write, review, admin; each implies the ones before it) and optionally a
list of namespaces it is limited to. Only its SHA-256 is stored, in the host's shared state
(``host.shared``: ``shared.sqlite`` in the instance folder, or Redis when ``REDIS_URL`` is set, so
a token made on one host works at once on every host, and a revoked one stops everywhere at
once); the token itself is shown once, when created. Tokens are high-entropy random strings, so a
fast hash is the right one (a slow password hash would only slow every request).

Records: ``token/<digest>`` (name, scopes, namespaces, created), ``token-name/<name>`` (the digest
of the active token of that name: created with ``add``, so of two hosts creating the same name one
wins) and ``token-used/<digest>`` (when it was last used, written at most once a minute per
process). An ``auth.sqlite`` left by an older version is moved in once, at start-up, and renamed
``auth.sqlite.migrated``.

Other plugins reach the tokens through the ``tokens`` service (:data:`TOKENS`, a
:class:`TokenService`): ``host.service(TOKENS)``.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import click

from hostcore import (
    SCOPES,
    NotFound,
    PluginHost,
    Principal,
    ServiceKey,
    SharedState,
    Slot,
    Unauthorized,
    ValidationError,
    check_namespace,
    hookimpl,
)

PREFIX = "hc_"
TOKEN, NAME, USED = "token", "token-name", "token-used"
USED_EVERY = 60.0  # seconds between two writes of a token's last_used by one process
log = logging.getLogger(__name__)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _token_id(token_digest: str) -> str:
    """A token's id: the first 12 hex digits of its digest (it names the token, reveals nothing)."""
    return token_digest[:12]


class TokenService(Protocol):
    """What another plugin may do with personal access tokens (the web plugin's account pages)."""

    def create(self, name: str, scopes: builtins.list[str], namespaces: builtins.list[str] | None = None, owner: str | None = None) -> str:
        """Create a token and return it (shown once). Raises ValidationError naming the field."""
        ...

    def list(self, owner: str | None = None) -> builtins.list[dict[str, Any]]:
        """Active tokens (of ``owner`` only, when given), oldest first, never the tokens themselves."""
        ...

    def revoke(self, name_or_id: str, owner: str | None = None) -> None:
        """Revoke a token by name or id (of ``owner`` only, when given). Raises NotFound."""
        ...

    def create_for(self, person: Principal, owner: str, name: str, scopes: builtins.list[str],
                   namespaces: builtins.list[str] | None = None) -> str:  # fmt: skip
        """A token of ``person`` (their account ``owner``), never holding a scope or namespace they
        do not. Raises ValidationError naming the field."""
        ...

    def list_for(self, person: Principal, owner: str) -> builtins.list[dict[str, Any]]:
        """The tokens ``person`` manages: every one for an admin of every namespace, else their own."""
        ...

    def revoke_for(self, person: Principal, owner: str, name_or_id: str) -> None:
        """Revoke a token ``person`` manages (see :meth:`list_for`). Raises NotFound."""
        ...


TOKENS: ServiceKey[TokenService] = ServiceKey("tokens", TokenService)


def manages_every_token(person: Principal) -> bool:
    """An admin of every namespace sees and revokes every token, those made on the command line too."""
    return person.has_scope("admin") and person.namespaces is None


def check_grant(person: Principal, scopes: list[str], namespaces: list[str] | None) -> None:
    """A token may not hold a scope or namespace its person does not. Raises ValidationError."""
    for scope in scopes:
        if scope not in SCOPES or not person.has_scope(scope):
            raise ValidationError(f"you do not hold the {scope!r} scope; pick among those you hold", field="scope")
    for ns in namespaces or []:
        check_namespace(ns, "namespace")
        if not person.can_access(ns):
            raise ValidationError(f"you have no access to namespace {ns!r}; leave it out", field="namespace")
    if person.namespaces is not None and not namespaces:
        raise ValidationError("you are limited to some namespaces: name those the token may use", field="namespace")


class TokenStore:
    """Tokens in the host's shared state; every worker and every host sees the same ones."""

    def __init__(self, shared: SharedState) -> None:
        self.shared = shared
        self._used: dict[str, float] = {}  # digest -> when this process last recorded a use
        self._lock = threading.Lock()

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
        self._add(digest(token), name, sorted(set(scopes)), list(namespaces) if namespaces else None, time.time(), owner)
        return token

    def _add(
        self, token_digest: str, name: str, scopes: list[str], namespaces: list[str] | None, created: float, owner: str | None = None
    ) -> None:
        """Record a token, its name first (``add``: one winner), so a lost race writes nothing."""
        if not self.shared.add(NAME, name, {"digest": token_digest}):
            raise ValidationError(f"an active token named {name!r} exists; pick another name or revoke it", field="name")
        record = {"name": name, "scopes": scopes, "namespaces": namespaces, "created": created, "owner": owner}
        try:
            self.shared.put(TOKEN, token_digest, record)
        except BaseException:
            self.shared.delete(NAME, name)
            raise

    def list(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Active tokens (of ``owner`` only, when given), oldest first: id, name, scopes,
        namespaces, created, last_used, owner."""
        used = {key: value["time"] for key, value in self.shared.scan(USED)}
        rows = [
            {"id": _token_id(key), "name": r["name"], "scopes": r["scopes"], "namespaces": r["namespaces"],
             "created": r["created"], "last_used": used.get(key), "owner": r.get("owner")}
            for key, r in self.shared.scan(TOKEN)
            if owner is None or r.get("owner") == owner
        ]  # fmt: skip
        return sorted(rows, key=lambda r: (r["created"], r["name"]))

    def revoke(self, name_or_id: str, owner: str | None = None) -> None:
        """Revoke the active token with this name or id (of ``owner`` only, when given), on every
        host at once. Raises NotFound."""
        found = self.shared.get(NAME, name_or_id) if name_or_id else None
        token_digest = found["digest"] if found else None
        if token_digest is None and name_or_id:
            token_digest = next((key for key, _ in self.shared.scan(TOKEN) if _token_id(key) == name_or_id), None)
        if token_digest and owner is not None:
            mine = self.shared.get(TOKEN, token_digest)
            token_digest = token_digest if mine is not None and mine.get("owner") == owner else None
        record = self.shared.take(TOKEN, token_digest) if token_digest else None
        if token_digest is None or record is None:
            raise NotFound(f"no active token named {name_or_id!r}; `hostcore token list` shows them", field="token")
        named = self.shared.get(NAME, record["name"])
        if named and named["digest"] == token_digest:
            self.shared.delete(NAME, record["name"])
        self.shared.delete(USED, token_digest)

    def create_for(self, person: Principal, owner: str, name: str, scopes: builtins.list[str],
                   namespaces: builtins.list[str] | None = None) -> str:  # fmt: skip
        """A token of ``person`` (their account ``owner``), within what they hold (:func:`check_grant`)."""
        check_grant(person, scopes, namespaces)
        return self.create(name, scopes, namespaces or None, owner=owner)

    def list_for(self, person: Principal, owner: str) -> builtins.list[dict[str, Any]]:
        """Every token for an admin of every namespace (:func:`manages_every_token`), else ``owner``'s."""
        return self.list() if manages_every_token(person) else self.list(owner=owner)

    def revoke_for(self, person: Principal, owner: str, name_or_id: str) -> None:
        """Revoke a token ``person`` manages (see :meth:`list_for`). Raises NotFound."""
        self.revoke(name_or_id, owner=None if manages_every_token(person) else owner)

    def verify(self, token: str) -> Principal | None:
        """The token's principal, or None when it is unknown or revoked: one read of shared state
        (and, at most once a minute per process, one write of when it was last used)."""
        token_digest = digest(token)
        record = self.shared.get(TOKEN, token_digest)
        if record is None:
            return None
        now = time.time()
        with self._lock:
            due = now - self._used.get(token_digest, 0.0) > USED_EVERY
            if due:
                self._used[token_digest] = now
        if due:
            try:
                self.shared.put(USED, token_digest, {"time": now})
            except Exception as exc:  # e.g. a full disk under shared.sqlite: the token still works, last_used waits
                log.warning("last use of token %r not recorded (tried again in a minute): %s", record["name"], exc)
        namespaces = record["namespaces"]
        return Principal(name=record.get("owner") or record["name"], scopes=frozenset(record["scopes"]), namespaces=frozenset(namespaces) if namespaces else None)

    def owned(self, token: str) -> bool:
        """Whether the token is a person's (made on the web account page)."""
        record = self.shared.get(TOKEN, digest(token))
        return bool(record and record.get("owner"))

    def migrate(self, path: Path) -> int:
        """Move the active tokens of an older version's ``auth.sqlite`` in (once: the file is then
        renamed ``auth.sqlite.migrated``). Returns how many were moved; a name already taken here
        keeps its token here and the old one is skipped, with a warning."""
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.OperationalError:
            return 0  # gone meanwhile: another worker moved it
        try:
            columns = {row[1] for row in db.execute("PRAGMA table_info(tokens)")}
            owner = "owner" if "owner" in columns else "NULL"
            rows = db.execute(
                f"SELECT name, digest, scopes, namespaces, created, {owner} FROM tokens WHERE revoked IS NULL"
            ).fetchall()
        except sqlite3.DatabaseError:
            rows = None
        finally:
            db.close()
        if rows is None:
            log.warning("%s is not a token database; left as it is", path)
            return 0
        moved = 0
        for name, token_digest, scopes, namespaces, created, owned_by in rows:
            if self.shared.get(TOKEN, token_digest) is not None:
                continue  # moved by another worker already
            try:
                self._add(token_digest, name, scopes.split(), namespaces.split() if namespaces else None, created, owned_by)
                moved += 1
            except ValidationError:
                log.warning("token %r of %s not moved: a token of that name exists in shared state", name, path)
        try:
            path.rename(path.with_name(path.name + ".migrated"))
        except FileNotFoundError:
            pass  # another worker renamed it
        if moved:
            log.info("moved %d tokens from %s into shared state", moved, path)
        return moved


STORE: Slot[TokenStore] = Slot("tokens", lambda host: TokenStore(host.shared))


def store(host: PluginHost) -> TokenStore:
    return host.slot(STORE)


@hookimpl
def register_services(register: Any, host: PluginHost) -> None:
    register(TOKENS, store(host))


@hookimpl
def startup(host: PluginHost) -> None:
    old = host.instance_path / "auth.sqlite"
    if old.exists():
        store(host).migrate(old)
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
def authenticate(request: Any, host: PluginHost) -> Principal | None:
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
def instance_created(host: PluginHost) -> str | None:
    if host.shared.get(NAME, "admin") is not None:  # another host of the same REDIS_URL made it
        return "The admin token exists already in the shared state (made by another host); use it, or `hostcore token create`"
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

