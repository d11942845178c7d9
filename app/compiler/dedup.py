"""Semantic de-duplication: of two memories that say the same thing, only one is sent.

Two memories are near-duplicates when their vectors' cosine is at least the threshold
and :func:`differ_in_fact` finds nothing that tells them apart: meaning is not identity,
and an embedder puts "Mara is not allergic to peanuts" right next to "Mara is allergic
to peanuts". Of a pair, the one the firewall would trim last is kept (the better tier,
then the higher score, then the earlier input), so de-duplicating never costs the prompt
its best copy. Runs only when the caller gives vectors or an embedder: without one it
costs nothing.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .attention import as_matrix

DEDUP_THRESHOLD = 0.92
DEDUP_ENV = "MNEMOSCOPE_DEDUP_COSINE_THRESHOLD"

# Words that turn a statement into its opposite, in the languages the store's users write.
_NEGATIONS = frozenset("""
not no never none nobody nothing neither nor without cannot can't won't don't doesn't didn't isn't aren't
wasn't weren't hasn't haven't hadn't shouldn't wouldn't couldn't mustn't ain't
nicht kein keine keinen nie niemals ne pas jamais aucun aucune nunca nada ningún ninguna tampoco
non mai nessuno nenhum nenhuma não nao
""".split())
_CJK_NEGATIONS = re.compile(r"[不没沒无無别別非未勿莫]|ない|ません")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_CJK_NUMBER = re.compile(r"[零〇一二两兩三四五六七八九十百千万萬亿億半]+")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_SENTENCE_END = ".!?。！？:;"


def dedup_threshold() -> float:
    """The cosine from which two memories may be duplicates: the environment's, else 0.92."""
    raw = os.environ.get(DEDUP_ENV, "")
    if not raw.strip():
        return DEDUP_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{DEDUP_ENV} must be a cosine between 0 and 1, got {raw!r}") from None
    return check_cosine(value, DEDUP_ENV)


def check_cosine(value, name: str = "dedup_threshold") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{name} must be a cosine above 0 and at most 1, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class _Facts:
    numbers: list[str]
    negations: int
    names: set[str]  # capitalised inside a sentence
    openers: set[str]  # capitalised at a sentence's start: a name, or just the first word
    words: set[str]  # every word, lowercased


@functools.lru_cache(maxsize=4096)  # a memory close to several others is read once
def _facts(text: str) -> _Facts:
    numbers = sorted(_NUMBER.findall(text) + _CJK_NUMBER.findall(text))
    negations = len(_CJK_NEGATIONS.findall(text))
    names, openers, words = set(), set(), set()
    for match in _WORD.finditer(text):
        word = match.group(0)
        lower = word.lower()
        words.add(lower)
        if lower in _NEGATIONS or lower.endswith(("n't", "n’t")):
            negations += 1
        if word[:1].isupper():
            before = text[:match.start()].rstrip()
            base = re.sub(r"['’]s$", "", lower)  # Mara's is Mara
            (openers if not before or before[-1] in _SENTENCE_END else names).add(base)
            words.add(base)
    return _Facts(numbers, negations, names, openers, words)


def differ_in_fact(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` state different facts however close their meaning: a
    different number (or date, time, amount), one negated and the other not, or a name
    that the other does not mention. A capitalised first word counts as a name only when
    both texts open with a word the other lacks ("Priya is…" / "Theo is…"), since "Use
    pytest…" and "Tests are written…" name no one."""
    fa, fb = _facts(a), _facts(b)
    if fa.numbers != fb.numbers or (fa.negations % 2) != (fb.negations % 2):
        return True
    if any(w not in fb.words for w in fa.names) or any(w not in fa.words for w in fb.names):
        return True
    return any(w not in fb.words for w in fa.openers) and any(w not in fa.words for w in fb.openers)


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Memory ``index`` says what memory ``of`` says (vectors' ``cosine``)."""

    index: int
    of: int
    cosine: float


def keep_order(tiers: Sequence[int], scores: Sequence[float | None]) -> list[int]:
    """Indices from the one the firewall trims last to the one it trims first."""
    score = [float("-inf") if s is None else s for s in scores]
    return sorted(range(len(tiers)), key=lambda i: (tiers[i], -score[i], i))


def _close_pairs(m: np.ndarray, limit: float) -> dict[int, list[tuple[float, int]]]:
    """For each row, the other rows at cosine ``limit`` or more (as (cosine, row)): the
    similarities a block of rows at a time, so memory stays bounded."""
    pairs: dict[int, list[tuple[float, int]]] = {}
    for start in range(0, len(m), _BLOCK):
        sims = m[start:start + _BLOCK] @ m.T
        rows, cols = np.nonzero(sims >= limit)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i = start + r
            if i != c:
                pairs.setdefault(i, []).append((float(sims[r, c]), c))
    return pairs


_BLOCK = 1024
Differ = Callable[[str, str], object]


def near_duplicates(vectors, texts: Sequence[str], tiers: Sequence[int], scores: Sequence[float | None],
                    threshold: float | None = None, differ: Differ | None = None) -> dict[int, Duplicate]:
    """The memories to drop, each with the kept memory it duplicates (the most similar
    kept one that states the same facts). ``differ(a, b)`` says whether two texts state
    different facts (truthy: a reason, or True); by default :func:`differ_in_fact`, and
    the bridge passes the store's own check so both de-duplications agree."""
    differ = differ_in_fact if differ is None else differ
    limit = dedup_threshold() if threshold is None else check_cosine(threshold)
    n = len(texts)
    if n < 2:
        return {}
    m = as_matrix(vectors, "the memories' vectors", rows=n)
    m = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    pairs = _close_pairs(m, limit - 1e-6)  # float32 rounding must not split a pair at the threshold
    kept: set[int] = set()
    dropped: dict[int, Duplicate] = {}
    for i in keep_order(tiers, scores):
        for cosine, j in sorted(pairs.get(i, ()), key=lambda p: (-p[0], p[1])):
            if j in kept and not differ(texts[i], texts[j]):
                dropped[i] = Duplicate(i, j, round(min(cosine, 1.0), 4))
                break
        else:
            kept.add(i)
    return dropped
