"""Fixtures: a fresh app per test on a real instance folder (fs storage, tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from hostcore import Principal, create_app
from hostcore.domain.principal import SYSTEM
from hostcore.host.host import Host

BASE_CONFIG = {"PLUGINS": ["fs", "tokens"], "STORAGE": "fs"}


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    app = create_app(BASE_CONFIG, instance_path=tmp_path / "instance")
    host: Host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    yield app
    host.close()


@pytest.fixture
def git_host(tmp_path: Path) -> Host:
    """A host on the git storage (the embedded default), with namespaces notes and team."""
    app = create_app({"PLUGINS": ["git", "tokens"], "STORAGE": "git"}, instance_path=tmp_path / "instance")
    host: Host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_namespace("team", title="Team")
    yield host
    host.close()


@pytest.fixture
def host(app: Flask) -> Host:
    return app.extensions["hostcore"]


@pytest.fixture
def client(app: Flask):
    return app.test_client()


def principal(*scopes: str, namespaces: list[str] | None = None, name: str = "tester") -> Principal:
    return Principal(name, frozenset(scopes), frozenset(namespaces) if namespaces is not None else None)


@pytest.fixture
def wiki(host: Host):
    return host.wiki(principal("write"))


@pytest.fixture
def admin(host: Host):
    return host.wiki(principal("admin"))
