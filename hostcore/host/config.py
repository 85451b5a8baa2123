"""Configuration: ``<instance>/hostcore.toml``, overridden by ``HOSTCORE_*`` environment variables.

Keys are upper case. ``HOSTCORE_PLUGINS='["git", "tokens"]'`` overrides a whole key (values are
parsed as JSON when they parse, else taken as text); a double underscore reaches into tables:
``HOSTCORE_PLUGIN_CONFIG__GIT__REMOTE=/srv/backup.git``. A secret is written as
``{"$env": "NAME"}`` anywhere in the config and read from the environment at start-up.

Every problem is named by where the operator wrote it: the environment variable
(``HOSTCORE_SEACRH``) or the key in ``hostcore.toml`` (``PLUGIN_CONFIG.git.remote``).
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from hostcore.errors import ConfigError
from hostcore.host.ratelimits import DEFAULT_LIMITS, limit_problems
from hostcore.seams.settings import Setting, settings_problems

CONFIG_FILE = "hostcore.toml"
ENV_PREFIX = "HOSTCORE_"
NOT_SETTINGS = frozenset({"HOSTCORE_INSTANCE", "HOSTCORE_TOKEN"})
"""Variables of the prefix that are no setting: the instance folder, and the token ``hostcore mcp --stdio`` acts as."""

SETTINGS: dict[str, Setting] = {
    "PLUGINS": Setting(list, [], "plugins to load, by name"),
    "STORAGE": Setting(str, "fs", "the storage backend, by name"),
    "SEARCH": Setting(str, "", "the search backend, by name; empty for none"),
    "EMBEDDER": Setting(
        str, "", "the embedder of document search (search_attachments, similar_pages), by name; empty for none"
    ),
    "PLUGIN_CONFIG": Setting(dict, {}, "a table of settings per plugin"),
    "PUBLIC_URL": Setting(str, "http://127.0.0.1:8080", "the URL clients use"),
    "ALLOWED_HOSTS": Setting(list, [], "more Host header values to serve"),
    "ALLOWED_ORIGINS": Setting(list, [], "more browser origins allowed to call the MCP endpoint and reach the pages"),
    "AUTHORIZATION_SERVERS": Setting(list, [], "OAuth authorization servers named in the protected-resource metadata"),
    "MAX_REQUEST_BYTES": Setting(int, 8 * 1024 * 1024, "request body limit"),
    "MAX_ATTACHMENT_BYTES": Setting(int, 25 * 1024 * 1024, "largest attachment an upload may carry"),
    "UPLOAD_URL_SECONDS": Setting(int, 900, "how long a one-use upload URL stays valid"),
    "EXTRACT_TIMEOUT_SECONDS": Setting(int, 30, "time limit of one attachment's text extraction"),
    "EXTRACT_MEMORY_BYTES": Setting(int, 1024 * 1024 * 1024, "memory limit of one attachment's text extraction"),
    "TITLE": Setting(str, "hostcore", "the wiki's name"),
    "LOG_LEVEL": Setting(str, "INFO", "level of hostcore's and its plugins' log records"),
    "MIN_FREE_BYTES": Setting(
        int, 32 * 1024 * 1024, "free space a write needs on every disk holding the wiki; below it writes are refused"
    ),
    "RATE_LIMITS": Setting(
        dict, DEFAULT_LIMITS, '"requests" and "writes" per principal, "registrations" (OAuth clients) per client '
        'address; each like "300/minute" or "off"'
    ),
    "TRUSTED_PROXIES": Setting(
        int, 0, "reverse proxies in front of the wiki whose X-Forwarded-For and X-Forwarded-Proto are believed"
    ),
    "CATCH_UP_SECONDS": Setting(
        float, 0.0, "seconds between each worker's background checks that catch the indexes up with changes made "
        "through other hosts (0: only reads check, at once)"
    ),
    "ACTIVITY_LOG": Setting(bool, True, "record every MCP call and web action in the activity log (never arguments or page text)"),
    "ACTIVITY_DAYS": Setting(float, 30.0, "days the activity log keeps a record"),
    "ACTIVITY_MAX_RECORDS": Setting(int, 200_000, "records the activity log keeps at most (the oldest go first)"),
    "REDIS_URL": Setting(
        str, "", "Redis holding what workers and hosts share (rate limit counters); empty: each worker's memory"
    ),
    "REDIS_REQUIRE_PERSISTENCE": Setting(
        bool, True, "refuse to start on a Redis that keeps nothing on disk (or will not say): accounts and tokens "
        "live only there; false accepts losing them when Redis restarts"
    ),
}
DEFAULTS: dict[str, Any] = {key: setting.default for key, setting in SETTINGS.items()}
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Config(dict[str, Any]):
    """The merged settings, remembering which came from environment variables (for messages)."""

    def __init__(
        self,
        values: Mapping[str, Any],
        env_names: Mapping[tuple[str, ...], str] | None = None,
        written: set[str] | None = None,
    ) -> None:
        super().__init__(values)
        self.env_names = dict(env_names or {})
        # top-level keys an operator wrote (file, environment, overrides); None = unknown, take all as written
        self.written = set(values) if written is None else set(written)

    def where(self, *path: str) -> str:
        """Where the setting at ``path`` was written: its variable (``HOSTCORE_SEACRH``) or its key."""
        for n in range(len(path), 0, -1):
            name = self.env_names.get(path[:n])
            if name:
                return name if n == len(path) else f"{name} ({'.'.join(path[n:])})"
        return ".".join(path)


def where(config: Mapping[str, Any], *path: str) -> str:
    """:meth:`Config.where` for any config mapping (a plain dict names the key)."""
    return config.where(*path) if isinstance(config, Config) else ".".join(path)


def _parse_env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _env_settings(environ: Mapping[str, str]) -> Iterator[tuple[tuple[str, ...], str, str]]:
    """(key path, variable name, raw value) of every ``HOSTCORE_*`` variable but :data:`NOT_SETTINGS`."""
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in NOT_SETTINGS:
            continue
        key, *path = name[len(ENV_PREFIX) :].split("__")
        yield (key, *(part.lower() for part in path)), name, raw


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """The config keys set by ``HOSTCORE_*`` variables (:data:`NOT_SETTINGS` excluded)."""
    out: dict[str, Any] = {}
    for path, _name, raw in _env_settings(environ):
        table = out
        for part in path[:-1]:
            table = table.setdefault(part, {})
        table[path[-1]] = _parse_env_value(raw)
    return out


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _sets(tree: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    for part in path:
        if not isinstance(tree, Mapping) or part not in tree:
            return False
        tree = tree[part]
    return True


def is_secret(value: Any) -> bool:
    """True for a ``{"$env": "NAME"}`` reference left unresolved (its variable is not set)."""
    return isinstance(value, Mapping) and set(value) == {"$env"}


def resolve_secrets(value: Any, where: str = "", problems: list[str] | None = None) -> Any:
    """Replace every ``{"$env": "NAME"}`` with the environment variable's value.

    A missing variable raises ConfigError, or, when ``problems`` is given, is appended to it and
    its reference left in place.
    """
    if is_secret(value):
        name = value["$env"]
        if name in os.environ:
            return os.environ[name]
        message = f"{where}: environment variable {name} is not set; export it or change the config"
        if problems is None:
            raise ConfigError(message)
        problems.append(message)
        return value
    if isinstance(value, Mapping):
        return {k: resolve_secrets(v, f"{where}.{k}" if where else k, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(v, f"{where}[{i}]", problems) for i, v in enumerate(value)]
    return value


def instance_folder(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$HOSTCORE_INSTANCE``, else ``./instance``; made absolute."""
    return Path(path or os.environ.get("HOSTCORE_INSTANCE") or "instance").resolve()


