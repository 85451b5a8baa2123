import sqlite3

import pytest

from hostcore import NotFound, ValidationError
from hostcore_tokens import TokenStore, digest


def test_tokens_are_stored_hashed(tmp_path):
    store = TokenStore(tmp_path / "auth.sqlite")
    token = store.create("bot", ["write"], ["team"])
    raw = sqlite3.connect(tmp_path / "auth.sqlite").execute("SELECT * FROM tokens").fetchall()
    assert token not in repr(raw) and digest(token) in repr(raw)
    principal = store.verify(token)
    assert principal.name == "bot" and principal.scopes == {"write"} and principal.namespaces == {"team"}
    assert store.verify(token + "x") is None


def test_names_scopes_and_revocation(tmp_path):
    store = TokenStore(tmp_path / "auth.sqlite")
    token = store.create("bot", ["read"])
    with pytest.raises(ValidationError, match="exists"):
        store.create("bot", ["read"])
    with pytest.raises(ValidationError) as err:
        store.create("other", ["root"])
    assert err.value.field == "scope"
    with pytest.raises(ValidationError):
        store.create("other", ["read"], ["_bad"])
    store.revoke("bot")
    assert store.verify(token) is None
    with pytest.raises(NotFound):
        store.revoke("bot")
    store.create("bot", ["read"])  # the name is free again
    assert [t["name"] for t in store.list()] == ["bot"]


def test_shared_between_processes_threads(tmp_path):
    import threading

    store = TokenStore(tmp_path / "auth.sqlite")
    tokens = [store.create(f"t{i}", ["read"]) for i in range(4)]
    other = TokenStore(tmp_path / "auth.sqlite")
    results = []
    threads = [threading.Thread(target=lambda t=t: results.append(other.verify(t).name)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["t0", "t1", "t2", "t3"]


def test_a_persons_token_acts_as_them_and_lists_only_theirs(tmp_path):
    from hostcore import Principal
    from hostcore_tokens import bounded

    store = TokenStore(tmp_path / "auth.sqlite")
    mine = store.create("laptop", ["write"], ["team", "notes"], owner="carol")
    store.create("bot", ["read"])
    assert store.verify(mine).name == "carol" and store.owned(mine)
    assert [t["name"] for t in store.list(owner="carol")] == ["laptop"]
    with pytest.raises(NotFound):
        store.revoke("laptop", owner="dave")
    # the person's current access bounds the token; a person who may not sign in any more has none
    now = bounded(store.verify(mine), Principal("person:carol", frozenset({"read"}), frozenset({"team"})))
    assert now.name == "person:carol" and now.scopes == {"read"} and now.namespaces == {"team"}
    assert bounded(store.verify(mine), None) is None
