"""Two hosts on one bucket and one Redis, in one process: each keeps its own search index and link
graph and catches up from the change log (``version``/``changed_since``), and tokens and upload
URLs made on one are honoured by the other."""

import threading
import time

import pytest

from hostcore import HostcoreError, Principal, create_app
from hostcore.testing.redis import redis_server
from hostcore.testing.s3 import S3Server, prefix_for
from hostcore_s3.storage import S3Storage
from hostcore_tokens import store

WRITER = Principal("tester", frozenset({"admin"}))


@pytest.fixture(scope="module")
def redis_url():
    with redis_server() as srv:
        yield srv.url


@pytest.fixture
def hosts(s3_server: S3Server, redis_url, tmp_path):
    config = {
        "PLUGINS": ["s3", "tokens", "sqlite"], "STORAGE": "s3", "SEARCH": "sqlite", "REDIS_URL": redis_url,
        "PUBLIC_URL": f"http://wiki-{prefix_for(tmp_path)}.test",
        "PLUGIN_CONFIG": {"s3": {"bucket": s3_server.bucket, "endpoint_url": s3_server.url, "prefix": prefix_for(tmp_path)}},
    }  # fmt: skip
    made = [create_app(config, instance_path=tmp_path / name).extensions["hostcore"] for name in ("a", "b")]
    made[0].wiki(WRITER).save_namespace("notes", title="Notes")
    yield made
    for host in made:
        host.close()


def slugs(hits):
    return sorted(hit["slug"] for hit in hits["hits"])


def test_search_backlinks_and_health_follow_the_other_hosts_changes(hosts):
    a, b = (host.wiki(WRITER) for host in hosts)
    assert slugs(b.search("zebra")) == []  # B's index is at the log's version now
    saved = a.save_page("notes/zoo", body="# Zoo\n\nA zebra lives here. See [[notes/plan]].\n")
    assert slugs(a.search("zebra")) == ["notes/zoo"]  # at once on A
    assert slugs(b.search("zebra")) == ["notes/zoo"]  # and on B, at its next read
    assert [link["slug"] for link in b.backlinks("notes/plan")["backlinks"]] == ["notes/zoo"]
    assert "notes/plan" in str(b.health())
    moved = b.move_page("notes/zoo", "notes/park", basehash=saved["hash"])
    assert slugs(a.search("zebra")) == ["notes/park"]
    assert [link["slug"] for link in a.backlinks("notes/plan")["backlinks"]] == ["notes/park"]
    first = a.page_history("notes/park")["commits"][-1]["id"]
    b.save_page("notes/park", body="# Park\n\nNo animals.\n", basehash=moved["hash"])
    assert slugs(a.search("zebra")) == []
    a.restore_page("notes/park", first, basehash=a.read_page("notes/park")["hash"])
    assert slugs(b.search("zebra")) == ["notes/park"]


def test_changed_since_names_the_changes_between_versions(hosts, s3_server, tmp_path):
    storage: S3Storage = hosts[0].storage  # type: ignore[assignment]
    wiki = hosts[0].wiki(WRITER)
    before = storage.version()
    wiki.save_page("notes/one", body="one\n")
    wiki.save_page("notes/two", body="two\n")
    middle = storage.version()
    assert middle != before and storage.changed_since(before, middle) == ["notes/one.md", "notes/two.md"]
    other = S3Storage(tmp_path / "other", {"bucket": s3_server.bucket, "endpoint_url": s3_server.url, "prefix": prefix_for(tmp_path)})
    try:
        assert other.version() == middle  # every process of every host names the same state alike
        wiki.save_page("notes/three", body="three\n")
        assert other.changed_since(middle, other.version()) == ["notes/three.md"]
    finally:
        other.close()
    assert storage.changed_since("not a version", middle) is None
    assert storage.changed_since("f" * 40 + ".3", middle) is None  # an id this log does not have


def test_a_late_log_entry_makes_a_new_version_and_is_caught_up(hosts):
    storage: S3Storage = hosts[0].storage  # type: ignore[assignment]
    wiki = hosts[0].wiki(WRITER)
    wiki.save_page("notes/early", body="early\n")
    wiki.save_page("notes/late", body="late\n")
    ids = storage._log_ids()
    # This process forgets the entry of notes/early, as if it had not landed yet when it listed.
    late = next(i for i in ids if storage._entry(i)["ops"][0]["path"] == "notes/early.md")
    storage._ids, storage._id_set = [i for i in ids if i != late], set(ids) - {late}
    storage._log_head = str(storage._call("head_object", Key=storage._key(".hostcore/head"))["ETag"])
    without = storage.version()
    storage._log_head = ""  # the writer of the late entry rewrites head: the next look lists again
    with_late = storage.version()
    assert with_late != without and without.split(".")[0] == with_late.split(".")[0]
    assert "notes/early.md" in storage.changed_since(without, with_late)


def test_a_token_and_an_upload_url_made_on_one_host_work_once_on_the_other(hosts):
    a, b = hosts
    token = store(a).create("laptop", ["write"])
    assert store(b).verify(token).name == "laptop"
    a.wiki(WRITER).save_page("notes/plan", body="# Plan\n")
    ticket = a.wiki(WRITER).upload_attachment("notes/plan", "minutes.txt")
    url_token = ticket["upload_url"].rsplit("/", 1)[1]
    assert b.wiki(WRITER).complete_upload(url_token, b"minutes\n")["filename"] == "minutes.txt"
    with pytest.raises(HostcoreError) as err:
        a.wiki(WRITER).complete_upload(url_token, b"again\n")
    assert err.value.status == 410 and "already used" in err.value.message
    store(a).revoke("laptop")
    assert store(b).verify(token) is None


def test_the_background_poll_catches_up_before_any_read(s3_server: S3Server, tmp_path):
    config = {
        "PLUGINS": ["s3", "tokens", "sqlite"], "STORAGE": "s3", "SEARCH": "sqlite", "CATCH_UP_SECONDS": 0.1,
        "PLUGIN_CONFIG": {"s3": {"bucket": s3_server.bucket, "endpoint_url": s3_server.url, "prefix": prefix_for(tmp_path)}},
    }  # fmt: skip
    a, b = (create_app(config, instance_path=tmp_path / name).extensions["hostcore"] for name in ("a", "b"))
    try:
        a.wiki(WRITER).save_namespace("notes", title="Notes")
        a.wiki(WRITER).save_page("notes/polled", body="# Polled\n")
        deadline = time.monotonic() + 5
        # No read on B: only its poller can bring the page in. Each index reads the storage's
        # version under its own lock, so one poll can take the page into one and the next into
        # the other: wait for both.
        while not ("notes/polled" in b.search.hashes() and "notes/polled" in b.links.hashes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "notes/polled" in b.search.hashes() and "notes/polled" in b.links.hashes()
    finally:
        a.close()
        b.close()
    assert not any(t.name == "hostcore-catch-up" for t in threading.enumerate())
