"""Sign people in through an upstream OpenID Connect provider (Google, Keycloak, Entra, ...).

An operator names each provider under ``[PLUGIN_CONFIG.oidc.providers.<id>]`` with its issuer
(discovery at ``<issuer>/.well-known/openid-configuration``), client id and client secret. The
sign-in page shows "Sign in with <label>" for each (the ``sign_in_options`` hook); the flow is the
authorization code flow with PKCE (S256), ``state`` bound to the browser's session and kept
server-side in ``host.shared`` (one use), and a ``nonce`` checked in the signed ID token (Authlib's
Flask client).

People map to wiki accounts (the ``accounts`` plugin) by the provider's issuer and ``sub``, never
by email: the first sign-in creates an account, only for people the provider's settings allow
(``allowed_emails``, ``allowed_domains``: a verified email; or ``allow_any``), with the provider's
``scopes`` and ``namespaces``. An existing local account is never taken over: a new account gets a
name of its own. A disabled account cannot sign in this way either.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.flask_client import OAuth
from flask import Flask, redirect, request, session
from hostcore_accounts import NAME_RE, accounts
from joserfc.errors import JoseError

from hostcore import (
    SCOPES,
    Forbidden,
    StartupError,
    ValidationError,
    check_namespace,
    hookimpl,
    safe_next,
    sign_in,
)

LINKS = "accounts-upstream"
STATE = "oidc-state"
STATE_SECONDS = 600
NEXT_KEY = "oidc_next"
DEFAULTS: dict[str, Any] = {
    "label": None, "scope": "openid email profile", "allowed_emails": [], "allowed_domains": [],
    "allow_any": False, "scopes": ["write"], "namespaces": [],
}  # fmt: skip
REQUIRED = ("issuer", "client_id", "client_secret")


def _loopback(host: str | None) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def providers(host: Any) -> dict[str, dict[str, Any]]:
    """Every configured provider's settings, checked, with defaults. Raises StartupError naming
    each problem (``PLUGIN_CONFIG.oidc.providers.<id>.<key>``) and its fix."""
    if "oidc.providers" in host.state:
        return host.state["oidc.providers"]
    table = host.plugin_config("oidc").get("providers")
    where = "PLUGIN_CONFIG.oidc.providers"
    if not isinstance(table, dict) or not table:
        raise StartupError(f"{where}: name at least one provider, e.g. [{where}.google] with issuer, client_id and client_secret")
    if not host.pm.has_plugin("accounts"):
        raise StartupError("PLUGINS: the oidc plugin keeps people in the accounts plugin's accounts; add \"accounts\" to PLUGINS")
    problems: list[str] = []
    found = {}
    for pid, given in table.items():
        at = f"{where}.{pid}"
        if not isinstance(given, dict):
            problems.append(f"{at}: must be a table of settings")
            continue
        if not NAME_RE.fullmatch(pid) or "@" in pid:
            problems.append(f"{at}: a provider id is lowercase letters, digits, '.', '_' and '-', e.g. google")
        unknown = sorted(set(given) - set(DEFAULTS) - set(REQUIRED))
        if unknown:
            problems.append(f"{at}: unknown setting(s) {', '.join(unknown)}; known: {', '.join([*REQUIRED, *DEFAULTS])}")
        settings = {**DEFAULTS, **given}
        for key in REQUIRED:
            if not isinstance(settings.get(key), str) or not settings[key]:
                problems.append(f"{at}.{key}: required (a string; put the secret in the environment: {{\"$env\" = \"NAME\"}})")
        issuer = settings.get("issuer")
        if isinstance(issuer, str) and issuer:
            parts = urlsplit(issuer)
            if parts.scheme != "https" and not (parts.scheme == "http" and _loopback(parts.hostname)):
                problems.append(f"{at}.issuer: must be an https URL (got {issuer!r})")
        for key in ("allowed_emails", "allowed_domains", "scopes", "namespaces"):
            if not isinstance(settings[key], list) or not all(isinstance(v, str) for v in settings[key]):
                problems.append(f"{at}.{key}: must be a list of strings")
                settings[key] = []
        if not isinstance(settings["allow_any"], bool):
            problems.append(f"{at}.allow_any: must be true or false")
        bad = [s for s in settings["scopes"] if s not in SCOPES]
        if bad or not settings["scopes"]:
            problems.append(f"{at}.scopes: use one or more of {', '.join(SCOPES)} (got {', '.join(bad) or 'none'})")
        for ns in settings["namespaces"]:
            try:
                check_namespace(ns, f"{at}.namespaces")
            except ValidationError as exc:
                problems.append(str(exc))
        if "openid" not in str(settings["scope"]).split():
            problems.append(f"{at}.scope: must include openid (default \"openid email profile\")")
        settings["allowed_emails"] = [e.lower() for e in settings["allowed_emails"]]
        settings["allowed_domains"] = [d.lower().lstrip("@") for d in settings["allowed_domains"]]
        settings["label"] = settings["label"] or pid.replace("-", " ").title()
        found[pid] = settings
    if problems:
        raise StartupError("; ".join(problems), problems=problems)
    host.state["oidc.providers"] = found
    return found


class SharedCache:
    """Authlib's state cache in host.shared: the state's data (code verifier, nonce, redirect URI)
    stays on the server; the browser's session holds only that it started this flow. A state is
    read once (``take``), so a callback replayed is refused."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared

    def get(self, key: str) -> str | None:
        record = self.shared.take(STATE, hashlib.sha256(key.encode()).hexdigest())
        return record["value"] if record else None

    def set(self, key: str, value: str, expires_in: float | None = None) -> None:
        self.shared.put(STATE, hashlib.sha256(key.encode()).hexdigest(), {"value": value}, ttl=STATE_SECONDS)

    def delete(self, key: str) -> None:
        self.shared.delete(STATE, hashlib.sha256(key.encode()).hexdigest())


