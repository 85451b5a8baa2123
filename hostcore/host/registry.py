"""One registry for everything plugins contribute by name through a ``register_*`` hook.

Storage and search backends, embedders, extractors, tools, resources, prompts and services: the
host gathers each kind into a :class:`Registry`, which checks the kind of what it is given and
refuses a second item of the same name, naming both plugins, so a wrong or clashing plugin stops
start-up with the fix instead of misbehaving later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, Generic, TypeVar

import pluggy

from hostcore.errors import StartupError

T = TypeVar("T")


def plugin_label(pm: pluggy.PluginManager, plugin: object) -> str:
    """The name a person knows ``plugin`` by: its name in PLUGINS (or its module's); an object
    registered without a name (pluggy numbers it) by its class."""
    name = pm.get_name(plugin) or ""
    if name and not name.isdigit():
        return name
    return getattr(plugin, "__name__", None) or type(plugin).__qualname__


class Registry(Mapping[str, T], Generic[T]):
    """Name -> item of one kind, in the order the plugins registered them.

    ``make(*given)`` turns what a plugin passes to ``register`` into an item (by default the one
    thing given); ``problem(item)`` says what is wrong with one that is not of the kind, None when
    it is (else StartupError: ``<hook>: <problem>``); ``name_of(item)`` gives its name; ``fix``
    ends the message about two items of one name. :meth:`collect` asks the plugins.
    """

    def __init__(
        self,
        kind: str,
        hook: str,
        *,
        problem: Callable[[T], str | None],
        name_of: Callable[[T], str],
        fix: str = "remove one from PLUGINS",
        make: Callable[..., T] | None = None,
    ) -> None:
        self.kind, self.hook, self.fix = kind, hook, fix
        self._problem, self._name_of = problem, name_of
        self._make: Callable[..., T] = make or (lambda item: item)
        self._items: dict[str, T] = {}
        self._plugins: dict[str, str] = {}  # item name -> the plugin that registered it

    def collect(self, pm: pluggy.PluginManager, **kwargs: Any) -> Registry[T]:
        """Call the hook of every plugin that implements it, in pluggy's order, each with a
        ``register`` that knows which plugin it is (so a clash names both); returns self."""
        caller = getattr(pm.hook, self.hook)
        everyone = [impl.plugin for impl in caller.get_hookimpls()]
        for impl in reversed(caller.get_hookimpls()):
            only = pm.subset_hook_caller(self.hook, remove_plugins=[p for p in everyone if p is not impl.plugin])
            only(register=partial(self.add, plugin=plugin_label(pm, impl.plugin)), **kwargs)
        return self

    def add(self, *given: Any, plugin: str = "") -> None:
        """Register what ``plugin`` gave. Raises StartupError for the wrong kind or a taken name."""
        item = self._make(*given)
        problem = self._problem(item)
        if problem is not None:
            raise StartupError(f"{self.hook}: {problem}")
        name = self._name_of(item)
        if name in self._items:
            article = "an" if self.kind[0] in "aeiou" else "a"
            raise StartupError(
                f"two plugins register {article} {self.kind} named {name!r} ({self._plugins[name]} and {plugin}); {self.fix}"
            )
        self._items[name] = item
        self._plugins[name] = plugin

    def plugin(self, name: str) -> str:
        """The plugin that registered the item ``name``."""
        return self._plugins[name]

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._items)})"


def subclasses(kind: str, hook: str, base: type, *, also: str = "", must: str = "") -> Registry[Any]:
    """A registry of subclasses of ``base`` by their ``name`` (backends, embedders, extractors);
    ``also``: another class attribute they must set (an extractor's ``media_types``)."""

    def problem(cls: Any) -> str | None:
        fits = isinstance(cls, type) and issubclass(cls, base) and bool(getattr(cls, "name", ""))
        if fits and also:
            fits = bool(getattr(cls, also, None))
        return None if fits else f"{cls!r} {must or f'must be a subclass of {base.__name__} with a name'}"

    return Registry(kind, hook, problem=problem, name_of=lambda cls: cls.name)


def instances(kind: str, hook: str, cls: type[T], name_of: Callable[[T], str], *, fix: str = "remove one from PLUGINS") -> Registry[T]:
    """A registry of objects made with ``@hostcore.<kind>`` (tools, resources, prompts)."""

    def problem(obj: Any) -> str | None:
        return None if isinstance(obj, cls) else f"{obj!r} is not a {kind}; decorate it with @hostcore.{kind}"

    return Registry(kind, hook, problem=problem, name_of=name_of, fix=fix)
