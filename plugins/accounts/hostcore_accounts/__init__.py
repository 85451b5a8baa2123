"""People's accounts: a name, a password hashed with Argon2id, scopes and namespaces.

Accounts live in ``host.shared`` (kind ``accounts``, keyed by name), so every worker and, with
``REDIS_URL``, every host sees one set of accounts and one sign-in throttle. The plugin serves the
sign-in page ``/_/login`` (and ``/_/logout``), answers the core's ``find_person`` hook (a signed-in
person's scopes and namespaces; a disabled account is signed out at its next request) and adds
``hostcore user create/list/edit/disable/enable/passwd`` (through :class:`~hostcore_accounts.management.Management`, as the admin's people pages).

Throttling (see docs/operators.md): each failed sign-in counts against the pair of the account
name typed (whether or not it exists) and the client address, against the name alone and against
the address alone, for :data:`FAILURE_WINDOW` seconds. Past a subject's free failures
(:data:`FREE_FAILURES` for the pair, :data:`FREE_FAILURES_PER_NAME` for the name,
:data:`FREE_FAILURES_PER_ADDRESS` for the address) its passwords are checked at most once per
interval: 2 s, then 4, 8 ... up to :data:`MAX_WAIT`. A try when the interval's one check is taken
gets 429 without its password being looked at; a try that gets the check signs in if its password
is right. So a stranger's failures slow every try of a name down to one check per
:data:`MAX_WAIT` seconds at worst, but never lock its owner out: the right password gets in at the
next free check. A successful sign-in clears the counts of its name and pair. The counts are
read-modify-write, so a burst of parallel failures may count fewer than it made; the checks are
taken with ``add`` (one winner across workers and hosts), so a burst never gets more checks.

Other plugins reach the accounts through the ``accounts`` service (:data:`ACCOUNTS`, an
:class:`AccountService`): ``host.service(ACCOUNTS)``; the ``oidc`` plugin keeps the people it
signs in there.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import click
from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from flask import Blueprint, Flask, redirect, render_template, request, url_for
from markupsafe import Markup

from hostcore import (
    LOGIN_PATH,
    LOGOUT_PATH,
    SCOPES,
    SYSTEM,
    NotFound,
    PluginHost,
    Principal,
    RateLimited,
    ServiceKey,
    Slot,
    ValidationError,
    check_csrf,
    end_sessions,
    hookimpl,
    person,
    safe_next,
    sign_in,
    sign_out,
)

from .management import Management, check_access
from .people import PEOPLE_PATH

KIND = "accounts"
FAILURES = "login-failures"
CHECKS = "login-checks"
SIGN_INS = "account-sign-ins"
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._@-]{0,63}")
MIN_PASSWORD = 10
MAX_PASSWORD = 1024
FREE_FAILURES = 5
FREE_FAILURES_PER_NAME = 20
FREE_FAILURES_PER_ADDRESS = 20
FAILURE_WINDOW = 3600.0
MAX_WAIT = 30.0
GENERIC_ERROR = "That name and password do not match an account that may sign in."

PROFILE = profiles.RFC_9106_LOW_MEMORY
"""Argon2id as RFC 9106's second recommendation (64 MiB, 3 passes, 4 lanes): the cost a guess pays."""
_hasher = PasswordHasher.from_parameters(PROFILE)
_dummy_hash: str | None = None


def hash_password(password: str) -> str:
    check_password(password)
    return _hasher.hash(password)


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise ValidationError(f"a password needs at least {MIN_PASSWORD} characters; choose a longer one", field="password")
    if len(password) > MAX_PASSWORD:
        raise ValidationError(f"a password may have at most {MAX_PASSWORD} characters", field="password")


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ValidationError(
            f"an account name is 1-64 lowercase letters, digits and . _ @ -, starting with a letter or digit (got {name!r})",
            field="name",
        )
    return name


def new_password() -> str:
    """A random password for a first account: 20 letters and digits (about 119 bits)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(20))


class AccountService(Protocol):
    """What another plugin may do with people's accounts (records: name, hash, scopes, namespaces,
    disabled, created, upstream)."""

    def get(self, name: str) -> dict[str, Any] | None:
        """The account named ``name``, or None."""
        ...

    def create(
        self,
        name: str,
        password: str | None,
        scopes: list[str],
        namespaces: list[str] | None = None,
        upstream: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Create an account (``password`` None: it signs in only through ``upstream``, a provider).
        Raises ValidationError naming the field; nothing is written then."""
        ...

    def delete(self, name: str) -> None:
        """Remove the account ``name`` (one just created that lost a race to another)."""
        ...

    def signed_in(self, name: str) -> None:
        """Note that ``name`` signed in now."""
        ...

    def change_password(self, name: str, current: str, new: str, address: str) -> int:
        """A person's own change of their password; ends their sessions and returns how many.
        Raises ValidationError naming the field, RateLimited while throttled."""
        ...


