"""Fixtures: a real app (git storage, SQLite search, tokens, web) with three namespaces and people
known to a small sign-in plugin (the accounts plugin's role: ``find_person``)."""

from __future__ import annotations

import pytest

from hostcore import SYSTEM, Principal, create_app, hookimpl
from hostcore.testing import sign_in_client
from hostcore.testing.browser import browser  # noqa: F401  (a headless Chromium per test)

PEOPLE = {
    "carol": Principal("person:carol", frozenset({"write"})),
    "dave": Principal("person:dave", frozenset({"read"}), frozenset({"team"})),
    "erin": Principal("person:erin", frozenset({"admin"})),
    "fred": Principal("person:fred", frozenset({"admin"}), frozenset({"team"})),  # an admin of one namespace
}
CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "web"], "STORAGE": "git", "SEARCH": "sqlite"}


class People:
    @hookimpl
    def find_person(self, name, host):
        return PEOPLE.get(name)


@pytest.fixture
def app(tmp_path):
    app = create_app(CONFIG, instance_path=tmp_path / "instance", plugins=[People()])
    host = app.extensions["hostcore"]
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", title="Notes")
    admin.save_namespace("team", title="Team")
    admin.save_namespace("pub", title="Public", public=True, skin="newsprint", palette="nord")
    yield app
    host.close()


@pytest.fixture
def host(app):
    return app.extensions["hostcore"]


@pytest.fixture
def admin(host):
    return host.wiki(SYSTEM)


def sign_in(client, name: str) -> str:
    """Sign ``name`` in on this test client (what a sign-in plugin's hostcore.sign_in does); returns the CSRF token."""
    return sign_in_client(client, name)


@pytest.fixture
def carol(app):
    client = app.test_client()
    client.csrf = sign_in(client, "carol")
    return client


@pytest.fixture
def client_for(app):
    """A test client signed in as the named person (with ``.csrf`` set)."""

    def make(name: str):
        client = app.test_client()
        client.csrf = sign_in(client, name)
        return client

    return make


@pytest.fixture
def visitor(app):
    return app.test_client()
