"""The user query language, parsed into a small tree each search engine compiles (never the engine's parser).

Engine-independent, so every search backend accepts the same syntax:

- words: ``backup restore`` finds pages with both words (AND is the default; ``AND`` may be
  written). Case and accents are ignored.
- ``"quoted phrase"``: the words next to each other, in order.
- ``back*``: words starting with ``back`` (also ``"exact phr*"``).
- ``OR``: either side, e.g. ``postgres OR mysql``; AND binds tighter than OR.
- ``NOT word`` or ``-word``: leave out pages containing it.
- ``( ... )``: grouping, e.g. ``(postgres OR mysql) backup``.
- ``tag:name``: only pages carrying that tag (``tag:"two words"`` for spaces).

Words are analysed with the index's own analyser (the ``analyse`` argument of :func:`parse_query`),
so ``Crème`` finds ``creme`` and ``e-mail`` is the phrase ``e mail``. Stray punctuation degrades
to plain words. A query whose structure is unclear is a ValidationError saying what to change,
never a guess that silently searches for something else: empty, a dangling ``OR`` or ``NOT``,
nothing but exclusions, a quote never closed, a parenthesis never closed or never opened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hostcore.errors import ValidationError

MAX_QUERY_CHARS = 1000
MAX_CLAUSES = 64
MAX_NESTING = 32  # groups and NOTs inside one another; deeper would exhaust the parser's stack


@dataclass(frozen=True)
class Term:
    text: str
    prefix: bool = False


@dataclass(frozen=True)
class Phrase:
    words: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True)
class Tag:
    name: str


@dataclass(frozen=True)
class Not:
    node: QueryNode


@dataclass(frozen=True)
class And:
    nodes: tuple[QueryNode, ...]


@dataclass(frozen=True)
class Or:
    nodes: tuple[QueryNode, ...]


QueryNode = Term | Phrase | Tag | Not | And | Or
Analyse = Callable[[str], list[str]]

_OPEN, _CLOSE, _OR, _NOT = "(", ")", "OR", "NOT"


def _invalid(message: str) -> ValidationError:
    return ValidationError(message, field="query")


def _lex(query: str, analyse: Analyse) -> Iterator[str | QueryNode]:
    """Yield operators (``(``, ``)``, ``OR``, ``NOT``) and leaf nodes; drop what means nothing."""
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            yield ch
            i += 1
        elif ch == '"':
            end = _closing_quote(query, i)
            text, i = query[i + 1 : end], end + 1
            prefix = i < n and query[i] == "*"
            i += prefix
            if text.rstrip().endswith("*"):  # "exact phr*": the star may stand inside the quotes too
                prefix, text = True, text.rstrip().rstrip("*")
            leaf = _words(analyse(text), prefix)
            if leaf:
                yield leaf
        else:
            start = i
            while i < n and not query[i].isspace() and query[i] not in '()"':
                i += 1
            word = query[start:i]
            if word.lower() == "tag:" and i < n and query[i] == '"':
                end = _closing_quote(query, i)
                word, i = "tag:" + query[i + 1 : end], end + 1
            yield from _word(word, analyse)


def _closing_quote(query: str, start: int) -> int:
    """Where the phrase opened by the quote at ``start`` ends. Raises ValidationError when it never does."""
    end = query.find('"', start + 1)
    if end < 0:
        text = " ".join(query[start + 1 :].split())[:40] or "words"
        raise _invalid(f'opens a quote that is never closed; close the phrase ("{text}") or remove the quote.')
    return end


def _balanced(tokens: list[str | QueryNode]) -> None:
    """Raise ValidationError when a parenthesis is never closed or closes nothing."""
    depth = 0
    for token in tokens:
        if token == _OPEN:
            depth += 1
        elif token == _CLOSE:
            if not depth:
                raise _invalid('has a ")" that closes no "("; remove it, or add the "(" where the group starts.')
            depth -= 1
    if depth:
        raise _invalid('has a "(" that is never closed; add the ")" where the group ends, or remove it.')


def _word(word: str, analyse: Analyse) -> Iterator[str | QueryNode]:
    if word in (_OR, _NOT):
        yield word
        return
    if word == "AND":
        return
    if word.startswith("-") and len(word) > 1:
        yield _NOT
        word = word.lstrip("-")
    if word.lower().startswith("tag:"):
        name = word[4:].strip().lower()
        if name:
            yield Tag(name)
        return
    prefix = word.endswith("*")
    leaf = _words(analyse(word.rstrip("*")), prefix)
    if leaf:
        yield leaf


def _words(words: list[str], prefix: bool) -> Term | Phrase | None:
    if not words:
        return None
    if len(words) == 1:
        return Term(words[0], prefix)
    return Phrase(tuple(words), prefix)


class _Parser:
    """Recursive descent: ``expr := and (OR and)*``, ``and := unary+``, ``unary := NOT unary | atom``."""

    def __init__(self, tokens: list[str | QueryNode]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | QueryNode | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | QueryNode | None:
        token = self.peek()
        self.pos += 1
        return token

    def expr(self) -> QueryNode | None:
        branches = [self.conjunction()]
        while self.peek() == _OR:
            self.take()
            branches.append(self.conjunction())
        if len(branches) > 1 and None in branches:
            raise _invalid('OR needs a term on each side, for example: deploy OR release. Quote it ("or") to search the word.')
        if len(branches) == 1:
            return branches[0]
        present = [branch for branch in branches if branch is not None]  # all of them: None was refused above
        for branch in present:
            _require_positive(branch)
        return Or(tuple(present))

    def conjunction(self) -> QueryNode | None:
        nodes: list[QueryNode] = []
        while (token := self.peek()) is not None and token not in (_OR, _CLOSE):
            node = self.unary()
            if isinstance(node, And):
                nodes.extend(node.nodes)
            elif node is not None:
                nodes.append(node)
        if not nodes:
            return None
        return nodes[0] if len(nodes) == 1 else And(tuple(nodes))

    def unary(self) -> QueryNode | None:
        if self.depth >= MAX_NESTING:
            raise _invalid(f"nests parentheses and NOTs more than {MAX_NESTING} deep; remove some.")
        self.depth += 1
        try:
            return self._unary()
        finally:
            self.depth -= 1

    def _unary(self) -> QueryNode | None:
        token = self.take()
        if token == _NOT:
            if self.peek() in (None, _OR, _CLOSE):
                raise _invalid("NOT needs a term after it, for example: deploy NOT staging (or deploy -staging).")
            node = self.unary()
            return Not(node) if node is not None else None
        if token == _OPEN:
            node = self.expr()
            if self.peek() == _CLOSE:
                self.take()
            return node
        return token  # type: ignore[return-value]


def _require_positive(node: QueryNode) -> None:
    positive = not isinstance(node, Not) and not (isinstance(node, And) and all(isinstance(n, Not) for n in node.nodes))
    if not positive:
        raise _invalid("NOT only excludes: add a word to find, for example: deploy -staging instead of -staging alone.")


def _count(node: QueryNode) -> int:
    if isinstance(node, (And, Or)):
        return sum(_count(n) for n in node.nodes)
    if isinstance(node, Not):
        return _count(node.node)
    return 1


def parse_query(query: str, analyse: Analyse) -> QueryNode:
    """Parse ``query`` into a tree. Raises ValidationError(field="query") saying how to fix it."""
    if len(query) > MAX_QUERY_CHARS:
        raise _invalid(f"is {len(query)} characters long; shorten it to at most {MAX_QUERY_CHARS}.")
    tokens = list(_lex(query, analyse))
    _balanced(tokens)
    node = _Parser(tokens).expr()
    if node is None:
        raise _invalid("has no words to search for; type one or more words, for example: backup restore.")
    _require_positive(node)
    if _count(node) > MAX_CLAUSES:
        raise _invalid(f"has more than {MAX_CLAUSES} terms; remove some.")
    return node


def positive_leaves(node: QueryNode) -> Iterator[Term | Phrase]:
    """Terms and phrases the query looks for (not those it excludes): what snippets mark."""
    if isinstance(node, (Term, Phrase)):
        yield node
    elif isinstance(node, (And, Or)):
        for child in node.nodes:
            yield from positive_leaves(child)
