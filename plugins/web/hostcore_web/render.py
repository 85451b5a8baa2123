"""Markdown to safe HTML: markdown-it-py (CommonMark, tables, strikethrough), wiki-links resolved,
headings with anchors, code highlighted by Pygments on the server, mermaid fences left for the
browser, and everything passed through nh3 so that nothing a page's author writes can run.

Raw HTML in a page is shown as text (markdown-it's ``html`` option off); nh3 then keeps only the
tags and attributes this renderer makes, and only http(s), mailto and relative URLs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import sqlite3
import threading
import time
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from html import escape, unescape
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import markdown_it
import nh3
import pygments
from markdown_it import MarkdownIt
from markdown_it.rules_core.state_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markupsafe import Markup
from mdit_py_plugins.tasklists import tasklists_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from hostcore import CoalescingWorker, DerivedDB, rows_in, split_attachment_url, wiki_links

log = logging.getLogger("hostcore.web")

_WIKI_LINK = re.compile(r"\[\[([^\[\]|#\n]+?)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_FORMATTER = HtmlFormatter(nowrap=True)
TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead",
    "tr", "ul", "input",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "span": {"class"},
    "pre": {"class"},
    "code": {"class"},
    "div": {"class"},
    "ol": {"start", "class"},
    "ul": {"class"},
    "li": {"class"},
    "input": {"class"},
    **{f"h{n}": {"id"} for n in range(1, 7)},
}
ATTRIBUTE_VALUES = {"input": {"type": {"checkbox"}, "checked": {"checked"}}}
"""The only input a page holds is a task list's checkbox (``- [ ]``), always disabled (FORCED):
a page is not a form."""
FORCED = {"input": {"disabled": "disabled"}}
URL_SCHEMES = {"http", "https", "mailto"}
_REL = "noopener noreferrer"
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
    lexer = _lexer(lang) if lang else None
    if lexer is None:
        return f'<pre class="code"><code>{escape(code)}</code></pre>'
    return f'<pre class="code highlight"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>'


@functools.lru_cache(maxsize=128)
def _lexer(lang: str) -> Lexer | None:
    """The lexer of a fence's language (made once: a lexer is reusable), None for an unknown one."""
    try:
        return get_lexer_by_name(lang)
    except ClassNotFound:
        return None


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
    tasklists_plugin(md)  # "- [ ] item": a disabled checkbox, not a literal "[ ]"
    md.inline.ruler.before("link", "wiki_link", _wiki_link_rule)
    md.add_render_rule("wiki_link", _render_wiki_link)
    md.core.ruler.push("heading_ids", _heading_ids)
    md.core.ruler.push("attachment_urls", _attachment_urls)
    return md


_MD = _markdown()


def sanitise(html: str) -> str:
    return nh3.clean(
        html, tags=TAGS, attributes=ATTRIBUTES, tag_attribute_values=ATTRIBUTE_VALUES, set_tag_attribute_values=FORCED,
        url_schemes=URL_SCHEMES, link_rel=_REL,
    )  # fmt: skip


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


_OPENING_H1 = re.compile(r'\A\s*<h1 id="([^"]*)">(.*?)</h1>\s*', re.S)
_TAG = re.compile(r"<[^>]*>")


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def without_title(body: Rendered, title: str) -> tuple[Rendered, str | None]:
    """``body`` without its opening level-1 heading when that heading says ``title`` (the page
    shows its title above the body, and once is enough), with the heading's anchor, which the
    title then carries; else ``body`` as it is and None."""
    m = _OPENING_H1.match(body.html)
    if m is None or _folded(unescape(_TAG.sub("", m.group(2)))) != _folded(title):
        return body, None
    return replace(body, html=body.html[m.end() :]), m.group(1)


