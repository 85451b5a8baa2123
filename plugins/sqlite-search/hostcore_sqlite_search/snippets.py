"""Snippets of the returned page, built in Python from its text: escaped, ``<mark>`` around each match.

FTS5's ``snippet()`` seeks every doclist of the query to each returned row and tokenizes the whole
column, a large share of a search's time on a big wiki (most for a prefix it had to expand again
per row). The words a query looks for are known, so one regular expression finds their
matches in each page's text at C speed: whole tokens as FTS5's unicode61 tokenizer cuts them
(letters and digits; case and accents folded alike on both sides), a prefix any token starting with
it, a phrase its words with only separators between them, a word any token of the same stem.

The snippet is about ``SNIPPET_CHARS`` characters of the body around the densest cluster of matches
(most distinct words looked for, then most matches, then the earliest), cut at spaces, with ``…``
where the body goes on. A body without a match gives the title with its matches marked when the title
has one, else the start of the body.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from hostcore import Phrase, Term, stem

SNIPPET_CHARS = 200
LEAD_CHARS = 40  # at most this much text before the first match shown
MAX_MATCHES = 1000  # matches of one page looked at when choosing the window
_TOKEN = r"[^\W_]"  # one character of a unicode61 token (letters and digits)
_SEPARATORS = r"[\W_]+"
_SPACES = re.compile(r"\s+")


class _Fold(dict[int, str]):
    """``str.translate`` table: each character to one character, lower case and without its accents
    (remove_diacritics 2), so offsets in the folded text are offsets in the text."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        base = "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)).lower()
        folded = base if len(base) == 1 else (char.lower() if len(char.lower()) == 1 else char)
        self[code] = folded
        return folded


_FOLD = _Fold()


def fold(text: str) -> str:
    """``text`` in lower case without accents, character for character."""
    return text.lower() if text.isascii() else text.translate(_FOLD)


@dataclass(frozen=True)
class _Leaf:
    """One term or phrase: where its matches may start (its first word), and the whole of it there."""

    first: str
    whole: re.Pattern[str]
    stem: str | None = None  # a token matches when its stem is this one (another form of the word)


@dataclass(frozen=True)
class Marker:
    """The matches of one query's words (terms and phrases it looks for) in any text.

    Each word is looked for with ``str.find`` (a scan in C; a regular expression trying an
    alternation at every character was much slower), and a match is kept when it starts a
    token and the term, prefix or phrase continues from there to a token's end.
    """

    leaves: tuple[_Leaf, ...]

    @classmethod
    def of(cls, leaves: Iterable[Term | Phrase]) -> Marker:
        found = []
        for leaf in leaves:
            words = [fold(w) for w in ((leaf.text,) if isinstance(leaf, Term) else leaf.words)]
            if words and all(words):
                whole = _SEPARATORS.join(map(re.escape, words)) + (f"{_TOKEN}*" if leaf.prefix else "")
                found.append(_Leaf(words[0], re.compile(f"{whole}(?!{_TOKEN})")))
                if isinstance(leaf, Term) and not leaf.prefix:  # a stem drops a suffix, and may end in e or i for y
                    root = stem(words[0])
                    first = root[:-1] if len(root) > 3 else root
                    found.append(_Leaf(first, re.compile(f"{re.escape(first)}{_TOKEN}*"), root))
        return cls(tuple(found))

    def matches(self, text: str) -> list[tuple[int, int, int]]:
        """(start, end, which leaf) of the matches in ``text``, in order (up to MAX_MATCHES a leaf);
        where matches overlap, the longest."""
        folded = fold(text)
        out = []
        for which, leaf in enumerate(self.leaves):
            at, count = folded.find(leaf.first), 0
            while at >= 0 and count < MAX_MATCHES:
                m = leaf.whole.match(folded, at) if at == 0 or not folded[at - 1].isalnum() else None
                if m is not None and leaf.stem is not None and stem(m.group()) != leaf.stem:
                    m = None
                if m is not None:
                    out.append((at, m.end(), which))
                    count += 1
                at = folded.find(leaf.first, at + 1)
        out.sort(key=lambda m: (m[0], -m[1]))
        kept: list[tuple[int, int, int]] = []
        for match in out:
            if not kept or match[0] >= kept[-1][1]:
                kept.append(match)
        return kept

    def snippet(self, title: str, body: str) -> str:
        """Escaped HTML: the body around its best cluster of matches, else the marked title when it
        matches, else the start of the body."""
        found = self.matches(body)
        if found:
            return _window(body, found)
        in_title = self.matches(title)
        if in_title:
            return _marked(title, in_title)
        return _window(body, [])


def _best(found: list[tuple[int, int, int]]) -> tuple[int, int]:
    """Indexes [i, j) into ``found`` of the matches that fit in one window, the best such cluster."""
    best, best_score, j = (0, 1), (-1, -1), 0
    for i, (start, _end, _which) in enumerate(found):
        j = max(j, i + 1)
        while j < len(found) and found[j][1] - start <= SNIPPET_CHARS - LEAD_CHARS:
            j += 1
        score = (len({which for _s, _e, which in found[i:j]}), j - i)
        if score > best_score:
            best, best_score = (i, j), score
    return best


def _window(body: str, found: list[tuple[int, int, int]]) -> str:
    if found:
        i, j = _best(found)
        first, last = found[i][0], found[j - 1][1]
        start = 0 if first <= LEAD_CHARS else body.find(" ", first - LEAD_CHARS, first) + 1 or first
        if start and start + SNIPPET_CHARS > len(body):  # near the end: fill the window from before
            earliest = max(0, len(body) - SNIPPET_CHARS)
            start = 0 if earliest == 0 else min(start, body.find(" ", earliest, first) + 1 or start)
        shown = found[i:j]
    else:
        start, last, shown = 0, 0, []
    end = start + SNIPPET_CHARS
    if end < len(body):
        cut = body.rfind(" ", max(last, start + SNIPPET_CHARS // 2), end + 1)
        end = cut if cut > 0 else max(end, last)
    else:
        end = len(body)
    text = _marked(body[start:end], [(s - start, e - start, w) for s, e, w in shown])
    return ("…" if start > 0 else "") + text + ("…" if end < len(body) else "")


def _marked(text: str, found: list[tuple[int, int, int]]) -> str:
    """``text`` escaped, spaces collapsed, with ``<mark>`` around each match."""
    parts, last = [], 0
    for start, end, _which in found:
        parts += [html.escape(text[last:start]), "<mark>", html.escape(text[start:end]), "</mark>"]
        last = end
    parts.append(html.escape(text[last:]))
    return _SPACES.sub(" ", "".join(parts)).strip()
