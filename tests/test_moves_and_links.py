"""move_page, rename_page, backlinks, health, recent_changes, page_history, restore_page on git storage."""

import subprocess
import time

import pytest

from hostcore import Conflict, NotFound, ValidationError, create_app
from hostcore.domain.principal import SYSTEM

from .conftest import principal


def git(host, *args):
    return subprocess.run(["git", "-C", str(host.storage.root), *args], capture_output=True, text=True, check=True).stdout


def commit_count(host):
    return int(git(host, "rev-list", "--count", "HEAD"))


def test_every_change_is_one_commit_with_author_and_client(git_host):
    wiki = git_host.wiki(principal("write", name="alice"))
    before = commit_count(git_host)
    h = wiki.save_page("notes/a", body="one")["hash"]
    wiki.save_page("notes/a", basehash=h, body="one")  # no-op
    wiki.edit_page("notes/a", h, [{"oldText": "one", "newText": "two"}], dry_run=True)
    assert commit_count(git_host) == before + 1
    log = git(git_host, "log", "-1", "--format=%an|%s")
    assert log.strip() == "alice|save_page: notes/a"
    assert git(git_host, "show", "HEAD:notes/a.md").endswith("one")
    assert git(git_host, "rev-parse", "HEAD:notes/a.md").strip() == h


def test_move_keeps_everything_and_refuses_what_the_contract_lists(git_host):
    wiki = git_host.wiki(principal("write"))
    h = wiki.save_page("notes/a", body="body [[notes/b]]", title="A", tags=["t"], pin=True)["hash"]
    wiki.save_page("notes/index", body="home")
    wiki.save_page("team/taken", body="x")
    before = commit_count(git_host)
    with pytest.raises(ValidationError) as err:
        wiki.move_page("notes/a", "nowhere/a", h)
    assert err.value.field == "new_slug"
    with pytest.raises(ValidationError, match="holds a page"):
        wiki.move_page("notes/a", "team/taken", h)
    with pytest.raises(ValidationError, match="index page"):
        wiki.move_page("notes/index", "team/home", wiki.read_page("notes/index")["hash"])
    with pytest.raises(Conflict) as err:
        wiki.move_page("notes/a", "team/a", "0" * 40)
    assert err.value.data == {"hash": h}
    assert commit_count(git_host) == before
    events = []

    class Listener:
        from hostcore import hookimpl

        @hookimpl
        def page_moved(self, host, page, old_slug, change):
            events.append((old_slug, page.slug, page.hash, change.message))

    git_host.pm.register(Listener())
    moved = wiki.move_page("notes/a", "team/a", h)
    assert moved == {"slug": "team/a", "old_slug": "notes/a", "hash": h}
    assert events == [("notes/a", "team/a", h, "move_page: notes/a -> team/a")]
    assert commit_count(git_host) == before + 1
    page = wiki.read_page("team/a")
    assert (page["title"], page["tags"], page["pin"], page["hash"]) == ("A", ["t"], True, h)
    with pytest.raises(NotFound):
        wiki.read_page("notes/a")
    assert "team/a.md" in git(git_host, "show", "--name-only", "--format=", "HEAD")
    assert wiki.backlinks("notes/b")["backlinks"] == [{"slug": "team/a", "title": "A"}]


