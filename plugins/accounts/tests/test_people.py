"""The admin's people pages (``/_/people``): list, create, change access, disable, enable, reset a
password, each through the same checks as ``hostcore user`` (:mod:`hostcore_accounts.management`)."""

from __future__ import annotations

import re
from typing import Protocol

import pytest
from hostcore_accounts import accounts
from hostcore_accounts.management import Management

from hostcore import SYSTEM, Forbidden, InsufficientScope, Principal, ServiceKey, ValidationError, create_app

CONFIG = {"PLUGINS": ["fs", "tokens", "accounts", "web"], "STORAGE": "fs"}
PASSWORD = "correct horse battery"


@pytest.fixture
def app(tmp_path):
    app = create_app(CONFIG, instance_path=tmp_path / "instance")
    store = accounts(app.extensions["hostcore"])
    store.create("root", PASSWORD, ["admin"])
    store.create("alice", PASSWORD, ["write"], ["team"])
    store.create("tina", PASSWORD, ["admin"], ["team"])  # an admin of one namespace
    yield app
    app.extensions["hostcore"].close()


@pytest.fixture
def store(app):
    return accounts(app.extensions["hostcore"])


def signed_in(app, name):
    client = app.test_client()
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/_/login").text).group(1)
    assert client.post("/_/login", data={"csrf_token": token, "name": name, "password": PASSWORD}).status_code == 303
    client.csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/_/login").text).group(1)  # the new session's
    return client


def post(client, path, **data):
    return client.post(path, data={"csrf_token": client.csrf, **data})


def test_an_admin_lists_and_creates_accounts_in_the_sites_frame(app, store):
    root = signed_in(app, "root")
    page = root.get("/_/people")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert '<header class="site">' in page.text and '<span aria-current="page">People</span>' in page.text
    assert re.findall(r'<a href="/_/people/([^"]+)">', page.text) == ["alice", "root", "tina"]
    made = post(root, "/_/people", name="bob", scope=["read", "write"], namespaces="team notes", password="a long password",
                repeat_password="a long password")  # fmt: skip
    assert made.status_code == 303
    record = store.get("bob")
    assert (record["scopes"], record["namespaces"]) == (["read", "write"], ["notes", "team"])
    assert "$argon2id$" in record["hash"]
    assert "Account bob created" in root.get(made.headers["Location"]).text


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [({"name": "Bad Name"}, "name", "an account name is"), ({"scope": []}, "scope", "use one or more of"),
     ({"password": "short", "repeat_password": "short"}, "password", "at least 10"),
     ({"repeat_password": "something else"}, "repeat_password", "differ"), ({"name": "alice"}, "name", "exists"),
     ({"namespaces": "_x"}, "namespace", "")],
)  # fmt: skip
def test_a_refused_account_names_its_field_and_keeps_what_was_typed(app, store, fields, field, message):
    root = signed_in(app, "root")
    data = {"name": "bob", "scope": ["write"], "password": "a long password", "repeat_password": "a long password", **fields}
    page = post(root, "/_/people", **data)
    assert page.status_code == 400 and message in page.text
    ids = {"name": "account-name", "scope": None, "password": "account-password", "repeat_password": "account-repeat",
           "namespace": "account-ns"}  # fmt: skip
    if ids[field]:
        assert re.search(rf'id="{ids[field]}"[^>]*aria-invalid="true"', page.text), page.text
    if fields.get("name") != "alice":
        assert store.get(data["name"].lower()) is None or data["name"] == "alice"


