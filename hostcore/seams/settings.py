"""Declared settings: the keys a backend takes from its ``PLUGIN_CONFIG`` table (and the core's own).

A backend declares ``settings = {"remote": Setting(str, None, "URL to push to"), ...}``; the host
checks the operator's table against it at start-up and in ``hostcore check`` (an unknown key is
named with the known ones, a wrong type with the type expected) and hands the backend its table
with the defaults filled in.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hostcore.errors import ConfigError


@dataclass(frozen=True)
class Setting:
    """One setting: its type (or tuple of types), its default (None: absent unless set), what it does."""

    type: type | tuple[type, ...]
    default: Any = None
    help: str = ""

    @property
    def type_name(self) -> str:
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        return " or ".join(t.__name__ for t in types)

    def accepts(self, value: Any) -> bool:
        """True when ``value`` has the declared type (a bool is no int, an int is a float)."""
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        if isinstance(value, bool):
            return bool in types
        return isinstance(value, types) or (float in types and isinstance(value, int))


def settings_problems(
    spec: Mapping[str, Setting], values: Mapping[str, Any], where: Callable[[str], str], owner: str
) -> list[str]:
    """Every key of ``values`` that ``spec`` does not declare or whose value has the wrong type.

    ``where(key)`` names the key as the operator wrote it; ``owner`` names whose settings they are.
    """
    problems = []
    for key, value in values.items():
        setting = spec.get(key)
        if setting is None:
            guess = difflib.get_close_matches(key, list(spec), n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            known = ", ".join(sorted(spec)) or "none"
            problems.append(f"{where(key)}: {owner} has no setting {key!r}; {hint}its settings: {known}")
        elif not setting.accepts(value):
            problems.append(f"{where(key)}: expected {setting.type_name}, got {type(value).__name__} {value!r}")
    return problems


def with_defaults(spec: Mapping[str, Setting], values: Mapping[str, Any] | None, owner: str) -> dict[str, Any]:
    """``values`` checked against ``spec``, with the default of every setting not given.

    Raises ConfigError naming every problem.
    """
    values = dict(values or {})
    problems = settings_problems(spec, values, str, owner)
    if problems:
        raise ConfigError("; ".join(problems), problems=problems)
    return {**{key: s.default for key, s in spec.items()}, **values}
