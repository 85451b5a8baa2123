"""The host: config, plugins, the chosen storage and search backends, and the registries.

One Host per app (``app.extensions["hostcore"]``). It composes: it gathers what plugins
contribute into registries (:mod:`hostcore.host.registry`: each validates and rejects duplicate
names at start-up) and builds the parts every request shares. Plugins see it as a
:class:`~hostcore.seams.host.PluginHost`, the part of it they may use.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

import pluggy

from hostcore.domain.principal import Principal
from hostcore.errors import DiskFull, StartupError, Unavailable
from hostcore.host.activity import ActivityLog, RedisActivityStore, SqliteActivityStore
from hostcore.host.config import is_secret, where
from hostcore.host.plugins import installed_plugins
from hostcore.host.ratelimits import RateLimiter
from hostcore.host.registry import Registry, instances, subclasses
from hostcore.host.shared import RedisShared, SqliteShared
from hostcore.host.uploads import UploadTickets
from hostcore.indexes.extraction import TextExtraction
from hostcore.indexes.indexer import Indexes
from hostcore.indexes.link_graph import LinkGraph
from hostcore.indexes.passages import PassageIndex
from hostcore.seams.embed import Embedder
from hostcore.seams.extract import Extractor
from hostcore.seams.host import PluginHost, ServiceKey, Slot
from hostcore.seams.resources import Prompt, Resource
from hostcore.seams.search import SearchBackend
from hostcore.seams.settings import Setting, settings_problems
from hostcore.seams.shared import Finding, SharedState
from hostcore.seams.storage import Storage, disk_full
from hostcore.seams.tool import Tool

if TYPE_CHECKING:
    import redis

    from hostcore.service.wiki import Wiki

log = logging.getLogger("hostcore")
EVENTS = ("storage_changed", "page_saved", "page_deleted", "page_moved")  # what notify() delivers, listener by listener
PATH_SETTING = Setting(str, None, "the backend's folder, relative to the instance folder")
T = TypeVar("T")
_ABSENT = object()


def register_backends(
    pm: pluggy.PluginManager,
) -> tuple[Registry[type[Storage]], Registry[type[SearchBackend]], Registry[type[Embedder]]]:
    """Name -> class of every storage backend, search backend and embedder the plugins register."""
    return (
        subclasses("storage backend", "register_storage_backends", Storage).collect(pm),
        subclasses("search backend", "register_search_backends", SearchBackend).collect(pm),
        subclasses("embedder", "register_embedders", Embedder).collect(pm),
    )


def service_registry() -> Registry[tuple[ServiceKey[Any], object]]:
    """The services plugins offer each other (``register_services``): key name -> (key, object)."""

    def problem(entry: tuple[Any, object]) -> str | None:
        key, service = entry
        if not isinstance(key, ServiceKey):
            return f"{key!r} is not a hostcore.ServiceKey; call register(KEY, service) with KEY = ServiceKey(name, Protocol)"
        missing = key.missing(service)
        return f"the {key.name!r} service {service!r} lacks {', '.join(missing)} of {key.protocol.__name__}" if missing else None

    return Registry("service", "register_services", problem=problem, name_of=lambda entry: entry[0].name,
                    make=lambda key, service: (key, service))  # fmt: skip


def backend_problems(
    config: Mapping[str, Any],
    storage: Mapping[str, type[Storage]],
    search: Mapping[str, type[SearchBackend]],
    embedders: Mapping[str, type[Embedder]] | None = None,
) -> list[str]:
    """Every problem with ``STORAGE``, ``SEARCH``, ``EMBEDDER`` and the ``PLUGIN_CONFIG`` tables.

    A backend's table is named after the backend (the name ``STORAGE``, ``SEARCH`` or
    ``EMBEDDER`` takes), whatever its plugin is called, and is checked against the settings it
    declares (plus ``path``, its folder, which the host handles); any other table must name a
    plugin in ``PLUGINS``, which checks its own table in ``startup``.
    """
    problems = []
    listed = config.get("PLUGINS")
    plugins: list[Any] = listed if isinstance(listed, list) else []
    kinds: tuple[tuple[str, str, Mapping[str, type]], ...] = (
        ("STORAGE", "storage backend", storage), ("SEARCH", "search backend", search), ("EMBEDDER", "embedder", embedders or {})
    )
    for setting, kind, table in kinds:
        name = config.get(setting)
        if isinstance(name, str) and name and name not in table:
            if name in installed_plugins() and name not in plugins:
                fix = f"add {name!r} to PLUGINS"
            else:
                fix = "name a loaded one, or install the plugin that provides it and add it to PLUGINS"
            loaded = ", ".join(sorted(table)) or "none"
            problems.append(f"{where(config, setting)}: no {kind} named {name!r} is loaded (loaded: {loaded}); {fix}")
    tables = config.get("PLUGIN_CONFIG")
    for name, values in tables.items() if isinstance(tables, Mapping) else ():
        classes = (storage.get(name), search.get(name), (embedders or {}).get(name))
        declared = [cls.settings for cls in classes if cls is not None]
        if not isinstance(values, Mapping):
            continue  # config.problems_in named it
        if not declared:
            if isinstance(listed, list) and name not in plugins:  # a PLUGINS that is no list is named already
                problems.append(f"{where(config, 'PLUGIN_CONFIG', name)}: {_nobody(name, storage, search, embedders or {})}")
            continue
        spec = {"path": PATH_SETTING}
        for settings in declared:
            spec.update(settings)
        given = {key: value for key, value in values.items() if not is_secret(value)}
        named = partial(where, config, "PLUGIN_CONFIG", name)
        problems += settings_problems(spec, given, named, f"the {name} backend")
    return problems


def _nobody(name: str, *backends: Mapping[str, type]) -> str:
    """Why a ``PLUGIN_CONFIG`` table named ``name`` belongs to no plugin and no backend, and the fix."""
    if name in installed_plugins():
        return f"plugin {name!r} is not in PLUGINS; add it or remove this table"
    loaded = ", ".join(sorted({backend for table in backends for backend in table})) or "none"
    return (
        f"no plugin in PLUGINS and no loaded backend is named {name!r} (backends: {loaded}); name the table after "
        "its plugin, or after its backend (the name STORAGE, SEARCH or EMBEDDER takes), or remove it"
    )


def redis_client(url: str) -> redis.Redis:
    """A Redis client of ``url`` whose commands fail at once when Redis is down: one try, no
    back-off (redis-py's default retries for seconds), 1 s to connect or answer."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1, retry=Retry(NoBackoff(), 0))


class Host(PluginHost):
    """Everything a request needs that outlives it. Build with :func:`hostcore.app.create_app`.

    What plugins may use is :class:`~hostcore.seams.host.PluginHost` (documented in
    docs/architecture.md); the rest is the core's.
    """

    config: dict[str, Any]
    limiter: RateLimiter
    indexes: Indexes

    def __init__(
        self,
        config: dict[str, Any],
        instance_path: Path,
        pm: pluggy.PluginManager,
        service: Callable[[Host, Principal], Wiki],
    ) -> None:
        self.config = config
        self.service_layer = service  # the service layer's class, handed down by create_app: no import upwards
        self.instance_path = Path(instance_path)
        self.pm = pm
        self.state: dict[str, Any] = {}  # the core's own per-host state; a plugin's is in a Slot
        self._slots: dict[Slot[Any], Any] = {}
        self._slots_lock = threading.RLock()  # a slot's make may ask for another slot
        self._closers: list[Callable[[], None]] = []  # see on_close
        for event in EVENTS:
            for impl in getattr(pm.hook, event).get_hookimpls():
                if impl.wrapper or impl.hookwrapper:
                    raise StartupError(f"plugin {impl.plugin_name}: {event} cannot be a wrapper; events reach each listener on its own")
        self.storage_backends, self.search_backends, self.embedders = register_backends(pm)
        problems = backend_problems(config, self.storage_backends, self.search_backends, self.embedders)
        if problems:
            raise StartupError("; ".join(problems), problems=problems)
        must = "must be an Extractor subclass with a name and media_types"
        extractors = subclasses("extractor", "register_extractors", Extractor, also="media_types", must=must).collect(pm)
        self.extractors: list[Extractor] = [cls() for cls in extractors.values()]  # asked in plugin order
        self.storage: Storage = self._make_backend(self.storage_backends[config["STORAGE"]], "wiki")
        self.search: SearchBackend | None = (
            self._make_backend(self.search_backends[config["SEARCH"]], "search") if config["SEARCH"] else None
        )
        self.links = LinkGraph(self.instance_path / "links.sqlite")
        self.extraction = TextExtraction(
            self.instance_path / "extracted.sqlite",
            self.extractors,
            self.config["EXTRACT_TIMEOUT_SECONDS"],
            self.config["EXTRACT_MEMORY_BYTES"],
        )
        if self.redis is not None and "PUBLIC_URL" not in getattr(config, "written", {"PUBLIC_URL"}):
            log.warning(
                "REDIS_URL is set but PUBLIC_URL is not: this host names the wiki %s in Redis (derived from its bind "
                "address); write the same PUBLIC_URL (the load balancer's URL) in hostcore.toml on every host, or "
                "hosts and CLI commands will not share tokens, sessions and sign-ins",
                config["PUBLIC_URL"],
            )
        self.shared: SharedState = (
            RedisShared(
                self.redis, prefix=f"hostcore:{config['PUBLIC_URL']}", require_persistence=config["REDIS_REQUIRE_PERSISTENCE"]
            )
            if self.redis is not None
            else SqliteShared(self.instance_path / "shared.sqlite")
        )
        self.uploads = UploadTickets(self.shared)
        prefix = f"hostcore:{config['PUBLIC_URL']}"
        self.activity = ActivityLog(
            RedisActivityStore(self.redis, prefix) if self.redis is not None else SqliteActivityStore(self.instance_path / "activity.sqlite"),
            days=config["ACTIVITY_DAYS"], keep=config["ACTIVITY_MAX_RECORDS"], enabled=config["ACTIVITY_LOG"],
        )  # fmt: skip
        name = config.get("EMBEDDER")
        embedder = self.embedders[name](self.plugin_config(name)) if name else None  # None: attachments by keyword only
        if embedder is not None:
            embedder.folder = self.instance_path
        self.passages = PassageIndex(self, self.instance_path / "passages.sqlite", embedder)
        self.indexes = Indexes(
            self.storage, self.instance_path, links=self.links, search=self.search, passages=self.passages,
            disk_full=self.disk_full, every=config.get("CATCH_UP_SECONDS") or 0.0,
        )  # fmt: skip
        pm.hook.register_derived_indexes(register=self.indexes.register, host=self)
        self.limiter = RateLimiter(config["RATE_LIMITS"], self.redis, prefix=f"hostcore:{config['PUBLIC_URL']}")
        self.services = service_registry().collect(pm, host=self)
        self._fitting: dict[ServiceKey[Any], object] = {}  # see service
        rename = "rename one (@tool(name=...)) or remove a plugin from PLUGINS"
        self.tools = instances("tool", "register_tools", Tool, lambda t: t.name, fix=rename).collect(pm, host=self)
        self.resources = instances("resource", "register_resources", Resource, lambda r: r.uri).collect(pm, host=self)
        self.prompts = instances("prompt", "register_prompts", Prompt, lambda p: p.name).collect(pm, host=self)

    def plugin_config(self, name: str) -> dict[str, Any]:
        return dict(self.config.get("PLUGIN_CONFIG", {}).get(name, {}))

    def slot(self, slot: Slot[T]) -> T:
        value = self._slots.get(slot, _ABSENT)
        if value is _ABSENT:
            with self._slots_lock:
                value = self._slots.get(slot, _ABSENT)
                if value is _ABSENT:
                    value = self._slots[slot] = slot.make(self)
                    if slot.close is not None:
                        self.on_close(partial(slot.close, value))
        return cast(T, value)

    @overload
    def service(self, key: ServiceKey[T], *, required: Literal[True]) -> T: ...

    @overload
    def service(self, key: ServiceKey[T], *, required: bool = False) -> T | None: ...

    def service(self, key: ServiceKey[T], *, required: bool = False) -> T | None:
        found = self._fitting.get(key)
        if found is None:
            entry = self.services.get(key.name)
            if entry is None:
                if required:
                    raise StartupError(
                        f"no loaded plugin provides the {key.name!r} service ({key.protocol.__name__}); "
                        "add the plugin that provides it to PLUGINS"
                    )
                return None
            missing = key.missing(entry[1])
            if missing:
                raise StartupError(
                    f"the {key.name!r} service of plugin {self.services.plugin(key.name)} lacks {', '.join(missing)}, "
                    f"which {key.protocol.__name__} needs; install versions of the two plugins that fit"
                )
            found = self._fitting[key] = entry[1]
        return cast(T, found)

    def _make_backend(self, cls: type[Storage] | type[SearchBackend], folder: str) -> Any:
        """A backend built on its folder (``path`` in its plugin config) with the rest of its config."""
        settings = self.plugin_config(cls.name)
        return cls(self.instance_path / settings.pop("path", folder), settings)

    @property
    def folders(self) -> list[Path]:
        """The folders holding the wiki's files: the instance folder, and the storage's and the
        search index's (inside it unless their ``path`` puts them elsewhere)."""
        return [self.instance_path, self.storage.root] + ([self.search.root] if self.search is not None else [])

    def disk_full(self) -> bool:
        """True when a disk holding the wiki's files (:attr:`folders`) has less than
        ``MIN_FREE_BYTES`` free: room kept so a change's index and history updates never fail
        after the change itself landed."""
        return any(disk_full(folder, self.config["MIN_FREE_BYTES"]) for folder in self.folders)

    def require_space(self) -> None:
        """Raise DiskFull (nothing is written) when :meth:`disk_full`."""
        if self.disk_full():
            raise DiskFull()

    @cached_property
    def redis(self) -> redis.Redis | None:
        """A client of ``REDIS_URL``, where state shared by every worker and host lives, or None
        when it is not set. Commands fail at once (one try, 1 s timeouts) when Redis is down."""
        return redis_client(self.config["REDIS_URL"]) if self.config["REDIS_URL"] else None

    def spend(self, kind: str, principal: Principal) -> int:
        """Count one ``kind`` ("requests", "writes") for ``principal`` against RATE_LIMITS: 0
        when within its limit, else the whole seconds to wait. A principal whose
        ``rate_limited`` is False (``SYSTEM``: the CLI and jobs) is never counted."""
        return self.limiter.wait(kind, principal.name) if principal.rate_limited else 0

    def start(self) -> None:
        """Check the shared state, then run every plugin's ``startup`` hook (config checks, catch-up).

        Raises StartupError for a Redis that would lose accounts and tokens at a restart (see
        ``REDIS_REQUIRE_PERSISTENCE``). A damaged ``shared.sqlite`` is logged, and the wiki starts:
        public namespaces are served while signing in and tokens say what is wrong.
        """
        finding = self.check_shared()
        if finding.problem:
            log.error("%s", finding.problem)
        self.pm.hook.startup(host=self)

    def check_shared(self) -> Finding:
        """What :meth:`SharedState.check` finds; raises StartupError when the wiki must not start on it."""
        finding = self.shared.check()
        if finding.refuse:
            raise StartupError(f"{where(self.config, 'REDIS_URL')}: {finding.problem}")
        return finding

    def wiki(self, principal: Principal) -> Wiki:
        """The service layer bound to ``principal`` (``hostcore.SYSTEM`` for a CLI command or a job)."""
        if not isinstance(principal, Principal):
            raise TypeError(f"host.wiki() takes a Principal, not {principal!r}; use hostcore.SYSTEM in a command or job")
        return self.service_layer(self, principal)

    def notify(self, event: str, **kwargs: Any) -> None:
        """Tell every listener of ``event``, each on its own: one that raises is logged with its
        plugin's name and neither stops the others nor fails the change (already stored). An
        ``Unavailable`` (storage or a service out for a moment) is a warning line, not a traceback:
        nothing is wrong with the plugin, and derived state catches up later.
        """
        kwargs["host"] = self
        # pluggy calls the last registered first (tryfirst/trylast respected): keep its order.
        for impl in reversed(getattr(self.pm.hook, event).get_hookimpls()):
            try:
                impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            except Unavailable as exc:
                log.warning("plugin %s: its %s listener was skipped: %s; the change itself is stored", impl.plugin_name, event, exc)
            except Exception:
                log.exception("plugin %s: its %s listener failed; the change itself is stored", impl.plugin_name, event)

    def on_close(self, fn: Callable[[], None]) -> None:
        """Have :meth:`close` call ``fn`` first, before the indexes and storage close: how a plugin
        stops a background thread of its own (last registered, first called)."""
        self._closers.append(fn)

    def close(self) -> None:
        while self._closers:
            fn = self._closers.pop()
            try:
                fn()
            except Exception:
                log.exception("a plugin's close callback (%s) failed", getattr(fn, "__qualname__", fn))
        self.indexes.close()  # the background catch-up done and stopped, then every derived index
        self.uploads.close()
        self.activity.close()
        self.extraction.close()
        self.shared.close()
        if self.redis is not None:
            self.redis.close()
        self.storage.close()
