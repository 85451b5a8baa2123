"""Markdown to safe HTML: markdown-it-py (CommonMark, tables, strikethrough), wiki-links resolved,
headings with anchors, code highlighted by Pygments on the server, mermaid fences left for the
browser, and everything passed through nh3 so that nothing a page's author writes can run.

Raw HTML in a page is shown as text (markdown-it's ``html`` option off); nh3 then keeps only the
tags and attributes this renderer makes, and only http(s), mailto and relative URLs.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from hostcore import split_attachment_url, wiki_links

_WIKI_LINK = re.compile(r"\[\[([^\[\]|#\n]+?)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_FORMATTER = HtmlFormatter(nowrap=True)
TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "span": {"class"},
    "pre": {"class"},
    "code": {"class"},
    "div": {"class"},
    "ol": {"start"},
    **{f"h{n}": {"id"} for n in range(1, 7)},
}
URL_SCHEMES = {"http", "https", "mailto"}
FILES_PATH = "/_/web/files/"
"""Where the web serves attachments to people (their session, or a public namespace): the MCP
route (``/_/files/``) takes bearer tokens only, so a page's links and images to attachments point here."""


def anchor(text: str) -> str:
    """The id of a heading: its text lower-cased, runs of anything but letters and digits as '-'.
    ``read_page``'s ``section`` takes the heading text itself (shown as the anchor's title)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[^\w]+", "-", folded).strip("-_") or "section"


def resolve(target: str, from_slug: str) -> str:
    """A wiki-link target without a namespace points into the linking page's namespace (as the link graph reads it)."""
    target = target.strip().strip("/")
    return target if "/" in target else f"{from_slug.split('/', 1)[0]}/{target}"


def page_href(slug: str, heading: str | None = None) -> str:
    return "/" + quote(slug) + (f"#{anchor(heading)}" if heading else "")


def file_href(slug: str, filename: str) -> str:
    """The web URL of an attachment (see :data:`FILES_PATH`)."""
    return FILES_PATH + quote(f"{slug}/{filename}")


@dataclass
class Rendered:
    html: str
    headings: list[tuple[int, str, str]] = field(default_factory=list)  # level, text, anchor
    mermaid: bool = False
    links: int = 0
    image: tuple[str, str] | None = None  # (slug, filename) of the first PNG or JPEG attachment the page shows


def _wiki_link_rule(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("[[", state.pos):
        return False
    m = _WIKI_LINK.match(state.src, state.pos)
    if m is None:
        return False
    if not silent:
        env = state.env
        target = resolve(m.group(1), env["slug"])
        heading = m.group(2)
        label = (m.group(3) or "").strip() or m.group(1).strip() + (f"#{heading}" if heading else "")
        exists = target in env["existing"]
        token = state.push("wiki_link", "", 0)
        token.meta = {"target": target, "heading": heading, "label": label, "exists": exists}
    state.pos = m.end()
    return True


def _render_wiki_link(_self: Any, tokens: list[Any], idx: int, _options: Any, env: dict[str, Any]) -> str:
    meta = tokens[idx].meta
    href = escape(env["href"](meta["target"], meta["heading"]))
    label = escape(meta["label"])
    env["links"] = env.get("links", 0) + 1
    if meta["exists"]:
        return f'<a class="wikilink" href="{href}">{label}</a>'
    return f'<a class="wikilink missing" href="{href}" title="{escape(meta["target"])} does not exist yet">{label}</a>'


def _highlight(code: str, lang: str, _attrs: str) -> str:
    lang = (lang or "").strip().split()[0].lower() if lang and lang.strip() else ""
    if lang == "mermaid":
        return f'<pre class="mermaid">{escape(code)}</pre>'
    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return f'<pre class="code"><code>{escape(code)}</code></pre>'
    return f'<pre class="code highlight"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>'


def _heading_ids(state: Any) -> None:
    seen: dict[str, int] = {}
    out = state.env.setdefault("headings", [])
    tokens = state.tokens
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        text = tokens[i + 1].content.strip()
        base = anchor(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        ident = base if n == 0 else f"{base}-{n + 1}"
        token.attrSet("id", ident)
        out.append((int(token.tag[1]), text, ident))


def _attachment_urls(state: Any) -> None:
    """Links and images to attachment URLs (``/_/files/...``) point where ``env["file_href"]`` says."""
    files = state.env["file_href"]
    for token in state.tokens:
        for child in token.children or ():
            attr = "src" if child.type == "image" else "href" if child.type == "link_open" else None
            url = child.attrGet(attr) if attr else None
            target = split_attachment_url(url) if isinstance(url, str) else None
            if target is None:
                continue
            child.attrSet(attr, files(*target))
            if child.type == "image" and "image" not in state.env and target[1].lower().endswith((".png", ".jpg", ".jpeg")):
                state.env["image"] = target


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "wiki_link", _wiki_link_rule)
    md.add_render_rule("wiki_link", _render_wiki_link)
    md.core.ruler.push("heading_ids", _heading_ids)
    md.core.ruler.push("attachment_urls", _attachment_urls)
    return md


_MD = _markdown()


def sanitise(html: str) -> str:
    return nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES, link_rel="noopener noreferrer")


def render(
    body: str,
    slug: str,
    existing: Callable[[list[str]], set[str]],
    href: Callable[[str, str | None], str] = page_href,
    files: Callable[[str, str], str] = file_href,
) -> Rendered:
    """``body`` of page ``slug`` as safe HTML. ``existing`` answers which wiki-link targets are pages
    (asked once, for all of them); ``href`` makes the URL of a page (and heading), ``files`` that of
    an attachment (slug, filename)."""
    env: dict[str, Any] = {"slug": slug, "existing": existing(wiki_links(body, slug)), "href": href, "file_href": files}
    html = _MD.render(body, env)
    return Rendered(
        html=sanitise(html),
        headings=env.get("headings", []),
        mermaid='<pre class="mermaid">' in html,
        links=env.get("links", 0),
        image=env.get("image"),
    )


DARK = {"phosphor", "dracula", "everforest", "gruvbox", "nord", "rose-pine", "tokyo-night"}


def look(settings: dict[str, Any]) -> dict[str, Any]:
    """The body classes of a namespace's ``skin`` and ``palette``: skin, palette (CSS-safe) and dark."""
    skin = settings.get("skin") or "default"
    palette = (settings.get("palette") or "skin").replace(" ", "-").replace("é", "e")
    return {"skin": skin, "palette": palette, "dark": palette in DARK or (palette == "skin" and skin == "phosphor")}


class RenderCache:
    """Rendered pages by (slug, hash, wiki-link targets that exist, link style): the output depends
    on nothing else, so an entry never goes stale. Least recently used entries go past ``limit`` bytes."""

    def __init__(self, limit: int = 64 * 1024 * 1024) -> None:
        self.limit, self.size = limit, 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Any, ...], Rendered] = OrderedDict()

    def render(self, body: str, slug: str, digest: str, existing: Callable[[list[str]], set[str]]) -> Rendered:
        targets = wiki_links(body, slug)
        found = existing(targets) if targets else set()
        key = (slug, digest, frozenset(found))
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        out = render(body, slug, lambda _targets: found)
        with self._lock:
            if key not in self._entries:
                self._entries[key] = out
                self.size += len(out.html)
            while self.size > self.limit and self._entries:
                _key, old = self._entries.popitem(last=False)
                self.size -= len(old.html)
        return out


def pygments_css() -> str:
    """The stylesheet of highlighted code, light and dark."""
    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    dark = HtmlFormatter(style="monokai").get_style_defs(".dark .highlight")
    return f"{light}\n{dark}\n"
