"""Deleting a whole namespace and bringing it back; mixed into :class:`~hostcore.service.wiki.Wiki`.

The contract has no MCP tool for it ("delete namespaces in the web UI"): the web's namespace pages
call these, as the person, with the same rule as ``save_namespace`` (the ``admin`` scope and
access to the namespace). A delete is one recorded change of every file of the namespace (its
settings, pages and attachments), made only if the namespace still holds exactly what the person
was shown (:attr:`NamespaceContents.digest`); with a storage that keeps history,
:meth:`restore_namespace` brings all of it back as one change, as ``restore_page`` does a page.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from typing_extensions import TypedDict

from hostcore.domain.attachments import FILES_SUFFIX
from hostcore.domain.hashes import blob_hash
from hostcore.domain.pages import Page, check_namespace, namespace_path
from hostcore.errors import Conflict, NotFound, Unavailable
from hostcore.seams.storage import Delete, Operation, Put
from hostcore.service.base import WikiBase


class NamespaceContents(TypedDict):
    name: str
    pages: list[str]  # slugs, sorted
    attachments: list[str]  # page slug/filename, sorted
    files: int  # every stored file, the settings and hidden ones included
    digest: str  # of every path and its hash: what delete_namespace checks before deleting
    recoverable: bool  # the storage keeps history: restore_namespace can bring it back


class NamespaceDeleted(TypedDict):
    name: str
    pages: int
    attachments: int
    revision: str  # the recorded change (empty without history)


class NamespaceRestored(TypedDict):
    name: str
    pages: int
    attachments: int
    restored_from: str  # the change that deleted it


class DeletedNamespace(TypedDict):
    name: str
    revision: str  # the change that deleted it
    author: str
    time: str  # ISO 8601


DELETED_SCAN = 500
"""How many of the newest changes :meth:`NamespaceRemovalMixin.deleted_namespaces` looks through."""


def _kind(name: str, path: str) -> tuple[str, str] | None:
    """("page", slug) or ("attachment", "slug/filename") for a stored path of namespace ``name``;
    None for its settings and other hidden files."""
    rest = path[len(name) + 1 :]
    head, sep, filename = rest.rpartition(FILES_SUFFIX + "/")
    if sep and "/" not in filename and not any(part.startswith((".", "_")) for part in head.split("/")):
        return "attachment", f"{name}/{head}/{filename}"
    if path.endswith(".md") and not any(part.startswith((".", "_")) for part in rest.split("/")):
        return "page", f"{name}/{rest[:-3]}"
    return None


class NamespaceRemovalMixin(WikiBase):
    """namespace_contents, delete_namespace, restore_namespace."""

    def _require_admin_of(self, name: str) -> None:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")

    def namespace_contents(self, name: str) -> NamespaceContents:
        """What deleting namespace ``name`` removes. Needs the admin scope and access to it.
        Raises NotFound when it does not exist."""
        self._require_existing(name)
        return self._contents(name, self.storage.hashes(name))

    def _require_existing(self, name: str) -> None:
        self._require_admin_of(name)
        if not self.storage.exists(namespace_path(name)):
            raise NotFound(f"no namespace {name!r}; list_namespaces shows those that exist", field="name")

    def _contents(self, name: str, stored: dict[str, str]) -> NamespaceContents:
        pages: list[str] = []
        attachments: list[str] = []
        for path in stored:
            kind = _kind(name, path)
            if kind is not None:
                (pages if kind[0] == "page" else attachments).append(kind[1])
        digest = hashlib.sha256("\n".join(f"{p} {h}" for p, h in sorted(stored.items())).encode()).hexdigest()
        return {
            "name": name, "pages": sorted(pages), "attachments": sorted(attachments), "files": len(stored),
            "digest": digest, "recoverable": self.storage.has_history,
        }  # fmt: skip

    def delete_namespace(self, name: str, digest: str) -> NamespaceDeleted:
        """Delete namespace ``name`` with every page and attachment in it, as one change, if it
        still holds what :meth:`namespace_contents` returned with ``digest``; else Conflict (with
        the current digest: show the person what goes now). Needs the admin scope and access."""
        self._require_existing(name)
        stored = self.storage.hashes(name)  # once: what is deleted is what the digest covers
        contents = self._contents(name, stored)
        if contents["digest"] != digest:
            raise Conflict(
                f"namespace {name!r} changed since its contents were listed (it holds {len(contents['pages'])} pages "
                f"and {len(contents['attachments'])} attachments now); review what goes again",
                field="digest",
                hash=contents["digest"],
            )
        pages = []
        for slug in contents["pages"]:
            path = f"{slug}.md"
            try:
                pages.append(replace(Page.from_bytes(slug, self.storage.read(path)), hash=stored[path]))
            except (NotFound, KeyError):
                continue  # gone meanwhile: the delete below conflicts
        ops: list[Operation] = [Delete(path, expect=digest_) for path, digest_ in sorted(stored.items())]
        change = self._change("delete_namespace", f"{name} ({len(contents['pages'])} pages)")
        try:
            self._store(ops, change)
        except (Conflict, NotFound):
            now = self._contents(name, self.storage.hashes(name))
            raise Conflict(
                f"namespace {name!r} changed while it was being deleted; nothing was deleted, review what goes again",
                field="digest",
                hash=now["digest"],
            ) from None
        for page in pages:
            self.host.notify("page_deleted", page=page, change=change)
        revision = ""
        if self.storage.has_history:
            newest = self.storage.history(namespace_path(name), limit=1)
            revision = newest[0].id if newest else ""
        return {"name": name, "pages": len(contents["pages"]), "attachments": len(contents["attachments"]), "revision": revision}

    def deleted_namespaces(self) -> list[DeletedNamespace]:
        """The namespaces deleted with :meth:`delete_namespace` among the newest
        :data:`DELETED_SCAN` changes that do not exist now and the caller administers, newest
        first (restore_namespace brings one back). Empty without history. Needs the admin scope."""
        self.principal.require("admin")
        if not self.storage.has_history:
            return []
        out: list[DeletedNamespace] = []
        seen: set[str] = set()
        for rev in self.storage.history(None, limit=DELETED_SCAN):
            if not rev.message.startswith("delete_namespace: "):
                continue
            name = rev.message.removeprefix("delete_namespace: ").split(" ", 1)[0]
            if name in seen or not self.may("admin", name) or self.storage.exists(namespace_path(name)):
                continue
            seen.add(name)
            out.append({"name": name, "revision": rev.id, "author": rev.author, "time": rev.time.isoformat(timespec="seconds")})
        return out

    def _deletion(self, name: str) -> str:
        """The id of the newest change that deleted namespace ``name``. Raises NotFound."""
        path = namespace_path(name)
        offset = 0
        while True:
            revisions = self.storage.history(path, offset=offset, limit=20)
            for rev in revisions:
                try:
                    self.storage.read_at(path, rev.id)
                except NotFound:
                    return rev.id
            if len(revisions) < 20:
                raise NotFound(f"namespace {name!r} was never deleted; there is nothing to restore", field="name")
            offset += len(revisions)

    def _before(self, path: str, revision: str) -> bytes:
        """The bytes ``path`` held just before ``revision`` deleted it."""
        older = self.storage.history(path, offset=0, limit=10)
        ids = [rev.id for rev in older]
        at = ids.index(revision) if revision in ids else -1
        if at < 0 or at + 1 >= len(ids):
            raise NotFound(f"{path} has no version before {revision[:12]}", field="name")
        return self.storage.read_at(path, ids[at + 1])

    def restore_namespace(self, name: str) -> NamespaceRestored:
        """Bring back namespace ``name`` as it was just before its newest deletion (settings,
        pages, attachments), as one change. Needs the admin scope and access; a storage that
        keeps history (else Unavailable). Raises Conflict when the namespace exists again, NotFound
        when it was never deleted."""
        self._require_admin_of(name)
        if not self.storage.has_history:
            raise Unavailable(f"the {self.storage.name or 'configured'} storage keeps no history; a deleted namespace is gone")
        current = self.storage.hash(namespace_path(name))
        if current is not None:
            raise Conflict(
                f"namespace {name!r} exists (again); restore its pages one by one from their history instead",
                field="name",
                hash=current,
            )
        revision = self._deletion(name)
        _change, changed = self.storage.changes_in(revision)
        gone = sorted(path for path, blob in changed.items() if blob is None and path.startswith(name + "/"))
        ops: list[Operation] = [Put(path, self._before(path, revision), expect=None) for path in gone]
        pages = [p for p in gone if (k := _kind(name, p)) is not None and k[0] == "page"]
        attachments = sum(1 for p in gone if (k := _kind(name, p)) is not None and k[0] == "attachment")
        change = self._change("restore_namespace", f"{name} from {revision[:12]}")
        try:
            self._store(ops, change)
        except Conflict:
            raise Conflict(
                f"some files of namespace {name!r} exist again; nothing was restored: delete them or restore pages one by one",
                field="name",
                hash="",
            ) from None
        by_path = {op.path: op for op in ops if isinstance(op, Put)}
        for path in pages:
            data = by_path[path].data
            page = replace(Page.from_bytes(path[:-3], data), hash=blob_hash(data))
            self.host.notify("page_saved", page=page, previous=None, change=change)
        return {"name": name, "pages": len(pages), "attachments": attachments, "restored_from": revision}
