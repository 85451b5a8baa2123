"""OAuth 2.1 for the MCP endpoint: the wiki is its own authorization server (Authlib's parts), so
hosted assistants (Claude.ai, ChatGPT, ...) connect with the wiki's URL alone: a person signs in,
approves what the app may do, and can disconnect it later on ``/_/apps``.

- Discovery: the protected-resource metadata names this wiki in ``authorization_servers``;
  RFC 8414 metadata at ``/.well-known/oauth-authorization-server`` (and ``openid-configuration``).
- Clients: client ID metadata documents (the client_id is an https URL, fetched safely) and
  RFC 7591 registration.
- Authorization code with PKCE S256, exact redirect URIs, ``resource`` bound to ``/_/mcp``.
- Access tokens ``hco_...`` (opaque, short-lived), refresh tokens ``hcr_...`` (rotating; a replay
  revokes the grant); RFC 7009 revocation. Only digests are stored, in ``host.shared``.
- Other plugins link to the connected apps page through the ``connected-apps`` service
  (:data:`CONNECTED_APPS`): the web plugin's account pages do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from hostcore import PluginHost, ServiceKey, Setting, Slot, StartupError, Unauthorized, hookimpl
from hostcore_oauth.server import OAuthServer
from hostcore_oauth.store import ACCESS_PREFIX

SETTINGS = {
    "access_token_seconds": Setting(int, 900, "how long an access token works (the client refreshes it)"),
    "refresh_token_days": Setting(int, 30, "how long an unused grant (its refresh token) lasts"),
    "code_seconds": Setting(int, 120, "how long an authorization code may wait to be exchanged"),
    "dynamic_registration": Setting(bool, True, "accept RFC 7591 registrations (clients without a metadata document)"),
    "pending_client_seconds": Setting(int, 86400, "how long a registered client is kept until an authorization completes with it"),
    "metadata_max_bytes": Setting(int, 5120, "largest client ID metadata document fetched"),
    "metadata_timeout_seconds": Setting(float, 5.0, "time limit of fetching one metadata document"),
    "metadata_allow_loopback": Setting(bool, False, "tests only: fetch metadata documents over http from loopback"),
}


APPS_PATH = "/_/apps"


class ConnectedApps(Protocol):
    """The page where a person sees and disconnects the apps they connected with OAuth."""

    path: str


@dataclass(frozen=True)
class AppsPage:
    path: str


CONNECTED_APPS: ServiceKey[ConnectedApps] = ServiceKey("connected-apps", ConnectedApps)


def settings(host: PluginHost) -> dict[str, Any]:
    """PLUGIN_CONFIG.oauth with defaults; raises StartupError naming a wrong key or type."""
    given = host.plugin_config("oauth")
    problems = []
    for key, value in given.items():
        setting = SETTINGS.get(key)
        if setting is None:
            problems.append(f"PLUGIN_CONFIG.oauth.{key}: unknown setting; known: {', '.join(SETTINGS)}")
        elif not setting.accepts(value) or (isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0):
            problems.append(f"PLUGIN_CONFIG.oauth.{key}: expected a positive {setting.type_name}, got {value!r}")
    if problems:
        raise StartupError("; ".join(problems), problems=problems)
    return {key: given.get(key, setting.default) for key, setting in SETTINGS.items()}


SERVER: Slot[OAuthServer] = Slot("oauth", lambda host: OAuthServer(host, settings(host)))


def server(host: PluginHost) -> OAuthServer:
    return host.slot(SERVER)


@hookimpl
def register_services(register: Any) -> None:
    register(CONNECTED_APPS, AppsPage(APPS_PATH))


@hookimpl
def startup(host: PluginHost) -> None:
    server(host)
    if not host.config.get("AUTHORIZATION_SERVERS"):
        # The protected-resource metadata names this wiki as its own authorization server.
        host.config["AUTHORIZATION_SERVERS"] = [host.config["PUBLIC_URL"].rstrip("/")]


@hookimpl
def authenticate(request: Any, host: PluginHost) -> Any:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.startswith(ACCESS_PREFIX):
        return None
    principal = server(host).authenticate(token.strip())
    if principal is None:
        raise Unauthorized(
            "the OAuth access token is unknown, expired, revoked or for another resource; refresh it or connect again"
        )
    return principal


@hookimpl
def register_routes(app: Any, host: PluginHost) -> None:
    from hostcore_oauth import views

    views.install(app, lambda: server(host))
