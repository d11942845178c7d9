"""Conflicts: two memories that say different things about the same subject.

A memory's text is read for *claims*: where someone lives, where they work, and what they
like or do ("drinks tea", "no longer drinks tea", "喜欢喝乌龙茶", "不再喝茶"), in English
and Chinese. A claim has a subject (the memory's ``who``, else the entity named first in
its text, else the words before the verb), a slot, a value and a polarity. Two memories
conflict when they share the subject and the slot and their claims cannot both hold: a
single-valued slot (where someone lives or works) with values neither of which contains
the other, or the same thing liked and then not. A last, generic rule catches "X" against
"no longer X": the same words once negated and once not.

:func:`scan` finds conflicts among all memories; it compares each claim only with the
newest claim of its bucket, so it is linear in the number of memories.
:func:`likely_conflicts` checks one memory against the others through the full-text
index, cheaply enough to run on every ``remember``. :func:`supersede` records that one
memory replaces another: a ``supersedes`` edge with its inverse ``superseded_by``, and the
older memory archived (out of recall, and kept archived by every later tick);
:func:`keep_both` records that a person read both and keeps both (``kept_with``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import NotFound, ValidationError
from .model import SENSITIVITIES, SENSITIVITY_RANK
from .text import stem, terms

if TYPE_CHECKING:
    from .model import Memory
    from .store import MemoryStore

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
    ("employer", False, re.compile(rf"在(?P<v>[{_CJK}A-Za-z ]{{2,10}}?)(?:工作|上班|任职)")),
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
_MOVED = re.compile(r"\b(?:moved|moving|now)\b|搬|现在")  # a past claim with a present one after it
# Words and particles left out when comparing two statements for the generic rule.
_ZH_NEGATION = re.compile(r"不再|再也不|已经|没有|现在|还是|仍然|[不没了也]")
PRONOUNS = frozenset("she he they i we it her him them".split())


@dataclass(frozen=True)
class Claim:
    subject: str    # lower-cased
    slot: str       # "location", "employer", "likes", "statement"
    value: str      # lower-cased; for "likes" the object words
    positive: bool
    phrase: str     # the words of the text that make the claim
    exclusive: bool

    def words(self) -> frozenset[str]:
        if _is_cjk(self.value):
            return frozenset({self.value})
        return frozenset(stem(w) for w in self.value.split() if w not in _OBJECT_SKIP)


@dataclass
class Conflict:
    newer: str          # memory ids
    older: str
    subject: str
    slot: str
    newer_claim: str
    older_claim: str
    newer_text: str = ""
    older_text: str = ""

    def summary(self) -> str:
        return f"{self.subject}: {self.slot}: {self.newer_claim!r} (newer) vs {self.older_claim!r}"

    def to_dict(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class SupersedeResult:
    newer: str
    before: Memory      # the older memory before it was archived, for undo
    after: Memory
    edges: list[tuple[str, str, str]] = field(default_factory=list)


def _is_cjk(s: str) -> bool:
    return _CJK_RE.search(s) is not None


def _value_after(text: str, end: int) -> str:
    """The value an English claim names: the words after its verb, to the end of the clause."""
    return _clean_value(_VALUE_END.split(text[end:end + 80], 1)[0])


def _clean_value(raw: str) -> str:
    if _is_cjk(raw):
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
    if _is_cjk(before[-2:] if before else ""):
        return _ZH_NEGATOR.search(before) is not None
    tail = " ".join(before.split()[-3:])
    return bool(_NEGATOR.search(tail))


def _subject_from(text: str, start: int) -> str:
    """Who a claim is about when the memory does not say: the first name before the verb
    (in Chinese, the words just before it)."""
    if _is_cjk(text[:start]):
        clause = re.split(r"[，。,;；\s]", text[:start])[-1]
        return re.sub(r"(?:现在|已经|也|还|都|一直|在)+$", "", clause)[-4:]
    words = re.findall(r"[A-Za-z][\w'-]*", text[:start])
    for w in words:
        lw = w.lower().removesuffix("'s")
        if lw not in PRONOUNS and w[0].isupper():
            return lw
    return ""


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
    cjk = _is_cjk(text)
    if not cjk and not _ANY_EN.search(low):
        return out
    for slot, negative, pattern in (_EXCLUSIVE_ZH if cjk else _EXCLUSIVE_EN):
        for m in pattern.finditer(low):
            past = _PAST.search(low[max(0, m.start() - 20):m.start()])
            value = _clean_value(m.group("v")) if cjk else _value_after(text, m.end())
            if past or not value:
                continue
            negated = _negated_before(low, m.start())
            phrase = (m.group() if cjk else ("not " if negated else "") + m.group() + value).strip()
            name = f"{slot} {m.group('what').lower()}" if "what" in pattern.groupindex else slot
            out.append(Claim(subject or _subject_from(text, m.start()), name, value, not negative and not negated,
                             phrase, True))
    if cjk:
        for m in _PREF_ZH.finditer(text):
            value = _clean_value(m.group("v"))
            if not value:
                continue
            positive = not m.group("neg") and m.group("verb") not in _ZH_NEGATIVE_VERBS
            out.append(Claim(subject or _subject_from(text, m.start()), "likes", value, positive,
                             m.group(), False))
    else:
        for m in _PREF_EN.finditer(low):
            value = _value_after(text, m.end())
            if not value:
                continue
            negated = _negated_before(low, m.start())
            positive = (m.group("verb") not in _NEGATIVE_VERBS) != negated
            out.append(Claim(subject or _subject_from(text, m.start()), "likes", value, positive,
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
    if _is_cjk(text):
        return frozenset(terms(_ZH_NEGATION.sub("", text))), "不" in text or "没" in text
    words = stored_terms.split() if stored_terms is not None else terms(text)
    return frozenset(words) - _NEGATION_STEMS, _NEGATED.search(text.lower()) is not None


def _compatible(a: Claim, b: Claim) -> bool:
    """Can ``a`` and ``b`` (same subject and slot) both hold?"""
    if a.exclusive:
        same = _same_value(a, b)
        if a.positive and b.positive:
            return same
        return not same or a.positive == b.positive
    return not _same_value(a, b) or a.positive == b.positive


def _same_value(a: Claim, b: Claim) -> bool:
    if _is_cjk(a.value) or _is_cjk(b.value):
        x, y = a.value, b.value
        return x == y or x.endswith(y) or y.endswith(x) or x.startswith(y) or y.startswith(x)
    wa, wb = a.words(), b.words()
    if a.exclusive:
        return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)
    return bool(wa & wb)


@dataclass
class _Row:
    id: str
    text: str
    subject: str
    created_at: float


def _subjects(store: MemoryStore, rows: list[tuple]) -> dict[str, str]:
    """Each memory's subject: its ``who``, else the entity named first in its text."""
    names: dict[str, list[str]] = defaultdict(list)
    with store.tables.reading():
        for src, name in store.conn.execute(
                "SELECT x.src, e.name FROM edges x JOIN entities e ON e.id = x.dst WHERE x.edge = 'mentions_entity'"):
            names[src].append(name)
    out = {}
    for mid, text, who, *_ in rows:
        if who:
            out[mid] = who.lower()
            continue
        low = text.lower()
        found = [(low.find(n.lower()), n.lower()) for n in names.get(mid, ()) if n.lower() in low]
        out[mid] = min(found)[1] if found else ""
    return out


