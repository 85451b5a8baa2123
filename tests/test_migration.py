"""``hostcore export`` / ``hostcore import``: a wiki moves between backends whole, or not at all.

The S3 round trip (git -> S3 -> git) is in plugins/s3/tests/test_migration.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hostcore import SYSTEM, Delete, ValidationError, create_app
from hostcore.cli.commands import main
from hostcore.cli.migration import STATE_FILE
from hostcore.domain.hashes import blob_hash
from hostcore.host.host import Host
from hostcore.seams.storage import Change
from hostcore.service.migration import FILES, HISTORY, MANIFEST, export_wiki, import_wiki, read_export
from hostcore.testing.migration import fill_wiki, snapshot

GIT = 'PLUGINS = ["git", "tokens", "sqlite"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n'
FS = 'PLUGINS = ["fs", "tokens"]\nSTORAGE = "fs"\n'


def instance(folder: Path, config: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "hostcore.toml").write_text(config)
    return folder


def open_host(folder: Path) -> Host:
    return create_app(instance_path=folder).extensions["hostcore"]


def hostcore(*args: str | Path) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A git instance with something of everything, its snapshot, and its export."""
    folder = instance(tmp_path_factory.mktemp("source") / "wiki", GIT)
    host = open_host(folder)
    fill_wiki(host)
    before = snapshot(host)
    host.close()
    return folder, before


@pytest.fixture(scope="module")
def exported(source: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exports") / "export"
    hostcore("export", "--instance", source[0], out)
    return out


def test_git_to_git_keeps_everything_and_the_commits(source, exported, tmp_path):
    folder, before = source
    target = instance(tmp_path / "target", GIT)
    out = hostcore("import", "--instance", target, exported)
    assert "history: kept" in out
    host = open_host(target)
    after = snapshot(host)
    assert after == before
    # same author, committer, time, message, tree and parent: git makes the very same commits
    source_host = open_host(folder)
    assert [r.id for r in host.storage.history(limit=100)] == [r.id for r in source_host.storage.history(limit=100)]
    assert host.wiki(SYSTEM).search("ünïcödé")["hits"][0]["slug"] == "notes/ideas"  # indexes caught up
    source_host.close()
    host.close()
    assert not (target / STATE_FILE).exists()


def test_git_to_fs_to_git_keeps_every_file(source, exported, tmp_path):
    _, before = source
    fs = instance(tmp_path / "fs", FS)
    assert "history: not kept: the fs storage keeps no history" in hostcore("import", "--instance", fs, exported)
    fs_host = open_host(fs)
    on_fs = snapshot(fs_host)
    fs_host.close()
    assert {k: on_fs[k] for k in ("files", "pages", "namespaces")} == {k: before[k] for k in ("files", "pages", "namespaces")}
    hostcore("export", "--instance", fs, tmp_path / "from-fs")
    manifest = json.loads((tmp_path / "from-fs" / MANIFEST).read_text())
    assert manifest["source"] == {"storage": "fs", "history": "none: the fs storage keeps no history"}
    back = instance(tmp_path / "back", GIT)
    hostcore("import", "--instance", back, tmp_path / "from-fs")
    host = open_host(back)
    after = snapshot(host)
    host.close()
    assert {k: after[k] for k in ("files", "pages", "namespaces")} == {k: before[k] for k in ("files", "pages", "namespaces")}
    [(author, _time, message, _paths, _change, changed)] = after["history"]
    assert author == "hostcore import" and message.startswith("import: the wiki as exported on")
    assert changed == {path: blob_hash(data) for path, data in before["files"].items()}


def test_export_format(exported, source):
    _, before = source
    manifest = json.loads((exported / MANIFEST).read_text())
    assert manifest["format"] == "hostcore-export" and manifest["version"] == 1
    assert manifest["source"] == {"storage": "git", "history": "kept"}
    assert manifest["files"]["count"] == len(before["files"]) and manifest["history"]["count"] == len(before["history"])
    files = [json.loads(line) for line in (exported / FILES).read_text().splitlines()]
    assert [f["path"] for f in files] == sorted(before["files"])
    for f in files:
        assert (exported / "blobs" / f["hash"][:2] / f["hash"][2:]).read_bytes() == before["files"][f["path"]]
    first = json.loads((exported / HISTORY).read_text().splitlines()[0])
    assert set(first) == {"id", "author", "email", "time", "message", "moves", "changes"}
    assert first["author"] == "ann" and first["changes"] == {"notes/.namespace.yaml": first["changes"]["notes/.namespace.yaml"]}


def copy_export(exported: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(exported, to)
    return to


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda e: (e / MANIFEST).write_text("{not json"), "manifest.json is not JSON"),
        (lambda e: (e / MANIFEST).unlink(), "has no manifest.json: the export did not finish"),
        (
            lambda e: (e / MANIFEST).write_text(json.dumps({**json.loads((e / MANIFEST).read_text()), "version": 2})),
            "is in export format version 2, newer than this hostcore reads (version 1); upgrade hostcore and import again",
        ),
        (
            lambda e: (e / MANIFEST).write_text(json.dumps({**json.loads((e / MANIFEST).read_text()), "format": "zip"})),
            "is not a hostcore export manifest",
        ),
        (
            lambda e: (e / HISTORY).write_text((e / HISTORY).read_text().replace('"ann"', '"eve"', 1)),
            "history.jsonl does not match its SHA-256",
        ),
        (
            lambda e: (e / FILES).write_text("\n".join((e / FILES).read_text().splitlines()[1:]) + "\n"),
            "files.jsonl does not match its SHA-256",
        ),
        (lambda e: next((e / "blobs").rglob("*/*")).write_bytes(b"tampered"), "does not hold the bytes its name is the hash of"),
        (lambda e: next((e / "blobs").rglob("*/*")).unlink(), "is missing"),
    ],
    ids=[
        "not-json",
        "unfinished",
        "newer-version",
        "not-an-export",
        "history-edited",
        "files-cut",
        "blob-changed",
        "blob-missing",
    ],
)
def test_a_damaged_export_is_refused_and_nothing_written(exported, tmp_path, damage, message):
    broken = copy_export(exported, tmp_path / "broken")
    damage(broken)
    target = instance(tmp_path / "target", GIT)
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(broken)])
    assert result.exit_code == 1 and message in result.output, result.output
    assert "import again" in result.output or "export the wiki again" in result.output or "name the folder" in result.output
    host = open_host(target)
    assert host.storage.list() == [] and host.storage.history() == []
    host.close()
    assert not (target / STATE_FILE).exists()


