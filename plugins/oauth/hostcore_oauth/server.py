"""The authorization server, made of Authlib's parts: its Flask AuthorizationServer, the
authorization code grant with PKCE (S256 only, required of every client), the refresh token grant
(rotating), RFC 7009 revocation and RFC 7591 registration. This module supplies only what Authlib
leaves to the application: where clients, codes and tokens are kept, and the MCP rules
(client ID metadata documents, the RFC 8707 ``resource`` every token is bound to).
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import Any, ClassVar
from urllib.parse import urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, InvalidGrantError, InvalidRequestError, InvalidScopeError
from authlib.oauth2.rfc6749.errors import InvalidClientError, OAuth2Error
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, RefreshTokenGrant
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import request as flask_request
from werkzeug.exceptions import HTTPException, UnsupportedMediaType

from hostcore import SCOPES, PluginHost, Principal
from hostcore_oauth import registration, store
from hostcore_oauth.fetch import Refused, fetch_json

PATHS = {
    "authorization_endpoint": "/_/oauth/authorize",
    "token_endpoint": "/_/oauth/token",
    "registration_endpoint": "/_/oauth/register",
    "revocation_endpoint": "/_/oauth/revoke",
}
AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
DEFAULT_SCOPE = "read write"
MAX_CLIENT_ID = 1024


class InvalidTarget(OAuth2Error):
    """RFC 8707: the ``resource`` is not this wiki's MCP endpoint."""

    error = "invalid_target"