_MARK, _UNMARK = "\ue000", "\ue001"  # a match's bounds while the snippet is plain text (never in it: dropped first)
_KEPT = 0xE100  # an escaped punctuation character, shifted here while the syntax around it goes
_KEPT_CHAR = re.compile("[\ue100-\ue17f]")
_PRIVATE = re.compile("[\ue000-\ue17f]")
_SNIPPET_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")  # [label](url), ![alt](url)
# at a line's start: a heading's, quote's or list item's marker (with a task's box), a table's rule
_SNIPPET_LINE = re.compile(r"(?m)^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?|\|?[ \t]*:?-{3,}.*$)")
# anywhere: emphasis, strike-through, code and table cell bounds (an underscore inside a word is a letter)
_SNIPPET_INLINE = re.compile(r"\*{1,3}|~~|`+|\||(?<![\w\ue000\ue001])_{1,3}|_{1,3}(?![\w\ue000\ue001])")
_SNIPPET_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def snippet_text(snippet: str) -> Markup:
    """A search snippet (escaped HTML of a page's Markdown, ``<mark>`` around the matches) as the
    text a reader sees: the Markdown's syntax left out (emphasis, code, heading and list markers,
    links and wiki-links down to their labels), the matches still marked, the rest escaped."""
    parts = re.split(r"(</?mark>)", snippet)
    text = "".join(
        _MARK if part == "<mark>" else _UNMARK if part == "</mark>" else _PRIVATE.sub("", unescape(part)) for part in parts
    )
    text = _SNIPPET_ESCAPE.sub(lambda m: chr(_KEPT + ord(m.group(1))), text)  # "\*" is a star: kept from what follows
    text = _WIKI_LINK.sub(lambda m: (m.group(3) or "").strip() or m.group(1).strip(), text)
    text = _SNIPPET_LINK.sub(r"\1", text)
    text = _SNIPPET_LINE.sub("", text)
    text = _SNIPPET_INLINE.sub("", text)
    text = _KEPT_CHAR.sub(lambda m: chr(ord(m.group(0)) - _KEPT), text)
    out, marked = [], False
    for char in " ".join(text.split()):
        if char in (_MARK, _UNMARK):
            if (char == _MARK) == marked:  # a bound whose partner went with the syntax around it
                continue
            marked = not marked
            out.append("<mark>" if marked else "</mark>")
        else:
            out.append(escape(char, quote=False))
    if marked:
        out.append("</mark>")
    return Markup("".join(out).replace("<mark></mark>", ""))


DARK = {"phosphor", "dracula", "everforest", "gruvbox", "nord", "rose-pine", "tokyo-night"}


def look(settings: dict[str, Any]) -> dict[str, Any]:
    """The body classes of a namespace's ``skin`` and ``palette``: skin, palette (CSS-safe) and dark."""
    skin = settings.get("skin") or "default"
    palette = (settings.get("palette") or "skin").replace(" ", "-").replace("é", "e")
    return {"skin": skin, "palette": palette, "dark": palette in DARK or (palette == "skin" and skin == "phosphor")}


def noindex(settings: dict[str, Any]) -> bool:
    """Whether a namespace's pages ask search engines not to list them (live and exported alike):
    unless its ``export.robots_allow`` is true."""
    return not (settings.get("export") or {}).get("robots_allow", False)


class _Everything:
    """Wiki-link targets that exist, for a render whose missing links are marked afterwards (:func:`mark_missing`)."""

    def __contains__(self, _item: object) -> bool:
        return True


_WIKI_ANCHOR = re.compile(r'<a class="wikilink" href="([^"]*)"')


def mark_missing(html: str, found: Collection[str]) -> str:
    """``html`` rendered as if every wiki-link's target existed, with the links to pages not in
    ``found`` marked missing: the same HTML as :func:`render` with ``existing`` answering ``found``."""

    def mark(m: re.Match[str]) -> str:
        href = unescape(m.group(1))
        target = unquote(href.split("#", 1)[0][1:])
        return m.group(0) if target in found else _missing_tag(href, target)

    return _WIKI_ANCHOR.sub(mark, html)


@functools.lru_cache(maxsize=4096)
def _missing_tag(href: str, target: str) -> str:
    """The start of a missing link's tag as :func:`render` makes it, up to its ``rel``."""
    tag = f'<a class="wikilink missing" href="{escape(href)}" title="{escape(target)} does not exist yet">'
    return sanitise(tag + "x</a>").rsplit("x</a>", 1)[0].removesuffix(f' rel="{_REL}">')


_WHOLE_PAGE_RULES = {"heading_ids"}  # core rules after "block" that need every block (anchors are numbered across the page)


def _phases() -> tuple[list[Callable[[StateCore], None]], list[Callable[[StateCore], None]]]:
    """The parser's core rules, as :func:`render` runs them, split: those run on the whole page
    (up to the block parse, and those of ``_WHOLE_PAGE_RULES``), and those run on each block."""
    ruler = _MD.core.ruler
    rules = list(zip(ruler.get_active_rules(), ruler.getRules(""), strict=True))
    cut = [name for name, _fn in rules].index("block") + 1
    whole = [fn for _name, fn in rules[:cut]] + [fn for name, fn in rules[cut:] if name in _WHOLE_PAGE_RULES]
    return whole, [fn for name, fn in rules[cut:] if name not in _WHOLE_PAGE_RULES]


def _blocks(tokens: list[Token]) -> list[list[Token]]:
    """Block tokens cut into top-level blocks (a paragraph, a list, a fence ...), each rendered on its own."""
    out: list[list[Token]] = []
    current: list[Token] = []
    for token in tokens:
        current.append(token)
        if token.level == 0 and token.nesting <= 0:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _key(block: list[Token], context: bytes) -> str:
    """What a block's HTML depends on: its tokens (not their line numbers) and ``context``."""
    digest = hashlib.blake2b(context, digest_size=20)
    for t in block:
        digest.update(repr((t.type, t.tag, t.nesting, t.level, t.attrs, t.content, t.markup, t.info, t.meta, t.hidden)).encode())
    return digest.hexdigest()


