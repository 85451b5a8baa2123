"""A small but real OpenID Connect provider for the tests, built from Authlib's server parts.

Discovery, authorization code with PKCE (S256 required), an RS256-signed ID token carrying the
nonce, a JWKS endpoint, userinfo. It serves on a free loopback port from a thread. Nobody signs in
to it: ``provider.user`` is who the next authorization is for (consent is automatic).
``provider.tamper_nonce`` makes it sign ID tokens with a nonce other than the one asked for.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import UserInfo
from authlib.oidc.core.grants import OpenIDCode
from flask import Flask, jsonify
from joserfc.jwk import RSAKey
from werkzeug.serving import make_server

from hostcore.testing import free_port


@dataclass
class Client(ClientMixin):
    client_id: str
    client_secret: str
    redirect_uris: list[str]

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in scope.split() if s in ("openid", "email", "profile"))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "authorization_code"


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: dict[str, Any]
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: int = field(default_factory=lambda: int(time.time()))

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None


class Provider:
    """The provider; use as a context manager (it serves until the block ends)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.user: dict[str, Any] = {"sub": "u-1", "email": "alice@example.org", "email_verified": True}
        self.tamper_nonce = False
        self.app = self._build()
        self._server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def add_client(self, client_id: str, client_secret: str, redirect_uri: str) -> None:
        self.clients[client_id] = Client(client_id, client_secret, [redirect_uri])

    def __enter__(self) -> Provider:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _build(self) -> Flask:
        provider = self
        app = Flask("test-oidc-provider")

        class CodeGrant(grants.AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ("client_secret_basic", "client_secret_post")

            def save_authorization_code(self, code: str, request: Any) -> None:
                data = request.payload.data
                provider.codes[code] = Code(
                    code, request.client.client_id, request.payload.redirect_uri, request.payload.scope,
                    dict(request.user), data.get("nonce"), data.get("code_challenge"), data.get("code_challenge_method"),
                )  # fmt: skip

            def query_authorization_code(self, code: str, client: Client) -> Code | None:
                found = provider.codes.get(code)
                return found if found and found.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code: Code) -> None:
                provider.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code: Code) -> dict[str, Any]:
                return authorization_code.user

        class IDToken(OpenIDCode):
            def exists_nonce(self, nonce: str, request: Any) -> bool:
                return any(c.nonce == nonce for c in provider.codes.values())

            def resolve_client_private_key(self, client: Client) -> RSAKey:
                return provider.key

            def get_client_algorithm(self, client: Client) -> str:
                return "RS256"

            def get_encode_header(self, client: Client) -> dict[str, str]:
                return {"alg": "RS256", "kid": "test-key"}

            def get_client_claims(self, client: Client) -> dict[str, Any]:
                return {"iss": provider.issuer, "aud": [client.client_id], "exp": int(time.time()) + 300}

            def get_authorization_code_claims(self, authorization_code: Code) -> dict[str, Any]:
                claims = super().get_authorization_code_claims(authorization_code)
                if provider.tamper_nonce:
                    claims["nonce"] = "not-the-nonce-asked-for"
                return claims

            def generate_user_info(self, user: dict[str, Any], scope: str) -> UserInfo:
                return UserInfo(user)

        def save_token(token: dict[str, Any], request: Any) -> None:
            pass

        server = AuthorizationServer(app, query_client=self.clients.get, save_token=save_token)
        server.register_grant(CodeGrant, [IDToken(require_nonce=True), CodeChallenge(required=True)])

        @app.route("/.well-known/openid-configuration")
        def discovery() -> Any:
            return jsonify(
                issuer=self.issuer,
                authorization_endpoint=f"{self.issuer}/authorize",
                token_endpoint=f"{self.issuer}/token",
                jwks_uri=f"{self.issuer}/jwks",
                response_types_supported=["code"],
                subject_types_supported=["public"],
                id_token_signing_alg_values_supported=["RS256"],
                code_challenge_methods_supported=["S256"],
                scopes_supported=["openid", "email", "profile"],
                token_endpoint_auth_methods_supported=["client_secret_basic", "client_secret_post"],
            )

        @app.route("/jwks")
        def jwks() -> Any:
            return jsonify(keys=[self.key.as_dict(private=False)])

        @app.route("/authorize")
        def authorize() -> Any:
            asked = server.create_oauth2_request(None)
            grant = server.get_authorization_grant(asked)
            return server.create_authorization_response(request=asked, grant=grant, grant_user=dict(self.user))

        @app.route("/token", methods=["POST"])
        def token() -> Any:
            return server.create_token_response()

        return app
