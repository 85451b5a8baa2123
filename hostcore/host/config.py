"""Configuration: ``<instance>/hostcore.toml``, overridden by ``HOSTCORE_*`` environment variables.

Keys are upper case. ``HOSTCORE_PLUGINS='["git", "tokens"]'`` overrides a whole key (values are
parsed as JSON when they parse, else taken as text); a double underscore reaches into tables:
``HOSTCORE_PLUGIN_CONFIG__GIT__REMOTE=/srv/backup.git``. A secret is written as
``{"$env": "NAME"}`` anywhere in the config and read from the environment at start-up.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hostcore.errors import ConfigError

CONFIG_FILE = "hostcore.toml"
ENV_PREFIX = "HOSTCORE_"

DEFAULTS: dict[str, Any] = {
    "PLUGINS": [],
    "STORAGE": "fs",
    "SEARCH": "",
    "PLUGIN_CONFIG": {},
    "PUBLIC_URL": "http://127.0.0.1:8080",
    "ALLOWED_HOSTS": [],
    "ALLOWED_ORIGINS": [],
    "MAX_REQUEST_BYTES": 8 * 1024 * 1024,
    "MAX_ATTACHMENT_BYTES": 25 * 1024 * 1024,
    "UPLOAD_URL_SECONDS": 900,
    "EXTRACT_TIMEOUT_SECONDS": 30,
    "EXTRACT_MEMORY_BYTES": 1024 * 1024 * 1024,
    "TITLE": "hostcore",
    "LOG_LEVEL": "INFO",
}

_TYPES: dict[str, type | tuple[type, ...]] = {
    "PLUGINS": list,
    "STORAGE": str,
    "SEARCH": str,
    "PLUGIN_CONFIG": dict,
    "PUBLIC_URL": str,
    "ALLOWED_HOSTS": list,
    "ALLOWED_ORIGINS": list,
    "MAX_REQUEST_BYTES": int,
    "MAX_ATTACHMENT_BYTES": int,
    "UPLOAD_URL_SECONDS": int,
    "EXTRACT_TIMEOUT_SECONDS": int,
    "EXTRACT_MEMORY_BYTES": int,
    "TITLE": str,
    "LOG_LEVEL": str,
}


def _parse_env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """The config keys set by ``HOSTCORE_*`` variables (``HOSTCORE_INSTANCE`` excluded)."""
    out: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name == "HOSTCORE_INSTANCE":
            continue
        key, *path = name[len(ENV_PREFIX) :].split("__")
        if not path:
            out[key] = _parse_env_value(raw)
            continue
        table = out.setdefault(key, {})
        for part in path[:-1]:
            table = table.setdefault(part.lower(), {})
        table[path[-1].lower()] = _parse_env_value(raw)
    return out


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def resolve_secrets(value: Any, where: str = "") -> Any:
    """Replace every ``{"$env": "NAME"}`` with the environment variable's value."""
    if isinstance(value, Mapping):
        if set(value) == {"$env"}:
            name = value["$env"]
            if name not in os.environ:
                raise ConfigError(f"{where}: environment variable {name} is not set; export it or change the config")
            return os.environ[name]
        return {k: resolve_secrets(v, f"{where}.{k}" if where else k) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def read_file(instance: Path) -> dict[str, Any]:
    path = instance / CONFIG_FILE
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}; fix the TOML syntax") from None


def load_config(
    instance: Path,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Defaults (``DEFAULTS`` updated by ``defaults``, e.g. the PUBLIC_URL ``hostcore serve``
    derives from its bind address), then the instance file, then the environment, then
    ``overrides`` (tests).

    Raises ConfigError naming every problem found.
    """
    config = _merge(_merge(DEFAULTS, defaults or {}), read_file(instance))
    config = _merge(config, env_overrides(os.environ if environ is None else environ))
    config = _merge(config, overrides or {})
    problems = problems_in(config)
    if problems:
        raise ConfigError("; ".join(problems), problems=problems)
    return resolve_secrets(config)


def problems_in(config: Mapping[str, Any]) -> list[str]:
    """Every problem with a config, each naming the key and the fix."""
    problems = []
    for key, value in config.items():
        if key not in _TYPES:
            if key.isupper():
                problems.append(f"{key}: unknown setting; known ones are {', '.join(sorted(_TYPES))}")
            continue
        if not isinstance(value, _TYPES[key]) or (isinstance(value, bool) and _TYPES[key] is int):
            problems.append(f"{key}: expected {_TYPES[key].__name__}, got {type(value).__name__} {value!r}")
    plugins = config.get("PLUGINS")
    if isinstance(plugins, list) and not all(isinstance(p, str) and p for p in plugins):
        problems.append("PLUGINS: list plugin names as strings, e.g. [\"git\", \"tokens\"]")
    plugin_config = config.get("PLUGIN_CONFIG")
    if isinstance(plugin_config, Mapping) and isinstance(plugins, list):
        for name, value in plugin_config.items():
            if not isinstance(value, Mapping):
                problems.append(f"PLUGIN_CONFIG.{name}: must be a table of settings")
            elif name not in plugins:
                problems.append(f"PLUGIN_CONFIG.{name}: plugin {name!r} is not in PLUGINS; add it or remove this table")
    url = config.get("PUBLIC_URL")
    if isinstance(url, str) and not url.startswith(("http://", "https://")):
        problems.append(f"PUBLIC_URL: {url!r} must start with http:// or https://")
    if isinstance(config.get("MAX_REQUEST_BYTES"), int) and config["MAX_REQUEST_BYTES"] < 2 * 1024 * 1024:
        problems.append("MAX_REQUEST_BYTES: must be at least 2097152 so a full 1 MiB page fits with its envelope")
    for key in ("MAX_ATTACHMENT_BYTES", "UPLOAD_URL_SECONDS", "EXTRACT_TIMEOUT_SECONDS", "EXTRACT_MEMORY_BYTES"):
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            problems.append(f"{key}: must be greater than 0, got {value!r}")
    return problems
