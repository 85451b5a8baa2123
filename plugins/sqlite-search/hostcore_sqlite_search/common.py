"""Common words (the, of, and ...): required without reading their doclists.

A word on nearly every page costs FTS5 most where it helps least: bm25 counts the pages of every
phrase of a query in one pass over its doclist (the longest doclists of all) only to
give it no weight (its idf is clamped to almost nothing once it is on half the pages), and a query
holding it reads that doclist again to intersect it. So each page records ``stops``, a bit mask of
the :data:`COMMON` words it holds (in its title, body or tags, folded as FTS5 folds them), and a
query that requires a common word beside other words it looks for leaves that word out of MATCH
and keeps the pages whose mask holds it: the same pages, in the same order.

(Phrases of common words are still matched by FTS5 itself: indexing each pair of neighbouring words
that holds a common word as one token would find them several times faster, but measured on the
bench corpus it doubled the index and the cost of every write.)
"""

from __future__ import annotations

from collections.abc import Iterable

from hostcore import And, Not, QueryNode, Term

from .snippets import fold

# The bit of each word in ``pages.stops`` is its place here: changing the list needs a new FORMAT,
# which is why the plugin keeps its own copy of the core's English function words (passages' STOP_WORDS).
COMMON = tuple(
    "a an and are as at be been but by can do does for from had has have how i if in into is it its me my no not "
    "of on or our should so than that the their them then there these they this to was we were what when where "
    "which who why will with would you your".split()
)
BITS = {word: 1 << i for i, word in enumerate(COMMON)}
assert len(COMMON) < 64


def stops_of(words: Iterable[str]) -> int:
    """The mask of the common words among ``words`` (tokens as :func:`analyse` cuts them)."""
    mask = 0
    for word in words:
        mask |= BITS.get(fold(word), 0)
    return mask


def split_common(node: QueryNode) -> tuple[QueryNode, int]:
    """``node`` without the common words it requires beside other words it looks for, and their mask.

    Only words required at the top of the query, and only when something else it looks for stays
    for MATCH: a query of common words alone keeps them (no mask could rank it).
    """
    if not isinstance(node, And):
        return node, 0
    common = [n for n in node.nodes if isinstance(n, Term) and not n.prefix and fold(n.text) in BITS]
    rest = [n for n in node.nodes if n not in common]
    if not common or all(isinstance(n, Not) for n in rest):
        return node, 0
    mask = 0
    for term in common:
        mask |= BITS[fold(term.text)]
    return (rest[0] if len(rest) == 1 else And(tuple(rest))), mask