class Client(ClientMixin):
    """A client: registered (RFC 7591, ``source`` "dcr") or described by the metadata document at
    its client_id (``source`` "cimd")."""

    def __init__(self, client_id: str, record: dict[str, Any]) -> None:
        self.client_id = client_id
        self.record = record

    @property
    def name(self) -> str:
        return str(self.record.get("client_name") or urlsplit(self.redirect_uris[0]).hostname or self.client_id)

    @property
    def redirect_uris(self) -> list[str]:
        return list(self.record.get("redirect_uris") or [])

    @property
    def auth_method(self) -> str:
        return str(self.record.get("token_endpoint_auth_method") or "none")

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        asked = (scope or DEFAULT_SCOPE).split()
        return " ".join(s for s in SCOPES if s in asked)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris  # exact match, as OAuth 2.1 demands

    def check_client_secret(self, client_secret: str) -> bool:
        known = self.record.get("secret")
        return isinstance(known, str) and hmac.compare_digest(known, store.digest(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (self.record.get("grant_types") or ["authorization_code", "refresh_token"])


class Code(dict[str, Any]):
    """An authorization code's record (Authlib's AuthorizationCodeMixin)."""

    def get_redirect_uri(self) -> str:
        return str(self["redirect_uri"])

    def get_scope(self) -> str:
        return " ".join(self["scopes"])


class Token(dict[str, Any]):
    """An access or refresh token's record as the refresh grant and revocation see it (TokenMixin)."""

    def check_client(self, client: Client) -> bool:
        return self.get("client_id") == client.client_id

    def get_scope(self) -> str:
        return " ".join(self.get("scopes", []))

    def get_expires_in(self) -> int:
        return 0

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return False


class S256Challenge(CodeChallenge):
    """PKCE required of every client, S256 only: ``plain`` (and a missing method, which means plain) refused."""

    SUPPORTED_CODE_CHALLENGE_METHOD: ClassVar[list[str]] = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("code_challenge is required: use PKCE with code_challenge_method=S256")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256 (plain is refused)")
        super().validate_code_challenge(grant, redirect_uri)

    def validate_code_verifier(self, grant: Any, result: Any) -> None:
        if not grant.request.form.get("code_verifier"):
            raise InvalidRequestError("code_verifier is required (PKCE)")
        super().validate_code_verifier(grant, result)

    def get_authorization_code_challenge(self, authorization_code: Code) -> str:
        return str(authorization_code["challenge"])

    def get_authorization_code_challenge_method(self, authorization_code: Code) -> str:
        return str(authorization_code["challenge_method"])


def check_resource(server: OAuthServer, value: str | None) -> None:
    """RFC 8707: a ``resource`` sent must be this wiki's MCP endpoint (the token's audience)."""
    if value is not None and value.rstrip("/") != server.resource.rstrip("/"):
        raise InvalidTarget(f"resource {value!r} is not served here; this server issues tokens only for {server.resource}")


class CodeGrant(AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    server: OAuthServer

    def validate_authorization_request(self) -> str:
        redirect_uri = super().validate_authorization_request()
        try:
            check_resource(self.server, self.request.payload.data.get("resource"))
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def save_authorization_code(self, code: str, request: Any) -> None:
        consent = request.user  # what the person approved: see views.authorize
        data = request.payload.data
        record = {
            "client_id": request.client.client_id, "redirect_uri": request.payload.redirect_uri or "",
            "scopes": consent["scopes"], "namespaces": consent["namespaces"], "person": consent["person"],
            "challenge": data.get("code_challenge"), "challenge_method": data.get("code_challenge_method"),
            "resource": self.server.resource,
        }  # fmt: skip
        self.server.shared.put(store.CODE, store.digest(code), record, ttl=self.server.code_seconds)

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        record = self.server.shared.take(store.CODE, store.digest(code))  # one use, even when the rest fails
        if record is None or record["client_id"] != client.client_id:
            return None
        return Code(record)

    def validate_token_request(self) -> None:
        super().validate_token_request()
        check_resource(self.server, self.request.form.get("resource"))

    def delete_authorization_code(self, authorization_code: Code) -> None:
        pass  # taken when queried

    def authenticate_user(self, authorization_code: Code) -> dict[str, Any] | None:
        person = self.server.find_person(authorization_code["person"])
        return None if person is None else dict(authorization_code)


class RefreshGrant(RefreshTokenGrant):
    """Refresh tokens rotate: each use gives a new one; a used one presented again is a replay,
    and the whole grant is revoked."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True
    server: OAuthServer

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        grants = self.server.grants
        found = grants.refresh(refresh_token) if refresh_token.startswith(store.REFRESH_PREFIX) else None
        if found is None:
            return None
        grant = grants.grant(found["grant"])
        if grant is None:
            return None
        if found.get("used") or not grants.mark_used(refresh_token):
            grants.revoke_grant(found["grant"])
            raise InvalidGrantError("this refresh token was already used; the whole grant is revoked: sign in again")
        return Token({**grant, "grant": found["grant"]})

    def validate_token_request(self) -> None:
        super().validate_token_request()
        check_resource(self.server, self.request.form.get("resource"))

    def authenticate_user(self, refresh_token: Token) -> dict[str, Any] | None:
        return None if self.server.find_person(refresh_token["person"]) is None else dict(refresh_token)

    def revoke_old_credential(self, refresh_token: Token) -> None:
        pass  # marked used in authenticate_refresh_token, before anything was issued


class Revocation(RevocationEndpoint):
    """RFC 7009. Revoking a refresh token revokes its grant (and so every access token of it)."""

    CLIENT_AUTH_METHODS = AUTH_METHODS
    server: OAuthServer

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        grants = self.server.grants
        if token_string.startswith(store.ACCESS_PREFIX):
            found = grants.shared.get(store.ACCESS, store.digest(token_string))
            kind = "access"
        elif token_string.startswith(store.REFRESH_PREFIX):
            found = grants.refresh(token_string)
            kind = "refresh"
        else:
            return None
        grant = grants.grant(found["grant"]) if found else None
        if found is None or grant is None:
            return None
        return Token({**grant, "grant": found["grant"], "kind": kind, "token": token_string})

    def revoke_token(self, token: Token, request: Any) -> None:
        if token["kind"] == "refresh":
            self.server.grants.revoke_grant(token["grant"])
        else:
            self.server.grants.revoke_access(token["token"])


class ClientClaims(ClientMetadataClaims):
    """Authlib's checks of registered metadata, but for the redirect URIs, which
    :func:`registration.check_redirect_uris` checks (Authlib refuses RFC 8252's
    ``com.example.app:/callback``, a native app's own scheme without a host)."""

    def validate_redirect_uris(self) -> None:
        pass


class Registration(ClientRegistrationEndpoint):
    """RFC 7591 open registration, for clients that do not publish a metadata document."""

    server: OAuthServer

    def __init__(self, server: OAuthServer) -> None:
        super().__init__(server, claims_classes=[ClientClaims])

    def authenticate_token(self, request: Any) -> bool:
        """Whether registration is open; Authlib's first step, so an oversized request is
        refused here, before its body is read."""
        if not self.server.settings["dynamic_registration"]:
            raise InvalidRequestError("dynamic client registration is off here; use a client ID metadata document")
        length = flask_request.content_length
        if length is not None and length > registration.MAX_BYTES:
            raise InvalidClientMetadataError(f"the registration is {length} bytes; at most {registration.MAX_BYTES}")
        flask_request.max_content_length = registration.MAX_BYTES  # a chunked one: read no further
        return True

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        try:
            data = request.payload.data
        except UnsupportedMediaType:
            raise InvalidClientMetadataError("send the client metadata as JSON (Content-Type: application/json)") from None
        except HTTPException:  # a chunked body over the limit is cut short there, so it does not parse
            raise InvalidClientMetadataError(f"the registration is not JSON of at most {registration.MAX_BYTES} bytes") from None
        registration.check_client_metadata(data)
        return dict(super().extract_client_metadata(request))

    def get_server_metadata(self) -> dict[str, Any]:
        return self.server.metadata()

    def generate_client_id(self, request: Any) -> str:
        return "hcc_" + secrets.token_urlsafe(16)

    def generate_client_secret(self, request: Any) -> str | None:
        method = (request.payload.data or {}).get("token_endpoint_auth_method", "client_secret_basic")
        return None if method == "none" else secrets.token_urlsafe(32)

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> Client:
        method = client_metadata.get("token_endpoint_auth_method") or "client_secret_basic"
        if method not in AUTH_METHODS:
            raise InvalidClientMetadataError(f"token_endpoint_auth_method: use one of {', '.join(AUTH_METHODS)}")
        address = registration.address_key(flask_request.remote_addr)
        wait = self.server.host.limiter.wait("registrations", address)
        if wait:
            raise TooManyRegistrations(
                f"too many client registrations from {address}: at most {self.server.host.limiter.describe('registrations')}; "
                f"retry after {wait} seconds", wait,
            )  # fmt: skip
        record = {**client_metadata, "token_endpoint_auth_method": method, "source": "dcr",
                  "secret": store.digest(client_info["client_secret"]) if client_info.get("client_secret") else None,
                  "created": time.time()}  # fmt: skip
        # Kept pending_client_seconds until a token is issued to it (save_token keeps it longer).
        store.save_registered_client(self.server.shared, client_info["client_id"], record, self.server.settings["pending_client_seconds"])
        return Client(client_info["client_id"], record)

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info = super().generate_client_info(request)
        if info["client_secret"] is None:
            del info["client_secret"], info["client_secret_expires_at"]
        return info


class TooManyRegistrations(OAuth2Error):
    """429: this address registered as many clients as RATE_LIMITS.registrations allows."""

    error = "temporarily_unavailable"
    status_code = 429

    def __init__(self, description: str, wait: int) -> None:
        super().__init__(description)
        self.wait = wait

    def get_headers(self) -> list[tuple[str, str]]:
        return [*super().get_headers(), ("Retry-After", str(self.wait))]


def check_metadata_document(url: str, document: dict[str, Any]) -> dict[str, Any]:
    """The client record of a client ID metadata document; raises Refused naming what is wrong."""
    if document.get("client_id") != url:
        raise Refused(f"the document's client_id must be its own URL {url!r}, not {document.get('client_id')!r}")
    try:
        uris = registration.check_redirect_uris(document.get("redirect_uris"))
    except OAuth2Error as error:
        raise Refused(f"the document's {error.description}") from None
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise Refused(f"token_endpoint_auth_method {method!r}: a metadata document client is public (none)")
    name = document.get("client_name")
    return {
        "client_name": name[: registration.MAX_TEXT] if isinstance(name, str) and name.strip() else None,
        "redirect_uris": uris,
        "token_endpoint_auth_method": "none",
        "grant_types": document.get("grant_types") or ["authorization_code", "refresh_token"],
        "source": "cimd",
        "client_uri": uri if isinstance(uri := document.get("client_uri"), str) and len(uri) <= registration.MAX_URI else None,
    }


def client_id_url(client_id: str) -> bool:
    """True for a client_id that names a metadata document: an https URL with a path."""
    parts = urlsplit(client_id)
    return parts.scheme in ("https", "http") and bool(parts.netloc) and parts.path not in ("", "/")


class OAuthServer(AuthorizationServer):
    """Authlib's Flask AuthorizationServer over host.shared, for one wiki."""

    def __init__(self, host: PluginHost, settings: dict[str, Any]) -> None:
        super().__init__()
        self.host = host
        self.settings = settings
        self.issuer = host.config["PUBLIC_URL"].rstrip("/")
        self.resource = self.issuer + "/_/mcp"
        self.code_seconds = settings["code_seconds"]
        self.grants = store.GrantStore(host.shared, settings["access_token_seconds"], settings["refresh_token_days"] * 86400)
        self.scopes_supported = list(SCOPES)
        self.register_token_generator("default", self._generate_token)
        self.register_grant(CodeGrant, [S256Challenge(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Registration)

    @property
    def shared(self) -> Any:
        return self.host.shared

    def find_person(self, name: str) -> Principal | None:
        return self.host.pm.hook.find_person(name=name, host=self.host)

    def _generate_token(self, grant_type: str, client: Client, user: Any = None, scope: str | None = None,
                        expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:  # fmt: skip
        token = {"token_type": "Bearer", "access_token": store.new_access_token(),
                 "expires_in": self.grants.access_seconds, "scope": scope or ""}  # fmt: skip
        if include_refresh_token:
            token["refresh_token"] = store.new_refresh_token()
        return token

    def query_client(self, client_id: str) -> Client | None:
        if not isinstance(client_id, str) or not client_id or len(client_id) > MAX_CLIENT_ID:
            return None  # no such client (an empty key is not one to look up; a long one is no URL we fetch)
        if client_id_url(client_id):
            return self._metadata_client(client_id)
        record = self.shared.get(store.CLIENT, client_id)
        return None if record is None else Client(client_id, record)

    def _metadata_client(self, url: str) -> Client:
        cached = self.shared.get(store.CIMD, url)
        if cached is not None:
            return Client(url, cached)
        try:
            document, ttl = fetch_json(
                url,
                allow_loopback=self.settings["metadata_allow_loopback"],
                max_bytes=self.settings["metadata_max_bytes"],
                timeout=self.settings["metadata_timeout_seconds"],
            )
            record = check_metadata_document(url, document)
        except Refused as exc:
            raise InvalidClientError(description=f"client_id {url}: {exc}") from None
        record["metadata_host"] = urlsplit(url).hostname
        if ttl > 0:
            self.shared.put(store.CIMD, url, record, ttl=ttl)
        return Client(url, record)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        if request.payload.grant_type == "refresh_token":
            grant_id = request.refresh_token["grant"]
        else:
            code = request.user
            grant_id = self.grants.create_grant(
                person=code["person"], client_id=request.client.client_id, client_name=request.client.name,
                scopes=code["scopes"], namespaces=code["namespaces"], audience=code["resource"],
            )  # fmt: skip
        self.grants.issue(grant_id, token["access_token"], token.get("refresh_token"), scope_list(token["scope"]))
        client = request.client
        if client.record.get("source") == "dcr":  # a registered client lives as long as its newest grant
            self.shared.put(store.CLIENT, client.client_id, client.record, ttl=self.grants.refresh_seconds)

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 authorization server metadata (with the MCP client ID metadata document flag)."""
        return {
            "issuer": self.issuer,
            **{key: self.issuer + path for key, path in PATHS.items()},
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": False,
        }

    def authenticate(self, token: str) -> Principal | None:
        """The Principal of a live access token for this MCP endpoint, else None."""
        found = self.grants.access(token)
        if found is None or found["audience"] != self.resource:
            return None
        person = self.find_person(found["person"])
        if person is None:
            return None
        scopes = frozenset(s for s in found["scopes"] if person.has_scope(s))
        chosen = frozenset(found["namespaces"]) if found["namespaces"] is not None else None
        if person.namespaces is not None:
            chosen = person.namespaces if chosen is None else chosen & person.namespaces
        return Principal(name=person.name, scopes=scopes, namespaces=chosen, grant=found["grant"])

    def consent_request(self) -> Any:
        """Authlib's validated grant for this authorization request (raises OAuth2Error)."""
        return self.get_consent_grant(flask_request)


def scope_list(scope: str) -> list[str]:
    asked = scope.split()
    unknown = [s for s in asked if s not in SCOPES]
    if unknown:
        raise InvalidScopeError(f"unknown scope {unknown[0]!r}; this server knows {' '.join(SCOPES)}")
    return [s for s in SCOPES if s in asked]
