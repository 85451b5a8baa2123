"""``create_app``: one Flask app, one plugin manager, one Host."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy
from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from hostcore.errors import StartupError
from hostcore.host.config import Config, instance_folder, not_an_instance, read_config
from hostcore.host.files import make_private, private_umask
from hostcore.host.host import Host, backend_problems, register_backends
from hostcore.host.logs import configure_logging
from hostcore.host.plugins import load_plugins
from hostcore.service.wiki import Wiki


def inspect_instance(
    instance: Path,
    config: Mapping[str, Any] | None = None,
    plugins: Iterable[Any] = (),
    defaults: Mapping[str, Any] | None = None,
) -> tuple[Config, pluggy.PluginManager, list[str]]:
    """The settings and plugins of ``instance``, and every problem with them, found in one pass:
    settings, plugins that do not load, backends that are not loaded, backend settings.
    """
    settings, problems = read_config(instance, config, defaults=defaults)
    names = settings["PLUGINS"] if isinstance(settings["PLUGINS"], list) else []
    pm, more = load_plugins([n for n in names if isinstance(n, str) and n], plugins, settings.where("PLUGINS"))
    problems += more
    try:
        problems += backend_problems(settings, *register_backends(pm))
    except StartupError as exc:
        problems.append(str(exc))
    if problems and config is None and (hint := not_an_instance(instance, settings)):
        problems.append(hint)
    return settings, pm, problems


def build_host(
    instance: Path,
    config: Mapping[str, Any] | None = None,
    plugins: Iterable[Any] = (),
    *,
    start: bool = True,
    defaults: Mapping[str, Any] | None = None,
    private: bool = True,
) -> Host:
    """Config, plugin manager and Host for ``instance``, started unless ``start`` is False.
    ``defaults`` replace built-in defaults; the instance file and the environment still win.
    Raises StartupError (a ConfigError) naming every problem. From here on this process makes its
    files private to its user, and unless ``private`` is False (`hostcore check`, which only looks)
    what is in the host's folders was made so (:mod:`hostcore.host.files`).
    """
    private_umask()  # whatever the umask this process started with (wsgi.py, an embedding app)
    settings, pm, problems = inspect_instance(instance, config, plugins, defaults=defaults)
    if problems:
        raise StartupError("; ".join(problems), problems=problems)
    instance.mkdir(parents=True, exist_ok=True)  # not before: a mistyped --instance leaves no empty folder
    configure_logging(settings["LOG_LEVEL"], pm)
    host = Host(settings, instance, pm, Wiki)
    if private:  # what an older version or another program left readable
        make_private(host.folders)
    if start:
        host.start()
    return host


def create_app(
    config: Mapping[str, Any] | None = None,
    *,
    instance_path: str | os.PathLike[str] | None = None,
    plugins: Iterable[Any] = (),
    defaults: Mapping[str, Any] | None = None,
    private: bool = True,
) -> Flask:
    """Build the app from the instance folder's config, overridden by ``config`` (tests).

    ``plugins`` are extra plugin objects registered beside those named in ``PLUGINS``;
    ``defaults`` replace built-in defaults, and ``private`` False skips making the instance's
    files private when the caller has just done it (see :func:`build_host`).
    Raises ConfigError/StartupError naming what to fix.
    """
    sessions, files, transport = _http_modules()
    instance = instance_folder(instance_path)
    host = build_host(instance, config, plugins, defaults=defaults, private=private)
    app = Flask("hostcore", instance_path=str(instance))
    app.config["MAX_CONTENT_LENGTH"] = host.config["MAX_REQUEST_BYTES"]
    app.extensions["hostcore"] = host
    if host.config["TRUSTED_PROXIES"]:  # the client's address and scheme as the proxies in front saw them
        proxies = host.config["TRUSTED_PROXIES"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]
    transport.install(app, host)
    files.install(app)
    sessions.install(app, host)
    host.pm.hook.register_routes(app=app, host=host)
    return app


def _http_modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    """The modules that serve HTTP: browser sessions, files, the MCP transport. Imported here,
    not at the top: a CLI command that only builds a host (status, token, check) does without the
    MCP SDK's imports, the largest part of a server's start."""
    from hostcore.browser import sessions
    from hostcore.http import files
    from hostcore.mcp import transport

    return sessions, files, transport


def prepare_workers(host: Host) -> None:
    """Do once, in a server's parent process before it forks its workers, what each worker's
    :func:`serving_app` would otherwise repeat: the tools' argument schemas (pydantic's schema
    generation, cached per process) and the imports the plugins' routes make (registered on a
    scratch app). Each forked worker inherits both, so it starts answering sooner. ``host`` is
    not started: nothing here starts a thread or a connection a fork would inherit. The modules
    :func:`create_app` imports are imported here too, so the workers inherit them."""
    _http_modules()
    for tool in host.tools.values():
        _ = tool.input_schema
    host.pm.hook.register_routes(app=Flask("hostcore-prepare"), host=host)


def serving_app(
    instance_path: str | os.PathLike[str] | None = None, defaults: Mapping[str, Any] | None = None, private: bool = True
) -> Flask:
    """The app a server process serves (``hostcore serve``'s workers, ``wsgi.py``): :func:`create_app`,
    then the garbage collector tuned for serving: the heap made so far (modules, plugins, the host)
    frozen out of its full passes, which otherwise walk it again every few thousand allocations (a
    page render makes many), so big pages render in a fraction of the time (``bench/web_render.py
    --no-freeze`` measures the difference)."""
    app = create_app(instance_path=instance_path, defaults=defaults, private=private)
    gc.freeze()
    # A request allocates a few thousand containers (JSON, the SDK's models) that die with it:
    # Python's default of a young collection every 700 survivors ran several per request. At
    # 10,000 (and full passes a little rarer) concurrent writers save more a second and wait less
    # at the tail (bench/concurrent_writers.py measures both).
    gc.set_threshold(10_000, 20, 20)
    return app


def stop_serving(app: Any) -> None:
    """What a server process does as it stops (gunicorn's ``worker_exit``, after a clean stop):
    write what the activity log holds in memory, so a restart or a deploy loses no record, and
    take the changes of the last moments into the indexes (their background pass may be due up to
    a second later), so the next start finds them current (a full disk then cannot stop it)."""
    host = getattr(app, "extensions", {}).get("hostcore")
    if host is not None:
        host.indexes.finish()
        host.activity.close()


def warm_thread(app: Any) -> None:
    """Make the calling thread's own state now (the MCP transport's event loop and SDK instance,
    see :mod:`hostcore.mcp.bridge`), not when the thread serves its first request: a server's
    threads call it as the worker starts (:mod:`hostcore.cli.workers`). Made at the first request
    instead, it lengthened the first saves of 64 writers starting at once."""
    endpoint = getattr(app, "extensions", {}).get("hostcore.mcp")  # another WSGI app: nothing to make
    if endpoint is not None:
        endpoint.warm()
