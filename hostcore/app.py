"""``create_app``: one Flask app, one plugin manager, one Host."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flask import Flask

from . import transport
from .config import load_config
from .host import Host
from .plugins import make_plugin_manager


def instance_folder(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$HOSTCORE_INSTANCE``, else ``./instance``; made absolute."""
    return Path(path or os.environ.get("HOSTCORE_INSTANCE") or "instance").resolve()


def build_host(
    instance: Path, config: Mapping[str, Any] | None = None, plugins: Iterable[Any] = (), *, start: bool = True
) -> Host:
    """Config, plugin manager and Host for ``instance``, started unless ``start`` is False."""
    instance.mkdir(parents=True, exist_ok=True)
    settings = load_config(instance, config)
    host = Host(settings, instance, make_plugin_manager(settings["PLUGINS"], plugins))
    if start:
        host.start()
    return host


def create_app(
    config: Mapping[str, Any] | None = None,
    *,
    instance_path: str | os.PathLike[str] | None = None,
    plugins: Iterable[Any] = (),
) -> Flask:
    """Build the app from the instance folder's config, overridden by ``config`` (tests).

    ``plugins`` are extra plugin objects registered beside those named in ``PLUGINS``.
    Raises ConfigError/StartupError naming what to fix.
    """
    instance = instance_folder(instance_path)
    host = build_host(instance, config, plugins)
    app = Flask("hostcore", instance_path=str(instance))
    app.config["MAX_CONTENT_LENGTH"] = host.config["MAX_REQUEST_BYTES"]
    app.extensions["hostcore"] = host
    transport.install(app, host)
    host.pm.hook.register_routes(app=app, host=host)
    return app
