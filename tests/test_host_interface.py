"""What plugins see of the host (``hostcore.PluginHost``), their typed state (``Slot``), how they
meet (``ServiceKey`` and the ``register_services`` hook) and the one registry behind every
``register_*`` hook."""

import ast
import inspect
import threading
from pathlib import Path
from typing import Protocol

import pytest

from hostcore import DerivedIndexes, PluginHost, ServiceKey, Slot, StartupError, create_app, hookimpl, tool
from hostcore.seams import hookspecs

from .conftest import BASE_CONFIG

ROOT = Path(__file__).resolve().parent.parent


class Greeter(Protocol):
    def greet(self, name: str) -> str: ...


class Counter(Protocol):
    def count(self) -> int: ...


GREETER: ServiceKey[Greeter] = ServiceKey("greeter", Greeter)


class English:
    def greet(self, name: str) -> str:
        return f"hello {name}"


class Provider:
    __name__ = "provider"

    def __init__(self, service=None, key=GREETER):
        self.service, self.key = service or English(), key

    @hookimpl
    def register_services(self, register, host):
        register(self.key, self.service)


class Consumer:
    __name__ = "consumer"

    def __init__(self):
        self.found = "not asked"

    @hookimpl
    def startup(self, host):
        self.found = host.service(GREETER)


def make(tmp_path, *plugins):
    return create_app(BASE_CONFIG, instance_path=tmp_path, plugins=plugins).extensions["hostcore"]


def test_hook_register_services(tmp_path):
    consumer = Consumer()
    host = make(tmp_path / "a", Provider(), consumer)
    try:
        assert consumer.found.greet("ann") == "hello ann" and host.service(GREETER) is consumer.found
        assert host.service(GREETER, required=True) is consumer.found
    finally:
        host.close()
    alone = Consumer()
    host = make(tmp_path / "b", alone)
    try:
        assert alone.found is None and host.service(GREETER) is None
        with pytest.raises(StartupError, match="no loaded plugin provides the 'greeter' service .Greeter.; add the plugin"):
            host.service(GREETER, required=True)
    finally:
        host.close()


def test_a_service_is_checked_against_its_protocol_and_named_once(tmp_path):
    class Mute:
        pass

    with pytest.raises(StartupError, match=r"register_services: the 'greeter' service .* lacks greet of Greeter"):
        make(tmp_path / "a", Provider(Mute()))

    class Other(Provider):
        __name__ = "other"

    with pytest.raises(StartupError, match=r"two plugins register a service named 'greeter' \((provider and other|other and provider)\)"):
        make(tmp_path / "b", Provider(), Other())

    with pytest.raises(StartupError, match="is not a hostcore.ServiceKey; call register.KEY, service."):
        make(tmp_path / "c", Provider(key="greeter"))

    host = make(tmp_path / "d", Provider())
    try:  # a user asking with a Protocol of its own, wanting more than the object has
        with pytest.raises(StartupError, match="the 'greeter' service of plugin provider lacks count, which Counter needs"):
            host.service(ServiceKey("greeter", Counter))
    finally:
        host.close()
    with pytest.raises(TypeError, match="is not a Protocol"):
        ServiceKey("greeter", English)


def test_a_slot_is_made_once_per_host_and_closed_with_it(tmp_path):
    made, closed = [], []

    class Store:
        def __init__(self, host):
            made.append(host)
            self.host = host

    STORE: Slot[Store] = Slot("test.store", Store, close=closed.append)
    SAME_NAME: Slot[list] = Slot("test.store", lambda host: [])
    first, second = make(tmp_path / "a"), make(tmp_path / "b")
    barrier = threading.Barrier(8)
    got = []

    def ask():
        barrier.wait()
        got.append(first.slot(STORE))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and all(store is got[0] for store in got) and got[0].host is first
    assert second.slot(STORE) is not got[0] and second.slot(STORE).host is second  # each host its own
    assert first.slot(SAME_NAME) == []  # the slot is the key, not its name
    first.close()
    assert closed == [got[0]]
    second.close()
    assert closed == [got[0], second.slot(STORE)]


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


def test_the_host_is_what_plugins_may_use(tmp_path):
    """Every member of PluginHost is there on the host, and every hook hands ``host`` as one."""
    host = make(tmp_path)
    try:
        assert PluginHost in type(host).__mro__
        members = [name for name in dir(PluginHost) if not name.startswith("_")] + list(PluginHost.__annotations__)
        assert {"config", "instance_path", "pm", "shared", "limiter", "indexes", "redis", "wiki", "plugin_config", "on_close",
                "slot", "service"} == set(members)  # fmt: skip
        for name in members:
            assert hasattr(host, name), name
        for name in ("current", "wait"):  # DerivedIndexes: what a plugin may use of host.indexes
            assert name in dir(DerivedIndexes) and hasattr(host.indexes, name), name
    finally:
        host.close()
    for name, spec in vars(hookspecs).items():
        if callable(spec) and "host" in inspect.signature(spec).parameters:
            assert spec.__annotations__["host"] == "PluginHost", name


def test_plugins_annotate_the_host_they_get():
    """No plugin takes ``host`` as ``Any``: the annotation says what it may use."""
    untyped = []
    for path in sorted((ROOT / "plugins").glob("*/hostcore_*/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in node.args.args + node.args.kwonlyargs:
                    if arg.arg in ("host", "h") and (arg.annotation is None or ast.unparse(arg.annotation) == "Any"):
                        untyped.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}({arg.arg})")
    assert untyped == []