def test_rename_rewrites_links_each_in_its_own_commit(git_host):
    wiki = git_host.wiki(principal("write", namespaces=["notes"]))
    admin = git_host.wiki(SYSTEM)
    h = wiki.save_page("notes/old-name", body="target")["hash"]
    wiki.save_page("notes/x", body="see [[notes/old-name|label]] and [[old-name#Part]] but `[[notes/old-name]]`")
    admin.save_page("team/y", body="[[notes/old-name]]")
    before = commit_count(git_host)
    result = wiki.rename_page("notes/old-name", "Brand New Name!", h)
    assert result["slug"] == "notes/brand-new-name" and result["title"] == "Brand New Name!"
    assert result["rewritten"] == ["notes/x"]
    # team/y links here but is outside the caller's namespaces: counted, never named
    assert result["failed_links"] == [] and result["hidden_failed_links"] == 1
    assert "team/y" not in repr(result)
    assert wiki.read_page("notes/x")["body"] == (
        "see [[notes/brand-new-name|label]] and [[notes/brand-new-name#Part]] but `[[notes/old-name]]`"
    )
    assert commit_count(git_host) == before + 2
    messages = git(git_host, "log", "-2", "--format=%s").splitlines()
    assert messages == ["rename_page: links in notes/x: notes/old-name -> notes/brand-new-name",
                        "rename_page: notes/old-name -> notes/brand-new-name"]  # fmt: skip
    assert wiki.backlinks("notes/brand-new-name")["backlinks"] == [{"slug": "notes/x", "title": "notes/x"}]
    with pytest.raises(ValidationError) as err:
        wiki.rename_page("notes/brand-new-name", "!!!", result["hash"])
    assert err.value.field == "title"


def test_rename_never_tells_readers_of_another_namespace_about_a_private_page(git_host, tmp_path):
    admin = git_host.wiki(SYSTEM)
    admin.save_namespace("secret", title="Secret")
    admin.save_namespace("pub", title="Public", public=True)
    h = admin.save_page("secret/plans", body="the plans")["hash"]
    admin.save_page("secret/index", body="[[secret/plans]]")
    member = git_host.wiki(principal("write", namespaces=["team"]))
    planted = "[[secret/plans]] [[secret/guess]] [[pub/news]]"
    member.save_page("team/home", body=planted)
    pub = admin.save_page("pub/news", body="news")["hash"]

    renamed = admin.rename_page("secret/plans", "Merger With Acme", h)
    assert renamed["slug"] == "secret/merger-with-acme" and renamed["rewritten"] == ["secret/index"]
    assert [f["slug"] for f in renamed["failed_links"]] == ["team/home"]
    assert "private namespace 'secret'" in renamed["failed_links"][0]["reason"]
    assert admin.read_page("secret/index")["body"] == "[[secret/merger-with-acme]]"
    # The member's page is as written, so the existing page and the guess look alike to them.
    assert member.read_page("team/home")["body"] == planted
    seen = repr(member.recent_changes(limit=50)) + repr(member.page_history("team/home"))
    assert "merger" not in seen
    assert "merger" not in repr(member.health("team"))
    # A public page's new slug is no secret: links to it are rewritten everywhere.
    news = admin.rename_page("pub/news", "Latest News", pub)
    assert news["rewritten"] == ["team/home"] and news["failed_links"] == []
    assert member.read_page("team/home")["body"] == "[[secret/plans]] [[secret/guess]] [[pub/latest-news]]"
    assert member.recent_changes(limit=1)["commits"][0]["message"].startswith(
        "rename_page: links in team/home: pub/news -> pub/latest-news"
    )
    # Whatever a message says (a push from outside), a slug of a namespace the reader cannot read is not shown.
    push(git_host, tmp_path, {"team/home.md": "moved to [[secret/merger-with-acme]]"}, "team/home: point at secret/merger-with-acme")
    told = member.page_history("team/home")["commits"][0]["message"]
    assert told == "team/home: point at …"
    assert admin.page_history("team/home")["commits"][0]["message"] == "team/home: point at secret/merger-with-acme"


def test_health_dangling_orphans_stale(git_host):
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("notes/index", body="[[notes/a]]")
    wiki.save_page("notes/a", body="[[notes/missing]] [[team/b]]")
    wiki.save_page("notes/lonely", body="nobody links here")
    wiki.save_page("team/b", body="x")
    report = wiki.health()
    assert report["missing"] == [{"from": "notes/a", "to": "notes/missing"}]
    assert report["orphans"] == ["notes/lonely"]
    assert report["stale"] == [] and report["counts"] == {"missing": 1, "orphans": 1, "stale": 0, "missing_attachments": 0}
    git_host.links.db.connection().execute("UPDATE pages SET changed = ? WHERE slug = 'team/b'", (time.time() - 200 * 86400,))
    assert [s["slug"] for s in wiki.health("team")["stale"]] == ["team/b"]
    limited = git_host.wiki(principal("read", namespaces=["team"]))
    assert limited.health()["missing"] == [] and "storage" not in limited.health()
    # team/b is linked only from notes/a, which a team-only caller cannot see: an orphan to it.
    assert limited.health()["orphans"] == ["team/b"] and "team/b" not in report["orphans"]


