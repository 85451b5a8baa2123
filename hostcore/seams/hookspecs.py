"""Every hook hostcore calls. Hooks are always called by keyword.

Contribution hooks are ``register_*(register, ...)``: the host owns ``register``, validates what
it is given and rejects duplicate names at start-up. Questions (``authenticate``) return the
first non-None answer. Events (``storage_changed``, ``page_saved`` ...) notify every plugin after a
change is stored; an event hook that raises is logged and never undoes or fails the change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click
    import flask
    from werkzeug import Request

    from hostcore.domain.pages import Page
    from hostcore.domain.principal import Principal
    from hostcore.seams.host import PluginHost, ServiceRegister
    from hostcore.seams.index import DerivedIndex
    from hostcore.seams.storage import Change

hookspec = pluggy.HookspecMarker("hostcore")
hookimpl = pluggy.HookimplMarker("hostcore")


@hookspec
def register_tools(register: Callable[..., Any], host: PluginHost) -> None:
    """Contribute MCP tools: call ``register(fn)`` for each function decorated with ``@tool``."""


@hookspec
def register_resources(register: Callable[..., Any], host: PluginHost) -> None:
    """Contribute MCP resources: ``register(r)`` for each object made with ``@hostcore.resource``."""


@hookspec
def register_prompts(register: Callable[..., Any], host: PluginHost) -> None:
    """Contribute MCP prompts: ``register(p)`` for each object made with ``@hostcore.prompt``."""


@hookspec
def register_services(register: ServiceRegister, host: PluginHost) -> None:
    """Offer other plugins a service: ``register(KEY, service)`` with ``KEY`` a
    ``hostcore.ServiceKey(name, Protocol)``; they find it with ``host.service(KEY)``."""


@hookspec
def register_storage_backends(register: Callable[[type], None]) -> None:
    """Contribute storage backends: ``register(cls)`` for each ``Storage`` subclass (by its ``name``)."""


@hookspec
def register_search_backends(register: Callable[[type], None]) -> None:
    """Contribute search backends: ``register(cls)`` for each ``SearchBackend`` subclass (by ``name``)."""


@hookspec
def register_extractors(register: Callable[[type], None]) -> None:
    """Contribute text extractors: ``register(cls)`` for each ``Extractor`` subclass (asked in plugin order)."""


@hookspec
def register_embedders(register: Callable[[type], None]) -> None:
    """Contribute embedders: ``register(cls)`` for each ``Embedder`` subclass (by its ``name``); ``EMBEDDER`` picks one."""


@hookspec
def register_derived_indexes(register: Callable[[DerivedIndex], None], host: PluginHost) -> None:
    """Contribute derived indexes: ``register(index)`` for each ``DerivedIndex`` instance (by its
    ``name``); the host keeps each one current with storage's changes, in commit order."""


@hookspec
def register_routes(app: flask.Flask, host: PluginHost) -> None:
    """Add web routes (blueprints, views) to the Flask app. Paths that are not pages live under ``/_/``."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add CLI commands to ``hostcore``. ``@click.pass_obj`` gives a context whose ``host()`` builds the host."""


@hookspec(firstresult=True)
def authenticate(request: Request, host: PluginHost) -> Principal | None:
    """Who is calling? Return a Principal for credentials you recognise, else None.

    Raise ``hostcore.Unauthorized`` for credentials you own (your token prefix) that are invalid,
    so no other plugin is asked.
    """


@hookspec(firstresult=True)
def find_person(name: str, host: PluginHost) -> Principal | None:
    """The person ``name`` signed in to a browser session, as a Principal (their scopes and
    namespaces), or None if you do not know them or they may no longer sign in (disabled)."""


@hookspec
def sign_in_options(host: PluginHost) -> list[tuple[str, str]] | None:
    """Other ways to sign in, as ``(label, url)`` pairs: the sign-in page shows a "Sign in with
    <label>" button for each, sending the ``next`` path along as a query parameter."""


@hookspec(firstresult=True)
def frame_page(title: str, main: str, head: str, host: PluginHost) -> str | None:
    """A whole HTML page in the site's frame (its header, navigation and stylesheet) around
    another plugin's page, called while that plugin answers a request: ``main`` is the page's
    content, safe HTML for inside ``<main>``; ``head`` safe HTML for ``<head>`` (its stylesheet).
    None (no plugin frames pages): the caller serves a plain page of its own."""


@hookspec
def startup(host: PluginHost) -> None:
    """The host is built: check your config and prepare state. Raise StartupError with the fix."""


@hookspec
def instance_created(host: PluginHost) -> str | None:
    """``hostcore init`` made a new instance: create first-run state; return a line to show the operator."""


@hookspec
def storage_changed(host: PluginHost, paths: list[str], change: Change) -> None:
    """A change was stored through this process: ``paths`` are the storage paths it wrote or
    deleted (pages, attachments, namespace settings), sorted. Comes before the page event."""


@hookspec
def page_saved(host: PluginHost, page: Page, previous: Page | None, change: Change) -> None:
    """A page was created or updated (``previous`` is None on create)."""


@hookspec
def page_deleted(host: PluginHost, page: Page, change: Change) -> None:
    """A page was deleted; ``page`` is its last content."""


@hookspec
def page_moved(host: PluginHost, page: Page, old_slug: str, change: Change) -> None:
    """A page moved from ``old_slug`` to ``page.slug`` (by move_page or rename_page)."""
