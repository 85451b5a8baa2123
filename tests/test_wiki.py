"""The service layer, on a real instance folder with the fs storage."""

import ast
import re
from pathlib import Path

import pytest

from hostcore import Conflict, Forbidden, InsufficientScope, NotFound, ValidationError
from hostcore.domain.pages import MAX_BODY_BYTES

from .conftest import principal


def snapshot(host):
    return {path: host.storage.read(path) for path in host.storage.list()}


def test_create_read_update_keeps_omitted_fields(wiki):
    created = wiki.save_page("notes/a", body="hello", title="A", tags=["x"], pin=True)
    assert created["created"] and created["changed"]
    page = wiki.read_page("notes/a")
    assert (page["title"], page["tags"], page["pin"], page["body"], page["hash"]) == ("A", ["x"], True, "hello", created["hash"])
    retag = wiki.save_page("notes/a", basehash=created["hash"], tags=["y", "z"])
    page = wiki.read_page("notes/a")
    assert (page["title"], page["tags"], page["pin"], page["body"]) == ("A", ["y", "z"], True, "hello")
    cleared = wiki.save_page("notes/a", basehash=retag["hash"], title="")
    assert wiki.read_page("notes/a")["title"] == "" and cleared["changed"]


def test_create_defaults_title_to_slug_and_needs_body_and_namespace(wiki, host):
    wiki.save_page("notes/b", body="x")
    assert wiki.read_page("notes/b")["title"] == "notes/b"
    with pytest.raises(ValidationError) as err:
        wiki.save_page("notes/c")
    assert err.value.field == "body"
    with pytest.raises(ValidationError) as err:
        wiki.save_page("nowhere/c", body="x")
    assert err.value.field == "slug" and "save_namespace" in str(err.value)


def test_stale_basehash_conflict_carries_hash_and_body(wiki, host):
    first = wiki.save_page("notes/a", body="one")
    second = wiki.save_page("notes/a", basehash=first["hash"], body="two")
    before = snapshot(host)
    with pytest.raises(Conflict) as err:
        wiki.save_page("notes/a", basehash=first["hash"], body="three")
    assert err.value.data == {"hash": second["hash"], "body": "two"}
    assert err.value.field == "basehash"
    assert snapshot(host) == before


STALE = "0" * 40


@pytest.mark.parametrize(
    ("tool", "call", "advice"),
    [
        ("save_page", lambda w, h: w.save_page("notes/c", basehash=h, body="mine"), "merge your change into the current body"),
        ("edit_page", lambda w, h: w.edit_page("notes/c", h, [{"oldText": "x", "newText": "y"}]), "read_page it again"),
        ("move_page", lambda w, h: w.move_page("notes/c", "notes/elsewhere", h), "read_page it again"),
        ("rename_page", lambda w, h: w.rename_page("notes/c", "Elsewhere", h), "read_page it again"),
        ("delete_page", lambda w, h: w.delete_page("notes/c", basehash=h), "read_page it again"),
    ],
)
def test_each_page_tools_conflict_says_what_to_do(wiki, host, tool, call, advice):
    """Only save_page's conflict carries the current body; the others' say how to get it, and
    none on a page that is gone advises omitting a basehash the tool requires."""
    current = wiki.save_page("notes/c", body="theirs")["hash"]
    before = snapshot(host)
    with pytest.raises(Conflict) as err:
        call(wiki, STALE)
    stale = err.value
    assert stale.field == "basehash" and stale.data["hash"] == current and advice in stale.message, stale
    assert ("body" in stale.data) == (tool == "save_page") and "here" not in stale.message, stale
    assert snapshot(host) == before

    wiki.delete_page("notes/c")
    with pytest.raises(Conflict) as err:
        call(wiki, current)
    gone = err.value
    assert gone.data == {"hash": ""} and "no longer exists" in gone.message, gone
    assert ("omit basehash" in gone.message) == (tool == "save_page"), gone


def test_create_existing_conflicts(wiki):
    first = wiki.save_page("notes/a", body="one")
    with pytest.raises(Conflict) as err:
        wiki.save_page("notes/a", body="again")
    assert err.value.data["hash"] == first["hash"] and err.value.data["body"] == "one"