ACCOUNTS: ServiceKey[AccountService] = ServiceKey("accounts", AccountService)


class PeoplePages(Protocol):
    """The admin's pages of every account (:mod:`hostcore_accounts.people`), for other plugins to link to."""

    path: str


@dataclass(frozen=True)
class PeoplePage:
    path: str


PEOPLE_PAGES: ServiceKey[PeoplePages] = ServiceKey("people-pages", PeoplePages)


class Accounts:
    """The accounts of one wiki, in its shared state."""

    def __init__(self, host: PluginHost) -> None:
        self.host = host
        self.shared = host.shared

    def get(self, name: str) -> dict[str, Any] | None:
        return self.shared.get(KIND, name) if NAME_RE.fullmatch(name or "") else None

    def create(
        self,
        name: str,
        password: str | None,
        scopes: list[str],
        namespaces: list[str] | None = None,
        upstream: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Create an account (``password`` None: it signs in only through an upstream provider).
        Raises ValidationError naming the field at fault; nothing is written then."""
        check_name(name)
        scopes, namespaces = check_access(scopes, namespaces)
        record = {
            "name": name,
            "hash": hash_password(password) if password is not None else None,
            "scopes": scopes,
            "namespaces": namespaces,
            "disabled": False,
            "created": time.time(),
            "upstream": upstream,
        }
        if not self.shared.add(KIND, name, record):
            raise ValidationError(f"an account named {name!r} exists; pick another name", field="name")
        return record

    def delete(self, name: str) -> None:
        self.shared.delete(KIND, name)

    def all(self) -> list[dict[str, Any]]:
        return [record for _key, record in self.shared.scan(KIND)]

    def update(self, name: str, **changes: Any) -> dict[str, Any]:
        record = self.get(name)
        if record is None:
            raise NotFound(f"no account named {name!r}; `hostcore user list` shows them", field="name")
        record.update(changes)
        self.shared.put(KIND, name, record)
        return record

    def set_password(self, name: str, password: str) -> int:
        """Set the account's password and end every session of the person, on every worker and
        host (whoever kept a copy of a session cookie is out); returns how many sessions ended."""
        self.update(name, hash=hash_password(password))
        return end_sessions(self.host, name)

    def _matches(self, name: str, password: str) -> dict[str, Any] | None:
        """The account if ``password`` is its password and it may sign in, else None. Costs one
        Argon2id hash whether or not the account exists, so timing tells little."""
        global _dummy_hash
        record = self.get(name)
        stored = record.get("hash") if record else None
        if not stored or len(password) > MAX_PASSWORD:
            if _dummy_hash is None:
                _dummy_hash = _hasher.hash(secrets.token_urlsafe(16))
            stored, record = _dummy_hash, None
        try:
            _hasher.verify(stored, password[:MAX_PASSWORD])
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        if record is None or record.get("disabled"):
            return None
        if _hasher.check_needs_rehash(stored):
            self.update(name, hash=hash_password(password))
        return record

    def verify(self, name: str, password: str) -> dict[str, Any] | None:
        """The account if ``password`` is its password and it may sign in (noted as a sign-in), else None."""
        record = self._matches(name, password)
        if record is not None:
            self.signed_in(name)
        return record

    def change_password(self, name: str, current: str, new: str, address: str) -> int:
        """A person's own change of their password: ``current`` must be it (a wrong one counts as a
        failed sign-in, throttled alike). Ends every session of the person; returns how many.
        Raises ValidationError naming the field, RateLimited while throttled."""
        check_password(new)
        wait = self.admit(name, address)
        if wait > 0:
            raise RateLimited(f"too many wrong passwords; wait {int(wait) + 1} seconds, then try again",
                              field="current_password", retry_after=int(wait) + 1)  # fmt: skip
        if self._matches(name, current) is None:
            self.failed(name, address)
            raise ValidationError("that is not your current password; type it again", field="current_password")
        self.succeeded(name, address)
        return self.set_password(name, new)

    def signed_in(self, name: str) -> None:
        """Note a sign-in: in a record of its own, so it never overwrites a change made meanwhile
        (an operator disabling the account while its password was being checked)."""
        self.shared.put(SIGN_INS, name, {"at": time.time()})

    def last_sign_in(self, name: str) -> float | None:
        record = self.shared.get(SIGN_INS, name)
        return float(record["at"]) if record else None

    # --- throttling ------------------------------------------------------------------------

    @staticmethod
    def _subjects(name: str, address: str) -> list[tuple[str, int]]:
        """(key, free failures) of what a try counts against: the pair first, then the name, then the address."""
        typed = hashlib.sha256(name.strip().lower().encode()).hexdigest()[:32]
        return [(f"pair:{typed}:{address}", FREE_FAILURES), (f"name:{typed}", FREE_FAILURES_PER_NAME),
                (f"addr:{address}", FREE_FAILURES_PER_ADDRESS)]  # fmt: skip

    def admit(self, name: str, address: str) -> float:
        """0 when this try's password may be checked now (taking the check of every subject past
        its free failures), else the seconds until the next free check (the try is refused unread)."""
        now = time.time()
        taken: list[str] = []
        for key, free in self._subjects(name, address):
            record = self.shared.get(FAILURES, key)
            count = int(record["count"]) if record else 0
            if count <= free:
                continue
            interval = min(2.0 ** (count - free), MAX_WAIT)
            if self.shared.add(CHECKS, key, {"until": now + interval}, ttl=interval):
                taken.append(key)
                continue
            for mine in taken:  # this try is refused: the checks it took go back
                self.shared.delete(CHECKS, mine)
            held = self.shared.get(CHECKS, key)
            return max(float(held["until"]) - now, 0.5) if held else 0.5
        return 0.0

    def failed(self, name: str, address: str) -> None:
        for key, _free in self._subjects(name, address):
            record = self.shared.get(FAILURES, key)
            self.shared.put(FAILURES, key, {"count": (int(record["count"]) if record else 0) + 1}, ttl=FAILURE_WINDOW)

    def succeeded(self, name: str, address: str) -> None:
        for key, _free in self._subjects(name, address)[:2]:
            self.shared.delete(FAILURES, key)


STORE: Slot[Accounts] = Slot("accounts", Accounts)


def accounts(host: PluginHost) -> Accounts:
    return host.slot(STORE)


@hookimpl
def register_services(register: Any, host: PluginHost) -> None:
    register(ACCOUNTS, accounts(host))
    register(PEOPLE_PAGES, PeoplePage(PEOPLE_PATH))


def principal_of(record: dict[str, Any]) -> Principal:
    namespaces = record.get("namespaces")
    return Principal(
        name=f"person:{record['name']}",
        scopes=frozenset(record["scopes"]),
        namespaces=frozenset(namespaces) if namespaces else None,
    )


@hookimpl
def find_person(name: str, host: PluginHost) -> Principal | None:
    record = accounts(host).get(name)
    if record is None or record.get("disabled"):
        return None
    return principal_of(record)


@hookimpl
def instance_created(host: PluginHost) -> str | None:
    password = new_password()
    accounts(host).create("admin", password, ["admin"])
    return f"First admin account (sign in at {LOGIN_PATH}): admin, password (shown once; keep it safe): {password}"


@hookimpl
def register_routes(app: Flask, host: PluginHost) -> None:
    here = Path(__file__).parent
    pages = Blueprint(
        "accounts", __name__, template_folder=str(here / "templates"),
        static_folder=str(here / "static"), static_url_path="/_/static/accounts",
    )  # fmt: skip

    def page(target: str, name: str, error: str | None, who: Principal | None = None) -> str:
        """The sign-in page: in the site's frame (its header) when a plugin gives one, else a page of its own."""
        options = [option for found in host.pm.hook.sign_in_options(host=host) for option in found or ()]
        context = {"next": target, "name": name, "error": error, "who": who, "sign_in_options": options}
        main = Markup(render_template("accounts/login_card.html", **context))  # Jinja escaped what the template holds
        head = Markup('<link rel="stylesheet" href="{}">').format(url_for("accounts.static", filename="signin.css"))
        framed = host.pm.hook.frame_page(title="Sign in", main=main, head=head, host=host)
        return str(framed) if framed is not None else render_template("accounts/login.html", **context)

    @pages.route(LOGIN_PATH, methods=["GET", "POST"])
    def login() -> Any:
        target = safe_next(request.values.get("next"), "/")
        if request.method == "GET":
            return page(target, "", None, person(host))
        check_csrf(host)
        name = request.form.get("name", "").strip().lower()
        password = request.form.get("password", "")
        address = request.remote_addr or "unknown"
        store = accounts(host)
        wait = store.admit(name, address)
        if wait > 0:
            error = f"Too many failed sign-ins. Wait {int(wait) + 1} seconds, then try again."
            return page(target, name, error), 429, {"Retry-After": str(int(wait) + 1)}
        record = store.verify(name, password)
        if record is None:
            store.failed(name, address)
            return page(target, name, GENERIC_ERROR), 401
        store.succeeded(name, address)
        sign_in(record["name"])
        return redirect(target, 303)

    @pages.route(LOGOUT_PATH, methods=["POST"])
    def logout() -> Any:
        check_csrf(host)
        sign_out()
        return redirect(LOGIN_PATH, 303)

    app.register_blueprint(pages)
    from .people import people_pages

    app.register_blueprint(people_pages(host, accounts(host)))