def read_file(instance: Path) -> dict[str, Any]:
    path = instance / CONFIG_FILE
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}; fix the TOML syntax") from None


def read_config(
    instance: Path,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> tuple[Config, list[str]]:
    """Defaults (``DEFAULTS`` updated by ``defaults``, e.g. the PUBLIC_URL ``hostcore serve``
    derives from its bind address), then the instance file, then the environment, then
    ``overrides`` (tests), with secrets resolved; and every problem found in them. Raises
    ConfigError only for bad TOML.
    """
    environ = os.environ if environ is None else environ
    from_file, from_env = read_file(instance), env_overrides(environ)
    merged = _merge(_merge(copy.deepcopy(DEFAULTS), defaults or {}), from_file)
    merged = _merge(merged, from_env)
    merged = _merge(merged, overrides or {})
    written = set(from_file) | set(from_env) | set(overrides or {})
    env_names = {path: name for path, name, _raw in _env_settings(environ) if not _sets(overrides or {}, path)}
    problems: list[str] = []
    config = Config(resolve_secrets(merged, problems=problems), env_names, written)
    return config, problems_in(config) + problems


def not_an_instance(instance: Path, config: Config) -> str | None:
    """What to tell an operator whose instance folder has no config file and whose environment
    sets nothing either (most often a mistyped ``--instance``); None when it is configured."""
    if (instance / CONFIG_FILE).exists() or config.env_names:
        return None
    return (
        f"{instance} is not an instance (it has no {CONFIG_FILE}): `hostcore --instance {instance} init` "
        "creates one on the embedded default, or name the instance you meant"
    )


def load_config(
    instance: Path,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Config:
    """The settings of ``instance`` (see :func:`read_config`). Raises ConfigError naming every problem."""
    config, problems = read_config(instance, overrides, environ, defaults)
    if problems:
        raise ConfigError("; ".join(problems), problems=problems)
    return config


def problems_in(config: Mapping[str, Any]) -> list[str]:
    """Every problem with a config's core settings, each naming where it was written and the fix."""
    given = {key: value for key, value in config.items() if key.isupper() and not is_secret(value)}
    problems = settings_problems(SETTINGS, given, partial(where, config), "hostcore")
    for key, value in given.items():
        if key in SETTINGS and SETTINGS[key].type is list and isinstance(value, list):
            if not all(isinstance(item, str) and item for item in value):
                problems.append(f"{where(config, key)}: expected a list of non-empty strings, got {value!r}")
    plugin_config = config.get("PLUGIN_CONFIG")
    # whom each table belongs to (a plugin, or a backend of one) is known once plugins load: host.backend_problems
    for name, value in plugin_config.items() if isinstance(plugin_config, Mapping) else ():
        if not isinstance(value, Mapping):
            problems.append(f"{where(config, 'PLUGIN_CONFIG', name)}: must be a table of settings")
    for key in ("PUBLIC_URL", "AUTHORIZATION_SERVERS"):
        value = config.get(key)
        urls = value if isinstance(value, list) else [value]
        bad = [url for url in urls if isinstance(url, str) and not url.startswith(("http://", "https://"))]
        if bad:
            problems.append(f"{where(config, key)}: {bad[0]!r} must start with http:// or https://")
    level = config.get("LOG_LEVEL")
    if isinstance(level, str) and level.upper() not in _LEVELS:
        problems.append(f"{where(config, 'LOG_LEVEL')}: {level!r} is no log level; use one of {', '.join(_LEVELS)}")
    problems += limit_problems(config.get("RATE_LIMITS"), where(config, "RATE_LIMITS"))
    redis_url = config.get("REDIS_URL")
    if isinstance(redis_url, str) and redis_url and not redis_url.startswith(REDIS_SCHEMES):
        problems.append(
            f"{where(config, 'REDIS_URL')}: {redis_url!r} must start with {', '.join(REDIS_SCHEMES)} "
            "(e.g. redis://127.0.0.1:6379/0), or be empty"
        )
    limit = config.get("MAX_REQUEST_BYTES")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit < 2 * 1024 * 1024:
        problems.append(
            f"{where(config, 'MAX_REQUEST_BYTES')}: must be at least 2097152 so a full 1 MiB page fits with its envelope"
        )
    proxies = config.get("TRUSTED_PROXIES")
    if isinstance(proxies, int) and not isinstance(proxies, bool) and not 0 <= proxies <= 5:
        problems.append(f"{where(config, 'TRUSTED_PROXIES')}: the number of proxies in front, 0 (none) to 5, got {proxies!r}")
    for key in ("ACTIVITY_DAYS", "ACTIVITY_MAX_RECORDS"):
        value = config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            problems.append(f"{where(config, key)}: must be above 0, got {value!r}; turn the log off with ACTIVITY_LOG = false")
    for key in ("MAX_ATTACHMENT_BYTES", "UPLOAD_URL_SECONDS", "EXTRACT_TIMEOUT_SECONDS", "EXTRACT_MEMORY_BYTES"):
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            problems.append(f"{where(config, key)}: must be greater than 0, got {value!r}")
    return problems
