"""Why a memory is in a prompt, or is not: its relevance, the weighted parts of its score,
and what happened to it after recall (kept, trimmed by the budget, not sent as a
duplicate, redacted, or just below the k).

No Qt: the window's Why tab, the bar tooltips and the Answers pane read these. The parts
add up to the score a person is shown: each signal of recall's explanation (``Hit.why``)
times its weight in the store's config; a recall that gives its own weighted parts
(``why["parts"]``) is read as it gives them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemoscope.store.recall.signals import SIGNALS

from .compiler.types import REASON_DUPLICATE, REASON_OVER_BUDGET, REASON_PROCEDURAL_CAP, CompileResult

# Recall's signals (store/recall/signals.py, in its order) as a person reads them; a signal added
# there without a word here is shown by its name.
_WORDS = {"keyword": "words", "meaning": "meaning", "neighbour": "neighbours", "entity": "entities",
          "importance": "importance", "recency": "strength"}
SIGNAL_WORDS = {s.name: _WORDS.get(s.name, s.name) for s in SIGNALS}
SIGNAL_ABOUT = {s.name: s.about for s in SIGNALS}
NEAR_MISSES = 5  # memories listed below the k
TRIM_WORDS = {REASON_OVER_BUDGET: "no room left in the budget",
              REASON_PROCEDURAL_CAP: "a prompt carries at most three skills, and three better ones are in"}


@dataclass(frozen=True)
class Part:
    signal: str     # as recall names it ("keyword", "meaning", …)
    value: float    # the signal itself, 0 to 1
    weight: float   # its weight in the score
    weighted: float  # what it adds to the score

    @property
    def label(self) -> str:
        return SIGNAL_WORDS.get(self.signal, self.signal)


def parts_of(why: dict[str, Any], weights: Any) -> list[Part]:
    """The weighted parts of a hit's score, in recall's order; [] without an explanation.
    Recall gives the weighted parts (``why["parts"]``) and each signal's value under its
    name; the weight is the config's (``weights``)."""
    given = why.get("parts")
    if not isinstance(given, dict):
        return []
    by_weight = {s.name: s.weight for s in SIGNALS}
    out = []
    for name, weighted in given.items():
        if isinstance(weighted, dict):  # a part given whole: value, weight, weighted
            out.append(Part(name, float(weighted.get("value", 0.0)), float(weighted.get("weight", 0.0)),
                            float(weighted.get("weighted", weighted.get("value", 0.0) * weighted.get("weight", 0.0)))))
            continue
        value = why.get(name)
        weight = float(getattr(weights, by_weight.get(name, name), 0.0))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            value, weight = float(weighted), 1.0
        out.append(Part(name, float(value), weight, float(weighted)))
    return out


def parts_words(parts: Sequence[Part], score: float | None = None) -> str:
    """"meaning 0.81 × 0.80 = 0.65 + words 0.50 × 0.46 = 0.23 + … = 0.97"."""
    if not parts:
        return "no explanation was kept"
    terms = " + ".join(f"{p.label} {p.value:.2f} × {p.weight:.2f} = {p.weighted:.2f}" for p in parts)
    total = sum(p.weighted for p in parts) if score is None else score
    return f"{terms} = {total:.3f}"


def relevance_of(hit: Any) -> float:
    """The hit's relevance, as recall gives it (its score where it gives no relevance)."""
    relevance = getattr(hit, "relevance", None)
    return float(relevance if isinstance(relevance, (int, float)) else hit.score)


# What happened to a recalled memory in the prompt.
KEPT, TRIMMED, DUPLICATE, REDACTED, BELOW_K, NOT_OFFERED = "kept", "trimmed", "duplicate", "redacted", "below k", \
    "not offered"


@dataclass
class WhyRow:
    rank: int               # its place in recall (1 = best); past k for a near miss
    id: str
    text: str
    kind: str
    score: float
    relevance: float
    parts: list[Part] = field(default_factory=list)
    outcome: str = KEPT
    detail: str = ""        # the outcome in words: "in the prompt as [Mem:3]", "no room in the budget: …"
    tokens: int = 0

    @property
    def short(self) -> str:
        """The outcome in a word or two, for a narrow column: "[Mem:3]", "trimmed", "below k"."""
        if self.outcome == KEPT and self.detail.startswith("in the prompt as "):
            return self.detail.removeprefix("in the prompt as ")
        return {DUPLICATE: "duplicate"}.get(self.outcome, self.outcome)

    @property
    def missed(self) -> bool:
        """In the prompt's near misses: trimmed, or just below the k."""
        return self.outcome in (TRIMMED, BELOW_K)


def explain_prompt(hits: Sequence[Any], result: CompileResult | None, weights: Any, k: int,
                   below: Sequence[Any] = ()) -> list[WhyRow]:
    """One row per recalled memory, best first, saying what the prompt did with it; then
    ``below``, the next memories recall ranked under the k (recalled with a larger k)."""
    segments = {s.record_id: s for s in result.segments if s.record_id} if result is not None else {}
    rows = []
    for rank, hit in enumerate(hits, 1):
        row = WhyRow(rank, hit.id, hit.text or "", hit.kind, hit.score, relevance_of(hit),
                     parts_of(hit.why or {}, weights))
        seg = segments.get(hit.id)
        if hit.redacted:
            row.outcome, row.detail = REDACTED, "redacted: one level above the trust, so its text is not shown"
        elif seg is None:
            row.outcome, row.detail = NOT_OFFERED, f"not offered to the prompt ({hit.layer})"
        elif seg.kept:
            row.outcome, row.detail = KEPT, f"in the prompt as [Mem:{seg.ref}]" if seg.ref else "in the prompt"
        elif seg.reason == REASON_DUPLICATE:
            row.outcome, row.detail = DUPLICATE, f"not sent: {seg.why}" if seg.why else "not sent: a duplicate"
        else:
            row.outcome, row.detail = TRIMMED, f"trimmed: {TRIM_WORDS.get(seg.reason or '', seg.why or 'no room')}" \
                f" ({seg.tokens} tokens)"
        row.tokens = seg.tokens if seg is not None else 0
        rows.append(row)
    last = hits[-1].score if hits else None
    for offset, hit in enumerate(below, 1):
        row = WhyRow(len(hits) + offset, hit.id, hit.text or "", hit.kind, hit.score, relevance_of(hit),
                     parts_of(hit.why or {}, weights), BELOW_K)
        row.detail = (f"below the k: recall brings {k}, this is number {row.rank}"
                      + (f" (score {hit.score:.3f}; the {k}th has {last:.3f})" if last is not None else ""))
        rows.append(row)
    return rows


def hit_words(hit: Any, weights: Any) -> str:
    """A hit's relevance and parts in one line, for a tooltip."""
    parts = parts_of(hit.why or {}, weights)
    return f"relevance {relevance_of(hit):.3f}: {parts_words(parts, hit.score)}" if parts else \
        f"relevance {relevance_of(hit):.3f}"