def test_save_same_content_is_noop(wiki, host, monkeypatch):
    first = wiki.save_page("notes/a", body="one", tags=["t"])
    calls = []
    monkeypatch.setattr(host.storage, "apply", lambda *a, **k: calls.append(a))
    again = wiki.save_page("notes/a", basehash=first["hash"], body="one", tags=["t"])
    assert again == {"slug": "notes/a", "hash": first["hash"], "created": False, "changed": False}
    assert calls == []


def test_limits_name_the_field_and_write_nothing(wiki, host):
    before = snapshot(host)
    for kwargs, field in [
        ({"body": "é" * (MAX_BODY_BYTES // 2 + 1)}, "body"),
        ({"body": "x", "title": "t" * 257}, "title"),
        ({"body": "x", "tags": ["t"] * 33}, "tags"),
        ({"body": "x", "tags": ["t" * 65]}, "tags"),
        ({"body": "x\ud800"}, "body"),
    ]:
        with pytest.raises(ValidationError) as err:
            wiki.save_page("notes/big", **kwargs)
        assert err.value.field == field
    assert snapshot(host) == before
    exact = wiki.save_page("notes/big", body="x" * MAX_BODY_BYTES)
    assert exact["created"]


def test_edit_rules(wiki, host):
    h = wiki.save_page("notes/e", body="alpha beta gamma beta")["hash"]
    before = snapshot(host)
    with pytest.raises(ValidationError) as err:
        wiki.edit_page("notes/e", h, [{"oldText": "beta", "newText": "B"}])
    assert err.value.field == "edits[0].oldText" and "2 times" in str(err.value)
    with pytest.raises(ValidationError) as err:
        wiki.edit_page("notes/e", h, [{"oldText": "alpha", "newText": "A"}, {"oldText": "zzz", "newText": ""}])
    assert err.value.field == "edits[1].oldText"
    assert snapshot(host) == before
    dry = wiki.edit_page("notes/e", h, [{"oldText": "alpha", "newText": "A"}], dry_run=True)
    assert dry["hash"] == h and dry["changed"] and "-alpha beta gamma beta" in dry["diff"] and "+A beta" in dry["diff"]
    assert snapshot(host) == before
    done = wiki.edit_page(
        "notes/e", h, [{"oldText": "alpha", "newText": "A"}, {"oldText": "A beta", "newText": "AB"}, {"oldText": "gamma ", "newText": ""}]
    )
    assert wiki.read_page("notes/e")["body"] == "AB beta"
    assert done["hash"] == wiki.read_page("notes/e")["hash"] != h
    with pytest.raises(Conflict) as err:
        wiki.edit_page("notes/e", h, [{"oldText": "AB", "newText": "x"}])
    assert err.value.data == {"hash": done["hash"]}
    noop = wiki.edit_page("notes/e", done["hash"], [{"oldText": "AB", "newText": "AB"}])
    assert noop["changed"] is False and noop["hash"] == done["hash"]


def test_edit_keeps_front_matter(wiki):
    h = wiki.save_page("notes/e", body="x", title="T", tags=["a"], pin=True)["hash"]
    wiki.edit_page("notes/e", h, [{"oldText": "x", "newText": "y"}])
    page = wiki.read_page("notes/e")
    assert (page["title"], page["tags"], page["pin"], page["body"]) == ("T", ["a"], True, "y")


def test_delete_with_and_without_basehash(wiki):
    h = wiki.save_page("notes/d", body="x")["hash"]
    with pytest.raises(Conflict) as err:
        wiki.delete_page("notes/d", basehash="0" * 40)
    assert err.value.data["hash"] == h
    assert wiki.delete_page("notes/d", basehash=h)["deleted"]
    with pytest.raises(NotFound):
        wiki.read_page("notes/d")
    with pytest.raises(NotFound):
        wiki.delete_page("notes/d")
    with pytest.raises(Conflict) as err:
        wiki.save_page("notes/d", basehash=h, body="y")
    assert err.value.data["hash"] == ""


def test_list_pages_paging_and_hidden(wiki, host):
    for i in range(5):
        wiki.save_page(f"notes/p{i}", body="x", tags=[str(i)])
    (host.storage.root / "notes" / ".secret.md").write_text("hidden")
    (host.storage.root / "notes" / "_private").mkdir()
    (host.storage.root / "notes" / "_private" / "x.md").write_text("hidden")
    first = wiki.list_pages("notes", offset=0, limit=2)
    assert [p["slug"] for p in first["pages"]] == ["notes/p0", "notes/p1"]
    assert first["more"] and first["next_offset"] == 2 and first["total"] == 5
    last = wiki.list_pages("notes", offset=4, limit=2)
    assert [p["slug"] for p in last["pages"]] == ["notes/p4"] and not last["more"] and last["next_offset"] is None
    assert last["pages"][0]["tags"] == ["4"]
    with pytest.raises(ValidationError):
        wiki.read_page("notes/.secret")
    with pytest.raises(ValidationError):
        wiki.read_page("notes/_private/x")


def test_scopes_and_namespaces(host, admin):
    admin.save_namespace("team")
    admin.save_page("team/a", body="t")
    admin.save_page("notes/a", body="n")
    reader = host.wiki(principal("read"))
    assert reader.read_page("team/a")["body"] == "t"
    with pytest.raises(InsufficientScope) as err:
        reader.save_page("notes/b", body="x")
    assert err.value.data["required_scope"] == "write" and "'write'" in str(err.value)
    writer = host.wiki(principal("write"))
    assert writer.read_page("notes/a")["body"] == "n"
    with pytest.raises(InsufficientScope):
        writer.save_namespace("other")
    limited = host.wiki(principal("write", namespaces=["team"]))
    assert [p["slug"] for p in limited.list_pages()["pages"]] == ["team/a"]
    assert [n["name"] for n in limited.list_namespaces()["namespaces"]] == ["team"]
    with pytest.raises(Forbidden):
        limited.read_page("notes/a")
    with pytest.raises(Forbidden):
        limited.save_page("notes/z", body="x")
    with pytest.raises(Forbidden):
        limited.list_pages("notes")


def test_namespaces(admin, host):
    created = admin.save_namespace("docs", title="Docs", widgets=["pages", "tags"], new={"template": "t", "slug": "s"})
    assert created["created"]
    with pytest.raises(Conflict) as err:
        admin.save_namespace("docs", title="again")
    assert err.value.data["hash"] == created["hash"]
    settings = admin.read_namespace("docs")
    assert settings["hash"] == created["hash"] and settings["title"] == "Docs" and settings["skin"] == ""
    updated = admin.save_namespace("docs", basehash=created["hash"], description="d", new={"template": "", "slug": ""}, export={})
    settings = admin.read_namespace("docs")
    assert settings["hash"] == updated["hash"]
    assert (settings["title"], settings["description"], settings["widgets"], settings["new"]) == ("Docs", "d", ["pages", "tags"], {})
    for kwargs, field in [
        ({"skin": "neon"}, "skin"),
        ({"palette": "x"}, "palette"),
        ({"widgets": ["bogus"]}, "widgets"),
        ({"description": "d" * 256}, "description"),
        ({"image": "hero.gif"}, "image"),
        ({"index": "_x"}, "index"),
    ]:
        with pytest.raises(ValidationError) as err:
            admin.save_namespace("docs", basehash=updated["hash"], **kwargs)
        assert err.value.field == field
    listed = {n["name"]: n for n in admin.list_namespaces()["namespaces"]}
    assert listed["docs"]["pages"] == 0 and listed["docs"]["description"] == "d"
    with pytest.raises(ValidationError):
        admin.read_namespace("notes/x")


def test_events_fire_after_writes(host, wiki):
    seen = []

    class Listener:
        from hostcore import hookimpl

        @hookimpl
        def page_saved(self, host, page, previous, change):
            seen.append(("saved", page.slug, previous.hash if previous else None, change.author))

        @hookimpl
        def page_deleted(self, host, page, change):
            seen.append(("deleted", page.slug, page.hash, change.message))

    host.pm.register(Listener())
    first = wiki.save_page("notes/ev", body="x")
    wiki.delete_page("notes/ev")
    assert seen == [("saved", "notes/ev", None, "tester"), ("deleted", "notes/ev", first["hash"], "delete_page: notes/ev")]


# --- the shape of the service ---------------------------------------------------------------


def defined_in_several_families(wiki_class: type) -> dict[str, list[str]]:
    """Names (operations, helpers, constants) that more than one class of ``wiki_class``'s bases defines."""
    owners: dict[str, list[str]] = {}
    for cls in wiki_class.__mro__:
        if cls is object:
            continue
        for name in vars(cls):
            if not name.startswith("__"):
                owners.setdefault(name, []).append(cls.__name__)
    return {name: classes for name, classes in owners.items() if len(classes) > 1}


def test_no_family_overrides_another():
    """Each operation and helper of Wiki is defined in one family only, so the order of its bases
    changes nothing and a method does what its own module says (no super() chain to follow)."""
    from hostcore.service.wiki import Wiki

    assert defined_in_several_families(Wiki) == {}


def test_the_override_check_finds_an_override():
    from hostcore.service.pages import PagesMixin

    class Shadow(PagesMixin):
        def read_page(self, *args, **kwargs):
            return super().read_page(*args, **kwargs)

    class Shaped(Shadow, PagesMixin):
        pass

    assert defined_in_several_families(Shaped) == {"read_page": ["Shadow", "PagesMixin"]}


def writes_off_the_change_path(service: Path) -> list[str]:
    """Functions of the service layer that write (``self._store``, or ``storage.apply`` anywhere but
    in ``_store``, the one place a change is applied and announced) without making their Change
    through ``self._change`` (the writes limit and free-disk check of :mod:`hostcore.service.policy`)."""
    found = []
    for path in sorted(service.glob("*.py")):
        if path.name == "migration.py":  # an import replays recorded changes as they were made
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = {ast.unparse(call.func) for call in ast.walk(node) if isinstance(call, ast.Call)}
            if node.name == "_store":
                continue
            writes = any(c.endswith("storage.apply") for c in calls)
            if writes or ("self._store" in calls and "self._change" not in calls):
                found.append(f"{path.name}:{node.lineno} {node.name}")
    return found


def test_every_write_of_the_service_takes_the_change_path(tmp_path):
    service = Path(__file__).resolve().parent.parent / "hostcore" / "service"
    assert writes_off_the_change_path(service) == []
    (tmp_path / "sneaky.py").write_text("def write(self, ops):\n    self.storage.apply(ops, None)\n")
    assert writes_off_the_change_path(tmp_path) == ["sneaky.py:1 write"]
    (tmp_path / "sneaky.py").write_text("def write(self, ops, change):\n    self._store(ops, change)\n")
    assert writes_off_the_change_path(tmp_path) == ["sneaky.py:1 write"]


DECIDING = re.compile(r"\.(require|has_scope|can_access|require_namespace|spend)\(|\blimiter\.")


def deciding_outside_the_policy(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Lines of the core's adapters that check a scope or a namespace, or count against a limit,
    themselves instead of asking :mod:`hostcore.service.policy` (and the service)."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if DECIDING.search(line.split("#", 1)[0]):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_the_core_adapters_leave_access_and_limits_to_the_policy(tmp_path):
    root = Path(__file__).resolve().parent.parent
    assert deciding_outside_the_policy(root, ("hostcore/mcp", "hostcore/browser", "hostcore/http", "hostcore/cli")) == []
    (tmp_path / "hostcore" / "mcp").mkdir(parents=True)
    (tmp_path / "hostcore" / "mcp" / "view.py").write_text("def view(principal):\n    principal.require('write')\n")
    assert deciding_outside_the_policy(tmp_path, ("hostcore/mcp",)) == ["hostcore/mcp/view.py:2: principal.require('write')"]