def _memory_claims(text: str, subject: str, stored_terms: str) -> list[Claim]:
    """The claims of a memory, and its statement: the subject of a statement is in its
    words already, so statements about anyone compare."""
    found = claims(text, subject)
    key, negated = statement_key(text, stored_terms)
    if key:
        found.append(Claim("*", "statement", " ".join(sorted(key)), not negated, text, False))
    return found


def _conflicts_between(new: tuple[str, str, float, list[Claim]],
                       old: tuple[str, str, float, list[Claim]]) -> Conflict | None:
    nid, ntext, _, nclaims = new
    oid, otext, _, oclaims = old
    for a in nclaims:
        for b in oclaims:
            if a.slot != b.slot or not a.subject or a.subject != b.subject:
                continue
            if a.slot == "statement":
                if a.value == b.value and a.positive != b.positive:
                    return Conflict(nid, oid, _shown_subject(a.subject, ntext), "statement", ntext, otext, ntext,
                                    otext)
                continue
            if not _compatible(a, b):
                slot = a.slot if a.exclusive else f"likes {' '.join(sorted(a.words() & b.words())) or a.value}"
                return Conflict(nid, oid, _shown_subject(a.subject, ntext), slot, a.phrase, b.phrase, ntext, otext)
    return None


def _shown_subject(subject: str, text: str) -> str:
    """The subject as the text spells it ("Theo", not "theo"); a statement's, found in it."""
    if subject == "*":
        subject = _subject_from(text, len(text)) if not _is_cjk(text) else ""
    at = text.lower().find(subject) if subject else -1
    return text[at:at + len(subject)] if at >= 0 else subject