def test_health_of_one_namespace_keeps_its_links_into_other_namespaces(git_host):
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("notes/linker", body="[[team/target]] [[notes/gone]] [[secret/guess]]")
    wiki.save_page("notes/holder", body="![scan](/_/files/team/target/scan.png)")
    wiki.save_page("team/other", body="[[notes/nowhere]]")
    everything = wiki.health()["missing"]
    assert {"from": "notes/linker", "to": "team/target"} in everything
    assert wiki.health("notes")["missing"] == [
        {"from": "notes/linker", "to": "notes/gone"},
        {"from": "notes/linker", "to": "secret/guess"},
        {"from": "notes/linker", "to": "team/target"},
    ]
    assert wiki.health("notes")["missing_attachments"] == [{"from": "notes/holder", "to": "/_/files/team/target/scan.png"}]
    assert wiki.health("team")["missing"] == [{"from": "team/other", "to": "notes/nowhere"}]
    # A caller limited to notes and team: links into namespaces it cannot read stay out of every report.
    both = git_host.wiki(principal("read", namespaces=["notes", "team"]))
    assert [m["to"] for m in both.health("notes")["missing"]] == ["notes/gone", "team/target"]
    assert both.health("notes")["counts"]["missing"] == 2
    only_notes = git_host.wiki(principal("read", namespaces=["notes"]))
    assert [m["to"] for m in only_notes.health("notes")["missing"]] == ["notes/gone"]
    assert only_notes.health("notes")["missing_attachments"] == []


def test_recent_changes_drops_commits_outside_access(git_host):
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("notes/a", body="a")
    wiki.save_page("team/b", body="b")
    h = wiki.read_page("notes/a")["hash"]
    wiki.move_page("notes/a", "team/a", h)  # one commit touching both namespaces
    everyone = wiki.recent_changes(limit=3)["commits"]
    assert [c["message"] for c in everyone] == ["move_page: notes/a -> team/a", "save_page: team/b", "save_page: notes/a"]
    assert everyone[0]["files"] == ["notes/a.md", "team/a.md"] and everyone[0]["author"] == "hostcore"
    notes_only = git_host.wiki(principal("read", namespaces=["notes"])).recent_changes(limit=10)["commits"]
    assert [c["message"] for c in notes_only] == ["save_page: notes/a", "save_namespace: notes"]
    log = git(git_host, "log", "-3", "--format=%H")
    assert [c["id"] for c in everyone] == log.split()


def push(host, tmp_path, files, message):
    """Commit ``files`` (path -> text) in a clone with the git command and push them into the wiki's repository."""
    clone = tmp_path / f"clone-{time.monotonic_ns()}"
    subprocess.run(["git", "clone", "-q", str(host.storage.root), str(clone)], check=True)
    for path, text in files.items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_text(text)
    outside = ["git", "-C", str(clone), "-c", "user.name=o", "-c", "user.email=o@x"]
    subprocess.run([*outside, "add", "-A"], check=True)
    subprocess.run([*outside, "commit", "-qm", message], check=True)
    subprocess.run([*outside, "push", "-q", "origin", "HEAD:main"], check=True)


