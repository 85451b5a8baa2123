"""``hostcore export-site``: one namespace as static files a plain web server can serve.

Follows the namespace's ``export`` settings (contract): ``base_url`` (where the folder will be
served; needed for the sitemap and canonical links), ``sitemap`` (write ``sitemap.xml``),
``robots_allow`` (``robots.txt`` allows crawling; otherwise it disallows everything and every page
carries ``<meta name="robots" content="noindex">``) and ``links`` (``pretty``: each page is
``name/index.html`` and linked as ``name/``; anything else: ``name.html``). Pages keep the
namespace's skin and palette; links to pages outside the namespace are shown as missing.

The attachments the pages link or show, and the namespace's ``image``, are copied to
``_files/<page>/<filename>`` and linked there (relative links), so the folder needs no hostcore.
Only attachments of the namespace's own pages are copied; a link to any other, or to one that is
missing, points nowhere (``#``).
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape as xml_escape

from jinja2 import Environment, PackageLoader, select_autoescape

from hostcore import SYSTEM, NotFound, PluginHost, Principal, ValidationError, check_namespace

from . import render
from .widgets import ordered

STATIC = Path(__file__).parent / "static"


class Layout:
    """Where each page goes in the folder and how one page links to another. The namespace's index
    page is the folder's ``index.html``."""

    def __init__(self, namespace: str, pretty: bool, index_slug: str = "") -> None:
        self.namespace, self.pretty, self.index_slug = namespace, pretty, index_slug

    def file(self, slug: str) -> str:
        rel = slug.split("/", 1)[1]
        if slug == self.index_slug:
            return "index.html"
        return f"{rel}/index.html" if self.pretty else f"{rel}.html"

    def url(self, slug: str) -> str:
        rel = slug.split("/", 1)[1]
        if slug == self.index_slug:
            return "./" if self.pretty else "index.html"
        return f"{rel}/" if self.pretty else f"{rel}.html"

    def href(self, from_slug: str | None, to_slug: str, heading: str | None = None) -> str:
        start = posixpath.dirname(self.file(from_slug)) if from_slug else ""
        target = self.url(to_slug)
        rel = posixpath.relpath(target, start or ".")
        if target.endswith("/") and not rel.endswith("/"):
            rel += "/"
        return quote(rel) + (f"#{render.anchor(heading)}" if heading else "")

    def root(self, from_slug: str | None) -> str:
        """The relative path from a page to the folder's root (where the index and assets are)."""
        start = posixpath.dirname(self.file(from_slug)) if from_slug else ""
        return posixpath.relpath(".", start or ".").rstrip("/") + "/" if start else ""


class Files:
    """The namespace's attachments the export uses, copied into ``_files/`` once each."""

    def __init__(self, wiki: Any, namespace: str, out: Path) -> None:
        self.wiki, self.namespace, self.out = wiki, namespace, out
        self.copied: dict[tuple[str, str], str | None] = {}

    def path(self, slug: str, filename: str) -> str | None:
        """The copy's path in the folder (``_files/<page>/<filename>``), or None when it is not the
        namespace's or cannot be read."""
        key = (slug, filename)
        if key not in self.copied:
            rel = None
            if slug.split("/", 1)[0] == self.namespace:
                try:
                    data, _type, _digest = self.wiki.attachment(slug, filename)
                except (NotFound, ValidationError):
                    data = None
                if data is not None:
                    rel = f"_files/{slug.split('/', 1)[1]}/{filename}"
                    target = self.out / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
            self.copied[key] = rel
        return self.copied[key]


