"""Claims: what a memory's text says about someone, in English and Chinese.

A claim has a subject (the memory's ``who``, else the entity named first in its text, else
the words before the verb), a slot (where someone lives or works, what they like or do), a
value and a polarity: "drinks tea", "no longer drinks tea", "喜欢喝乌龙茶", "不再喝茶".
:mod:`.conflicts` compares them. A new language goes here: its patterns, and the branch of
:func:`claims` that reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..recall.text import stem, terms

_CJK = "\u3400-\u9fff\uf900-\ufaff"
_CJK_RE = re.compile(f"[{_CJK}]")
# A negation just before a verb ("no longer drinks", "不再喝"), and anywhere in a statement.
_NEGATOR = re.compile(r"\b(?:not|never|no longer|stopped|quit|gave up|no more)\b|n't\b")
_ZH_NEGATOR = re.compile(r"(?:不再|再也不|不|没有|没)$")
_NEGATED = re.compile(r"\b(?:not|never|no longer|no more|anymore)\b|n't\b|\bstopped\b")
# Stems left out of a statement's words: "Mara is vegetarian" and "Mara is no longer
# vegetarian" are the same statement, once negated.
_NEGATION_STEMS = frozenset(terms("not never no longer anymore any more stopped does doesn't don't do did didn't "
                                  "isn't aren't wasn't now still again currently"))
_VALUE_STOP = frozenset(
    "and but because since for with after before last this next now in on at when where to from as so until "
    "while who which that then by during every each about".split())
_VALUE_END = re.compile(r"[,.;:!?()\n，。；：！？]")
_OBJECT_SKIP = frozenset("the a an her his their my our some any more much all of".split())

# Single-valued slots: one place one lives, one employer.
_EXCLUSIVE_EN = (
    ("location", False, re.compile(
        r"\b(?:lives|live|living|resides|reside|is based|based|settled|moved|moving|relocated|relocating)"
        r"(?: back)? (?:in|to) ")),
    ("employer", False, re.compile(
        r"\b(?:works|work|working|is employed|employed|is a \w+|is an \w+) (?:at|for|by) ")),
    ("employer", False, re.compile(r"\b(?:joined|started at|has joined) ")),
    ("employer", True, re.compile(r"\b(?:left|quit|resigned from) ")),
    ("favourite", False, re.compile(r"\b(?:favourite|favorite) (?P<what>[a-z]+(?: [a-z]+)?) (?:is|are|was) ")),
)
_EXCLUSIVE_ZH = (
    ("location", False, re.compile(rf"(?:住在|搬到了?|搬去了?|搬回了?|定居在?|生活在|现居|住到了?)(?P<v>[{_CJK}A-Za-z ]{{2,12}})")),
    ("employer", False, re.compile(rf"(?<![现正])在(?P<v>[{_CJK}A-Za-z ]{{2,10}}?)(?:工作|上班|任职)")),
    ("employer", False, re.compile(rf"(?:加入了?|入职了?|跳槽到了?)(?P<v>[{_CJK}A-Za-z ]{{2,10}})")),
    ("employer", True, re.compile(rf"(?:离开了?|从)(?P<v>[{_CJK}A-Za-z ]{{2,10}}?)(?:离职|辞职|$|[，。,.])")),
    ("favourite", False, re.compile(rf"最喜欢的(?P<what>[{_CJK}]{{1,4}}?)是(?P<v>[{_CJK}A-Za-z ]{{1,8}})")),
)
_ZH_VALUE_END = re.compile(r"(?:了|的|工作|生活|上班|住|，|。|$).*")

# What someone likes or does: the same object liked and then not is a conflict.
_PREF_EN = re.compile(
    r"\b(?P<verb>likes|like|liked|loves|love|enjoys|enjoy|prefers|prefer|drinks|drink|drinking|eats|eat|eating|"
    r"uses|use|using|plays|play|playing|hates|hate|dislikes|dislike|avoids|avoid|can't stand|cannot stand|"
    r"is allergic to|is into|is a fan of|quit|gave up|wears|wear|smokes|smoke|smoking|owns|own|"
    r"takes|take|runs|run|goes to|go to) ")
_NEGATIVE_VERBS = frozenset(("hates", "hate", "dislikes", "dislike", "avoids", "avoid", "can't stand",
                             "cannot stand", "is allergic to", "quit", "gave up"))
_PREF_ZH = re.compile(rf"(?P<neg>不再|再也不|已经不|不|没有|没)?(?:(?P<verb>喜欢|爱|讨厌|戒掉了|戒了|戒)(?:喝|吃|用|玩|穿|抽)?"
                      rf"|喝|吃|玩|穿|抽)(?P<v>[{_CJK}A-Za-z]{{1,8}})")
_ZH_NEGATIVE_VERBS = frozenset(("讨厌", "戒掉了", "戒了", "戒"))
# Any English claim at all? One search spares the patterns one by one on most texts.
_ANY_EN = re.compile("|".join(f"(?:{p.pattern})" for _, _, p in _EXCLUSIVE_EN) + f"|(?:{_PREF_EN.pattern})")
_PAST = re.compile(r"\b(?:used to|formerly|previously|before moving|once lived)\b|以前|曾经|过去")
# "The standup moved to Tuesdays", "moved to the afternoon": a time, not a place.
_TIME_VALUE = re.compile(r"(?:the )?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|mornings?|afternoons?|"
                         r"evenings?|nights?|january|february|march|april|may|june|july|august|september|october|"
                         r"november|december|next|later|\d)\b")
_MOVED = re.compile(r"\b(?:moved|moving|now)\b|搬|现在")  # a past claim with a present one after it
# Words and particles left out when comparing two statements for the generic rule.
_ZH_NEGATION = re.compile(r"不再|再也不|已经|没有|现在|还是|仍然|[不没了也]")
# Words between a Chinese name and its verb: 玛拉上个月搬到了波尔图 is about 玛拉.
_ZH_BEFORE_VERB = re.compile(r"(?:现在|如今|已经|也|还|都|一直|在|又|开始|最近|上个月|上周|上次|这个月|这学期|今年|去年|"
                             r"[春夏秋冬]天|[0-9一二三四五六七八九十]+月份?)+$")
PRONOUNS = frozenset("she he they i we it her him them".split())
# "The Lighthouse standup moved to Tuesdays" is about the Lighthouse standup, not "the".
_DETERMINERS = frozenset("the a an this that these those my our your his their".split())


@dataclass(frozen=True)
class Claim:
    subject: str    # lower-cased
    slot: str       # "location", "employer", "likes", "statement"
    value: str      # lower-cased; for "likes" the object words
    positive: bool
    phrase: str     # the words of the text that make the claim
    exclusive: bool

    def words(self) -> frozenset[str]:
        if is_cjk(self.value):
            return frozenset({self.value})
        return frozenset(stem(w) for w in self.value.split() if w not in _OBJECT_SKIP)


def is_cjk(s: str) -> bool:
    return _CJK_RE.search(s) is not None


def _value_after(text: str, end: int) -> str:
    """The value an English claim names: the words after its verb, to the end of the clause."""
    return _clean_value(_VALUE_END.split(text[end:end + 80], 1)[0])


def _clean_value(raw: str) -> str:
    if is_cjk(raw):
        return _ZH_VALUE_END.sub("", raw.strip()).strip()
    words = []
    for w in raw.strip().split():
        lw = w.lower().strip("'\"")
        if lw in _VALUE_STOP or lw.isdigit():
            break
        words.append(lw)
    while words and words[0] in _OBJECT_SKIP:
        words.pop(0)
    return " ".join(words[:4])


def _negated_before(text: str, start: int) -> bool:
    before = text[max(0, start - 24):start]
    if is_cjk(before[-2:] if before else ""):
        return _ZH_NEGATOR.search(before) is not None
    tail = " ".join(before.split()[-3:])
    return bool(_NEGATOR.search(tail))


def subject_from(text: str, start: int) -> str:
    """Who a claim is about when the memory does not say: the first name before the verb
    (in Chinese, the words just before it)."""
    if is_cjk(text[:start]):
        clause = re.split(r"[，。,;；\s]", text[:start])[-1]
        return _ZH_BEFORE_VERB.sub("", clause)[-4:]
    words = re.findall(r"[A-Za-z][\w'-]*", text[:start])
    for w in words:
        lw = w.lower().removesuffix("'s")
        if lw not in PRONOUNS and lw not in _DETERMINERS and w[0].isupper():
            return lw
    return ""


# Whose thing a claim is about, when the words before its verb name a possession: "Theo's
# wife works at Globex", "Her parents now live in Chennai", "普丽亚的父母现在住在成都" are
# claims about Theo's wife and Priya's parents, not about Theo or Priya (the clause starts
# with the owner; "Mara and her husband live in Porto" is about Mara too).
_POSSESSED_EN = re.compile(
    r"^\s*(?:(?P<owner>[^\W\d_][\w-]*)(?:'s|’s)|her|his|their|my|our|your)\s+"
    r"(?P<what>(?:[^\W\d_][\w-]*\s+){0,2}?[^\W\d_][\w-]*)"
    r"(?:\s+(?:now|still|also|no longer|recently|just|already|never|not|often|usually|always|both|all|"
    r"has|have|had|is|are|was|were|does|do|did|doesn't|don't|didn't))*\s*$", re.IGNORECASE)
_POSSESSED_ZH = re.compile(rf"^(?P<owner>[{_CJK}A-Za-z]{{1,6}}?)的(?P<what>[{_CJK}]{{1,4}}?)"
                           r"(?:现在|已经|也|还|都|一直|最近|又|仍然|还是|不再|不|没有|没)*$")
_CLAUSE = re.compile(r"[,;:.!?()\n，。；：！？、]")


def _holder(text: str, start: int, subject: str) -> str:
    """Who the claim whose verb starts at ``start`` is about: ``subject`` (the memory's, if
    it names one) or the name before the verb, or, when the words before the verb name a
    possession of theirs, that possession ("theo's wife", "普丽亚的父母")."""
    clause = _CLAUSE.split(text[:start])[-1]
    owned = (_POSSESSED_ZH if is_cjk(clause) else _POSSESSED_EN).match(clause)
    if owned is None:
        return subject or subject_from(text, start)
    owner = subject or (owned.group("owner") or "").lower() or subject_from(text, start)
    if is_cjk(clause):
        return f"{owner}的{owned.group('what')}"
    return f"{owner}'s {owned.group('what').lower()}"


def claims(text: str, subject: str = "") -> list[Claim]:
    """The claims ``text`` makes; ``subject`` (lower-cased) when the memory names it."""
    out: list[Claim] = []
    # The patterns are lower-case and case-sensitive, several times faster than ignoring
    # case; the positions they find are the same in ``text`` (for the subject's capital).
    low = text.lower()
    if len(low) != len(text):
        low = text
    if _PAST.search(low) and not _MOVED.search(low):
        return out
    cjk = is_cjk(text)
    if not cjk and not _ANY_EN.search(low):
        return out
    for slot, negative, pattern in (_EXCLUSIVE_ZH if cjk else _EXCLUSIVE_EN):
        for m in pattern.finditer(low):
            past = _PAST.search(low[max(0, m.start() - 20):m.start()])
            value = _clean_value(m.group("v")) if cjk else _value_after(text, m.end())
            if past or not value or (slot == "location" and not cjk and _TIME_VALUE.match(value)):
                continue
            negated = _negated_before(low, m.start())
            phrase = (m.group() if cjk else ("not " if negated else "") + m.group() + value).strip()
            name = f"{slot} {m.group('what').lower()}" if "what" in pattern.groupindex else slot
            out.append(Claim(_holder(text, m.start(), subject), name, value, not negative and not negated,
                             phrase, True))
    if cjk:
        for m in _PREF_ZH.finditer(text):
            value = _clean_value(m.group("v"))
            if not value:
                continue
            positive = not m.group("neg") and m.group("verb") not in _ZH_NEGATIVE_VERBS
            out.append(Claim(_holder(text, m.start(), subject), "likes", value, positive,
                             m.group(), False))
    else:
        for m in _PREF_EN.finditer(low):
            value = _value_after(text, m.end())
            if not value:
                continue
            negated = _negated_before(low, m.start())
            positive = (m.group("verb") not in _NEGATIVE_VERBS) != negated
            out.append(Claim(_holder(text, m.start(), subject), "likes", value, positive,
                             (("not " if negated else "") + m.group() + value).strip(), False))
    # Keep one claim per exclusive slot: the last one (the present, in "left X and joined Y").
    last: dict[tuple[str, bool], Claim] = {}
    for c in out:
        if c.exclusive and c.positive:
            last[(c.slot, c.positive)] = c
    return [c for c in out if not (c.exclusive and c.positive) or last[(c.slot, c.positive)] is c]


def statement_key(text: str, stored_terms: str | None = None) -> tuple[frozenset[str], bool]:
    """The words of ``text`` without negation, and whether it was negated: "Mara is vegetarian"
    and "Mara is no longer vegetarian" have the same words and opposite polarity.
    ``stored_terms`` (the memory's indexed terms) spares re-reading an English text."""
    if is_cjk(text):
        return frozenset(terms(_ZH_NEGATION.sub("", text))), "不" in text or "没" in text
    words = stored_terms.split() if stored_terms is not None else terms(text)
    return frozenset(words) - _NEGATION_STEMS, _NEGATED.search(text.lower()) is not None


def compatible(a: Claim, b: Claim) -> bool:
    """Can ``a`` and ``b`` (same subject and slot) both hold?"""
    if a.exclusive:
        same = _same_value(a, b)
        if a.positive and b.positive:
            return same
        return not same or a.positive == b.positive
    return not _same_value(a, b) or a.positive == b.positive


def _same_value(a: Claim, b: Claim) -> bool:
    if is_cjk(a.value) or is_cjk(b.value):
        x, y = a.value, b.value
        return x == y or x.endswith(y) or y.endswith(x) or x.startswith(y) or y.startswith(x)
    wa, wb = a.words(), b.words()
    if a.exclusive:
        return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)
    return bool(wa & wb)
