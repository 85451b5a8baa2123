"""Web pages for people: read, browse, search, history, edit and personal access tokens.

Server-rendered with Jinja; no JavaScript build step. Every page goes through the service layer as
the caller (see :mod:`hostcore_web.access`), so the access rules are the MCP tools' own.
``hostcore export-site`` writes a namespace as static files (:mod:`hostcore_web.export`).
"""

from __future__ import annotations

import logging
from typing import Any

import click
from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import Bucket
from markupsafe import Markup

from hostcore import hookimpl

from . import account, views  # noqa: F401  (account adds its routes to the blueprint)

log = logging.getLogger(__name__)


class TemplateCache(FileSystemBytecodeCache):
    """Compiled templates kept in the instance folder. Only a cache: one that cannot be written (a
    full disk) is skipped and said once in the log, and the page is served all the same."""

    _warned = False

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("compiled templates not kept in %s (%s); pages are served all the same", self.directory, exc)


@hookimpl
def register_routes(app: Any, host: Any) -> None:
    app.url_map.converters["ns"] = views.NamespaceConverter
    app.register_blueprint(views.bp)
    if app.jinja_env.bytecode_cache is None:  # compiled templates kept: a restarted worker's first page is not slower
        folder = host.instance_path / "web-templates"
        folder.mkdir(parents=True, exist_ok=True)
        app.jinja_env.bytecode_cache = TemplateCache(str(folder))


@hookimpl
def frame_page(title: str, main: str, head: str) -> str:
    """Another plugin's page (the OAuth consent and connected apps pages) in this site's layout."""
    return views.page("framed.html", title=title, main=Markup(main), head=Markup(head))  # safe HTML, as the hook says


@hookimpl
def page_saved(host: Any, page: Any) -> None:
    """A big page is rendered ahead, off the request path (:class:`hostcore_web.render.Prerender`)."""
    views.prerender(host).add(page.slug, page.body)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .export import export_command

    cli.add_command(export_command)
