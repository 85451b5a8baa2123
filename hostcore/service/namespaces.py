"""Namespaces: list, read and save their settings; mixed into :class:`~hostcore.service.wiki.Wiki`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hostcore.domain import namespaces as ns_settings
from hostcore.domain.pages import check_namespace, namespace_path
from hostcore.errors import Conflict, NotFound, TooLarge, Unavailable
from hostcore.seams.storage import Put

if TYPE_CHECKING:
    from hostcore.service.wiki import Wiki

log = logging.getLogger("hostcore")
_reported: set[str] = set()  # each unreadable settings file is logged once per process, not at every listing


class NamespacesMixin:
    """list_namespaces, read_namespace, save_namespace."""

    def _namespace_names(self: Wiki) -> list[str]:
        return [name for name in self.storage.folders() if self.storage.exists(namespace_path(name))]

    def _namespace_fields(self: Wiki, name: str, wanted: tuple[str, ...]) -> dict[str, Any]:
        """The ``wanted`` plain settings of ``name``; none (and a log line) when its file is missing, too large or broken."""
        try:
            return ns_settings.fields(self.storage.read(namespace_path(name)), name, wanted)
        except NotFound:
            return {}
        except (TooLarge, Unavailable) as exc:
            if exc.message not in _reported:
                _reported.add(exc.message)
                log.warning("namespace settings skipped, defaults used: %s", exc.message)
            return {}

    def list_namespaces(self: Wiki) -> dict[str, Any]:
        self.principal.require("read")
        counts = self.host.links.page_counts()
        out = []
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

    def read_namespace(self: Wiki, name: str) -> dict[str, Any]:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")
        try:
            data, digest = self.storage.read_with_hash(namespace_path(name))
        except NotFound:
            raise NotFound(f"no namespace {name!r}; list_namespaces shows those that exist", field="name") from None
        return {"name": name, "hash": digest, **ns_settings.complete(ns_settings.parse(data, name))}

    def save_namespace(self: Wiki, name: str, basehash: str | None = None, **fields: Any) -> dict[str, Any]:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")
        given = {k: v for k, v in fields.items() if v is not None}
        ns_settings.validate(given, name)
        path = namespace_path(name)
        if basehash is None:
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
            result = self.storage.apply([Put(path, data, expect=basehash)], change)
        except Conflict as exc:
            if basehash is None:
                raise Conflict(
                    f"namespace {name!r} exists already; read it with read_namespace and pass its hash as basehash",
                    field="name",
                    hash=exc.data.get("hash", ""),
                ) from None
            raise Conflict("is stale: the settings changed meanwhile; re-read and retry", field="basehash", hash=exc.data.get("hash", "")) from None
        return {"name": name, "hash": result[path], "created": basehash is None}
