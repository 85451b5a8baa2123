"""Where hostcore's and its plugins' log records go: gunicorn's error log, or stderr in the CLI."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pluggy


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (the CLI's, or a test runner's capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(name)s: %(message)s"))

    @property
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