def test_hidden_files_in_a_push_never_hide_the_page_beside_them(git_host, tmp_path):
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("notes/plan", body="v1")
    push(git_host, tmp_path, {"notes/plan.md": "v2", ".wiki.yaml": "x: 1\n", "_secret.md": "s", "notes/_draft.md": "d"}, "plan and config")
    notes_reader = git_host.wiki(principal("read", namespaces=["notes"]))
    for reader in (wiki, notes_reader):
        newest = reader.recent_changes(limit=1)["commits"][0]
        assert newest["message"] == "plan and config"
        assert newest["files"] == ["notes/plan.md"] and newest["file_count"] == 1
        assert reader.page_history("notes/plan")["commits"][0]["message"] == "plan and config"
    # Hidden files alone are no change anyone sees; a hidden file in another namespace still is that namespace's.
    push(git_host, tmp_path, {".wiki.yaml": "x: 2\n", "_secret.md": "t"}, "config only")
    push(git_host, tmp_path, {"notes/plan.md": "v3", "team/_draft.md": "d"}, "plan and a team draft")
    assert [c["message"] for c in wiki.recent_changes(limit=2)["commits"]] == ["plan and a team draft", "plan and config"]
    assert notes_reader.recent_changes(limit=1)["commits"][0]["message"] == "plan and config"
    assert [c["message"] for c in notes_reader.page_history("notes/plan")["commits"]] == ["plan and config", "save_page: notes/plan"]
    # A visible file at the top belongs to no namespace: seen only by callers limited to none.
    push(git_host, tmp_path, {"README.md": "r", "notes/plan.md": "v4"}, "readme")
    assert wiki.recent_changes(limit=1)["commits"][0]["files"] == ["README.md", "notes/plan.md"]
    assert notes_reader.recent_changes(limit=1)["commits"][0]["message"] == "plan and config"


def test_history_read_at_and_restore(git_host):
    wiki = git_host.wiki(principal("write"))
    h1 = wiki.save_page("notes/p", body="v1")["hash"]
    h2 = wiki.save_page("notes/p", basehash=h1, body="v2")["hash"]
    history = wiki.page_history("notes/p", limit=1)
    assert history["more"] and history["next_offset"] == 1
    first_commit = wiki.page_history("notes/p", offset=1)["commits"][0]["id"]
    old = wiki.read_page_at("notes/p", first_commit, None, 0, 100)
    assert old["body"] == "v1" and old["hash"] == h1
    with pytest.raises(Conflict) as err:
        wiki.restore_page("notes/p", first_commit)
    assert err.value.data["hash"] == h2
    restored = wiki.restore_page("notes/p", first_commit, basehash=h2)
    assert restored["hash"] == h1 and wiki.read_page("notes/p")["body"] == "v1"
    wiki.delete_page("notes/p")
    back = wiki.restore_page("notes/p")
    assert back["hash"] == h1 and wiki.read_page("notes/p")["body"] == "v1"
    assert [c["message"].split(":")[0] for c in wiki.page_history("notes/p")["commits"]][:3] == [
        "restore_page", "delete_page", "restore_page",
    ]  # fmt: skip