def _sessions(count: int) -> str:
    return f"{count} open session{'' if count == 1 else 's'}"


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    check_password(password)
    return password


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.group("user")
    def user_group() -> None:
        """Create, list, disable and enable people's accounts, and set their passwords."""

    stdin_option = click.option(
        "--password-stdin", is_flag=True, help="read the password from the first line of standard input instead of a prompt"
    )

    @user_group.command("create")
    @click.argument("name")
    @click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), default=["write"], show_default=True,
                  help="repeat for several")  # fmt: skip
    @click.option("--namespace", "namespaces", multiple=True, help="limit the account to this namespace; repeat")
    @stdin_option
    @click.pass_obj
    def create(obj: Any, name: str, scopes: tuple[str, ...], namespaces: tuple[str, ...], password_stdin: bool) -> None:
        """Create an account; its password comes from a prompt (or --password-stdin)."""
        check_name(name)
        password = _read_password(password_stdin)
        Management(accounts(obj.host()), SYSTEM).create(name, password, list(scopes), list(namespaces) or None)
        click.echo(f"created account {name}")

    @user_group.command("list")
    @click.pass_obj
    def list_(obj: Any) -> None:
        """List accounts: name, scopes, namespaces, state, last sign-in."""
        for a in Management(accounts(obj.host()), SYSTEM).accounts():
            seen = a["last_sign_in"]
            limit = ",".join(a["namespaces"]) if a.get("namespaces") else "all namespaces"
            last = time.strftime("%Y-%m-%d %H:%M", time.gmtime(seen)) if seen else "never"
            state = "disabled" if a.get("disabled") else "active"
            upstream = f"\t{a['upstream']['issuer']}" if a.get("upstream") else ""
            click.echo(f"{a['name']}\t{' '.join(a['scopes'])}\t{limit}\t{state}\tlast sign-in {last}{upstream}")

    def switch(command: str, disabled: bool, doc: str) -> None:
        @user_group.command(command, help=doc)
        @click.argument("name")
        @click.pass_obj
        def run(obj: Any, name: str) -> None:
            count = Management(accounts(obj.host()), SYSTEM).set_disabled(name, disabled)
            ended = f"; {_sessions(count)} ended" if disabled else ""
            click.echo(f"{command}d {name}{ended}")

    switch("disable", True, "Disable an account: it cannot sign in, and its open sessions end at once.")
    switch("enable", False, "Enable a disabled account again.")

    @user_group.command("edit")
    @click.argument("name")
    @click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), required=True, help="repeat for several")
    @click.option("--namespace", "namespaces", multiple=True, help="limit the account to this namespace; repeat; none: all")
    @click.pass_obj
    def edit(obj: Any, name: str, scopes: tuple[str, ...], namespaces: tuple[str, ...]) -> None:
        """Set an account's scopes and namespaces (both whole); its sessions and tokens follow at once."""
        record = Management(accounts(obj.host()), SYSTEM).set_access(name, list(scopes), list(namespaces) or None)
        click.echo(f"{name}: {' '.join(record['scopes'])}, {', '.join(record['namespaces'] or ['all namespaces'])}")

    @user_group.command("passwd")
    @click.argument("name")
    @stdin_option
    @click.pass_obj
    def passwd(obj: Any, name: str, password_stdin: bool) -> None:
        """Set an account's password (from a prompt, or --password-stdin); every open session of
        the person ends (they sign in again with the new password)."""
        manager = Management(accounts(obj.host()), SYSTEM)
        manager.get(name)
        ended = manager.reset_password(name, _read_password(password_stdin))
        click.echo(f"password of {name} changed; {_sessions(ended)} ended (signed out everywhere)")