_FINGERPRINT = hashlib.blake2b(
    Path(__file__).read_bytes() + repr([m.__version__ for m in (markdown_it, nh3, pygments)]).encode(), digest_size=8
).digest()  # this renderer's code and libraries: blocks kept on disk by an older one are never used


_BLOCKS = """
CREATE TABLE IF NOT EXISTS blocks (key TEXT PRIMARY KEY, html TEXT NOT NULL, facts TEXT, made REAL NOT NULL);
CREATE INDEX IF NOT EXISTS blocks_made ON blocks(made);
"""
Block = tuple[str, "dict[str, Any] | None"]
"""A block's sanitised HTML, and what its rendering told about the page (``PAGE_FACTS``), if anything."""
PAGE_FACTS = ("image",)
"""Keys core rules set in the env about the whole page, the first block's value winning (see ``_attachment_urls``)."""


class BlockStore:
    """Blocks' sanitised HTML by key, in a SQLite file in the instance folder: shared by the workers
    and kept across restarts. Only a cache: an error reads as a miss (logged once per store), a
    damaged file is set aside (never checked at start-up: the file changes all the time) and made
    anew at next use, and the oldest blocks go when they pass ``limit`` bytes. Each thread keeps
    its connection open (closing the last one to a WAL file checkpoints it: milliseconds on every
    first read of a page)."""

    def __init__(self, path: Path, limit: int = 256 * 1024 * 1024) -> None:
        self.path, self.limit = path, limit
        # a block lost in a crash is rendered again; a busy file is skipped (the timeout), not waited for
        self._db = DerivedDB(path, "rendered blocks", _BLOCKS, timeout=0.2, pragmas=("synchronous=OFF",))
        self._warned = False
        self._added = 0
        weakref.finalize(self, self._db.close)

    def _failed(self, exc: Exception) -> None:
        if not self._db.recover(exc) and not self._warned:
            self._warned = True
            log.warning("rendered blocks in %s: %s (pages are rendered again meanwhile)", self.path, exc)

    def get(self, keys: list[str]) -> dict[str, Block]:
        found: dict[str, Block] = {}
        try:
            db = self._db.connection()
            rows = rows_in(db, "SELECT key, html, facts FROM blocks WHERE key IN", keys)
            found.update((k, (h, json.loads(f) if f else None)) for k, h, f in rows)
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
        return found

    def put(self, blocks: dict[str, Block]) -> None:
        try:
            now = time.time()
            with self._db.transaction(mark=False) as db:
                db.executemany(
                    "INSERT OR IGNORE INTO blocks (key, html, facts, made) VALUES (?, ?, ?, ?)",
                    [(k, h, json.dumps(f) if f else None, now) for k, (h, f) in blocks.items()],
                )
            self._added += sum(len(h) for h, _f in blocks.values())
            if self._added > self.limit // 16:  # now and then: past the limit, the oldest quarter goes
                self._added = 0
                db = self._db.connection()
                if db.execute("SELECT total(length(html)) FROM blocks").fetchone()[0] > self.limit:
                    db.execute("DELETE FROM blocks WHERE made <= (SELECT made FROM blocks ORDER BY made LIMIT 1 OFFSET "
                               "(SELECT count(*) / 4 FROM blocks))")  # fmt: skip
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)


