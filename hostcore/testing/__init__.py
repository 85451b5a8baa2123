"""Test helpers for plugin authors: one module per conformance suite, and a real server.

- :class:`StorageConformance` (``storage_suite``): subclass it with ``make_storage(root)``.
- :class:`SearchConformance` (``search_suite``): subclass it with ``make_backend(root)``.
- :func:`plugin_manager`: hostcore's hooks with your plugin registered, to call its hooks.
- :func:`small_disk`, :func:`fill_disk`: a real full disk (a tmpfs; needs root).
- ``servers``: make an instance with the CLI and run ``hostcore serve`` on a free port;
  :func:`typescript_sdk`: the pinned Node and TypeScript SDK, to drive a server with the TS client.
- :func:`redis_server`, :class:`RedisServer`: a real ``redis-server`` on a free loopback port.
- :class:`Relay` (``relay``): a TCP relay in front of a server that cuts the network on demand.
- ``documents``: :func:`pdf_document` (a real PDF, one page per string), :func:`png_image` (a real PNG).
- ``migration``: :func:`fill_wiki` (something of everything) and :func:`snapshot` (a whole wiki, to compare).
- :func:`sign_in_client`: a person signed in on a Flask test client, as a sign-in plugin does it.
- :class:`FakeClock`: a clock a test moves by hand, for expiry without sleeping (``clock``).
- ``tiers``: the markers (``serve``, ``browser``, ``s3``, ``redis``) and ``pytest --fast``, as a
  pytest plugin: ``pytest_plugins = ["hostcore.testing.tiers"]`` in your root ``conftest.py``.
"""

from hostcore.testing.clock import FakeClock
from hostcore.testing.disks import fill_disk, small_disk
from hostcore.testing.plugins import plugin_manager
from hostcore.testing.redis import RedisServer, redis_server
from hostcore.testing.relay import Relay
from hostcore.testing.search_suite import SearchConformance, search_doc
from hostcore.testing.servers import (
    cli,
    create_token,
    free_port,
    hostcore_cmd,
    hostcore_env,
    start_server,
    stop_process_group,
    typescript_sdk,
)
from hostcore.testing.sessions import sign_in_client
from hostcore.testing.storage_suite import StorageConformance

__all__ = [
    "FakeClock",
    "RedisServer",
    "Relay",
    "SearchConformance",
    "StorageConformance",
    "cli",
    "create_token",
    "fill_disk",
    "free_port",
    "hostcore_cmd",
    "hostcore_env",
    "plugin_manager",
    "redis_server",
    "search_doc",
    "sign_in_client",
    "small_disk",
    "start_server",
    "stop_process_group",
    "typescript_sdk",
]
