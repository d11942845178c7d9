"""Text analysis for recall: keyword terms (words of every script; Chinese, Japanese and
Korean character bigrams) and hashed character-bigram vectors for a semantic score that
needs no model download."""

from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

# A word is a run of letters, digits and the combining marks that belong to them, in
# any script (Indic vowel signs are marks, and a word must not break at them); an
# English possessive stays attached. Underscores split words, as in "prefers_language".
_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
_INDIC = "\u0900-\u0963\u0966-\u0dff\u0e00-\u0e7f"  # Devanagari to Sinhala, Thai; not the dandas
_TOKEN = re.compile(rf"(?:[^\W_]|[{_MARKS}{_INDIC}])+(?:'[a-z]+)?")
# Scripts written without spaces between words (Chinese, Japanese kana) or whose words
# carry particles (Korean): matched by character bigrams.
_BIGRAM_SCRIPTS = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af"
_BIGRAM_RUN = re.compile(rf"[{_BIGRAM_SCRIPTS}]+|[^{_BIGRAM_SCRIPTS}]+")
_BIGRAM_CHAR = re.compile(rf"[{_BIGRAM_SCRIPTS}]")
# Accents folded away, as SQLite's unicode61 tokenizer does with remove_diacritics 2:
# Latin, Greek and Cyrillic diacritics, Hebrew points and Arabic vowel marks. Marks of
# Indic scripts are letters' parts and stay.
_FOLDED_MARKS = re.compile(f"[{_MARKS}]")
STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does doing for from had has have he her hers him his how i "
    "if in into is it its me my of on or our ours she so than that the their them they this those to was we were "
    "what when where which who whom why will with would you your yours about any anything something tell know "
    "remember recall please there".split()
)
CJK_STOP = frozenset("的 了 吗 呢 吧 啊 是 什么 怎么".split())
# Function words of French, Spanish and German left out of a recall's query terms (not of
# the terms stored: those stay as they were written). Without them "Quel est mon métier ?"
# matched "Est allergique aux chats" by its "est", and a shared "de" or "au" outranked the
# memory that answers by meaning. Articles, pronouns, prepositions, auxiliaries and
# question words only: no word a memory is about, and none that is an English word too
# ("son", "die", "war", "hat", "mit", "dans" as "dan", "für" as "fur").
_QUERY_FUNCTION_WORDS = (
    # French
    "le la les l un une des du de d au aux a à et ou où est es suis sont ai as avons ont ce c cet cette ces qu'est qu'il qu'elle "
    "je j me m moi tu te toi il elle on nous vous ils elles se s mon mes ta tes sa ses notre nos "
    "votre vos leur leurs qui que qu quoi quel quelle quels quelles quand comment combien pourquoi "
    "en sur sous avec chez pas ne n y "
    # Spanish
    "el los las uno unos unas del al y o u es soy eres está están estoy ser estar he ha han "
    "yo tú tu él ella nosotros vosotros ellos ellas mi mis su sus nuestro nuestra lo le les me te nos "
    "qué que cuál cual cuáles cuándo cuando cómo como dónde donde cuánto cuántos quién por para "
    "sobre entre sí "
    # German
    "der das dem des ein eine einer einen einem eines und oder ist bist sind habe "
    "hast haben wird ich du er sie es wir ihr mich mir dich dir uns mein meine meinen meinem meiner dein "
    "deine sein seine ihre wer was wann wie wo warum welche welcher welches welchen im ins in zu zum zur "
    "von vom bei nach auf an am aus um nicht kein keine")
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


def fold(word: str) -> str:
    """``word`` in lower case without its accents ("Müller" → "muller", "τσάι" → "τσαι")."""
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFC", _FOLDED_MARKS.sub("", unicodedata.normalize("NFD", word.lower())))


def terms(text: str) -> list[str]:
    """Keyword terms of ``text``: words of every script in lower case without accents
    (English ones stemmed, stopwords left out), and character bigrams of Chinese,
    Japanese and Korean (a lone character counts as itself)."""
    out: list[str] = []
    for tok in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if not tok.isascii() and _BIGRAM_CHAR.search(tok):
            for run in _BIGRAM_RUN.findall(tok):
                if _BIGRAM_CHAR.match(run):
                    out.extend(_bigrams(run))
                else:
                    out.extend(_word(run))
        else:
            out.extend(_word(tok))
    return out


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in CJK_STOP else [run]
    return [run[i:i + 2] for i in range(len(run) - 1) if run[i:i + 2] not in CJK_STOP]


# A term is at most this many characters: PostgreSQL refuses a lexeme over 2,046 bytes
# ("word is too long in tsquery"), and 256 characters of UTF-8 are at most 1,024 bytes.
# A longer word is searched by its first 256 characters, alike on both engines.
MAX_TERM_CHARS = 256


@lru_cache(maxsize=1 << 16)  # words repeat: an import of 100,000 memories stems a few thousand
def _word(tok: str) -> tuple[str, ...]:
    tok = fold(tok)[:MAX_TERM_CHARS]
    if tok in STOPWORDS or (len(tok) < 2 and not tok.isdigit()):
        return ()
    return (stem(tok) if tok.isascii() else tok,)


def query_terms(query: str) -> list[str]:
    """A recall's keyword terms: :func:`terms` of ``query``, each once, without the
    function words of French, Spanish and German."""
    return [t for t in dict.fromkeys(terms(query)) if t not in _query_stop()]


@lru_cache(maxsize=1)
def _query_stop() -> frozenset[str]:
    # As terms, folded and stemmed as a query's words are ("quelle" is "quell").
    return frozenset(t for w in _QUERY_FUNCTION_WORDS.split() for t in terms(w))


@dataclass(frozen=True)
class Prefix:
    """In a :class:`Words` query: any term that starts with ``text``."""

    text: str


@dataclass(frozen=True)
class Words:
    """A full-text query as structure, which each backend writes in its engine's syntax
    (store/backends/): the memories holding ``every`` one of ``parts``, or any of them. A
    part is a term (as :func:`terms` makes them), a :class:`Prefix`, or another query."""

    parts: tuple[str | Prefix | Words, ...]
    every: bool = False


def any_of(parts: Iterable[str | Prefix | Words]) -> Words:
    return Words(tuple(parts))


def all_of(parts: Iterable[str | Prefix | Words]) -> Words:
    return Words(tuple(parts), every=True)


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
