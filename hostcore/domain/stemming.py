"""A light English stemmer: the inflections a search should see through, and nothing more.

Porter's first step (plurals, -ed and -ing, a final y), which folds "automobiles" into
"automobile", "running" into "run" and "stopped" into "stop", but leaves derivations alone
("organisation" stays apart from "organ"): a keyword search then finds the other forms of a word
while every word it finds still means what was typed. Pure and deterministic: every search engine
stems the index and the query alike with it, so they find the same pages.
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiou")


def _consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in _VOWELS:
        return False
    if char == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences ``stem`` holds."""
    count, vowel = 0, False
    for i in range(len(stem)):
        if _consonant(stem, i):
            if vowel:
                count += 1
            vowel = False
        else:
            vowel = True
    return count


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (hop, not hoop)."""
    n = len(word)
    return (
        n >= 3 and _consonant(word, n - 1) and not _consonant(word, n - 2) and _consonant(word, n - 3)
        and word[-1] not in "wxy"
    )  # fmt: skip


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The stem of one lower-case word (as the engines' analysers cut and fold them). Words of
    three letters or fewer, and words holding digits, are their own stem."""
    if len(word) <= 3 or not word.isalpha():
        return word
    # step 1a: plurals
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    # step 1b: -eed, -ed, -ing
    again = False
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif word.endswith("ed") and _has_vowel(word[:-2]):
        word, again = word[:-2], True
    elif word.endswith("ing") and _has_vowel(word[:-3]) and len(word) > 5:
        word, again = word[:-3], True
    if again:
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += "e"
    # step 1c: a final y after a vowel-holding stem
    if word.endswith("y") and _has_vowel(word[:-1]) and len(word) > 3:
        word = word[:-1] + "i"
    return word
