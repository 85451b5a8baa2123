"""MCP resources and prompts contributed by plugins: typed functions, like tools.

``@resource("scheme://path/{id}")`` makes a resource (a template when the URI has ``{name}``
parts, which become the function's arguments, percent-decoded; ``{name}`` matches one path
segment, ``{+name}`` several, as RFC 6570's reserved expansion writes them). The function returns
text, bytes, a :class:`ResourceText` (text with its ``_meta``), or an
``mcp_types.ReadResourceResult``. A template may list the resources it stands for: ``@r.lists``
decorates ``fn(after, limit, *, wiki)`` returning up to ``limit`` :class:`ResourceEntry` (or
``mcp_types.Resource``) whose URIs sort after ``after``, by URI, that the caller may read
(``resources/list`` pages through them by the last URI given). ``@prompt`` makes a prompt from a typed function whose
parameters are the prompt's arguments; it returns text (one user message), a list of user
messages each text or a :class:`ResourceText` (an embedded resource), a list of
``mcp_types.PromptMessage``, or an ``mcp_types.GetPromptResult``. The seam's own types let a
plugin (and the core's tools layer) offer resources and prompts without the MCP SDK's types. Both take the same injected
keyword-only parameters as tools (``wiki``, ``host``, ``principal``, ``ctx``) and a ``scope``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin, get_type_hints
from urllib.parse import unquote

from pydantic.fields import FieldInfo

from hostcore.domain.principal import check_scope
from hostcore.seams.tool import INJECTED, Injected


def _injected(fn: Callable[..., Any]) -> frozenset[str]:
    return frozenset(
        p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY and p.name in INJECTED
    )


@dataclass(frozen=True)
class ResourceText:
    """A resource's text as a resource function (or a prompt, embedding it) returns it: ``uri``
    and ``mime_type`` default to the URI read and the resource's type; ``meta`` is its ``_meta``."""

    text: str
    uri: str | None = None
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class ResourceEntry:
    """One resource of a template's listing: its URI, name (e.g. the slug), title, media type,
    last change (ISO 8601) and ``_meta``."""

    uri: str
    name: str
    title: str | None = None
    mime_type: str | None = None
    last_modified: str | None = None
    meta: dict[str, Any] | None = None


@dataclass
class Completion(Injected):
    """What completes one argument of a prompt or template: ``fn(prefix, *, wiki ...)`` giving values
    that start with ``prefix`` (at most 100 are sent)."""

    fn: Callable[..., list[str]]
    inject: frozenset[str] = field(default_factory=frozenset)

    def __call__(self, prefix: str, **available: Any) -> list[str]:
        return list(self.fn(prefix, **self.bind({}, **available)))


def _completions(complete: dict[str, Callable[..., list[str]]] | None) -> dict[str, Completion]:
    return {name: Completion(fn=fn, inject=_injected(fn)) for name, fn in (complete or {}).items()}


@dataclass
class Listing(Injected):
    """What lists a template's resources: ``fn(after, limit, *, wiki ...)``."""

    fn: Callable[..., list[Any]]
    inject: frozenset[str] = field(default_factory=frozenset)


@dataclass
class Resource(Injected):
    fn: Callable[..., Any]
    uri: str
    name: str
    title: str | None
    description: str
    mime_type: str
    scope: str
    inject: frozenset[str] = field(default_factory=frozenset)
    listing: Listing | None = None
    completions: dict[str, Completion] = field(default_factory=dict)

    def lists(self, fn: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
        """Make ``fn`` the lister of this template's resources (see the module's docstring)."""
        self.listing = Listing(fn=fn, inject=_injected(fn))
        return fn

    @property
    def is_template(self) -> bool:
        return "{" in self.uri

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's parameters when ``uri`` matches it, else None."""
        if not self.is_template:
            return {} if uri == self.uri else None
        pattern = re.sub(r"\\\{(\\\+)?(\w+)\\\}", lambda m: f"(?P<{m[2]}>{'.+' if m[1] else '[^/]+'})", re.escape(self.uri))
        m = re.fullmatch(pattern, uri)
        return {k: unquote(v) for k, v in m.groupdict().items()} if m else None


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    mime_type: str = "text/plain",
    scope: str = "read",
    complete: dict[str, Callable[..., list[str]]] | None = None,
) -> Callable[[Callable[..., Any]], Resource]:
    """Make a :class:`Resource` at ``uri`` (a template when it has ``{name}`` parts). ``complete``
    maps a part of the template to a function giving completions of a prefix (as for prompts)."""
    check_scope(scope)

    def make(fn: Callable[..., Any]) -> Resource:
        return Resource(
            fn=fn, uri=uri, name=name or fn.__name__, title=title, description=inspect.cleandoc(fn.__doc__ or ""),
            mime_type=mime_type, scope=scope, inject=_injected(fn), completions=_completions(complete),
        )  # fmt: skip

    return make


@dataclass
class PromptArgument:
    name: str
    description: str
    required: bool


@dataclass
class Prompt(Injected):
    fn: Callable[..., Any]
    name: str
    title: str | None
    description: str
    arguments: list[PromptArgument]
    scope: str
    completions: dict[str, Completion] = field(default_factory=dict)
    inject: frozenset[str] = field(default_factory=frozenset)


def _description(annotation: Any) -> str:
    if get_origin(annotation) is Annotated:
        for meta in get_args(annotation)[1:]:
            if isinstance(meta, FieldInfo) and meta.description:
                return meta.description
    return ""


def prompt(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    title: str | None = None,
    scope: str = "read",
    complete: dict[str, Callable[..., list[str]]] | None = None,
) -> Any:
    """Make a :class:`Prompt`. ``complete`` maps an argument to a function giving completions of a
    prefix: ``fn(prefix)``, or ``fn(prefix, *, wiki)`` for what the caller may see."""
    check_scope(scope)

    def make(func: Callable[..., Any]) -> Prompt:
        hints = get_type_hints(func, include_extras=True)
        arguments = [
            PromptArgument(p.name, _description(hints.get(p.name)), p.default is p.empty)
            for p in inspect.signature(func).parameters.values()
            if not (p.kind is p.KEYWORD_ONLY and p.name in INJECTED)
        ]
        return Prompt(
            fn=func, name=name or func.__name__, title=title, description=inspect.cleandoc(func.__doc__ or ""),
            arguments=arguments, scope=scope, completions=_completions(complete), inject=_injected(func),
        )  # fmt: skip

    return make(fn) if fn is not None else make