def test_history_follows_moves_and_renames(git_host, tmp_path):
    """page_history, read_page at a revision and restore_page follow a page across move_page,
    rename_page and a `git mv` pushed from outside, and agree with git log over its paths."""
    wiki = git_host.wiki(principal("write"))
    h = wiki.save_page("notes/first", body="v1")["hash"]
    h = wiki.save_page("notes/first", basehash=h, body="v2")["hash"]
    wiki.save_page("notes/other", body="not this page")
    h = wiki.move_page("notes/first", "team/second", h)["hash"]
    h = wiki.rename_page("team/second", "Third Name", h)["hash"]
    h = wiki.save_page("team/third-name", basehash=h, body="v3")["hash"]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(git_host.storage.root), str(clone)], check=True)
    outside = ["git", "-C", str(clone), "-c", "user.name=o", "-c", "user.email=o@x"]
    subprocess.run([*outside, "mv", "team/third-name.md", "team/fourth.md"], check=True)
    subprocess.run([*outside, "commit", "-qm", "moved by hand"], check=True)
    subprocess.run([*outside, "push", "-q", "origin", "HEAD:main"], check=True)

    commits = wiki.page_history("team/fourth", limit=50)["commits"]
    paths = ["notes/first.md", "team/second.md", "team/third-name.md", "team/fourth.md"]
    assert [c["id"] for c in commits] == git(git_host, "log", "--format=%H", "--", *paths).split()
    assert [c["message"].split(" via ")[0] for c in commits] == [
        "moved by hand", "save_page: team/third-name", "rename_page: team/second -> team/third-name",
        "move_page: notes/first -> team/second", "save_page: notes/first", "save_page: notes/first",
    ]  # fmt: skip
    assert "Hostcore-Moved: notes/first.md -> team/second.md" in git(git_host, "log", "--format=%B", "-1", commits[3]["id"])
    paged = wiki.page_history("team/fourth", offset=2, limit=2)
    assert [c["id"] for c in paged["commits"]] == [c["id"] for c in commits[2:4]] and paged["next_offset"] == 4
    # the old slugs keep their own history, which ends with the move away
    assert [c["id"] for c in wiki.page_history("notes/first")["commits"]] == [c["id"] for c in commits[3:]]

    oldest = commits[-1]["id"]
    assert wiki.read_page_at("team/fourth", oldest, None, 0, 100)["body"] == "v1"
    restored = wiki.restore_page("team/fourth", oldest, basehash=wiki.read_page("team/fourth")["hash"])
    assert restored["restored_from"] == oldest and wiki.read_page("team/fourth")["body"] == "v1"
    with pytest.raises(ValidationError, match="is not a commit in the history of notes/other"):
        wiki.read_page_at("notes/other", oldest, None, 0, 100)


def test_link_graph_catches_up_after_an_outside_commit(git_host, tmp_path):
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("notes/a", body="a")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(git_host.storage.root), str(clone)], check=True)
    (clone / "notes" / "b.md").write_text("---\ntitle: B\n---\nlinks to [[notes/a]]\n")
    subprocess.run(["git", "-C", str(clone), "add", "."], check=True)
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "outside"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)
    assert wiki.backlinks("notes/a")["backlinks"] == [{"slug": "notes/b", "title": "B"}]
    assert wiki.health("notes")["orphans"] == ["notes/b"]


def test_page_facts_hold_tags_and_pin_and_follow_changes_from_other_processes(git_host):
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("notes/a", body="a", title="A", tags=["one", "two"], pin=True)
    wiki.save_page("notes/b", body="b", title="B")
    facts = {f["slug"]: f for f in wiki.page_facts("notes")}
    assert (facts["notes/a"]["tags"], facts["notes/a"]["pin"]) == (["one", "two"], True)
    assert (facts["notes/b"]["tags"], facts["notes/b"]["pin"]) == ([], False)
    assert wiki.page_facts("notes") == list(facts.values())  # kept: the same answer
    other = create_app({"PLUGINS": ["git", "tokens"], "STORAGE": "git"}, instance_path=git_host.instance_path)
    try:  # another process's host: its own link graph connection, the same file
        other_wiki = other.extensions["hostcore"].wiki(SYSTEM)
        other_wiki.save_page("notes/b", other_wiki.page("notes/b").hash, "b", "B", ["three"], True)
        other_wiki.delete_page("notes/a")
    finally:
        other.extensions["hostcore"].close()
    assert [(f["slug"], f["tags"], f["pin"]) for f in wiki.page_facts("notes")] == [("notes/b", ["three"], True)]


def test_health_shows_the_backup_push(tmp_path):
    from hostcore import create_app

    remote = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    app = create_app(
        {"PLUGINS": ["git"], "STORAGE": "git", "PLUGIN_CONFIG": {"git": {"remote": str(remote)}}}, instance_path=tmp_path / "i"
    )
    host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes")
    head = wiki.recent_changes(1)["commits"][0]["id"]
    deadline = time.time() + 20
    while time.time() < deadline and wiki.health()["storage"]["push"].get("commit") != head:
        time.sleep(0.1)
    push = wiki.health()["storage"]["push"]
    assert push["ok"] is True and push["commit"] == head and push["failures"] == 0
    assert subprocess.run(["git", "--git-dir", str(remote), "rev-parse", "main"], capture_output=True, text=True).stdout.strip() == head
    host.close()
