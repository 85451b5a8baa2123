"""Tokens in the host's shared state: hashed, named once, revoked everywhere at once, shared by
every host of one Redis, and moved in from an older version's auth.sqlite."""

import sqlite3
import threading

import pytest

from hostcore import NotFound, Principal, Unavailable, ValidationError, create_app
from hostcore.testing.redis import redis_server
from hostcore_tokens import check_grant, digest, store

CONFIG = {"PLUGINS": ["fs", "tokens"], "STORAGE": "fs"}


def _host(path, **config):
    return create_app({**CONFIG, **config}, instance_path=path).extensions["hostcore"]


@pytest.fixture
def host(tmp_path):
    host = _host(tmp_path / "instance")
    yield host
    host.close()


@pytest.fixture(scope="module")
def redis_url():
    with redis_server() as srv:
        yield srv.url


def test_tokens_are_stored_hashed(host):
    token = store(host).create("bot", ["write"], ["team"])
    raw = sqlite3.connect(host.instance_path / "shared.sqlite").execute("SELECT * FROM records").fetchall()
    assert token not in repr(raw) and digest(token) in repr(raw)
    principal = store(host).verify(token)
    assert principal.name == "bot" and principal.scopes == {"write"} and principal.namespaces == {"team"}
    assert store(host).verify(token + "x") is None
    assert not (host.instance_path / "auth.sqlite").exists()


def test_names_scopes_and_revocation(host):
    tokens = store(host)
    token = tokens.create("bot", ["read"])
    with pytest.raises(ValidationError, match="exists"):
        tokens.create("bot", ["read"])
    with pytest.raises(ValidationError) as err:
        tokens.create("other", ["root"])
    assert err.value.field == "scope"
    with pytest.raises(ValidationError):
        tokens.create("other", ["read"], ["_bad"])
    tokens.revoke("bot")
    assert tokens.verify(token) is None
    with pytest.raises(NotFound):
        tokens.revoke("bot")
    tokens.create("bot", ["read"])  # the name is free again
    other = tokens.create("other", ["read"])
    listed = tokens.list()
    assert [t["name"] for t in listed] == ["bot", "other"]
    tokens.revoke(listed[1]["id"])  # by id too
    assert tokens.verify(other) is None and [t["name"] for t in tokens.list()] == ["bot"]


def test_last_used_is_recorded(host):
    tokens = store(host)
    token = tokens.create("bot", ["read"])
    assert tokens.list()[0]["last_used"] is None
    tokens.verify(token)
    assert tokens.list()[0]["last_used"] is not None


def test_racing_creators_of_one_name_have_one_winner(host):
    results = []

    def create():
        try:
            results.append(store(host).create("same", ["read"]))
        except ValidationError:
            results.append(None)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if r]
    assert len(winners) == 1 and [t["name"] for t in store(host).list()] == ["same"]
    assert store(host).verify(winners[0]).name == "same"


@pytest.mark.redis
def test_a_token_made_on_one_host_works_on_another_at_once(tmp_path, redis_url):
    url = "http://wiki.example.org"
    a = _host(tmp_path / "a", REDIS_URL=redis_url, PUBLIC_URL=url)
    b = _host(tmp_path / "b", REDIS_URL=redis_url, PUBLIC_URL=url)
    try:
        token = store(a).create("laptop", ["write"])
        assert store(b).verify(token).name == "laptop"
        with pytest.raises(ValidationError, match="exists"):
            store(b).create("laptop", ["read"])
        store(b).revoke("laptop")
        assert store(a).verify(token) is None
    finally:
        a.close()
        b.close()


@pytest.mark.redis
def test_redis_down_is_unavailable_not_unknown(tmp_path):
    with redis_server() as srv:
        host = _host(tmp_path / "a", REDIS_URL=srv.url)
        token = store(host).create("bot", ["read"])
        srv.stop()
        with pytest.raises(Unavailable, match="REDIS_URL"):
            store(host).verify(token)
        host.close()


