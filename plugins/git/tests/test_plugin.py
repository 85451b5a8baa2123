"""The plugin is found through its entry point and registers its backend through the hook."""

from __future__ import annotations

from importlib.metadata import entry_points

import hostcore_git
from hostcore.testing import plugin_manager
from hostcore_git import GitStorage


def test_entry_point_and_hook() -> None:
    (point,) = entry_points(group="hostcore", name="git")
    assert point.load() is hostcore_git
    manager = plugin_manager(hostcore_git)
    found: list[type] = []
    manager.hook.register_storage_backends(register=found.append)
    assert found == [GitStorage]
    assert GitStorage.name == "git" and GitStorage.has_history
