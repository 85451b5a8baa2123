"""What a plugin may use of the host: :class:`PluginHost`, the one documented object every hook
that takes ``host`` receives (as datasette hands its plugins one ``datasette`` object).

The host (:class:`hostcore.host.host.Host`) implements it and has more, for the core; a plugin
annotates ``host: PluginHost`` and uses nothing else, so the core may change the rest.

Two typed keys come with it:

- :class:`Slot`: a plugin's own state on each host (a store, a cache, a background thread), made
  on first use: ``host.slot(STORE)``, instead of string keys in a shared dictionary.
- :class:`ServiceKey`: how plugins meet. A plugin that offers something to others registers an
  object under a key naming it and its Protocol (the ``register_services`` hook); another looks
  it up with ``host.service(KEY)`` and gets it typed, or None when no loaded plugin provides it.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, overload

import pluggy
from typing_extensions import get_protocol_members, is_protocol

from hostcore.seams.shared import SharedState

if TYPE_CHECKING:
    import redis

    from hostcore.domain.principal import Principal
    from hostcore.seams.index import DerivedIndex
    from hostcore.service.wiki import Wiki

T = TypeVar("T")


class Slot(Generic[T]):
    """A typed place for one plugin's state on each host, made by ``make(host)`` the first time
    :meth:`PluginHost.slot` is asked for it (once per host, whichever thread asks first). ``close``,
    when given, is called with it when the host closes (:meth:`PluginHost.on_close`): how a
    background thread is stopped. The slot object itself is the key: two plugins never collide,
    whatever their ``name`` (which only names it in messages)."""

    __slots__ = ("close", "make", "name")

    def __init__(self, name: str, make: Callable[[PluginHost], T], close: Callable[[T], None] | None = None) -> None:
        self.name = name
        self.make = make
        self.close = close

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


class ServiceKey(Generic[T]):
    """The name of a service one plugin provides and others use, and its Protocol: what a user
    of it may call. Declare it beside the Protocol, in the providing plugin (its users import
    both, and declare the plugin's distribution in their ``install_requires``); a plugin that uses
    a service it does not depend on declares a key of its own, with a Protocol of just what it
    calls: the host checks the object has every member of the Protocol asked with.

    Write the type: ``TOKENS: ServiceKey[TokenService] = ServiceKey("tokens", TokenService)``.
    """

    __slots__ = ("members", "name", "protocol")

    def __init__(self, name: str, protocol: type) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a service key needs a name, not {name!r}")
        if not is_protocol(protocol):
            raise TypeError(f"service {name!r}: {protocol!r} is not a Protocol; declare class X(typing.Protocol)")
        self.name = name
        self.protocol = protocol
        self.members = frozenset(m for m in get_protocol_members(protocol) if not m.startswith("_"))

    def missing(self, service: object) -> list[str]:
        """The members of the Protocol that ``service`` lacks, sorted (none: it fits)."""
        return sorted(m for m in self.members if not hasattr(service, m))

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r}, {self.protocol.__name__})"


class RateLimits(Protocol):
    """The host's rate limits (``RATE_LIMITS``), for a plugin that counts something of its own."""

    def wait(self, kind: str, who: str) -> int:
        """Count one ``kind`` for ``who``: 0 when within the limit, else the whole seconds to wait."""
        ...

    def describe(self, kind: str) -> str:
        """The limit of ``kind`` as an operator wrote it (``20/hour``)."""
        ...


class DerivedIndexes(Protocol):
    """The host's derived indexes (``host.indexes``): the core's and those plugins register."""

    def current(self, name: str) -> DerivedIndex:
        """The index ``name``, caught up with storage first (a read never answers from an index
        older than the writes acknowledged before it). Raises Unavailable while it is rebuilt
        after damage (an ``eventual`` index answers from what it holds instead)."""
        ...

    def wait(self) -> None:
        """Wait until every index reflects every change so far and its background work is done,
        the passage index's (attachments' text, for ``search_attachments``) included: tests, benchmarks."""
        ...


class PluginHost(Protocol):
    """Everything a plugin may use of the host; hooks that take ``host`` receive one.

    Attributes: ``config`` (the settings, read only), ``instance_path`` (the instance folder),
    ``pm`` (the plugin manager: ask another hook with ``host.pm.hook.<name>(...)``, by keyword),
    ``shared`` (:class:`~hostcore.seams.shared.SharedState`: records every worker and host
    share), ``limiter`` (:class:`RateLimits`), ``indexes`` (:class:`DerivedIndexes`) and ``redis``
    (the client of ``REDIS_URL``, or None).
    """

    config: MutableMapping[str, Any]
    instance_path: Path
    pm: pluggy.PluginManager
    shared: SharedState
    limiter: RateLimits
    indexes: DerivedIndexes

    @property
    def redis(self) -> redis.Redis | None:
        """A client of ``REDIS_URL``, or None when it is not set."""
        ...

    def wiki(self, principal: Principal) -> Wiki:
        """The service layer acting as ``principal`` (``hostcore.SYSTEM`` in a command or job): read
        and change the wiki through it, never through storage, so every rule applies."""
        ...

    def plugin_config(self, name: str) -> dict[str, Any]:
        """A copy of the ``[PLUGIN_CONFIG.<name>]`` table (empty when absent); secrets resolved."""
        ...

    def on_close(self, fn: Callable[[], None]) -> None:
        """Have the host call ``fn`` when it closes, before the indexes and storage close (last
        registered, first called): how a plugin stops a thread of its own."""
        ...

    def slot(self, slot: Slot[T]) -> T:
        """The plugin state ``slot`` holds on this host, made by ``slot.make(host)`` on first use."""
        ...

    @overload
    def service(self, key: ServiceKey[T], *, required: Literal[True]) -> T: ...

    @overload
    def service(self, key: ServiceKey[T], *, required: bool = False) -> T | None: ...

    def service(self, key: ServiceKey[T], *, required: bool = False) -> T | None:
        """The service registered under ``key.name``, or None when no loaded plugin provides it
        (``required``: raise StartupError saying so). Raises StartupError when the registered
        object lacks a member of ``key.protocol`` (two plugins of versions that do not fit)."""
        ...


ServiceRegister = Callable[[ServiceKey[Any], object], None]
"""The ``register`` a ``register_services`` hook receives: ``register(KEY, service)``."""