class RenderCache:
    """Pages rendered, at two levels, so that neither a reread nor an edit renders a page again:

    - whole pages by (slug, hash, wiki-link targets that exist): the output depends on nothing else,
      so an entry never goes stale; least recently used entries go past ``limit`` bytes;
    - each top-level block (paragraph, list, fence ...) by its tokens, the page's link reference
      definitions and namespace, in memory (up to a quarter of ``limit``) and in ``store`` (shared
      by workers, kept across restarts): the first read after an edit parses the page's blocks
      (cheap) and renders only the blocks that changed; wiki-links are rendered as existing and
      those missing marked afterwards.

    The HTML is the same as :func:`render`'s.
    """

    def __init__(self, limit: int = 64 * 1024 * 1024, store: BlockStore | None = None) -> None:
        self.limit, self.size = limit, 0
        self.store = store
        self.blocks_rendered = 0  # blocks this cache had to render (the others were kept)
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Any, ...], Rendered] = OrderedDict()
        self._blocks: OrderedDict[str, Block] = OrderedDict()
        self._blocks_size = 0

    def render(self, body: str, slug: str, digest: str, existing: Callable[[list[str]], set[str]]) -> Rendered:
        targets = wiki_links(body, slug)
        found = existing(targets) if targets else set()
        key = (slug, digest, frozenset(found))
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        html, headings, facts = self._by_blocks(body, slug)
        html = mark_missing(html, found) if targets else html
        out = Rendered(html, headings, '<pre class="mermaid">' in html, html.count('<a class="wikilink'), facts.get("image"))
        with self._lock:
            if key not in self._entries:
                self._entries[key] = out
                self.size += len(out.html)
            while self.size > self.limit and self._entries:
                _key, old = self._entries.popitem(last=False)
                self.size -= len(old.html)
        return out

    def _by_blocks(self, body: str, slug: str) -> tuple[str, list[tuple[int, str, str]], dict[str, Any]]:
        env: dict[str, Any] = {"slug": slug, "existing": _Everything(), "href": page_href, "file_href": file_href}
        state = StateCore(body, _MD, env)
        whole, per_block = _phases()
        for rule in whole:
            rule(state)
        context = (
            _FINGERPRINT + slug.split("/", 1)[0].encode() + b"\x00" + repr(sorted(env.get("references", {}).items())).encode()
        )
        blocks = _blocks(state.tokens)
        keys = [_key(b, context) for b in blocks]
        with self._lock:
            html = {k: self._blocks[k] for k in keys if k in self._blocks}
        if self.store is not None and len(html) < len(keys):
            html.update(self.store.get([k for k in keys if k not in html]))
        made: dict[str, Block] = {}
        for k, tokens in zip(keys, blocks, strict=True):
            if k not in html and k not in made:
                for name in PAGE_FACTS:
                    env.pop(name, None)
                part = StateCore("", _MD, env, tokens)
                for rule in per_block:
                    rule(part)
                told = {name: env[name] for name in PAGE_FACTS if name in env}
                made[k] = (sanitise(_MD.renderer.render(tokens, _MD.options, env)), told or None)
        self.blocks_rendered += len(made)
        if made and self.store is not None:
            self.store.put(made)
        html.update(made)
        with self._lock:
            for k in keys:
                if k in self._blocks:
                    self._blocks.move_to_end(k)
                else:
                    self._blocks[k] = html[k]
                    self._blocks_size += len(html[k][0])
            while self._blocks_size > self.limit // 4 and self._blocks:  # the rest is a read away in the store
                _k, old = self._blocks.popitem(last=False)
                self._blocks_size -= len(old[0])
        facts: dict[str, Any] = {}
        for k in keys:
            for name, value in (html[k][1] or {}).items():
                facts.setdefault(name, tuple(value) if isinstance(value, list) else value)  # JSON made tuples lists
        return "".join(html[k][0] for k in keys), env.get("headings", []), facts


    def prepare(self, body: str, slug: str) -> None:
        """Render and keep every block of ``body`` that is not kept yet (see :class:`Prerender`)."""
        self._by_blocks(body, slug)


PRERENDER_BYTES = 16 * 1024  # smaller pages render in a few milliseconds: not worth a thread's work


class Prerender:
    """Big pages saved through this process are rendered ahead, by one background thread, so that
    their first reader (in any worker: blocks go to the shared store) finds every block kept and
    pays only the parse. The latest body of each page wins; a page saved again before its turn is
    rendered once. Started on first use, stopped by :meth:`close` (the host's close)."""

    def __init__(self, cache: RenderCache) -> None:
        self.cache = cache
        self._pending: dict[str, str] = {}
        self._guard = threading.Lock()
        self.worker = CoalescingWorker(self._render, "hostcore-web-prerender", what="web: rendering ahead", logger=log)

    def add(self, slug: str, body: str) -> None:
        if len(body) < PRERENDER_BYTES or self.worker.stopping:
            return
        with self._guard:
            self._pending[slug] = body
        self.worker.kick()

    def _render(self) -> None:
        while not self.worker.stopping:
            with self._guard:
                if not self._pending:
                    return
                slug = next(iter(self._pending))
                body = self._pending.pop(slug)
            try:
                self.cache.prepare(body, slug)
            except Exception:  # a reader renders it then, as if nothing had been kept
                log.exception("web: rendering %s ahead failed", slug)

    def wait(self, timeout: float = 30.0) -> bool:
        """Wait until every page given so far is rendered; False if ``timeout`` passed first."""
        return self.worker.wait(timeout)

    def close(self) -> None:
        with self._guard:
            self._pending.clear()
        self.worker.stop(finish=False)


def pygments_css() -> str:
    """The stylesheet of highlighted code, light and dark."""
    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    dark = HtmlFormatter(style="monokai").get_style_defs(".dark .highlight")
    return f"{light}\n{dark}\n"
