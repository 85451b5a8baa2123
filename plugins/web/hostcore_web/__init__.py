"""Web pages for people: read, browse, search, history, edit and personal access tokens.

Server-rendered with Jinja; no JavaScript build step. Every page goes through the service layer as
the caller (see :mod:`hostcore_web.access`), so the access rules are the MCP tools' own.
``hostcore export-site`` writes a namespace as static files (:mod:`hostcore_web.export`).

The views (Flask, the Markdown renderer) are imported by the hooks that use them, so a CLI
command that only lists the plugin's commands does not load them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hostcore import PluginHost, hookimpl


@hookimpl
def register_routes(app: Any, host: PluginHost) -> None:
    from . import account, attachments, comments, editor, namespace_admin, review, section_edit, views  # noqa: F401  (these modules add their routes to the blueprint)
    from .template_cache import TemplateCache

    app.url_map.converters["ns"] = views.NamespaceConverter
    app.register_blueprint(views.bp)
    if app.jinja_env.bytecode_cache is None:  # compiled templates kept: a restarted worker's first page is not slower
        folder = host.instance_path / "web-templates"
        folder.mkdir(parents=True, exist_ok=True)
        app.jinja_env.bytecode_cache = TemplateCache(str(folder))


@hookimpl
def frame_page(title: str, main: str, head: str) -> str:
    """Another plugin's page (the OAuth consent and connected apps pages) in this site's layout."""
    from markupsafe import Markup

    from . import views

    return views.page("framed.html", title=title, main=Markup(main), head=Markup(head))  # safe HTML, as the hook says


@hookimpl
def page_saved(host: PluginHost, page: Any) -> None:
    """A big page is rendered ahead, off the request path (:class:`hostcore_web.render.Prerender`)."""
    from . import views

    views.prerender(host).add(page.slug, page.body)


@click.command("export-site")
@click.option("--namespace", "namespaces", multiple=True, required=True, help="namespace to export; repeat for several")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="folder to write; each namespace goes to a subfolder of its name")  # fmt: skip
@click.pass_obj
def export_command(obj: Any, namespaces: tuple[str, ...], out: Path) -> None:
    """Write namespaces as static HTML (with sitemap.xml and robots.txt per their export settings)."""
    from .export import export_namespace

    host = obj.host()
    for namespace in namespaces:
        done = export_namespace(host, namespace, out / namespace)
        click.echo(f"{namespace}: {done['pages']} pages, {done['files']} files -> {done['folder']}"
                   + (" (noindex)" if done["noindex"] else ""))  # fmt: skip


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(export_command)