def test_an_old_auth_sqlite_is_moved_in_once(tmp_path):
    instance = tmp_path / "instance"
    instance.mkdir()
    db = sqlite3.connect(instance / "auth.sqlite")
    db.executescript(
        "CREATE TABLE tokens (id INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL,"
        " namespaces TEXT, created REAL NOT NULL, last_used REAL, revoked REAL);"
    )
    db.executemany(
        "INSERT INTO tokens (name, digest, scopes, namespaces, created, revoked) VALUES (?, ?, ?, ?, ?, ?)",
        [("kept", digest("hc_kept"), "write", "team", 1.0, None), ("gone", digest("hc_gone"), "read", None, 2.0, 3.0)],
    )
    db.commit()
    db.close()
    host = _host(instance)
    try:
        assert store(host).verify("hc_kept").namespaces == {"team"}
        assert store(host).verify("hc_gone") is None
        assert not (instance / "auth.sqlite").exists() and (instance / "auth.sqlite.migrated").exists()
        assert [t["name"] for t in store(host).list()] == ["kept"]
    finally:
        host.close()
    again = _host(instance)  # nothing to move any more; the token stays
    assert store(again).verify("hc_kept").name == "kept"
    again.close()


def test_a_persons_token_acts_as_them_and_lists_only_theirs(host):
    from hostcore import Principal
    from hostcore_tokens import bounded

    tokens = store(host)
    mine = tokens.create("laptop", ["write"], ["team", "notes"], owner="carol")
    tokens.create("bot", ["read"])
    assert tokens.verify(mine).name == "carol" and tokens.owned(mine)
    assert [t["name"] for t in tokens.list(owner="carol")] == ["laptop"]
    with pytest.raises(NotFound):
        tokens.revoke("laptop", owner="dave")
    # the person's current access bounds the token; a person who may not sign in any more has none
    now = bounded(tokens.verify(mine), Principal("person:carol", frozenset({"read"}), frozenset({"team"})))
    assert now.name == "person:carol" and now.scopes == {"read"} and now.namespaces == {"team"}
    assert bounded(tokens.verify(mine), None) is None


def test_who_manages_which_tokens_is_the_plugins_rule(host):
    """The web's tokens page asks these: an admin of every namespace sees and revokes every token
    (those of the command line too), anyone else their own; a token holds no more than its person."""
    tokens = store(host)
    admin = Principal("person:ann", frozenset({"admin"}))
    narrow_admin = Principal("person:ned", frozenset({"admin"}), frozenset({"team"}))
    writer = Principal("person:wes", frozenset({"write"}), frozenset({"team"}))
    tokens.create("from-cli", ["admin"])
    tokens.create_for(writer, "wes", "wes-laptop", ["read"], ["team"])
    tokens.create_for(narrow_admin, "ned", "ned-box", ["admin"], ["team"])
    assert [t["name"] for t in tokens.list_for(admin, "ann")] == ["from-cli", "wes-laptop", "ned-box"]
    assert [t["name"] for t in tokens.list_for(narrow_admin, "ned")] == ["ned-box"]
    assert [t["name"] for t in tokens.list_for(writer, "wes")] == ["wes-laptop"]
    with pytest.raises(NotFound):
        tokens.revoke_for(narrow_admin, "ned", "from-cli")
    with pytest.raises(NotFound):
        tokens.revoke_for(writer, "wes", "ned-box")
    tokens.revoke_for(admin, "ann", "from-cli")
    assert [t["name"] for t in tokens.list()] == ["wes-laptop", "ned-box"]
    for scopes, namespaces, field in ((["admin"], ["team"], "scope"), (["read"], ["ops"], "namespace"), (["read"], None, "namespace")):
        with pytest.raises(ValidationError) as refused:
            tokens.create_for(writer, "wes", "more", scopes, namespaces)
        assert refused.value.field == field
    check_grant(admin, ["admin"], None)  # an admin of everything may make a token for everything