def test_not_an_export_and_not_an_instance(tmp_path, exported):
    target = instance(tmp_path / "target", GIT)
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(tmp_path / "empty")])
    assert (
        result.exit_code == 1
        and "is not a hostcore export (no manifest.json); name the folder `hostcore export` wrote" in result.output
    )
    result = CliRunner().invoke(main, ["import", "--instance", str(tmp_path / "nowhere"), str(exported)])
    assert result.exit_code == 1 and "has no hostcore.toml; name the instance with --instance" in result.output
    result = CliRunner().invoke(main, ["export", "--instance", str(target), str(exported)])
    assert result.exit_code == 1 and "is not an empty folder; export into a new folder" in result.output


def test_a_non_empty_target_is_refused_unless_replaced(source, exported, tmp_path):
    _, before = source
    target = instance(tmp_path / "target", GIT)
    host = open_host(target)
    host.wiki(SYSTEM).save_namespace("mine", title="Mine")
    host.wiki(SYSTEM).save_page("mine/page", body="kept in history\n")
    host.close()
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(exported)])
    assert result.exit_code == 1
    assert "already holds 2 files (e.g. mine/.namespace.yaml); import into an empty storage, or pass --replace" in result.output
    host = open_host(target)
    assert host.storage.list() == ["mine/.namespace.yaml", "mine/page.md"] and len(host.storage.history()) == 2
    host.close()

    hostcore("import", "--instance", target, exported, "--replace")
    host = open_host(target)
    after = snapshot(host)
    assert {k: after[k] for k in ("files", "pages", "namespaces")} == {k: before[k] for k in ("files", "pages", "namespaces")}
    messages = [r.message for r in host.storage.history(limit=100)]
    assert messages[-2:] == ["save_page: mine/page", "save_namespace: mine"]  # its own history stays, oldest last
    assert messages[0].startswith("import: the wiki as exported")  # the export's history, then the deletes
    host.close()


