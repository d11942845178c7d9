"""Text analysis for recall: keyword terms (English words, Chinese character bigrams) and
hashed character-bigram vectors for a semantic score that needs no model download."""

from __future__ import annotations

import math
import re
import zlib

_TOKEN = re.compile(r"[0-9a-z]+(?:'[a-z]+)?|[\u3400-\u9fff\uf900-\ufaff]+", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does doing for from had has have he her hers him his how i "
    "if in into is it its me my of on or our ours she so than that the their them they this those to was we were "
    "what when where which who whom why will with would you your yours about any anything something tell know "
    "remember recall please there".split()
)
CJK_STOP = frozenset("的 了 吗 呢 吧 啊 是 什么 怎么".split())
DIMS = 512


def stem(word: str) -> str:
    """A light English stemmer: enough to match 'likes'/'liked'/'liking' with 'like'."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, keep in (("ies", "y"), ("ing", ""), ("edly", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith("ss"):
                break
            w = w[: -len(suffix)] + keep
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # running -> runn -> run
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def terms(text: str) -> list[str]:
    """Keyword terms of ``text``: stemmed English words without stopwords, and Chinese
    character bigrams (a lone Chinese character counts as itself)."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if _CJK.match(tok):
            if len(tok) == 1:
                if tok not in CJK_STOP:
                    out.append(tok)
            else:
                out.extend(tok[i:i + 2] for i in range(len(tok) - 1) if tok[i:i + 2] not in CJK_STOP)
        elif tok not in STOPWORDS and (len(tok) > 1 or tok.isdigit()):
            out.append(stem(tok))
    return out


def term_string(text: str, *extra: str) -> str:
    """The space-separated term list stored for full-text candidate search."""
    seen = dict.fromkeys(terms(" ".join((text, *extra))))
    return " ".join(seen)


def vector(text: str) -> dict[int, float]:
    """A normalised sparse vector of hashed character bigrams of ``text``."""
    s = re.sub(r"\s+", " ", text.lower()).strip()
    counts: dict[int, float] = {}
    for i in range(len(s) - 1):
        bg = s[i:i + 2]
        if bg.isspace():
            continue
        h = zlib.crc32(bg.encode("utf-8")) % DIMS
        counts[h] = counts.get(h, 0.0) + 1.0
    norm = math.sqrt(sum(v * v for v in counts.values())) or 1.0
    return {k: v / norm for k, v in counts.items()}


def cosine(a: dict[int, float], b: dict[int, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())
