"""Namespaces: list, read and save their settings; mixed into :class:`~hostcore.service.wiki.Wiki`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from typing_extensions import TypedDict

from hostcore.domain import namespaces as ns_settings
from hostcore.domain.attachments import image_path, sniff
from hostcore.domain.pages import check_namespace, check_portable, fold, namespace_path, slugify
from hostcore.errors import Conflict, NotFound, ValidationError
from hostcore.seams.storage import Put
from hostcore.service.base import WikiBase


class NamespaceEntry(TypedDict):
    name: str
    title: str
    description: str
    pages: int
    public: bool


class NamespaceList(TypedDict):
    namespaces: list[NamespaceEntry]


class NewTemplate(TypedDict, total=False):
    template: str
    slug: str


class ExportSettings(TypedDict, total=False):
    base_url: str
    sitemap: bool
    robots_allow: bool
    links: str


class NamespaceSettings(TypedDict, total=False):
    name: str
    hash: str
    title: str
    description: str
    public: bool
    review: bool
    image: str
    skin: str
    palette: str
    index: str
    guide: str
    inbox: str
    widgets: list[str]
    tree: list[str]
    new: NewTemplate
    export: ExportSettings


class NewPage(TypedDict):
    slug: str
    template: str
    pattern: str  # new.slug as stored, placeholders unfilled


class NamespaceSaved(TypedDict):
    name: str
    hash: str
    created: bool


class NamespacesMixin(WikiBase):
    """list_namespaces, read_namespace, save_namespace."""

    def list_namespaces(self) -> NamespaceList:
        self.principal.require("read")
        counts = self.host.indexes.link_graph().page_counts()
        out: list[NamespaceEntry] = []
        for name in self._namespace_names():
            if not self.principal.can_access(name):
                continue
            settings = self._namespace_fields(name, ns_settings.LISTED)
            title, description = settings.get("title"), settings.get("description")
            out.append(
                {
                    "name": name,
                    "title": title if isinstance(title, str) else "",
                    "description": description if isinstance(description, str) else "",
                    "pages": counts.get(name, 0),
                    "public": settings.get("public") is True,
                }
            )
        return {"namespaces": out}

    def read_namespace(self, name: str) -> NamespaceSettings:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")
        try:
            data, digest = self.storage.read_with_hash(namespace_path(name))
        except NotFound:
            raise NotFound(f"no namespace {name!r}; list_namespaces shows those that exist", field="name") from None
        # the settings were validated when saved and are completed with defaults: they have this shape
        return cast(NamespaceSettings, {"name": name, "hash": digest, **ns_settings.complete(ns_settings.parse(data, name))})

    def new_page(self, namespace: str, title: str = "", when: datetime | None = None) -> NewPage:
        """Where a new page of ``namespace`` goes and what it starts as, from the namespace's ``new``
        setting: ``slug`` is ``new.slug`` with its placeholders filled in for ``when`` (default: now,
        the server's local time) and ``title``, or ``namespace/<title as a slug>`` without it (empty
        when both are empty); ``template`` is ``new.template``. Needs write scope and access to the
        namespace. ``pattern`` is ``new.slug`` itself. Raises NotFound for a namespace that does not
        exist, ValidationError for a placeholder ``new.slug`` does not know."""
        self.principal.require("write")
        check_namespace(namespace, "namespace")
        self.principal.require_namespace(namespace, "namespace")
        try:
            settings = ns_settings.parse(self.storage.read(namespace_path(namespace)), namespace)
        except NotFound:
            raise NotFound(f"no namespace {namespace!r}; list_namespaces shows those that exist", field="namespace") from None
        new = settings.get("new")
        new = new if isinstance(new, dict) else {}
        pattern, template = str(new.get("slug") or ""), str(new.get("template") or "")
        if pattern:
            rel = ns_settings.fill_new_slug(pattern, when or datetime.now().astimezone(), title)
        else:
            rel = slugify(title)
        return {"slug": f"{namespace}/{rel}" if rel else "", "template": template, "pattern": pattern}

    def _check_new_namespace(self, name: str) -> None:
        """Refuse a new namespace name a clone elsewhere could not hold: a device name or trailing
        dot, or a name that differs only by case (or Unicode normalisation) from a top-level
        folder that exists. Lists only the top folder, never the pages."""
        check_portable(name, "name")
        for existing in self.storage.folders():
            if existing != name and fold(existing) == fold(name):
                raise ValidationError(
                    f"{name} differs only by case from the existing namespace {existing}; use that namespace or pick another name",
                    field="name",
                )

    def _check_image(self, name: str, image: str) -> None:
        """The ``image`` setting must name a PNG or JPEG attachment stored in the namespace."""
        try:
            data = self.storage.read(image_path(name, image))
        except NotFound:
            raise ValidationError(
                f"{image!r} is not an attachment in {name!r}; upload it to page {name}/{image.rsplit('/', 1)[0]} with "
                "upload_attachment first",
                field="image",
            ) from None
        if sniff(data, image) not in ("image/png", "image/jpeg"):
            raise ValidationError(f"{image!r} is not a PNG or JPEG file; point image at one", field="image")

    def save_namespace(self, name: str, basehash: str | None = None, **fields: Any) -> NamespaceSaved:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")
        given = {k: v for k, v in fields.items() if v is not None}
        ns_settings.validate(given, name)
        if given.get("image"):
            self._check_image(name, given["image"])
        path = namespace_path(name)
        if basehash is None:
            self._check_new_namespace(name)
            current: dict[str, Any] = {}
        else:
            try:
                data, digest = self.storage.read_with_hash(path)
            except NotFound:
                raise Conflict(f"namespace {name!r} does not exist; omit basehash to create it", field="basehash", hash="") from None
            if digest != basehash:
                raise Conflict("is stale: re-read with read_namespace and retry with its hash", field="basehash", hash=digest)
            current = ns_settings.parse(data, name)
        settings = ns_settings.merge(current, given)
        data = ns_settings.dump(settings, name)
        change = self._change("save_namespace", name)
        try:
            result = self._store([Put(path, data, expect=basehash)], change)
        except Conflict as exc:
            if basehash is None:
                raise Conflict(
                    f"namespace {name!r} exists already; read it with read_namespace and pass its hash as basehash",
                    field="name",
                    hash=exc.data.get("hash", ""),
                ) from None
            raise Conflict("is stale: the settings changed meanwhile; re-read and retry", field="basehash", hash=exc.data.get("hash", "")) from None
        return {"name": name, "hash": result[path] or "", "created": basehash is None}