def test_a_storage_with_history_only_is_not_empty(exported, tmp_path):
    target = instance(tmp_path / "target", GIT)
    host = open_host(target)
    saved = host.wiki(SYSTEM).save_namespace("gone", title="Gone")
    host.storage.apply([Delete("gone/.namespace.yaml", expect=saved["hash"])], Change("ann", "delete it"))
    host.close()
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(exported)])
    assert (
        result.exit_code == 1
        and "the storage holds history (every file was deleted); import into an empty storage" in result.output
    )


class Interrupt:
    """A progress report that presses Ctrl-C after ``after`` steps of the phase ``label``."""

    def __init__(self, label: str, after: int) -> None:
        self.label, self.after, self.current, self.done = label, after, "", 0

    def phase(self, label: str, total: int) -> None:
        self.current, self.done = label, 0

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self.current == self.label and self.done >= self.after:
            raise KeyboardInterrupt


def test_an_interrupted_import_resumes(source, exported, tmp_path):
    _, before = source
    target = instance(tmp_path / "target", GIT)
    state = target / STATE_FILE
    host = open_host(target)
    with pytest.raises(KeyboardInterrupt):
        import_wiki(host.storage, exported, state, progress=Interrupt("importing history", 7))
    assert json.loads(state.read_text())["done"] == 7 and len(host.storage.history(limit=100)) == 7
    # a crash after the 7th change landed but before the state said so: the 7th must not land twice
    state.write_text(json.dumps({**json.loads(state.read_text()), "done": 6}))
    host.close()
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(exported)])
    assert result.exit_code == 0, result.output
    assert (
        f"imported {len(before['files'])} files and {len(before['history']) - 7} of {len(before['history'])} revisions (resumed after 6)"
        in result.output
    )
    host = open_host(target)
    assert snapshot(host) == before
    host.close()
    assert not state.exists()


def test_an_unfinished_import_of_another_export_is_refused(exported, tmp_path):
    target = instance(tmp_path / "target", GIT)
    (target / STATE_FILE).write_text(json.dumps({"export": "0" * 64, "folder": "/elsewhere", "done": 3}))
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(exported)])
    assert result.exit_code == 1
    assert "records an unfinished import of another export (/elsewhere); finish that import first" in result.output


def test_progress_is_shown_on_stderr(exported, tmp_path):
    target = instance(tmp_path / "target", FS)
    result = CliRunner().invoke(main, ["import", "--instance", str(target), str(exported)])
    assert result.exit_code == 0
    assert "checking the export" in result.stderr and "importing files" in result.stderr
    assert "imported" in result.stdout and "checking" not in result.stdout


def test_export_reads_only_and_is_checked_whole(source, tmp_path):
    folder, before = source
    host = open_host(folder)
    steps: list[str] = []

    class Count:
        def phase(self, label: str, total: int) -> None:
            steps.append(f"{label} {total}")

        def advance(self, count: int = 1) -> None:
            pass

    done = export_wiki(host.storage, tmp_path / "e", Count())
    assert steps == [f"exporting history {len(before['history'])}", f"exporting files {len(before['files'])}"]
    assert done["files"] == len(before["files"]) and done["history"] == "kept"
    assert snapshot(host) == before
    host.close()
    checked = read_export(tmp_path / "e")
    assert checked.files == {path: blob_hash(data) for path, data in before["files"].items()}
    with pytest.raises(ValidationError, match="is not an empty folder"):
        export_wiki(host.storage, tmp_path / "e")