def _bucket_keys(c: Claim) -> list[tuple[str, str, str]]:
    if c.slot == "statement":
        return [(c.subject, "statement", c.value)]
    if c.exclusive:
        return [(c.subject, c.slot, "")]
    words = [c.value] if _is_cjk(c.value) else sorted(c.words())
    keys = [(c.subject, "likes", w) for w in words]
    if _is_cjk(c.value):
        keys += [(c.subject, "likes", c.value[-1])]  # 乌龙茶 and 茶 share their last character
    return keys


def scan(store: MemoryStore, *, include_archived: bool = False) -> list[Conflict]:
    """Every conflict among the memories (archived ones left out unless asked), newest first.
    Each claim is compared with the newest claim of the same subject and slot."""
    where = "" if include_archived else " WHERE layer != 'archived'"
    with store.tables.reading():
        rows = store.conn.execute(f"SELECT id, text, who, created_at, terms FROM memory_rows{where}").fetchall()
    subjects = _subjects(store, rows)
    parsed = {}
    buckets: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for mid, text, _, created, stored_terms in rows:
        cl = _memory_claims(text, subjects[mid], stored_terms)
        if not cl:
            continue
        parsed[mid] = (mid, text, created, cl)
        for c in cl:
            for key in _bucket_keys(c):
                buckets[key].append(mid)
    found: dict[tuple[str, str], Conflict] = {}
    with store.tables.reading():
        kept = _kept(store)
    for ids in buckets.values():
        if len(ids) < 2:
            continue
        ordered = sorted(dict.fromkeys(ids), key=lambda i: (-parsed[i][2], i))
        newest = parsed[ordered[0]]
        for other in ordered[1:]:
            if (newest[0], other) in found or (newest[0], other) in kept:
                continue
            conflict = _conflicts_between(newest, parsed[other])
            if conflict:
                found[(newest[0], other)] = conflict
    return sorted(found.values(), key=lambda c: (-parsed[c.newer][2], c.newer, -parsed[c.older][2], c.older))


