"""``create_app``: one Flask app, one plugin manager, one Host."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flask import Flask

from hostcore.host.config import load_config
from hostcore.host.host import Host
from hostcore.host.plugins import make_plugin_manager
from hostcore.mcp import files, transport
from hostcore.service.wiki import Wiki


def instance_folder(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$HOSTCORE_INSTANCE``, else ``./instance``; made absolute."""
    return Path(path or os.environ.get("HOSTCORE_INSTANCE") or "instance").resolve()


def build_host(
    instance: Path,
    config: Mapping[str, Any] | None = None,
    plugins: Iterable[Any] = (),
    *,
    start: bool = True,
    defaults: Mapping[str, Any] | None = None,
) -> Host:
    """Config, plugin manager and Host for ``instance``, started unless ``start`` is False.
    ``defaults`` replace built-in defaults; the instance file and the environment still win."""
    instance.mkdir(parents=True, exist_ok=True)
    settings = load_config(instance, config, defaults=defaults)
    log_to_gunicorn(settings["LOG_LEVEL"])
    host = Host(settings, instance, make_plugin_manager(settings["PLUGINS"], plugins), Wiki)
    if start:
        host.start()
    return host


def log_to_gunicorn(level: str) -> None:
    """Under gunicorn, send hostcore's log records to gunicorn's error log at ``level``.

    Without this, records below WARNING vanish: nothing else configures logging in a worker.
    """
    gunicorn_log = logging.getLogger("gunicorn.error")
    log = logging.getLogger("hostcore")
    if gunicorn_log.handlers and not log.handlers:
        log.handlers = list(gunicorn_log.handlers)
        log.propagate = False
    log.setLevel(level.upper())


def create_app(
    config: Mapping[str, Any] | None = None,
    *,
    instance_path: str | os.PathLike[str] | None = None,
    plugins: Iterable[Any] = (),
    defaults: Mapping[str, Any] | None = None,
) -> Flask:
    """Build the app from the instance folder's config, overridden by ``config`` (tests).

    ``plugins`` are extra plugin objects registered beside those named in ``PLUGINS``;
    ``defaults`` replace built-in defaults (see :func:`build_host`).
    Raises ConfigError/StartupError naming what to fix.
    """
    instance = instance_folder(instance_path)
    host = build_host(instance, config, plugins, defaults=defaults)
    app = Flask("hostcore", instance_path=str(instance))
    app.config["MAX_CONTENT_LENGTH"] = host.config["MAX_REQUEST_BYTES"]
    app.extensions["hostcore"] = host
    transport.install(app, host)
    files.install(app)
    host.pm.hook.register_routes(app=app, host=host)
    return app
