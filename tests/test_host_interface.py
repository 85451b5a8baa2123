"""The one registry behind every ``register_*`` hook."""

import pytest

from hostcore import StartupError, create_app, hookimpl, tool

from .conftest import BASE_CONFIG


def make(tmp_path, *plugins):
    return create_app(BASE_CONFIG, instance_path=tmp_path, plugins=plugins).extensions["hostcore"]


def test_registries_name_both_plugins_of_a_clash(tmp_path):
    @tool(read_only=True, name="twice")
    def one() -> dict:
        """One."""
        return {}

    class First:
        __name__ = "first"

        @hookimpl
        def register_tools(self, register):
            register(one)

    class Second(First):
        __name__ = "second"

    with pytest.raises(StartupError, match=r"two plugins register a tool named 'twice' \((first and second|second and first)\); rename one"):
        make(tmp_path, First(), Second())
