"""The host: config, plugins, the chosen storage and search backends, and the tool registry.

One Host per app (``app.extensions["hostcore"]``). It owns every ``register`` callable handed to
contribution hooks, so it validates contributions and rejects duplicate names at start-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from hostcore.domain.principal import Principal
from hostcore.errors import StartupError
from hostcore.host.uploads import UploadTickets
from hostcore.indexes.extraction import TextExtraction
from hostcore.indexes.link_graph import LinkGraph
from hostcore.seams.extract import Extractor
from hostcore.seams.resources import Prompt, Resource
from hostcore.seams.search import SearchBackend
from hostcore.seams.storage import Storage
from hostcore.seams.tool import Tool

if TYPE_CHECKING:
    from hostcore.service.wiki import Wiki

log = logging.getLogger("hostcore")


def _registry(kind: str, base: type[Storage | SearchBackend], table: dict[str, Any]) -> Callable[[Any], None]:
    def register(cls: Any) -> None:
        if not (isinstance(cls, type) and issubclass(cls, base)) or not getattr(cls, "name", ""):
            raise StartupError(f"register_{kind}_backends: {cls!r} must be a {base.__name__} subclass with a name")
        if cls.name in table:
            raise StartupError(
                f"two plugins register a {kind} backend named {cls.name!r} ({table[cls.name].__module__} and "
                f"{cls.__module__}); remove one from PLUGINS"
            )
        table[cls.name] = cls

    return register


class Host:
    """Everything a request needs that outlives it. Build with :func:`hostcore.app.create_app`."""

    def __init__(
        self,
        config: dict[str, Any],
        instance_path: Path,
        pm: pluggy.PluginManager,
        service: Callable[[Host, Principal], Wiki],
    ) -> None:
        self.config = config
        self.service = service  # the service layer's class, handed down by create_app: no import upwards
        self.instance_path = Path(instance_path)
        self.pm = pm
        self.tools: dict[str, Tool] = {}
        self.state: dict[str, Any] = {}  # per-host state of plugins, keyed by plugin name
        self.storage_backends: dict[str, type[Storage]] = {}
        self.search_backends: dict[str, type[SearchBackend]] = {}
        pm.hook.register_storage_backends(register=_registry("storage", Storage, self.storage_backends))
        pm.hook.register_search_backends(register=_registry("search", SearchBackend, self.search_backends))
        self.extractors: list[Extractor] = []
        pm.hook.register_extractors(register=self._register_extractor)
        self.storage: Storage = self._make_backend("STORAGE", "storage", self.storage_backends, "wiki")
        self.search: SearchBackend | None = (
            self._make_backend("SEARCH", "search", self.search_backends, "search") if self.config["SEARCH"] else None
        )
        self.links = LinkGraph(self.instance_path / "links.sqlite")
        self.uploads = UploadTickets(self.instance_path / "uploads.sqlite")
        self.extraction = TextExtraction(
            self.instance_path / "extracted.sqlite",
            self.extractors,
            self.config["EXTRACT_TIMEOUT_SECONDS"],
            self.config["EXTRACT_MEMORY_BYTES"],
        )
        self.resources: dict[str, Resource] = {}
        self.prompts: dict[str, Prompt] = {}
        pm.hook.register_tools(register=self._register_tool, host=self)
        pm.hook.register_resources(register=self._named("resource", Resource, self.resources, "uri"), host=self)
        pm.hook.register_prompts(register=self._named("prompt", Prompt, self.prompts, "name"), host=self)

    def _register_extractor(self, cls: Any) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Extractor)) or not cls.name or not cls.media_types:
            raise StartupError(f"register_extractors: {cls!r} must be an Extractor subclass with a name and media_types")
        if any(type(e).name == cls.name for e in self.extractors):
            raise StartupError(f"two plugins register an extractor named {cls.name!r}; remove one from PLUGINS")
        self.extractors.append(cls())

    def plugin_config(self, name: str) -> dict[str, Any]:
        return dict(self.config.get("PLUGIN_CONFIG", {}).get(name, {}))

    def _register_tool(self, fn: Tool | Callable[..., Any]) -> None:
        if not isinstance(fn, Tool):
            raise StartupError(f"register_tools: {fn!r} is not a tool; decorate it with @hostcore.tool")
        if fn.name in self.tools:
            raise StartupError(
                f"two plugins register a tool named {fn.name!r} ({self.tools[fn.name].fn.__module__} and "
                f"{fn.fn.__module__}); rename one (@tool(name=...)) or remove a plugin from PLUGINS"
            )
        self.tools[fn.name] = fn

    @staticmethod
    def _named(kind: str, cls: type, table: dict[str, Any], key: str) -> Callable[[Any], None]:
        def register(obj: Any) -> None:
            if not isinstance(obj, cls):
                raise StartupError(f"register_{kind}s: {obj!r} is not a {kind}; decorate it with @hostcore.{kind}")
            if getattr(obj, key) in table:
                raise StartupError(f"two plugins register a {kind} {getattr(obj, key)!r}; remove one from PLUGINS")
            table[getattr(obj, key)] = obj

        return register

    def _make_backend(self, setting: str, kind: str, table: dict[str, type], folder: str) -> Any:
        """The backend the ``setting`` names, built on its folder (``path`` in its plugin config)."""
        name = self.config[setting]
        cls = table.get(name)
        if cls is None:
            known = ", ".join(sorted(table)) or "none"
            raise StartupError(f"{setting}: no {kind} backend named {name!r} is loaded (loaded: {known}); add its plugin to PLUGINS")
        settings = self.plugin_config(name)
        return cls(self.instance_path / settings.pop("path", folder), settings)

    def start(self) -> None:
        """Run every plugin's ``startup`` hook (config checks, catch-up)."""
        self.pm.hook.startup(host=self)

    def wiki(self, principal: Principal) -> Wiki:
        """The service layer bound to ``principal`` (``hostcore.SYSTEM`` for a CLI command or a job)."""
        return self.service(self, principal)

    def notify(self, event: str, **kwargs: Any) -> None:
        """Call an event hook; a failing listener is logged and never fails the change."""
        try:
            getattr(self.pm.hook, event)(host=self, **kwargs)
        except Exception:
            log.exception("a %s listener failed; the change itself is stored", event)

    def close(self) -> None:
        self.links.close()
        self.uploads.close()
        self.extraction.close()
        self.storage.close()
        if self.search is not None:
            self.search.close()