def export_namespace(host: PluginHost, namespace: str, out: Path) -> dict[str, Any]:
    """Write ``namespace`` to ``out`` (made if missing). Returns what was written. Raises ValidationError."""
    check_namespace(namespace, "namespace")
    settings: dict[str, Any] = dict(host.wiki(SYSTEM).read_namespace(namespace))
    export = settings.get("export") or {}
    base_url = str(export.get("base_url") or "")
    if export.get("sitemap") and not base_url:
        raise ValidationError("export.sitemap needs export.base_url (where the folder will be served); set it with save_namespace",
                              field="export.base_url")  # fmt: skip
    if base_url and not base_url.endswith("/"):
        base_url += "/"
    noindex = render.noindex(settings)
    index_slug = f"{namespace}/{settings.get('index') or 'index'}"
    layout = Layout(namespace, export.get("links") == "pretty", index_slug)
    reader = Principal("export", frozenset({"read"}), frozenset({namespace}), rate_limited=False)
    wiki = host.wiki(reader)
    facts = wiki.page_facts(namespace)
    in_namespace = {f["slug"] for f in facts}
    env = Environment(loader=PackageLoader("hostcore_web", "templates"), autoescape=select_autoescape(["html"]))
    out.mkdir(parents=True, exist_ok=True)
    files = Files(wiki, namespace, out)
    page_name, _, image_name = str(settings.get("image") or "").rpartition("/")
    image = files.path(f"{namespace}/{page_name}", image_name) if page_name else None
    common = {"settings": settings, "namespace": namespace, "noindex": noindex, **render.look(settings)}

    def preview(own: tuple[str, str] | None) -> str:
        """The absolute URL of a page's link preview image (its own, else the namespace's); needs base_url."""
        path = (files.path(*own) if own else None) or image
        return base_url + quote(path) if path and base_url else ""

    mermaid = False
    index_body = None
    for fact in facts:
        slug = fact["slug"]
        page = wiki.page(slug)
        root = layout.root(slug)

        def href(target: str, heading: str | None, _from: str = slug) -> str:
            return layout.href(_from, target, heading) if target in in_namespace else "#"

        def file_href(owner: str, filename: str, _root: str = root) -> str:
            path = files.path(owner, filename)
            return quote(_root + path) if path else "#"

        body = render.render(page.body, slug, lambda targets: {t for t in targets if t in in_namespace}, href, file_href)
        mermaid = mermaid or body.mermaid
        if slug == index_slug:
            index_body = body
            continue  # the folder's index.html below shows it
        canonical = base_url + layout.url(slug) if base_url else ""
        body, title_anchor = render.without_title(body, page.title)
        html = env.get_template("export_page.html").render(
            page=page, body=body, title_anchor=title_anchor, root=root, canonical=canonical, title=page.title, home=root + "index.html",
            image=quote(image) if image else "", preview=preview(body.image), **common,
        )  # fmt: skip
        target = out / layout.file(slug)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    pages = [{"title": f["title"], "href": layout.href(None, f["slug"])} for f in ordered(facts, [], namespace) if f["slug"] != index_slug]
    title = settings.get("title") or namespace
    index_body, title_anchor = render.without_title(index_body, title) if index_body else (None, None)
    index_html = env.get_template("export_index.html").render(
        pages=pages, body=index_body, title_anchor=title_anchor, root="", canonical=base_url, title=title, home="index.html",
        image=quote(image) if image else "", preview=preview(index_body.image if index_body else None), **common,
    )  # fmt: skip
    (out / "index.html").write_text(index_html, encoding="utf-8")
    assets = out / "_assets"
    assets.mkdir(exist_ok=True)
    shutil.copyfile(STATIC / "web.css", assets / "web.css")
    (assets / "highlight.css").write_text(render.pygments_css(), encoding="utf-8")
    if mermaid and (STATIC / "vendor" / "mermaid.min.js").exists():
        shutil.copyfile(STATIC / "vendor" / "mermaid.min.js", assets / "mermaid.min.js")
        shutil.copyfile(STATIC / "web.js", assets / "web.js")
    robots = "User-agent: *\n" + ("Allow: /\n" if not noindex else "Disallow: /\n")
    if export.get("sitemap"):
        robots += f"Sitemap: {base_url}sitemap.xml\n"
        urls = [base_url] + [base_url + layout.url(f["slug"]) for f in facts if f["slug"] != index_slug]
        entries = "".join(f"  <url><loc>{xml_escape(quote(u, safe=':/'))}</loc></url>\n" for u in urls)
        (out / "sitemap.xml").write_text(
            f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{entries}</urlset>\n',
            encoding="utf-8",
        )
    (out / "robots.txt").write_text(robots, encoding="utf-8")
    return {"namespace": namespace, "pages": len(facts), "files": sum(1 for p in files.copied.values() if p),
            "folder": str(out), "sitemap": bool(export.get("sitemap")), "noindex": noindex}  # fmt: skip
