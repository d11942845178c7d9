"""The privacy check: what in the memories should not leave the machine, and is not marked so.

Credentials are found by detect-secrets' detectors (the shapes of AWS, GitHub, GitLab,
OpenAI, Slack, Stripe, Twilio, SendGrid, npm, PyPI … keys, private keys, passwords in
URLs and in code), plus a few detectors written here in its own form for providers it
does not know (Anthropic, Google, Hugging Face, newer OpenAI and GitHub tokens, Stripe
test keys) and for a password written out in a sentence. Phone numbers are found by
phonenumbers (Google's libphonenumber, the "lite" package without carrier and geocoding
data) in international form and in the national formats of the regions in
``PHONE_REGIONS``, except a number that counts or costs something ("… euros", "…
visitors"). US social security numbers and checksum-valid Spanish, Chinese and French
identity numbers are national ids. E-mail addresses, payment card numbers (Luhn-checked) and IBANs
(checksum-checked) are matched here.

Each kind of content needs a least sensitivity (a credential ``hyper``, a phone number
``medium`` …); a memory marked lower gets one :class:`Finding` per thing found. A
finding says where the thing is and shows only its first characters, never all of it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from ..backends import SchemaBehind
from ..model.errors import StoreError
from ..model.memory import ORIGIN_KEY, SENSITIVITY_RANK
from .privacy_scan import Detection, Finding, scan_text

if TYPE_CHECKING:
    from ..model.results import UpdateResult
    from ..store import MemoryStore


def _preview(value: str) -> str:
    shown = 4 if len(value) >= 16 else 2
    return value[:shown] + "…"


def findings_in(memory_id: str, text: str, sensitivity: str, *, all_findings: bool = False,
                where: str = "text") -> list[Finding]:
    """Findings of one memory: what it holds that needs more than ``sensitivity`` (or
    everything it holds, with ``all_findings``). ``where`` names what ``text`` is."""
    rank = SENSITIVITY_RANK[sensitivity]
    return [Finding(memory_id, d.category, d.what, d.start, d.end, _preview(text[d.start:d.end]), sensitivity,
                    d.needed, where)
            for d in scan_text(text) if all_findings or rank < SENSITIVITY_RANK[d.needed]]


def context_text(context: object) -> str:
    """The strings a memory's context holds (values, not keys), one a line, in order: the
    text the check reads there (an import keeps the source's metadata in context, and an
    export writes it out). Not the import's own bookkeeping of where it came from (a path
    and digests: ``origin``), which the source never said."""
    if isinstance(context, str):
        try:
            context = json.loads(context)
        except ValueError:
            return context
    if isinstance(context, dict) and ORIGIN_KEY in context:
        context = {k: v for k, v in context.items() if k != ORIGIN_KEY}
    return "\n".join(_strings(context))


def memory_findings(memory_id: str, text: str, context: object, sensitivity: str, *,
                    all_findings: bool = False) -> list[Finding]:
    """Findings in everything a memory keeps: its text, then its context."""
    out = findings_in(memory_id, text, sensitivity, all_findings=all_findings)
    kept = context_text(context) if context else ""
    if kept:
        out += findings_in(memory_id, kept, sensitivity, all_findings=all_findings, where="context")
    return out


def check_records(records: list[dict]) -> list[Finding]:
    """Findings in memory records about to be stored (an import's: ``id``, ``text``,
    ``context``, ``sensitivity``), as :func:`check` will read them once they are. A context
    many records share (an entity's, for each of its observations) is scanned once."""
    out: list[Finding] = []
    seen: dict[tuple[str, str], list[Finding]] = {}
    for rec in records:
        mid, level = rec["id"], rec["sensitivity"]
        out += findings_in(mid, rec["text"], level)
        context = rec.get("context")
        if not context:
            continue
        kept = context_text(context)
        key = (kept, level)
        if key not in seen:
            seen[key] = findings_in("", kept, level, where="context") if kept else []
        out += [dataclasses.replace(f, memory_id=mid) for f in seen[key]]
    return out


def check(store: MemoryStore, *, all_findings: bool = False, ids: list[str] | None = None) -> list[Finding]:
    """Findings in every memory of ``store`` (archived ones too: they can still be exported),
    or in the memories ``ids`` (an import's), oldest memory first: their texts and all their
    contexts hold. Reads only."""
    out: list[Finding] = []
    rows: list = []
    with store.tables.reading():
        if ids is None:
            rows = store.conn.execute(
                "SELECT id, text, context, sensitivity FROM memories ORDER BY created_at, id").fetchall()
        else:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows += store.conn.execute(
                    f"SELECT id, text, context, sensitivity FROM memories WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk).fetchall()
            order = {mid: i for i, mid in enumerate(ids)}
            rows.sort(key=lambda r: order[r[0]])
    for mid, text, context, sensitivity in rows:
        out += memory_findings(mid, text, context, sensitivity, all_findings=all_findings)
    return out


def check_activity(store: MemoryStore, *, all_findings: bool = False) -> list[Finding]:
    """Findings in the texts the activity log keeps (each row's arguments and error, or its
    summary when it kept no arguments; read at the row's sensitivity), oldest row first,
    each named ``activity:ID``. Reads only."""
    with store.tables.reading():
        try:
            rows = store.conn.execute("SELECT id, summary, args, error, sensitivity FROM activity ORDER BY id").fetchall()
        except SchemaBehind:  # a database opened read-only before the log existed
            return []
    out: list[Finding] = []
    for row_id, summary, args, error, sensitivity in rows:
        kept = _strings(json.loads(args or "{}"))
        texts = [*(kept or [summary or ""]), error or ""]
        level = sensitivity if sensitivity in SENSITIVITY_RANK else "hyper"
        out += findings_in(f"activity:{row_id}", "\n".join(texts), level, all_findings=all_findings)
    return out


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def check_texts(texts: list[str]) -> list[Detection]:
    """Every detection in texts about to leave the machine (an export, a mirror, a copied prompt)."""
    return [d for t in texts for d in scan_text(t)]


def output_warning(texts: list[str], what: str) -> str:
    """A warning that ``what`` (e.g. "the export") puts out something the check flags; "" if not."""
    found = check_texts(texts)
    if not found:
        return ""
    kinds = ", ".join(sorted({d.what for d in found}))
    return f"{what} holds {len(found)} thing{'s' if len(found) > 1 else ''} the privacy check flags ({kinds})"


def _current(store: MemoryStore, finding: Finding):
    memory = store.get(finding.memory_id)
    text = context_text(memory.context) if finding.where == "context" else memory.text
    same = [d for d in scan_text(text)
            if (d.start, d.end, d.what) == (finding.start, finding.end, finding.what)]
    if not same:
        raise StoreError(f"memory {finding.memory_id} changed since the privacy check; run the check again")
    return memory


def raising(store: MemoryStore, finding: Finding) -> dict[str, str]:
    """The change that marks the memory of ``finding`` as sensitive as its content needs."""
    memory = _current(store, finding)
    return {"sensitivity": max(memory.sensitivity, finding.needed, key=SENSITIVITY_RANK.__getitem__)}


def redaction(store: MemoryStore, finding: Finding) -> dict[str, object]:
    """The change that replaces what ``finding`` points at with ``[redacted …]`` (in the
    context: wherever a string of it holds that value)."""
    memory = _current(store, finding)
    mark = f"[redacted {finding.what}]"
    if finding.where == "context":
        value = context_text(memory.context)[finding.start:finding.end]
        return {"context": _replaced(memory.context, value, mark)}
    return {"text": memory.text[:finding.start] + mark + memory.text[finding.end:]}


def _replaced(value: object, old: str, new: str) -> object:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return value


def raise_sensitivity(store: MemoryStore, finding: Finding) -> UpdateResult:
    """Apply :func:`raising` (undo with ``store.restore_state(result.before)``)."""
    return store.update(finding.memory_id, **raising(store, finding))


def redact(store: MemoryStore, finding: Finding) -> UpdateResult:
    """Apply :func:`redaction` (undo with ``store.restore_state(result.before)``)."""
    return store.update(finding.memory_id, **redaction(store, finding))


def raise_findings(store: MemoryStore, findings: list[Finding]) -> list[UpdateResult]:
    """The one action after a privacy check (or an import's): raise each flagged memory to
    the sensitivity its content needs, all in one transaction. Findings of the activity log
    (``activity:ID``) are not memories and are passed over; a memory gone since is too.
    Returns one result per memory raised; :func:`undo_raise` takes them back."""
    needed: dict[str, str] = {}
    for f in findings:
        if f.memory_id.startswith("activity:"):
            continue
        have = needed.get(f.memory_id, f.needed)
        needed[f.memory_id] = max(have, f.needed, key=SENSITIVITY_RANK.__getitem__)
    out: list[UpdateResult] = []
    with store.tables.write():
        for mid, level in needed.items():
            if not store.exists(mid):
                continue
            current = store.get(mid).sensitivity
            if SENSITIVITY_RANK[current] < SENSITIVITY_RANK[level]:
                out.append(store.update(mid, touch=False, sensitivity=level))
    return out


def undo_raise(store: MemoryStore, raised: list[UpdateResult]) -> None:
    """Take back :func:`raise_findings`: each memory's sensitivity as it was (only that:
    whatever else changed since stays), in one transaction."""
    with store.tables.write():
        for result in raised:
            if store.exists(result.before.id):
                store.restore_state(result.before, fields=("sensitivity",))
