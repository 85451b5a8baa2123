"""Web pages for people: read, browse, search, history, edit and personal access tokens.

Server-rendered with Jinja; no JavaScript build step. Every page goes through the service layer as
the caller (see :mod:`hostcore_web.access`), so the access rules are the MCP tools' own.
``hostcore export-site`` writes a namespace as static files (:mod:`hostcore_web.export`).
"""

from __future__ import annotations

from typing import Any

import click

from hostcore import hookimpl

from . import account, views  # noqa: F401  (account adds its routes to the blueprint)


@hookimpl
def register_routes(app: Any) -> None:
    app.url_map.converters["ns"] = views.NamespaceConverter
    app.register_blueprint(views.bp)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .export import export_command

    cli.add_command(export_command)
