"""Web pages for people: read, browse, search, history, edit and personal access tokens.

Server-rendered with Jinja; no JavaScript build step. Every page goes through the service layer as
the caller (see :mod:`hostcore_web.access`), so the access rules are the MCP tools' own.
``hostcore export-site`` writes a namespace as static files (:mod:`hostcore_web.export`).
"""

from __future__ import annotations

from typing import Any

import click
from jinja2 import FileSystemBytecodeCache

from hostcore import hookimpl

from . import account, section_edit, views  # noqa: F401  (account and section_edit add their routes to the blueprint)


@hookimpl
def register_routes(app: Any, host: Any) -> None:
    app.url_map.converters["ns"] = views.NamespaceConverter
    app.register_blueprint(views.bp)
    if app.jinja_env.bytecode_cache is None:  # compiled templates kept: a restarted worker's first page is not slower
        folder = host.instance_path / "web-templates"
        folder.mkdir(parents=True, exist_ok=True)
        app.jinja_env.bytecode_cache = FileSystemBytecodeCache(str(folder))


@hookimpl
def page_saved(host: Any, page: Any) -> None:
    """A big page is rendered ahead, off the request path (:class:`hostcore_web.render.Prerender`)."""
    views.prerender(host).add(page.slug, page.body)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .export import export_command

    cli.add_command(export_command)
