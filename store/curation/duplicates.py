"""When two texts that look or mean alike are still different memories.

A near-duplicate (by characters, or by meaning) reinforces the memory the caller already
has instead of adding a copy. But similarity is not identity: "Mara is not allergic to
peanuts." is next to "Mara is allergic to peanuts." by either measure, and so are "…on
Fridays." and "…never on Fridays.", "…May 30." and "…May 3.", "note 11" and "note 1".
:func:`difference` names what keeps two texts apart: a negation on one side only, a
number (a date, an amount, a count) or a name that the other does not have. Both
de-duplications (store.store's by characters and by meaning) ask it before merging.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from ..recall.text import STOPWORDS

# Negations, in the languages the default embedder reads; each counted once per text.
_NEGATION_WORDS = frozenset(
    "not no never none nobody nothing neither nor without cannot can't won't isn't aren't wasn't weren't "
    "doesn't don't didn't hasn't haven't hadn't shouldn't wouldn't couldn't mustn't longer "
    "nicht kein keine keinen keiner keinem nie niemals nunca jamás jamais ne pas non nem não nessuno mai".split())
_NEGATION_EN = re.compile(r"n't\b")
_NEGATION_CJK = re.compile(r"不|没|沒|無|无|未|别|別|非|ない|ません|않|안 |못")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_CJK_DIGITS = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+")


def _negations(text: str) -> int:
    low = text.lower()
    words = [w for w in _WORD.findall(low)]
    count = sum(1 for w in words if w in _NEGATION_WORDS) + len(_NEGATION_EN.findall(low))
    return count + len(_NEGATION_CJK.findall(text))


def _numbers(text: str) -> Counter:
    folded = unicodedata.normalize("NFKC", text)
    found = Counter(n.replace(",", "") for n in _NUMBER.findall(folded))
    found.update(_NUMBER_WORDS[w] for w in _WORD.findall(folded.lower()) if w in _NUMBER_WORDS)
    found.update(_CJK_DIGITS.findall(folded))
    return found


def _names(text: str) -> set[str]:
    """Capitalised words that do not open a sentence: names, months, weekdays, places."""
    out = set()
    for sentence in re.split(r"(?<=[.!?。！？])\s+|\n", text.strip()):
        words = _WORD.findall(sentence)
        # The first word of a sentence is a name when it is not a common word ("Mara
        # likes tea" and "Theo likes tea" are two memories; "Usually stays up late" and
        # "Mostly stays up late" are one).
        out.update(w.lower() for i, w in enumerate(words) if w[:1].isupper()
                   and (i > 0 or not _opener(w.lower())))
    return out


_OPENERS = frozenset("often always sometimes now today also still again every each usually mostly "
                     "generally normally typically".split())


def _opener(word: str) -> bool:
    return word in STOPWORDS or word in _OPENERS or (word.endswith("ly") and len(word) > 4)


def difference(a: str, b: str) -> str | None:
    """Why ``a`` and ``b`` are not the same memory however alike they look, or None."""
    if _negations(a) != _negations(b):
        return "one of them is negated"
    na, nb = _numbers(a), _numbers(b)
    if na != nb:
        return f"their numbers differ ({', '.join(sorted((na - nb) + (nb - na)))})"
    ma, mb = _names(a), _names(b)
    if ma != mb:
        return f"their names differ ({', '.join(sorted(ma ^ mb))})"
    return None
