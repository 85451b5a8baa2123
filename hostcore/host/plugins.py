"""Building the plugin manager: one per app, loading only what the config names.

Built-in behaviour is itself a set of default plugins (the page tools, the search indexer), so
the core uses the same hooks a third-party plugin does. Installed plugins load only when
``PLUGINS`` names them (entry point group ``hostcore``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import pluggy

from hostcore.errors import StartupError
from hostcore.seams import hookspecs

DEFAULT_PLUGINS = (
    "hostcore.tools.pages", "hostcore.tools.namespaces", "hostcore.tools.links", "hostcore.tools.history",
    "hostcore.tools.search", "hostcore.tools.attachments", "hostcore.indexes.indexer",
    "hostcore.indexes.text_extractor", "hostcore.tools.documents", "hostcore.tools.sections", "hostcore.tools.changes",
    "hostcore.tools.assistants", "hostcore.tools.activity", "hostcore.tools.blame", "hostcore.tools.context",
    "hostcore.tools.change_requests", "hostcore.tools.undo", "hostcore.tools.comments", "hostcore.tools.packs",
)
ENTRY_POINT_GROUP = "hostcore"


DISTRIBUTIONS: dict[int, tuple[Any, metadata.Distribution | None]] = {}
"""id of a plugin loaded from an entry point -> (the plugin, its distribution), for :func:`describe`."""


@functools.cache
def _entry_points() -> tuple[metadata.EntryPoint, ...]:
    """Read once per process: scanning every installed distribution's metadata is the slowest
    part of loading the plugins, and what is installed does not change under a running process."""
    return tuple(metadata.entry_points(group=ENTRY_POINT_GROUP))


def installed_plugins() -> dict[str, metadata.EntryPoint]:
    """Name -> entry point of every installed hostcore plugin."""
    return {ep.name: ep for ep in _entry_points()}


def make_plugin_manager(
    names: Iterable[str], extra: Iterable[Any] = (), source: str = "PLUGINS", *, defaults: bool = True
) -> pluggy.PluginManager:
    """A PluginManager with the defaults (unless ``defaults`` is false: the CLI finding plugins'
    commands, which no default plugin has, need not import the tools), the named installed
    plugins and ``extra`` objects.

    Raises StartupError naming every unknown plugin name and hook implementation that matches no
    hook (see :func:`load_plugins`).
    """
    pm, problems = load_plugins(names, extra, source, defaults=defaults)
    if problems:
        raise StartupError("; ".join(problems), problems=problems)
    return pm


def load_plugins(
    names: Iterable[str], extra: Iterable[Any] = (), source: str = "PLUGINS", *, defaults: bool = True
) -> tuple[pluggy.PluginManager, list[str]]:
    """The plugin manager of every plugin that loads, and a problem for each that does not.

    A name with a dot is imported as a module (an unpackaged plugin); other names are looked up
    among installed entry points. ``source`` names where the list was written (``PLUGINS`` or
    ``HOSTCORE_PLUGINS``).
    """
    pm = pluggy.PluginManager("hostcore")
    pm.add_hookspecs(hookspecs)
    for module in DEFAULT_PLUGINS if defaults else ():
        pm.register(__import__(module, fromlist=["_"]), name=module)
    available = installed_plugins()
    problems = []
    for name in names:
        if pm.has_plugin(name):
            problems.append(f"{source}: {name!r} is listed twice; list each plugin once")
        elif "." in name:  # a module path: a plugin that is not packaged (site code, tests)
            try:
                pm.register(importlib.import_module(name), name=name)
            except ImportError as exc:
                problems.append(f"{source}: cannot import {name!r} ({exc}); check the module path and PYTHONPATH")
        elif name in available:  # as pluggy's load_setuptools_entrypoints, without its scan of every distribution
            entry = available[name]
            plugin = entry.load()
            pm.register(plugin, name=name)
            DISTRIBUTIONS[id(plugin)] = (plugin, entry.dist)
        else:
            known = ", ".join(sorted(available)) or "none"
            problems.append(
                f"{source}: no plugin named {name!r} is installed (installed: {known}); "
                f"install it (pip install hostcore-{name}) or fix the name"
            )
    for obj in extra:
        pm.register(obj, name=getattr(obj, "__name__", None))
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        problems.append(
            f"plugin {exc.plugin!r}: {exc}; hook implementations must match a hook in hostcore.seams.hookspecs "
            "(check the spelling)"
        )
    return pm, problems


def describe(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """What loaded: each plugin's name, distribution and version, and the hooks it implements."""
    dists = {id(plugin): dist for plugin, dist in DISTRIBUTIONS.values()}
    out = []
    for name, plugin in pm.list_name_plugin():
        dist = dists.get(id(plugin))
        callers = pm.get_hookcallers(plugin) or []
        out.append(
            {
                "name": name,
                "distribution": dist.metadata["Name"] if dist else "hostcore (built in)",
                "version": dist.version if dist else None,
                "hooks": sorted(caller.name for caller in callers),
            }
        )
    return out
