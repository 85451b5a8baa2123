"""A plugin manager with hostcore's hook specifications, for testing a plugin's hooks directly."""

from __future__ import annotations

from typing import Any

import pluggy

from hostcore.seams import hookspecs


def plugin_manager(*plugins: Any) -> pluggy.PluginManager:
    """A fresh PluginManager knowing every hostcore hook, with ``plugins`` registered and checked."""
    manager = pluggy.PluginManager("hostcore")
    manager.add_hookspecs(hookspecs)
    for plugin in plugins:
        manager.register(plugin)
    manager.check_pending()
    return manager