def test_an_admin_changes_access_disables_enables_and_resets_a_password(app, store):
    root = signed_in(app, "root")
    alice = signed_in(app, "alice")
    assert alice.get("/_/account/sessions").status_code == 200
    assert post(root, "/_/people/alice/access", scope=["read"], namespaces="").status_code == 303
    assert (store.get("alice")["scopes"], store.get("alice")["namespaces"]) == (["read"], None)
    done = post(root, "/_/people/alice/state", disabled="1")
    assert done.status_code == 303 and store.get("alice")["disabled"] is True
    assert "every session of theirs ended" in root.get(done.headers["Location"]).text
    assert alice.get("/_/account/sessions").status_code == 302  # signed out at once
    assert post(root, "/_/people/alice/state", disabled="0").status_code == 303 and store.get("alice")["disabled"] is False
    again = signed_in(app, "alice")
    assert post(root, "/_/people/alice/password", password="a new long password", repeat_password="a new long password").status_code == 303
    assert again.get("/_/account/sessions").status_code == 302  # a reset ends their sessions
    assert store.verify("alice", "a new long password") is not None
    short = post(root, "/_/people/alice/password", password="short", repeat_password="short")
    assert short.status_code == 400 and 'id="reset-password"' in short.text and "at least 10" in short.text


def test_the_last_admin_of_every_namespace_stays(app, store):
    root = signed_in(app, "root")
    refused = post(root, "/_/people/root/state", disabled="1")
    assert refused.status_code == 400 and "last active admin" in refused.text
    assert post(root, "/_/people/root/access", scope=["admin"], namespaces="team").status_code == 400
    assert store.get("root")["disabled"] is False and store.get("root")["namespaces"] is None


def test_only_an_admin_of_every_namespace_manages_people(app, store):
    assert app.test_client().get("/_/people").status_code == 302  # sign in first
    for name, status in (("alice", 403), ("tina", 403)):
        client = signed_in(app, name)
        assert client.get("/_/people").status_code == status
        assert post(client, "/_/people/root/state", disabled="1").status_code == status
        assert post(client, "/_/people", name="mallory", scope=["admin"], password="a long password",
                    repeat_password="a long password").status_code == status  # fmt: skip
    assert store.get("mallory") is None and store.get("root")["disabled"] is False
    with pytest.raises(InsufficientScope):
        Management(store, Principal("person:alice", frozenset({"write"})))
    with pytest.raises(Forbidden):
        Management(store, Principal("person:tina", frozenset({"admin"}), frozenset({"team"})))
    assert signed_in(app, "root").get("/_/people/nobody").status_code == 404


def test_every_form_needs_the_csrf_token(app, store):
    root = signed_in(app, "root")
    for path, data in [("/_/people", {"name": "bob", "scope": "write", "password": "a long password", "repeat_password": "a long password"}),
                       ("/_/people/alice/access", {"scope": "admin"}), ("/_/people/alice/state", {"disabled": "1"}),
                       ("/_/people/alice/password", {"password": "a long password", "repeat_password": "a long password"})]:  # fmt: skip
        assert root.post(path, data=data).status_code == 403, path
    assert store.get("bob") is None and store.get("alice")["scopes"] == ["write"] and not store.get("alice")["disabled"]


class Tokens(Protocol):
    def create(self, name: str, scopes: list[str]) -> str: ...


def test_a_bearer_token_may_not_manage_people(app):
    tokens = app.extensions["hostcore"].service(ServiceKey("tokens", Tokens))
    token = tokens.create("ops", ["admin"])
    assert app.test_client().get("/_/people", headers={"Authorization": f"Bearer {token}"}).status_code == 302


def test_management_is_the_clis_too(store):
    manager = Management(store, SYSTEM)
    with pytest.raises(ValidationError):
        manager.set_access("alice", ["root"], None)
    assert manager.set_access("alice", ["write", "read"], ["b", "a"])["namespaces"] == ["a", "b"]


def test_an_account_of_a_provider_has_no_password_to_reset(app, store):
    store.create("olga", None, ["write"], upstream={"issuer": "https://id.example.org", "subject": "42"})
    with pytest.raises(ValidationError) as refused:
        Management(store, SYSTEM).reset_password("olga", "a long password")
    assert "https://id.example.org" in str(refused.value) and store.get("olga")["hash"] is None
    page = signed_in(app, "root").get("/_/people/olga").text
    assert "signs in through https://id.example.org" in page and "Reset the password" not in page
