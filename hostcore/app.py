"""``create_app``: one Flask app, one plugin manager, one Host."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pluggy
from flask import Flask

from hostcore.errors import StartupError
from hostcore.host.config import Config, read_config
from hostcore.host.host import Host, backend_problems, register_backends
from hostcore.host.plugins import load_plugins
from hostcore.mcp import transport
from hostcore.service.wiki import Wiki


def instance_folder(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$HOSTCORE_INSTANCE``, else ``./instance``; made absolute."""
    return Path(path or os.environ.get("HOSTCORE_INSTANCE") or "instance").resolve()


def inspect_instance(
    instance: Path, config: Mapping[str, Any] | None = None, plugins: Iterable[Any] = ()
) -> tuple[Config, pluggy.PluginManager, list[str]]:
    """The settings and plugins of ``instance``, and every problem with them, found in one pass:
    settings, plugins that do not load, backends that are not loaded, backend settings.
    """
    settings, problems = read_config(instance, config)
    names = settings["PLUGINS"] if isinstance(settings["PLUGINS"], list) else []
    pm, more = load_plugins([n for n in names if isinstance(n, str) and n], plugins, settings.where("PLUGINS"))
    problems += more
    try:
        problems += backend_problems(settings, *register_backends(pm))
    except StartupError as exc:
        problems.append(str(exc))
    return settings, pm, problems


def build_host(
    instance: Path, config: Mapping[str, Any] | None = None, plugins: Iterable[Any] = (), *, start: bool = True
) -> Host:
    """Config, plugin manager and Host for ``instance``, started unless ``start`` is False.

    Raises StartupError (a ConfigError) naming every problem.
    """
    instance.mkdir(parents=True, exist_ok=True)
    settings, pm, problems = inspect_instance(instance, config, plugins)
    if problems:
        raise StartupError("; ".join(problems), problems=problems)
    configure_logging(settings["LOG_LEVEL"], pm)
    host = Host(settings, instance, pm, Wiki)
    if start:
        host.start()
    return host


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (the CLI's, or a test runner's capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(name)s: %(message)s"))

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


_STDERR = _Stderr()


def configure_logging(level: str, pm: pluggy.PluginManager) -> None:
    """Send the records of hostcore and of every plugin, at ``level`` and above, somewhere formatted.

    Under gunicorn: to its error log (nothing else configures logging in a worker). Elsewhere (the
    CLI), when nothing has configured logging: to stderr. A plugin logs with
    ``logging.getLogger(__name__)``; its top-level package's logger is configured here.
    """
    gunicorn = logging.getLogger("gunicorn.error").handlers
    ours = {_STDERR, *gunicorn}
    for name in _logger_names(pm):
        logger = logging.getLogger(name)
        logger.setLevel(level.upper())
        if not set(logger.handlers) <= ours:
            continue  # configured by someone else: leave it
        if gunicorn:
            logger.handlers, logger.propagate = list(gunicorn), False
        elif not logging.getLogger().handlers:
            logger.handlers = [_STDERR]
        else:
            logger.handlers = []


def _logger_names(pm: pluggy.PluginManager) -> list[str]:
    """``hostcore`` and the top-level package of every plugin module."""
    names = {"hostcore"}
    for plugin in pm.get_plugins():
        module = getattr(plugin, "__name__", None) or type(plugin).__module__
        if module and module not in ("__main__", "builtins"):
            names.add(module.split(".")[0])
    return sorted(names)


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