def allowed(settings: dict[str, Any], claims: dict[str, Any]) -> bool:
    if settings["allow_any"]:
        return True
    email = claims.get("email")
    if not isinstance(email, str) or claims.get("email_verified") is not True:
        return False
    email = email.lower()
    return email in settings["allowed_emails"] or email.rpartition("@")[2] in settings["allowed_domains"]


def account_for(host: Any, pid: str, settings: dict[str, Any], claims: dict[str, Any]) -> dict[str, Any]:
    """The account of the person these (verified) ID token claims name: found by issuer and
    subject, or created on first sign-in when the provider's settings allow them. Raises Forbidden."""
    store = accounts(host)
    issuer, subject = str(claims["iss"]), str(claims["sub"])
    link_key = json.dumps([issuer, subject])
    who = claims.get("email") or claims.get("preferred_username") or subject
    link = host.shared.get(LINKS, link_key)
    if link is None:
        if not allowed(settings, claims):
            raise Forbidden(f"{who} may not sign in to this wiki with {settings['label']}; ask its operator to allow you")
        digest = hashlib.sha256(link_key.encode()).hexdigest()
        names = [str(c).lower() for c in (claims.get("email"), claims.get("preferred_username")) if c]
        upstream = {"provider": pid, "issuer": issuer, "sub": subject}
        created = False
        for name in [n for n in names if NAME_RE.fullmatch(n)] + [f"{pid}-{digest[:12]}"]:
            try:
                store.create(name, None, settings["scopes"], settings["namespaces"] or None, upstream=upstream)
                created = True
                break
            except ValidationError:  # the name is taken: never by this person's account, unless a parallel first sign-in made it
                if (store.get(name) or {}).get("upstream") == upstream:
                    break
        if not host.shared.add(LINKS, link_key, {"name": name}) and created:
            host.shared.delete("accounts", name)  # a parallel first sign-in linked its own account: use that
        link = host.shared.get(LINKS, link_key)
        assert link is not None
    record = store.get(link["name"])
    if record is None or record.get("disabled"):
        raise Forbidden(f"the account of {who} is disabled; ask the wiki's operator")
    store.signed_in(record["name"])
    return record


@hookimpl
def startup(host: Any) -> None:
    providers(host)


@hookimpl
def sign_in_options(host: Any) -> list[tuple[str, str]]:
    return [(settings["label"], f"/_/oidc/{pid}/login") for pid, settings in providers(host).items()]


@hookimpl
def register_routes(app: Flask, host: Any) -> None:
    configured = providers(host)
    oauth = OAuth(app, cache=SharedCache(host.shared))
    for pid, settings in configured.items():
        oauth.register(
            pid,
            client_id=settings["client_id"],
            client_secret=settings["client_secret"],
            server_metadata_url=settings["issuer"].rstrip("/") + "/.well-known/openid-configuration",
            client_kwargs={"scope": settings["scope"], "code_challenge_method": "S256", "default_timeout": 10},
        )

    def client(pid: str) -> Any:
        if pid not in configured:
            raise ValidationError(f"no sign-in provider named {pid!r} is configured", field="provider")
        remote = oauth.create_client(pid)
        try:
            metadata = remote.load_server_metadata()
        except Exception as exc:  # the provider is down or answers nonsense: say so, keep serving
            remote.server_metadata.clear()
            raise ValidationError(f"{configured[pid]['label']} cannot be reached just now ({type(exc).__name__}); try again later",
                                  field="provider") from exc  # fmt: skip
        if metadata.get("issuer") != configured[pid]["issuer"]:
            raise ValidationError(
                f"{configured[pid]['label']}'s discovery document names issuer {metadata.get('issuer')!r}, not the "
                f"configured {configured[pid]['issuer']!r}; fix PLUGIN_CONFIG.oidc.providers.{pid}.issuer", field="issuer",
            )  # fmt: skip
        return remote

    @app.route("/_/oidc/<pid>/login")
    def oidc_login(pid: str) -> Any:
        remote = client(pid)
        session[NEXT_KEY] = safe_next(request.args.get("next"), "/")
        callback = host.config["PUBLIC_URL"].rstrip("/") + f"/_/oidc/{pid}/callback"
        return remote.authorize_redirect(callback)

    @app.route("/_/oidc/<pid>/callback")
    def oidc_callback(pid: str) -> Any:
        remote = client(pid)
        label = configured[pid]["label"]
        try:
            token = remote.authorize_access_token()
        except (AuthlibBaseError, JoseError, requests.RequestException, ValueError) as exc:
            raise ValidationError(f"signing in with {label} failed ({exc}); start again from the sign-in page", field="state") from exc
        claims = token.get("userinfo")
        if not claims or not claims.get("sub"):
            raise ValidationError(f"{label} sent no ID token; check that the provider's scope includes openid", field="id_token")
        record = account_for(host, pid, configured[pid], dict(claims))
        target = safe_next(session.get(NEXT_KEY), "/")
        sign_in(record["name"])
        return redirect(target, 303)