def likely_conflicts(store: MemoryStore, memory_id: str, *, limit: int = 200) -> list[Conflict]:
    """Memories that ``memory_id`` likely conflicts with, among those whoever wrote it may
    see: the same scope or global, not archived, and no more sensitive than it (an agent
    cannot write above its trust, so nothing above its trust is named). Looks only at the
    candidates the full-text index finds for each claim, so it stays fast on big stores."""
    with store.tables.reading():
        row = store.conn.execute("SELECT id, text, who, created_at, scope, sensitivity, terms FROM memories "
                                 "WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise NotFound("memory", memory_id)
        mid, text, who, created, scope, sensitivity, stored_terms = row
        mine = _memory_claims(text, _subjects_one(store, mid, text, who), stored_terms)
        queries = set()
        for c in mine:
            subject_terms = terms(c.subject)
            if c.slot == "statement":
                words = c.value.split()
            elif c.exclusive:
                words = [*subject_terms, *terms(c.value)][:6]
            else:  # the subject, and any word of the object (a one-character Chinese object: none)
                objects = [t for t in terms(c.value) if len(t) > 1 or not _is_cjk(t)]
                words = [*subject_terms, "(" + " OR ".join(_quoted(t) for t in objects) + ")"] if objects \
                    else subject_terms
            if words:
                queries.add(" AND ".join(w if w.startswith("(") else _quoted(w) for w in dict.fromkeys(words)))
            if c.exclusive and subject_terms:
                # where someone lives may be said with other words than ours ("moved to"):
                # also the subject's memories with any verb of the slot
                slot = c.slot.split()[0]
                verbs = _SLOT_VERBS_ZH[slot] if _is_cjk(text) else _SLOT_VERBS[slot]
                queries.add(" AND ".join(_quoted(t) for t in subject_terms) + " AND ("
                            + " OR ".join(_quoted(v) for v in verbs) + ")")
        visible = SENSITIVITIES[:SENSITIVITY_RANK[sensitivity] + 1]
        candidates: dict[str, tuple] = {}
        for q in sorted(queries):
            for cid, ctext, cwho, ccreated, cterms in store.conn.execute(
                    "SELECT m.id, m.text, m.who, m.created_at, m.terms FROM memories_fts f CROSS JOIN memories m "
                    "ON m.rowid = f.rowid CROSS JOIN memory_state s ON s.rowid = m.rowid "
                    "WHERE memories_fts MATCH ? AND m.id != ? AND m.scope IN (?, 'global') "
                    f"AND s.layer != 'archived' AND m.sensitivity IN ({','.join('?' * len(visible))}) LIMIT ?",
                    (q, mid, scope, *visible, limit)):
                candidates[cid] = (cid, ctext, cwho, ccreated, cterms)
        out = []
        new = (mid, text, created, mine)
        for cid, ctext, cwho, ccreated, cterms in candidates.values():
            csubject = _subjects_one(store, cid, ctext, cwho)
            conflict = _conflicts_between(new, (cid, ctext, ccreated, _memory_claims(ctext, csubject, cterms)))
            if conflict:
                out.append(conflict)
    return sorted(out, key=lambda c: c.older)


_SLOT_VERBS = {"location": [*dict.fromkeys(terms("lives live moved relocated based resides settled"))],
               "employer": [*dict.fromkeys(terms("works joined employed left quit"))],
               "favourite": [*dict.fromkeys(terms("favourite favorite"))]}
_SLOT_VERBS_ZH = {"location": ["住在", "搬到", "搬去", "定居", "生活"], "employer": ["工作", "上班", "加入", "入职", "离开"],
                  "favourite": ["最喜"]}


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _subjects_one(store: MemoryStore, mid: str, text: str, who: str) -> str:
    if who:
        return who.lower()
    low = text.lower()
    found = [(low.find(n.lower()), n.lower()) for (n,) in store.conn.execute(
        "SELECT e.name FROM edges x JOIN entities e ON e.id = x.dst WHERE x.src = ? AND x.edge = 'mentions_entity'",
        (mid,)) if n.lower() in low]
    return min(found)[1] if found else ""


KEPT = "kept_with"  # a person read both memories and keeps both: they are not a conflict


def _check_pair(store: MemoryStore, a: str, b: str) -> None:
    if a == b:
        raise ValidationError("older", "a memory cannot conflict with itself")
    for m in (a, b):
        if not store.exists(m):
            raise NotFound("memory", m)


def supersede(store: MemoryStore, newer_id: str, older_id: str) -> SupersedeResult:
    """``newer_id`` replaces ``older_id``: a ``supersedes`` edge and its inverse, and the
    older memory archived (out of recall). Undo with :func:`undo_supersede`."""
    with store.tables.write():
        _check_pair(store, newer_id, older_id)
        before = store.get(older_id)
        edges: list[tuple[str, str, str]] = []
        store.tables.edge_pair(newer_id, "supersedes", older_id, "superseded_by", store.now(), edges)
        store.tables.refresh_state(older_id)  # archived, and never due for a tick while superseded
        return SupersedeResult(newer_id, before, store.get(older_id), edges)


def undo_supersede(store: MemoryStore, result: SupersedeResult) -> Memory:
    """Take back :func:`supersede`: the edges go and the older memory is as it was."""
    with store.tables.write():
        remove_edges(store, result.edges)
        return store.restore_state(result.before)


def keep_both(store: MemoryStore, a: str, b: str) -> list[tuple[str, str, str]]:
    """The person keeps both ``a`` and ``b``: a ``kept_with`` edge each way, and the pair is
    no longer reported as a conflict. Returns the edges written (undo: :func:`remove_edges`)."""
    with store.tables.write():
        _check_pair(store, a, b)
        edges: list[tuple[str, str, str]] = []
        store.tables.edge_pair(a, KEPT, b, KEPT, store.now(), edges)
        return edges


def remove_edges(store: MemoryStore, edges: list[tuple[str, str, str]]) -> None:
    """Delete ``edges`` (as :func:`supersede` or :func:`keep_both` returned them)."""
    with store.tables.write():
        store.conn.executemany("DELETE FROM edges WHERE src = ? AND edge = ? AND dst = ?", edges)


def _kept(store: MemoryStore) -> set[tuple[str, str]]:
    return set(store.conn.execute("SELECT src, dst FROM edges WHERE edge = ?", (KEPT,)).fetchall())
